#include "core/kernelwatch_protocol.hpp"

#include <charconv>
#include <vector>

#include "core/digest.hpp"
#include "core/json_fields.hpp"
#include "core/record.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

constexpr const char* kQuantiles = "linear interpolation between order statistics (torch.quantile)";
constexpr const char* kFlush =
    "a buffer larger than the last-level cache, read before each repetition";

std::string timed_sentence(const std::string& pass) {
  return "Timed: the " + pass +
         " pass of one kernel case on seeded random inputs (a random upstream gradient for "
         "backward), outputs written, never accumulated.";
}

constexpr const char* kComparable =
    "Comparable only within one kernel, provider, workload, timed pass and hardware.";

std::string notes(const OwnProtocolSettings& s) {
  return timed_sentence(s.pass) + " Repetitions: " + std::to_string(s.warmup_ms) +
         " ms of warm-up, then repeated for " + std::to_string(s.repetition_ms) +
         " ms of kernel time, at least " + std::to_string(s.min_repetitions) + " and at most " +
         std::to_string(s.max_repetitions) + " times. Cache: a " + std::to_string(s.flush_bytes) +
         "-byte buffer, larger than the last-level cache, read before each repetition. " +
         kComparable;
}

// The integers of a text in order ("25 ms ... 100 ms" -> 25, 100).
std::vector<std::int64_t> integers(std::string_view text) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] < '0' || text[i] > '9') {
      ++i;
      continue;
    }
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (ec != std::errc()) return {};
    out.push_back(value);
    i = static_cast<std::size_t>(end - text.data());
  }
  return out;
}

std::optional<std::int64_t> integer_at(const json& spec, std::initializer_list<const char*> path) {
  const json* node = &spec;
  for (const char* name : path) {
    if (!node->is_object()) return std::nullopt;
    const auto it = node->find(name);
    if (it == node->end()) return std::nullopt;
    node = &*it;
  }
  if (!node->is_number_integer()) return std::nullopt;
  return node->get<std::int64_t>();
}

// The harness, timer and pass every own spec starts from; nullopt for other harnesses.
std::optional<OwnProtocolSettings> own_harness(const json& spec) {
  OwnProtocolSettings s;
  s.harness = string_at(spec, {"harness", "name"});
  s.timer = string_at(spec, {"measurement", "timer"});
  if (s.harness != "kernelwatch-cuda-events" && s.harness != "kernelwatch-cpu-steady-clock") {
    return std::nullopt;
  }
  if (string_at(spec, {"comparability", "family"}) != "kernelwatch") return std::nullopt;
  return s;
}

std::optional<OwnProtocolSettings> read_legacy(const json& spec, OwnProtocolSettings s) {
  s.pass = string_at(spec, {"timedPass"});
  const auto warmup = integer_at(spec, {"repetition", "warmupMs"});
  const auto repetition = integer_at(spec, {"repetition", "repetitionMs"});
  const auto least = integer_at(spec, {"repetition", "minRepetitions"});
  const auto most = integer_at(spec, {"repetition", "maxRepetitions"});
  const auto flush = integer_at(spec, {"cache", "flushBytes"});
  if (s.pass.empty() || !warmup || !repetition || !least || !most || !flush) return std::nullopt;
  s.warmup_ms = *warmup;
  s.repetition_ms = *repetition;
  s.min_repetitions = *least;
  s.max_repetitions = *most;
  s.flush_bytes = *flush;
  return s;
}

std::optional<OwnProtocolSettings> read_current(const json& spec, OwnProtocolSettings s) {
  const std::string text = string_at(spec, {"comparability", "notes"});
  constexpr std::string_view kStart = "Timed: the ";
  if (text.rfind(kStart, 0) != 0) return std::nullopt;
  const auto pass_end = text.find(' ', kStart.size());
  if (pass_end == std::string::npos) return std::nullopt;
  s.pass = text.substr(kStart.size(), pass_end - kStart.size());
  const auto numbers = integers(text.substr(pass_end));
  if (numbers.size() != 5) return std::nullopt;
  s.warmup_ms = numbers[0];
  s.repetition_ms = numbers[1];
  s.min_repetitions = numbers[2];
  s.max_repetitions = numbers[3];
  s.flush_bytes = numbers[4];
  return s;
}

json identity_document(const json& spec) {
  return json{{"apiVersion", kApiVersion}, {"kind", "BenchmarkProtocol"}, {"spec", spec}};
}

}  // namespace

json own_protocol_spec(const OwnProtocolSettings& s) {
  const bool cuda = s.timer == "cuda_events";
  return json{
      {"harness", {{"name", s.harness}, {"repository", "kernelwatch"}}},
      {"measurement",
       {{"timer", s.timer},
        {"synchronization", cuda ? "event_synchronize" : "none"},
        {"compileIncluded", false},
        {"setupIncluded", false},
        {"warmupDuration", std::to_string(s.warmup_ms) + "ms"},
        {"inputRegeneration", "none"},
        {"outlierPolicy",
         std::string("none: every repetition counts; p20, median and p80 by ") + kQuantiles},
        {"primaryStatistic", "median"}}},
      {"correctness",
       {{"reference",
         "float64 oracle on the CPU, one run of seeded inputs before timing (fp32 within 1e-5, "
         "bf16 within 1e-2 relative error)"},
        {"comparator", "max_relative_error"}}},
      {"comparability", {{"family", "kernelwatch"}, {"notes", notes(s)}}}};
}

json legacy_own_protocol_spec(const OwnProtocolSettings& s) {
  return json{{"harness", {{"name", s.harness}, {"repository", "kernelwatch"}}},
              {"measurement",
               {{"timer", s.timer},
                {"primaryStatistic", "median"},
                {"statistics", json::array({"p20", "median", "p80"})},
                {"quantiles", kQuantiles}}},
              {"timedPass", s.pass},
              {"repetition",
               {{"warmupMs", s.warmup_ms},
                {"repetitionMs", s.repetition_ms},
                {"minRepetitions", s.min_repetitions},
                {"maxRepetitions", s.max_repetitions}}},
              {"cache", {{"flushBytes", s.flush_bytes}, {"flush", kFlush}}},
              {"comparability",
               {{"family", "kernelwatch"}, {"notes", timed_sentence(s.pass) + " " + kComparable}}}};
}

std::optional<OwnProtocolSettings> read_own_protocol(const json& spec) {
  if (!spec.is_object()) return std::nullopt;
  const auto harness = own_harness(spec);
  if (!harness) return std::nullopt;
  const bool legacy = spec.contains("timedPass");
  const auto settings = legacy ? read_legacy(spec, *harness) : read_current(spec, *harness);
  if (!settings) return std::nullopt;
  // Exactly what the writer makes of these settings, or it is somebody else's document.
  const json expected = legacy ? legacy_own_protocol_spec(*settings) : own_protocol_spec(*settings);
  if (expected != spec) return std::nullopt;
  return settings;
}

std::string protocol_equivalence(const json& spec) {
  if (const auto settings = read_own_protocol(spec)) {
    return identity_digest(identity_document(legacy_own_protocol_spec(*settings)));
  }
  return identity_digest(identity_document(spec));
}

}  // namespace kernelwatch::core
