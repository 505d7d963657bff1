#include "core/key.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/digest.hpp"
#include "core/json_fields.hpp"
#include "core/kernelwatch_protocol.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

// The kernel names of the two label forms core parses (Workload, core/key.hpp).
constexpr std::string_view kLayerNormForm = "layer_norm";
constexpr std::string_view kTvdForm = "tvd";

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const auto pos = text.find(separator, start);
    parts.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

// "hidden16384" with prefix "hidden" -> 16384; nullopt when the shape is wrong.
std::optional<std::int64_t> prefixed_int(std::string_view part, std::string_view prefix) {
  if (part.substr(0, prefix.size()) != prefix) return std::nullopt;
  const auto digits = part.substr(prefix.size());
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || value <= 0) {
    return std::nullopt;
  }
  return value;
}

bool label_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

std::string format_eps(double eps) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", eps);
  return buffer;
}

json named(std::string_view field, std::string_view value) {
  return json{{std::string(field), std::string(value)}};
}

}  // namespace

std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::Fp32:
      return "fp32";
    case DType::Bf16:
      return "bf16";
    case DType::Fp16:
      return "fp16";
  }
  return "unknown";
}

Result<DType> parse_dtype(std::string_view text) {
  if (text == "fp32" || text == "float32" || text == "torch.float32" || text == "torch.float") {
    return DType::Fp32;
  }
  if (text == "bf16" || text == "bfloat16" || text == "torch.bfloat16") return DType::Bf16;
  if (text == "fp16" || text == "float16" || text == "torch.float16" || text == "torch.half") {
    return DType::Fp16;
  }
  return fail(ErrorCode::ParseError,
              "unknown dtype \"" + std::string(text) + "\" (expected fp32, bf16 or fp16)");
}

Workload Workload::layer_norm(std::int64_t rows, std::int64_t hidden, DType dtype, double eps) {
  Workload w;
  w.kernel = kLayerNormForm;
  w.rows = rows;
  w.hidden = hidden;
  w.dtype = dtype;
  w.eps = eps;
  return w;
}

Workload Workload::tvd(std::int64_t tokens, std::int64_t vocab, DType dtype) {
  Workload w;
  w.kernel = kTvdForm;
  w.tokens = tokens;
  w.vocab = vocab;
  w.dtype = dtype;
  return w;
}

Result<Workload> Workload::from_label(std::string_view label) {
  const auto bad = [&](std::string_view why) {
    return fail(ErrorCode::ParseError,
                "workload \"" + std::string(label) + "\": " + std::string(why));
  };
  if (label.empty()) return bad("empty");
  for (char c : label) {
    if (!label_char_ok(c)) return bad("only a-z, 0-9, '-', '_' and '.' are allowed");
  }
  const auto parts = split(label, '-');
  // kernelwatch's own forms start "hidden" or "tokens" followed by a digit, '-' or nothing;
  // anything else (a Liger kernel's "hidden_size2048-bf16-...") is opaque.
  const auto own_form = [&](std::string_view prefix) {
    if (label.substr(0, prefix.size()) != prefix) return false;
    if (label.size() == prefix.size()) return true;
    const char next = label[prefix.size()];
    return (next >= '0' && next <= '9') || next == '-';
  };
  const bool layer_norm = own_form("hidden");
  const bool tvd = own_form("tokens");
  if (!layer_norm && !tvd) {
    Workload w;
    w.opaque_label = std::string(label);
    return w;
  }
  if (parts.size() < 3)
    return bad(layer_norm ? "expected hidden<N>-rows<M>-<dtype>"
                          : "expected tokens<N>-vocab<V>-<dtype>");
  const auto first = prefixed_int(parts[0], layer_norm ? "hidden" : "tokens");
  const auto second = prefixed_int(parts[1], layer_norm ? "rows" : "vocab");
  if (!first || !second) {
    return bad(layer_norm ? "expected hidden<N>-rows<M>-<dtype> with positive integers"
                          : "expected tokens<N>-vocab<V>-<dtype> with positive integers");
  }
  auto dtype = parse_dtype(parts[2]);
  if (!dtype) return bad(dtype.error().message);
  if (tvd) {
    if (parts.size() != 3) return bad("unexpected text after the dtype");
    return Workload::tvd(*first, *second, *dtype);
  }
  double eps = 1e-6;
  if (parts.size() > 3) {
    // "-eps1e-05" splits into "eps1e" and "05".
    std::string rest;
    for (std::size_t i = 3; i < parts.size(); ++i) {
      if (!rest.empty()) rest += '-';
      rest += parts[i];
    }
    if (rest.substr(0, 3) != "eps") return bad("unexpected text after the dtype");
    const std::string number = rest.substr(3);
    char* end = nullptr;
    eps = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || !(eps > 0) ||
        !std::isfinite(eps)) {
      return bad("eps must be a positive number");
    }
  }
  return Workload::layer_norm(*second, *first, *dtype, eps);
}

