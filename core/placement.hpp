// Where a run ran: the host and, on a GPU, which GPU of it (index, UUID, PCIe bus id). Recorded
// as the run's metadata.labels, never part of the comparability key: identical GPUs of one host,
// and of several hosts, share one key and one band (docs/DETECTION.md, "Siblings as controls").
// The labels are the harness's (`gpu_index`, `gpu_uuid`) plus `host` and `pci_bus_id`;
// /metrics and Alertmanager name them as dcgm-exporter does (`Hostname`, `gpu`, `UUID`,
// `pci_bus_id`: daemon/prometheus.cpp). Plain C++, no I/O.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/record.hpp"

namespace kernelwatch::core {

inline constexpr std::string_view kHostLabel = "host";
inline constexpr std::string_view kGpuLabel = "gpu_index";        // the NVML index, "3" (dcgm: gpu)
inline constexpr std::string_view kGpuUuidLabel = "gpu_uuid";     // "GPU-8c3a..."
inline constexpr std::string_view kPciBusIdLabel = "pci_bus_id";  // "00000000:19:00.0"

struct Placement {
  std::string host;  // "" when the run does not say (imported history)
  std::string gpu;   // "" on a CPU, or when the run does not say
  std::string gpu_uuid;
  std::string pci_bus_id;

  [[nodiscard]] bool empty() const { return host.empty() && gpu.empty() && gpu_uuid.empty(); }
  // Which GPU of its host: the UUID when known, else the index ("" on a CPU).
  [[nodiscard]] std::string unit() const { return gpu_uuid.empty() ? gpu : gpu_uuid; }
  // "GPU 3 (UUID GPU-8c3a...) of host h100-a", "host h100-a", "" when nothing is known.
  [[nodiscard]] std::string describe() const;
};

// A placement shared by the runs that ran there: a copy is a reference count, not four strings
// (a replay copies each run's observation several times, and keeps one placement per host and
// GPU, shared by all of their runs). Null, it is the empty placement. Immutable.
class SharedPlacement {
 public:
  SharedPlacement() = default;
  // Implicit: a placement is one. An empty one (no field set) stays null.
  SharedPlacement(Placement placement);  // NOLINT(google-explicit-constructor)

  [[nodiscard]] const Placement& operator*() const { return p_ ? *p_ : empty_placement(); }
  [[nodiscard]] const Placement* operator->() const { return &**this; }
  [[nodiscard]] bool empty() const { return !p_ || p_->empty(); }
  // Which shared placement this is (null for none): copies share it. Two with the same address
  // are the same placement while one of them is alive (a cache keyed by it keeps a copy).
  [[nodiscard]] const Placement* address() const { return p_.get(); }

 private:
  [[nodiscard]] static const Placement& empty_placement();
  std::shared_ptr<const Placement> p_;
};

// The one written form of the unit a run ran on, which names it in alert ids, slots and maps:
// "gpu:<host>/<GPU>" (the UUID when known, else the index) or "host:<host>", with '%' and '/' of
// the host and the GPU written %25 and %2F, so that no two units share one form (a host "a/b"
// with GPU "c" and a host "a" with GPU "b/c" did). Plain values: unchanged for hosts and GPUs
// without those characters, as the ids of stored alerts are.
class UnitId {
 public:
  UnitId() = default;
  // The GPU of `placement`, or its host where it names no GPU (a CPU run).
  [[nodiscard]] static UnitId of(const Placement& placement);
  // The whole host of `placement`.
  [[nodiscard]] static UnitId host_of(const Placement& placement);
  // of(placement) written into `out` (replacing it): what a per-run lookup uses, no allocation
  // once `out` is large enough.
  static void write(std::string& out, const Placement& placement);

  [[nodiscard]] const std::string& str() const { return text_; }
  [[nodiscard]] bool empty() const { return text_.empty(); }
  friend bool operator==(const UnitId&, const UnitId&) = default;
  friend auto operator<=>(const UnitId&, const UnitId&) = default;

 private:
  explicit UnitId(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

[[nodiscard]] Placement placement_of(const Metadata& metadata);
// Sets the non-empty fields as labels (an empty one removes its label).
void set_placement(Metadata& metadata, const Placement& placement);

}  // namespace kernelwatch::core
