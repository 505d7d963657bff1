#include "daemon/judge_command.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>

#include "config/config.hpp"
#include "config/environment.hpp"
#include "config/secret.hpp"
#include "core/digest.hpp"
#include "core/json_limits.hpp"
#include "core/url.hpp"
#include "daemon/backtest_command.hpp"
#include "daemon/clock.hpp"
#include "daemon/status_command.hpp"
#include "replay/replay.hpp"
#include "runners/command.hpp"
#include "runners/command_config.hpp"
#include "runners/formats.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

std::string verdict_word(std::string_view kind) {
  if (kind == "regression") return "slower";
  if (kind == "improvement") return "faster";
  if (kind == "in_band") return "same";
  return "ambiguous";
}

// The candidate records: kernelindex lines as they are, or an entry's output recorded as the
// daemon records the entry's runs (so they fall in the keys its runs are stored in).
core::Result<std::vector<core::Record>> candidate_records(const CompareCommandOptions& options,
                                                          const std::vector<std::string>& texts) {
  std::vector<core::Record> records;
  std::optional<runners::CommandEntry> entry;
  if (!options.entry.empty()) {
    if (options.config.empty()) {
      return core::fail(core::ErrorCode::InvalidArgument,
                        "--entry needs the config it is in: --config FILE");
    }
    entry = KW_TRY(command_entry_of(options.config, options.entry));
  }
  const runners::HostIdentity host =
      entry ? runners::system_host_probe()() : runners::HostIdentity{};
  // When each output was recorded, by its digest: the same bytes given twice are recorded at the
  // time they were first read, so they stay one run even when the reads fall in two seconds.
  std::map<std::string, core::Timestamp> recorded_at;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string name = (i == 0 ? options.baseline : options.candidate).string();
    if (entry) {
      const std::string digest = core::sha256_hex(texts[i]);
      const core::Timestamp at = recorded_at.try_emplace(digest, wall_now()).first->second;
      auto runs = runners::runs_from_output(*entry, texts[i], host, at);
      if (!runs) return core::fail(runs.error().code, name + ": " + runs.error().message);
      // The daemon's externalId ends in the second it recorded the run: two outputs read in one
      // second would be taken for one run given twice (and the second never confirms the
      // first). The output's own digest tells them apart; the same bytes twice stay one run.
      const std::string output = "/output-" + digest.substr(0, 12);
      for (auto& record : *runs) {
        std::string& id = record.run.source_native.external_id;
        id = core::utf8_prefix(id, 500 - output.size()) + output;
        records.push_back(std::move(record));
      }
      continue;
    }
    if (options.format != "auto" && options.format != "kernelindex-jsonl") {
      return core::fail(core::ErrorCode::InvalidArgument,
                        name + ": a " + options.format +
                            " output names no key: give --config FILE --entry NAME, the entry "
                            "the daemon runs it as");
    }
    auto parsed = runners::parse_kernelindex_lines(texts[i]);
    if (!parsed) {
      return core::fail(parsed.error().code,
                        name + ": " + parsed.error().message +
                            " (a program's own output needs --config FILE --entry NAME)");
    }
    for (auto& r : *parsed) records.push_back(std::move(r));
  }
  if (records.empty()) {
    return core::fail(core::ErrorCode::ParseError, "no candidate run in the file(s)");
  }
  return records;
}

// As the daemon reads its own: the whole file (not readable by others) or the variable, trailing
// whitespace trimmed; errors name the file or the variable, never the value.
core::Result<std::string> token_of(const CompareCommandOptions& options) {
  if (!options.token_file.empty()) return config::read_secret_file(options.token_file);
  auto token = config::read_secret_env(config::Environment::process(), "KERNELWATCH_TOKEN");
  if (!token) {
    return core::fail(token.error().code,
                      "POST /api/v1/judge needs the daemon's token: --token-file FILE, or "
                      "KERNELWATCH_TOKEN (" +
                          token.error().message + ")");
  }
  return token;
}

bool loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]" ||
         host.rfind("127.", 0) == 0;
}

}  // namespace

core::Result<runners::CommandEntry> command_entry_of(const std::filesystem::path& config,
                                                     const std::string& name) {
  const auto loaded = KW_TRY(config::load_config(config));
  std::string names;
  for (const auto& benchmark : loaded.benchmarks) {
    const auto* command = dynamic_cast<const runners::CommandSource*>(benchmark.source.get());
    if (command == nullptr) continue;
    if (command->entry.name == name) return command->entry;
    names += (names.empty() ? "" : ", ") + command->entry.name;
  }
  return core::fail(
      core::ErrorCode::NotFound,
      config.string() + ": no command entry named \"" + core::utf8_prefix(name, 80) + "\"" +
          (names.empty() ? std::string(" (it has none)") : " (it has " + names + ")"));
}