std::string Workload::label() const {
  if (kernel == kLayerNormForm) {
    std::string out = "hidden" + std::to_string(hidden) + "-rows" + std::to_string(rows) + "-" +
                      std::string(to_string(dtype));
    if (eps != 1e-6) out += "-eps" + format_eps(eps);
    return out;
  }
  if (kernel == kTvdForm) {
    return "tokens" + std::to_string(tokens) + "-vocab" + std::to_string(vocab) + "-" +
           std::string(to_string(dtype));
  }
  return opaque_label;
}

json Workload::canonical() const {
  json spec = {{"label", opaque_label}};
  if (kernel == kLayerNormForm) {
    spec = {{"kernel", kernel},
            {"rows", rows},
            {"hidden", hidden},
            {"dtype", to_string(dtype)},
            {"eps", eps}};
  } else if (kernel == kTvdForm) {
    spec = {{"kernel", kernel}, {"tokens", tokens}, {"vocab", vocab}, {"dtype", to_string(dtype)}};
  }
  return json{{"apiVersion", kApiVersion}, {"kind", "Workload"}, {"spec", std::move(spec)}};
}

std::string Workload::digest() const {
  return digest_of(canonical());
}

std::string slug(std::string_view text) {
  std::string out;
  bool dash = false;
  for (char c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      if (dash && !out.empty()) out += '-';
      out += c;
      dash = false;
    } else {
      dash = true;
    }
  }
  return out;
}

namespace {

// A vendor as the public schema names one (^[a-z][a-z0-9_]*$): lower case, runs of anything else
// one '_' ("NVIDIA" -> "nvidia"; what a made-up name becomes still validates).
std::string vendor_name(std::string_view word) {
  std::string out = slug(word);
  std::replace(out.begin(), out.end(), '-', '_');
  if (out.empty() || out[0] < 'a' || out[0] > 'z') out = "v_" + out;
  return out;
}

}  // namespace

Hardware hardware_from_gpu_name(std::string_view gpu_name) {
  Hardware hw;
  std::vector<std::string> words;
  for (auto word : split(gpu_name, ' ')) {
    if (!word.empty()) words.emplace_back(word);
  }
  if (words.empty()) return hw;
  hw.vendor = vendor_name(words[0]);
  std::size_t model_index = 1;
  if (words.size() == 1) {
    hw.product = words[0];
    return hw;
  }
  // "A100-SXM4-80GB": the model is before the first '-', the rest is the form factor.
  std::string model = words[model_index];
  std::string form;
  if (const auto dash = model.find('-'); dash != std::string::npos) {
    form = model.substr(dash + 1);
    model = model.substr(0, dash);
  }
  for (std::size_t i = model_index + 1; i < words.size(); ++i) {
    if (!form.empty()) form += ' ';
    form += words[i];
  }
  hw.product = words[0] + " " + model;
  hw.form_factor = form;
  if (hw.vendor == "nvidia") {
    struct Arch {
      std::string_view prefix;
      std::string_view arch;
    };
    static constexpr Arch kTable[] = {
        {"GB200", "sm_100"}, {"B200", "sm_100"}, {"B100", "sm_100"}, {"GH200", "sm_90"},
        {"H100", "sm_90"},   {"H200", "sm_90"},  {"H800", "sm_90"},  {"H20", "sm_90"},
        {"L40", "sm_89"},    {"L4", "sm_89"},    {"A100", "sm_80"},  {"A800", "sm_80"},
        {"A30", "sm_80"},    {"A40", "sm_86"},   {"A10", "sm_86"},   {"V100", "sm_70"},
        {"T4", "sm_75"},
    };
    for (const auto& entry : kTable) {
      if (model.substr(0, entry.prefix.size()) == entry.prefix) {
        hw.architecture = std::string(entry.arch);
        break;
      }
    }
  }
  return hw;
}

