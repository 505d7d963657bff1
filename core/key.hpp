// The comparability key: benchmark, provider, workload, environment and protocol, each with a
// human label and a digest of its canonical JSON form. Runs are compared only inside one key.
// Plain C++ and nlohmann/json, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/names.hpp"
#include "core/record.hpp"

namespace kernelwatch::core {

enum class DType { Fp32, Bf16, Fp16 };

[[nodiscard]] std::string_view to_string(DType dtype) noexcept;
// Accepts "fp32", "bf16", "fp16" and torch's spellings ("torch.float32", "torch.bfloat16").
[[nodiscard]] Result<DType> parse_dtype(std::string_view text);

// A canonical workload: shape, dtype and kernel options. The label is its identity in text
// ("hidden16384-rows4096-fp32", "tokens16384-vocab65536-fp32"); labels of any other form
// (posted runs of other kernels, RMSNorm's "h4096-bf16-eps1e-06-m2048") are kept as opaque
// workloads.
//
// Core parses exactly two label forms, "hidden<N>-rows<M>-<dtype>[-eps<e>]" (layer_norm) and
// "tokens<N>-vocab<V>-<dtype>" (tvd), and only to keep the digests of stored keys: a key is
// derived from any record's label below kernels/ (key_of, storage's import, the detectors), and
// the canonical JSON of these two forms is part of every key already stored (the Liger history
// in data/, users' databases). A new kernel's workload is an opaque label that its own folder
// parses (KernelDescriptor::parse_workload, as kernels/rms_norm/ does); core never learns it.
struct Workload {
  std::string kernel;       // "layer_norm" or "tvd" for the two forms above; "": opaque
  std::int64_t rows = 0;    // LayerNorm: M
  std::int64_t hidden = 0;  // LayerNorm: N
  std::int64_t tokens = 0;  // TVD: B*T
  std::int64_t vocab = 0;   // TVD: V
  DType dtype = DType::Fp32;
  double eps = 1e-6;         // LayerNorm only; in the label only when not the default
  std::string opaque_label;  // opaque workloads only

  [[nodiscard]] bool opaque() const { return kernel.empty(); }

  [[nodiscard]] static Workload layer_norm(std::int64_t rows, std::int64_t hidden, DType dtype,
                                           double eps = 1e-6);
  [[nodiscard]] static Workload tvd(std::int64_t tokens, std::int64_t vocab, DType dtype);
  // Parses a label; unknown forms become opaque workloads, malformed known forms are errors.
  [[nodiscard]] static Result<Workload> from_label(std::string_view label);

  [[nodiscard]] std::string label() const;
  [[nodiscard]] nlohmann::json canonical() const;
  [[nodiscard]] std::string digest() const;
};

// Lowercase, runs of anything but [a-z0-9] become one '-': "NVIDIA H100 80GB HBM3" ->
// "nvidia-h100-80gb-hbm3".
[[nodiscard]] std::string slug(std::string_view text);

// Splits a GPU name as drivers report it into kernelindex hardware identity:
// "NVIDIA H100 80GB HBM3" -> {nvidia, "NVIDIA H100", "80GB HBM3", sm_90}.
[[nodiscard]] Hardware hardware_from_gpu_name(std::string_view gpu_name);

[[nodiscard]] std::string environment_label(const Hardware& hardware);
// The environment's equivalence identity in a key: hardware only (vendor, product, form factor,
// architecture; software, settings and memory size are recorded, never part of the key). Its
// digest is the key's environment part, not a record's environmentDigest: that one is the
// kernelindex digest of the whole ExecutionEnvironment document the record carries.
[[nodiscard]] nlohmann::json environment_identity(const Hardware& hardware);
// The spec of an ExecutionEnvironment document for this hardware, valid by the public schema:
// the identity's hardware with "unknown" where the architecture is not known, empty software.
[[nodiscard]] nlohmann::json environment_document_spec(const Hardware& hardware);

struct KeyPart {
  std::string label;
  std::string digest;
};

struct ComparabilityKey {
  KeyPart benchmark;    // "tvd/backward"
  KeyPart provider;     // "liger"
  KeyPart workload;     // "tokens16384-vocab65536-fp32"
  KeyPart environment;  // "nvidia-h100-80gb-hbm3"
  KeyPart protocol;     // "liger-bench-do-bench-backward"

  // Digest over the five part digests.
  [[nodiscard]] std::string digest() const;
  // "tvd/backward liger tokens16384-vocab65536-fp32 nvidia-h100-80gb-hbm3"
  [[nodiscard]] std::string display() const;
};

// The parts an externalId spells: "<kernel>/<pass>/<provider>/<environment>/<workload>/<time>".
struct ExternalId {
  std::string benchmark;
  std::string provider;
  std::string environment;
  std::string workload;
  std::string timestamp;
};
[[nodiscard]] std::optional<ExternalId> parse_external_id(std::string_view id);

// A WorkloadCase document's workload label: its axes as name_value in name order, then its
// tensors' dtypes ("hidden_4096-tokens_2048-bf16"); "" when it has neither.
[[nodiscard]] std::string workload_label_of(const nlohmann::json& workload_case);

// Derives a record's key. Provider and workload come from metadata.labels ("provider",
// "workload") when present, else from the externalId, else (a kernelindex tool's run) from the
// ImplementationRevision and WorkloadCase documents the record carries; the benchmark from
// sourceNative.benchmark, else "<source>/<callable symbol>" or "<source>/op-<operation digest>".
// The environment and protocol parts are equivalence identities computed from the record's
// documents, never trusted from the run's own digest fields.
[[nodiscard]] Result<ComparabilityKey> key_of(const Record& record);

}  // namespace kernelwatch::core