json judge_answer(std::span<const detectors::CandidateCase> cases,
                  std::span<const core::Run> runs) {
  json out = json::array();
  for (const auto& c : cases) {
    const auto& j = c.judgement;
    const core::Record& deciding = runs[c.records.at(j.deciding_run)].record();
    json doc = {{"benchmark", c.key.benchmark},
                {"provider", c.key.provider},
                {"workload", c.key.workload},
                {"environment", c.key.environment},
                {"protocol", c.key.protocol},
                {"digest", c.key.digest},
                {"known", c.known},
                {"runs", c.runs.size()},
                {"status", core::to_string(deciding.run.status)},
                {"verdict", detectors::to_string(j.verdict.kind)},
                {"confirmation", detectors::to_string(j.confirmation)},
                {"relativeChange", j.verdict.relative_change},
                {"baselineRuns", j.verdict.baseline_runs},
                {"explanation", j.explanation},
                {"openAlert", c.open_alert ? json(c.open_alert->id.short_form()) : json()}};
    doc["median"] = deciding.run.median ? json(deciding.run.median->count()) : json(nullptr);
    if (j.verdict.has_band) {
      doc["band"] = {{"lower", j.verdict.band.lower.count()},
                     {"upper", j.verdict.band.upper.count()},
                     {"center", j.verdict.band.center.count()}};
    } else {
      doc["band"] = nullptr;
    }
    out.push_back(std::move(doc));
  }
  return json{{"stored", 0}, {"cases", std::move(out)}};
}

core::Result<CompareReport> judged_report(const json& answer, bool fail_on_ambiguous,
                                          double threshold,
                                          const std::vector<ThresholdRule>& rules) {
  if (!answer.is_object() || !answer.contains("cases") || !answer["cases"].is_array()) {
    return core::fail(core::ErrorCode::ParseError, "the answer has no \"cases\" array");
  }
  CompareReport report;
  report.threshold = threshold;
  report.format = "kernelindex-jsonl";
  report.basis = "each key's learned band; interval: the band around its centre";
  for (const json& c : answer["cases"]) {
    if (!c.is_object()) return core::fail(core::ErrorCode::ParseError, "a case is not an object");
    const auto text = [&](const char* k) {
      return c.contains(k) && c[k].is_string() ? c[k].get<std::string>() : std::string();
    };
    const auto number = [&](const json& v) { return v.is_number() ? v.get<double>() : 0.0; };
    CompareRow row;
    row.id = text("benchmark") + " " + text("provider") + " " + text("workload") + " " +
             text("environment");
    row.threshold = threshold_for(row.id, threshold, rules);
    const std::string status = text("status");
    row.reason = text("explanation");
    const auto parsed_status = core::parse_run_status(status);
    if (parsed_status && core::outcome_of(*parsed_status) == core::RunOutcome::Failed) {
      row.verdict = "failed";
      row.reason = "the candidate run is " + status + (row.reason.empty() ? "" : ": " + row.reason);
      report.rows.push_back(std::move(row));
      continue;
    }
    row.verdict = verdict_word(text("verdict"));
    // Several candidate runs and a breach still waiting for its confirmation: the daemon would
    // not alert yet, so neither does compare (one run alone is judged as a posted run is).
    if (text("confirmation") == "unconfirmed" && number(c.value("runs", json())) > 1) {
      row.verdict = "ambiguous";
    }
    // In band is "same" only within the threshold: a band wider than that (a noisy key, a young
    // one, a run with a wide spread of its own) cannot tell such a change from noise.
    const double change = number(c.value("relativeChange", json()));
    if (row.verdict == "same" && std::abs(change) > row.threshold) {
      row.verdict = "ambiguous";
      row.reason = "inside the key's band, but " + core::format_change(change) +
                   " from its centre is beyond the threshold " + core::format_share(row.threshold) +
                   ": too noisy to tell" + (row.reason.empty() ? std::string() : "; " + row.reason);
    }
    const bool known = c.contains("known") && c["known"].is_boolean() && c["known"].get<bool>();
    if (!known) {
      row.reason = "a new key: no stored history to judge it by" +
                   (row.reason.empty() ? std::string() : "; " + row.reason);
    }
    detectors::Comparison cmp;
    cmp.method = detectors::CompareMethod::Band;
    cmp.change = change;
    cmp.base_count = static_cast<std::int64_t>(number(c.value("baselineRuns", json())));
    cmp.candidate_count = static_cast<std::int64_t>(number(c.value("runs", json())));
    row.candidate.median_ns = number(c.value("median", json()));
    if (const json band = c.value("band", json()); band.is_object()) {
      const double centre = number(band.value("center", json()));
      row.baseline.median_ns = centre;
      if (centre > 0) {
        cmp.low = number(band.value("lower", json())) / centre - 1;
        cmp.high = number(band.value("upper", json())) / centre - 1;
      }
    }
    row.comparison = cmp;
    report.rows.push_back(std::move(row));
  }
  set_exit_code(report, fail_on_ambiguous);
  return report;
}