std::string environment_label(const Hardware& hardware) {
  return slug(hardware.form_factor.empty() ? hardware.product
                                           : hardware.product + " " + hardware.form_factor);
}

json environment_identity(const Hardware& hardware) {
  json hw = {{"vendor", hardware.vendor}, {"product", hardware.product}};
  if (!hardware.form_factor.empty()) hw["formFactor"] = hardware.form_factor;
  // "unknown" is what a document says where the schema requires an architecture nobody knows;
  // identities made before it was written there had none.
  if (!hardware.architecture.empty() && hardware.architecture != kUnknownArchitecture) {
    hw["architecture"] = hardware.architecture;
  }
  return json{{"apiVersion", kApiVersion},
              {"kind", "ExecutionEnvironment"},
              {"spec", {{"hardware", std::move(hw)}, {"software", json::object()}}}};
}

json environment_document_spec(const Hardware& hardware) {
  json spec = environment_identity(hardware)["spec"];
  if (!spec["hardware"].contains("architecture")) {
    spec["hardware"]["architecture"] = std::string(kUnknownArchitecture);
  }
  return spec;
}

std::string ComparabilityKey::digest() const {
  return digest_of(json{{"benchmark", benchmark.digest},
                        {"provider", provider.digest},
                        {"workload", workload.digest},
                        {"environment", environment.digest},
                        {"protocol", protocol.digest}});
}

std::string ComparabilityKey::display() const {
  return benchmark.label + " " + provider.label + " " + workload.label + " " + environment.label;
}

std::optional<ExternalId> parse_external_id(std::string_view id) {
  const auto parts = split(id, '/');
  if (parts.size() != 6) return std::nullopt;
  for (auto part : parts) {
    if (part.empty()) return std::nullopt;
  }
  return ExternalId{std::string(parts[0]) + "/" + std::string(parts[1]), std::string(parts[2]),
                    std::string(parts[3]), std::string(parts[4]), std::string(parts[5])};
}

namespace {

// "sha256:7a3b25630f06..." -> "7a3b25630f06"; "" for anything that is not a digest.
std::string digest_stem(std::string_view digest) {
  if (!is_digest(digest)) return {};
  return std::string(digest.substr(7, 12));
}

// What a run of a kernelindex tool (no sourceNative.benchmark) measured: the implementation's
// callable, else the operation its workload names.
std::string benchmark_of_documents(const Record& record) {
  const std::string source =
      record.run.source_native.source.empty() ? "kernelindex" : record.run.source_native.source;
  std::string operation = slug(string_at(record.implementation, {"spec", "callable", "symbol"}));
  if (operation.empty()) {
    const std::string stem =
        digest_stem(string_at(record.workload, {"spec", "operationSpecDigest"}));
    if (!stem.empty()) operation = "op-" + stem;
  }
  return operation.empty() ? std::string() : source + "/" + operation;
}

std::string provider_of_documents(const Record& record) {
  std::string name = slug(string_at(record.implementation, {"metadata", "name"}));
  if (!name.empty()) return name;
  const std::string stem = digest_stem(record.run.implementation_digest);
  return stem.empty() ? std::string() : "impl-" + stem;
}

}  // namespace

std::string workload_label_of(const json& workload_case) {
  const json* spec = workload_case.is_object() && workload_case.contains("spec")
                         ? &workload_case["spec"]
                         : nullptr;
  if (spec == nullptr || !spec->is_object()) return {};
  std::vector<std::string> parts;
  if (const auto axes = spec->find("axes"); axes != spec->end() && axes->is_object()) {
    for (auto it = axes->begin(); it != axes->end(); ++it) {  // sorted by name
      if (!it->is_number_integer()) continue;
      parts.push_back(it.key() + "_" + std::to_string(it->get<std::int64_t>()));
    }
  }
  std::vector<std::string> dtypes;
  if (const auto tensors = spec->find("tensors"); tensors != spec->end() && tensors->is_object()) {
    for (const auto& tensor : *tensors) {
      const std::string dtype = tensor.is_object() ? slug(tensor.value("dtype", "")) : "";
      if (!dtype.empty() && std::find(dtypes.begin(), dtypes.end(), dtype) == dtypes.end()) {
        dtypes.push_back(dtype);
      }
    }
  }
  std::sort(dtypes.begin(), dtypes.end());
  parts.insert(parts.end(), dtypes.begin(), dtypes.end());
  std::string label;
  for (const auto& part : parts) {
    if (part.empty()) continue;
    if (!label.empty()) label += '-';
    label += part;
  }
  // Never one of kernelwatch's own forms ("hidden2_..." would read as hidden<N>-rows<M>).
  if (const auto parsed = Workload::from_label(label);
      !label.empty() && (!parsed || !parsed->opaque())) {
    label = "case-" + label;
  }
  return label;
}

Result<ComparabilityKey> key_of(const Record& record) {
  const auto& run = record.run;
  const auto external = parse_external_id(run.source_native.external_id);
  const auto label = [&](const char* name) -> std::string {
    const auto it = run.metadata.labels.find(name);
    return it == run.metadata.labels.end() ? std::string() : it->second;
  };

  ComparabilityKey key;
  std::string benchmark = run.source_native.benchmark;
  if (benchmark.empty()) benchmark = benchmark_of_documents(record);
  const auto slash = benchmark.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == benchmark.size() ||
      benchmark.find('/', slash + 1) != std::string::npos) {
    if (run.source_native.benchmark.empty()) {
      return fail(ErrorCode::ParseError,
                  "run: no benchmark (set spec.sourceNative.benchmark to <kernel>/<pass>, or "
                  "include the run's ImplementationRevision or WorkloadCase document)");
    }
    return fail(ErrorCode::ParseError, "run.spec.sourceNative.benchmark: \"" + benchmark +
                                           "\" is not <kernel>/<pass> (like tvd/backward)");
  }
  key.benchmark = {benchmark, digest_of(named("benchmark", benchmark))};

  std::string provider = label("provider");
  if (provider.empty() && external) provider = external->provider;
  // A run that names its benchmark names its provider too; only a kernelindex tool's run (no
  // sourceNative.benchmark) takes it from its implementation.
  if (provider.empty() && run.source_native.benchmark.empty()) {
    provider = provider_of_documents(record);
  }
  if (provider.empty()) {
    return fail(ErrorCode::ParseError,
                "run: no provider (set metadata.labels.provider or an externalId of the form "
                "<kernel>/<pass>/<provider>/<environment>/<workload>/<time>)");
  }
  key.provider = {provider, digest_of(named("provider", provider))};

  std::string workload_label = label("workload");
  if (workload_label.empty() && external) workload_label = external->workload;
  if (workload_label.empty()) workload_label = workload_label_of(record.workload);
  if (workload_label.empty()) {
    if (!record.run.workload_digest.empty() && record.workload.is_null()) {
      return fail(ErrorCode::ParseError,
                  "run: no workload (set metadata.labels.workload, or include the WorkloadCase " +
                      record.run.workload_digest + " it names)");
    }
    return fail(ErrorCode::ParseError,
                "run: no workload (set metadata.labels.workload or an externalId of the form "
                "<kernel>/<pass>/<provider>/<environment>/<workload>/<time>)");
  }
  const Workload workload = KW_TRY_WITH(Workload::from_label(workload_label), "run");
  key.workload = {workload.label(), workload.digest()};

  const Hardware& hw = record.environment.hardware;
  key.environment = {environment_label(hw), identity_digest(environment_identity(hw))};

  std::string protocol_label = record.protocol.metadata.name;
  if (protocol_label.empty()) protocol_label = "unnamed";
  key.protocol = {protocol_label, protocol_equivalence(record.protocol.spec)};
  return key;
}

}  // namespace kernelwatch::core