int run_judge(const CompareCommandOptions& options, double threshold,
              const std::vector<ThresholdRule>& rules, std::ostream& out, std::ostream& err) {
  const auto refuse = [&](const std::string& why) {
    err << "kernelwatch compare: " << why << '\n';
    return kCompareRefused;
  };
  if (options.baseline.empty()) {
    return refuse(
        "--against needs the candidate's result file (a second one confirms a breach "
        "of the first, as the daemon's rerun does)");
  }
  if (!options.baseline_argv.empty() || options.rounds) {
    return refuse("--against judges result files, not rounds");
  }
  std::vector<std::string> texts;
  for (const auto& path : {options.baseline, options.candidate}) {
    if (path.empty()) continue;
    auto text = read_result_file(path);
    if (!text) return refuse(path.string() + ": " + text.error().message);
    texts.push_back(std::move(*text));
  }
  auto records = candidate_records(options, texts);
  if (!records) return refuse(records.error().message);

  json answer;
  std::string against_name = options.against;
  std::string scheme = options.against.substr(0, std::min<std::size_t>(8, options.against.size()));
  for (char& ch : scheme) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (scheme.rfind("http://", 0) == 0 || scheme.rfind("https://", 0) == 0) {
    auto url = core::parse_url(options.against);
    if (url && url->scheme != "http") {
      return refuse("--against: the daemon's API is plain HTTP on loopback (http://...)");
    }
    if (!url) return refuse("--against: " + url.error().message);
    // Shown without anything but host and port: a URL may carry a secret in any other part.
    against_name = "http://" + url->host + ":" + std::to_string(url->port);
    if (!loopback(url->host)) {
      return refuse("--against: " + against_name +
                    " is not this machine: plain HTTP would send the token in clear (reach a "
                    "remote daemon through an SSH tunnel to its loopback port)");
    }
    json body = json::array();
    for (const auto& r : *records) body.push_back(core::to_json(r));
    const std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    const auto token = token_of(options);
    if (!token) return refuse("--against: " + token.error().message);
    auto reply = http_exchange(*url, "/api/v1/judge", std::chrono::seconds(60), &text, *token);
    if (!reply) return refuse("--against: " + reply.error().message);
    auto parsed = core::parse_json_text(*reply);
    if (!parsed) {
      return refuse("--against: the daemon's answer is not JSON: " + parsed.error().message);
    }
    answer = std::move(*parsed);
  } else {
    const std::filesystem::path db = options.against;
    auto parameters = detector_parameters(options.config);
    if (!parameters) return refuse("--config: " + parameters.error().message);
    auto store = storage::Connection::open(db, storage::OpenMode::ReadOnly);
    if (!store) return refuse("--against: " + store.error().message);
    replay::Options replay_options;
    replay_options.parameters = *parameters;
    auto replayed = replay::replay(*store, replay_options);
    if (!replayed) return refuse("--against: " + replayed.error().message);
    auto runs = core::runs_of(*records);
    if (!runs) return refuse(runs.error().message);
    auto cases = detectors::candidate_cases(*runs);
    for (auto& c : cases) detectors::judge_case(replayed->watch, *parameters, c);
    answer = judge_answer(cases, *runs);
  }
  auto report = judged_report(answer, options.fail_on_ambiguous, threshold, rules);
  if (!report) return refuse("--against: " + report.error().message);
  report->baseline_name = against_name;
  report->candidate_name = options.baseline.string();
  if (report->rows.empty()) return refuse("no candidate case");
  print_compare_report(*report, options.output, out);
  return report->exit_code;
}

}  // namespace kernelwatch::daemon
