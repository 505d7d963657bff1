#include "config/config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/duration.hpp"
#include "kernels/catalogue.hpp"
#include "runners/liger_bench_config.hpp"
#include "runners/sources.hpp"
#include "tests/config/config_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::config {
namespace {

namespace fs = std::filesystem;
using core::Pass;
using core::Provider;
using std::chrono::milliseconds;
using json = nlohmann::json;

using namespace kernelwatch::config::test;

TEST(ParseConfig, EmptyObjectGivesTheDocumentedDefaults) {
  const auto config = parse("{}");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->source, "kernelwatch.json");
  EXPECT_EQ(config->storage.path, "/var/lib/kernelwatch/kernelwatch.db");
  EXPECT_EQ(config->http.listen, "127.0.0.1:9477");
  EXPECT_EQ(config->http.host, "127.0.0.1");
  EXPECT_EQ(config->http.port, 9477);
  EXPECT_EQ(config->http.token, "");
  EXPECT_EQ(config->http.token_source.origin, SecretOrigin::None);
  EXPECT_EQ(config->http.public_url, "");
  EXPECT_EQ(config->backend, std::nullopt);
  EXPECT_EQ(config->schedule.interval, std::chrono::minutes(15));
  EXPECT_EQ(config->schedule.jitter, milliseconds(0));
  EXPECT_EQ(config->schedule.at_start, AtStart::Run);
  EXPECT_TRUE(config->benchmarks.empty());
  EXPECT_EQ(config->bench.warmup, milliseconds(25));
  EXPECT_EQ(config->bench.repetitions, milliseconds(100));
  EXPECT_EQ(config->detector.confirm_reruns, 1);
  EXPECT_EQ(config->detector.alert_policy.repeat_interval, std::chrono::hours(24));
  EXPECT_TRUE(config->notifiers.empty());
  EXPECT_TRUE(config->warnings.empty());
}

// docs/CONFIG.md's `detector.*` rows: the setting's name under "detector" and its default as
// written there, without the backticks ("window" -> "20", "repeat_interval" -> "24h").
std::map<std::string, std::string> documented_detector_defaults() {
  std::ifstream in(fs::path(KW_SOURCE_DIR) / "docs" / "CONFIG.md");
  std::map<std::string, std::string> out;
  const std::string prefix = "| `detector.";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) {
      const auto first = cell.find_first_not_of(" `");
      const auto last = cell.find_last_not_of(" `");
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    }
    if (cells.size() < 3) continue;
    out[cells[0].substr(std::string("detector.").size())] = cells[2];
  }
  return out;
}

// Every detector setting the loader reads has its row in docs/CONFIG.md with the default the
// loader gives it, and every documented setting is read: a new setting is a field, its line in
// the loader's table and its row there, and cannot be added to one without the other.
TEST(ParseConfig, EveryDetectorSettingIsDocumentedWithItsDefault) {
  const auto documented = documented_detector_defaults();
  ASSERT_FALSE(documented.empty()) << "docs/CONFIG.md lists no detector.* field";
  const auto config = parse("{}");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const nlohmann::json detector = redacted_json(*config)["detector"];
  std::map<std::string, nlohmann::json> effective;
  for (const auto& [key, value] : detector.items()) {
    if (!value.is_object()) {
      effective[key] = value;
      continue;
    }
    for (const auto& [inner, inner_value] : value.items())
      effective[key + "." + inner] = inner_value;
  }
  for (const auto& [name, value] : effective) {
    const auto doc = documented.find(name);
    if (doc == documented.end()) {
      ADD_FAILURE() << "detector." << name << " is read but not documented";
      continue;
    }
    if (value.is_string() && parse_duration(value.get<std::string>())) {
      // a duration: "1d" is documented as "24h"
      EXPECT_EQ(parse_duration(value.get<std::string>()).value(),
                parse_duration(doc->second).value())
          << "detector." << name;
    } else {
      EXPECT_EQ(value, nlohmann::json::parse(doc->second)) << "detector." << name;
    }
  }
  for (const auto& [name, unused] : documented) {
    EXPECT_TRUE(effective.count(name)) << "detector." << name << " is documented but not read";
  }
  EXPECT_EQ(effective.size(), 41U);
}

// A setting kernelwatch 0.1 had and no longer uses still loads, with a warning that says why.
TEST(ParseConfig, RetiredDetectorSettingsLoadWithAWarning) {
  const auto config = parse(
      R"({"detector": {"controls": {"environment_fraction": 0.6, "environment_min_keys": 4}}})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->warnings.size(), 2U);
  EXPECT_NE(config->warnings[0].find("detector.controls.environment_fraction is no longer used"),
            std::string::npos)
      << config->warnings[0];
  EXPECT_NE(config->warnings[1].find("host-shift"), std::string::npos) << config->warnings[1];
  // Still strict about everything else in the section.
  EXPECT_FALSE(parse(R"({"detector": {"controls": {"environment_fractions": 0.6}}})"));
  EXPECT_FALSE(parse(R"({"detector": {"noise_min_runs": 30}})"));  // more than noise_window
}

TEST(ParseConfig, NotifierDefaultsAreTheDocumentedOnes) {
  const auto config =
      parse(R"({"notifiers": [{"type": "webhook", "url": "https://example.com/x"}]})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const notifiers::Destination& d = config->notifiers.at(0).destination;
  EXPECT_EQ(d.type, "webhook");
  EXPECT_EQ(d.name, "webhook-0");
  EXPECT_EQ(d.url, "https://example.com/x");
  EXPECT_EQ(d.secret, "");
  EXPECT_EQ(d.ca_file, "");
  for (const auto timeout : {d.timeouts.resolve, d.timeouts.connect, d.timeouts.handshake,
                             d.timeouts.write, d.timeouts.read}) {
    EXPECT_EQ(timeout, std::chrono::seconds(10));
  }
  EXPECT_FALSE(d.min_interval.has_value());
  EXPECT_EQ(d.backoff.base, std::chrono::seconds(2));
  EXPECT_EQ(d.backoff.cap, std::chrono::minutes(10));
  EXPECT_EQ(d.backoff.max_age, std::chrono::hours(24));
  EXPECT_EQ(d.insecure_http, notifiers::InsecureHttp::Refuse);
  EXPECT_EQ(config->notifiers[0].url_source.origin, SecretOrigin::Inline);
  EXPECT_EQ(config->notifiers[0].secret_source.origin, SecretOrigin::None);
}

// Alertmanager destinations re-send active alerts every minute unless told otherwise; the field
// belongs to them alone and is at least a second.
TEST(ParseConfig, ResendIntervalIsAnAlertmanagerSettingWithADefaultOfOneMinute) {
  const auto defaults =
      parse(R"({"notifiers": [{"type": "alertmanager", "url": "http://127.0.0.1:9093"}]})");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message;
  EXPECT_EQ(defaults->notifiers.at(0).destination.resend_interval, std::chrono::minutes(1));
  const auto set = parse(
      R"({"notifiers": [{"type": "alertmanager", "url": "http://127.0.0.1:9093",
                         "resend_interval": "20s"}]})");
  ASSERT_TRUE(set.has_value()) << set.error().message;
  EXPECT_EQ(set->notifiers.at(0).destination.resend_interval, std::chrono::seconds(20));
  EXPECT_EQ(redacted_json(*set)["notifiers"][0]["resend_interval"], "20s");
  const std::string webhook = error_of(
      R"({"notifiers": [{"type": "webhook", "url": "https://example.com/x",
                         "resend_interval": "1m"}]})");
  EXPECT_NE(webhook.find("notifiers[0].resend_interval"), std::string::npos) << webhook;
  EXPECT_NE(webhook.find("only alertmanager notifiers re-send"), std::string::npos) << webhook;
  const std::string short_one = error_of(
      R"({"notifiers": [{"type": "alertmanager", "url": "http://127.0.0.1:9093",
                         "resend_interval": "500ms"}]})");
  EXPECT_NE(short_one.find("is shorter than 1s"), std::string::npos) << short_one;
}

TEST(ParseConfig, ReadsTheHttpServerLimits) {
  auto config = parse("{}");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->http.header_timeout, std::chrono::seconds(5));
  EXPECT_EQ(config->http.max_connections_per_client, 128u);
  config = parse(R"({"http": {"header_timeout": "2s", "max_connections_per_client": 16}})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->http.header_timeout, std::chrono::seconds(2));
  EXPECT_EQ(config->http.max_connections_per_client, 16u);
  EXPECT_EQ(redacted_json(*config)["http"]["header_timeout"], "2s");
  EXPECT_NE(error_of(R"({"http": {"header_timeout": "10ms"}})").find("http.header_timeout"),
            std::string::npos)
      << error_of(R"({"http": {"header_timeout": "10ms"}})");
  EXPECT_NE(error_of(R"({"http": {"header_timeout": "1h"}})").find("longer than 5m"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"http": {"max_connections_per_client": 0}})")
                .find("http.max_connections_per_client"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"http": {"max_connections_per_client": 1000}})")
                .find("http.max_connections_per_client"),
            std::string::npos);
}

TEST(ParseConfig, ReadsEveryField) {
  const auto env = Environment::from_map(
      {{"SLACK_URL", kSlackUrl}, {"HOOK_KEY", kSigningKey}, {"KW_TOKEN", kToken}});
  const auto config = parse(R"({
    "storage": {"path": "/srv/kw/kw.db"},
    "http": {"listen": "[::1]:8080", "token_env": "KW_TOKEN",
             "public_url": "https://kw.example.com/"},
    "backend": "cpu",
    "schedule": {"interval": "1.5h", "jitter": "30s", "run_at_start": false},
    "benchmarks": [{"kernel": "tvd", "pass": "full", "providers": ["kernelwatch-reference"],
                    "workloads": ["tokens1024-vocab4096-fp32", "tokens2048-vocab4096-bf16"]}],
    "bench": {"warmup": "10ms", "repetitions": "1s"},
    "detector": {"window": 30, "min_history": 8, "big_step_min_history": 3,
                 "big_step_threshold": 0.3, "min_relative_margin": 0.01, "spread_factor": 2.5,
                 "trust_runs": 12, "young_jitter_us": 80, "trusted_relative_margin": 0.005,
                 "noise_window": 16, "noise_min_runs": 6, "noise_quantile": 0.8,
                 "noise_factor": 1.5, "late_confirm_threshold": 0.07,
                 "persist_runs": 4, "persist_trim": 1, "persist_spread": 2.5,
                 "persist_min_change": 0.2, "persist_band_factor": 1.5,
                 "confirm_reruns": 2, "repeat_interval": "12h",
                 "drift": {"window": 25, "min_runs": 12, "z_threshold": 3.5,
                           "min_total_change": 0.05},
                 "controls": {"reference_providers": ["torch"], "cycle_gap": "30m",
                              "kept_cycles": 6, "moved_threshold": 0.04,
                              "host_duration_ratio": 3, "host_share": 0.3, "host_fraction": 0.2,
                              "host_min_keys": 4}},
    "notifiers": [
      {"type": "slack", "url_env": "SLACK_URL", "min_interval": "2s"},
      {"type": "webhook", "url": "http://127.0.0.1:9000/hook", "secret_env": "HOOK_KEY",
       "timeout": "5s", "backoff": {"base": "1s", "cap": "5m", "max_age": "6h"}},
      {"type": "alertmanager", "name": "am", "url": "http://alertmanager.internal:9093",
       "allow_insecure_http": true}
    ]
  })",
                            env);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->storage.path, "/srv/kw/kw.db");
  EXPECT_EQ(config->http.host, "::1");
  EXPECT_EQ(config->http.port, 8080);
  EXPECT_EQ(config->http.token, kToken);
  EXPECT_EQ(config->http.public_url, "https://kw.example.com");
  EXPECT_EQ(config->backend, kernels::Backend::Cpu);
  EXPECT_EQ(config->schedule.interval, std::chrono::minutes(90));
  EXPECT_EQ(config->schedule.jitter, std::chrono::seconds(30));
  EXPECT_EQ(config->schedule.at_start, AtStart::Wait);
  ASSERT_EQ(config->benchmarks.size(), 1U);
  EXPECT_EQ(own_kernels(config->benchmarks[0]).pass, Pass::Full);
  EXPECT_EQ(own_kernels(config->benchmarks[0]).providers,
            std::vector<Provider>{Provider::Reference});
  EXPECT_EQ(own_kernels(config->benchmarks[0]).workloads.at(1).dtype, core::DType::Bf16);
  EXPECT_EQ(config->bench.warmup, milliseconds(10));
  EXPECT_EQ(config->bench.repetitions, std::chrono::seconds(1));
  const detectors::DetectorParameters& d = config->detector.parameters;
  EXPECT_EQ(d.band.window, 30U);
  EXPECT_EQ(d.band.min_history, 8U);
  EXPECT_EQ(d.band.big_step_min_history, 3U);
  EXPECT_EQ(d.band.big_step_threshold, 0.3);
  EXPECT_EQ(d.band.min_relative_margin, 0.01);
  EXPECT_EQ(d.band.spread_factor, 2.5);
  EXPECT_EQ(d.band.trust_runs, 12U);
  EXPECT_EQ(d.band.young_jitter, std::chrono::microseconds(80));
  EXPECT_EQ(d.band.trusted_relative_margin, 0.005);
  EXPECT_EQ(d.band.noise_window, 16U);
  EXPECT_EQ(d.band.noise_min_runs, 6U);
  EXPECT_EQ(d.band.noise_quantile, 0.8);
  EXPECT_EQ(d.band.noise_factor, 1.5);
  EXPECT_EQ(d.band.late_confirm_threshold, 0.07);
  EXPECT_EQ(d.band.persist_runs, 4u);
  EXPECT_EQ(d.band.persist_trim, 1u);
  EXPECT_EQ(d.band.persist_spread, 2.5);
  EXPECT_EQ(d.band.persist_min_change, 0.2);
  EXPECT_EQ(d.band.persist_band_factor, 1.5);
  EXPECT_EQ(config->detector.confirm_reruns, 2);
  EXPECT_EQ(config->detector.alert_policy.repeat_interval, std::chrono::hours(12));
  EXPECT_EQ(d.drift.window, 25U);
  EXPECT_EQ(d.drift.min_runs, 12U);
  EXPECT_EQ(d.drift.z_threshold, 3.5);
  EXPECT_EQ(d.drift.min_total_change, 0.05);
  EXPECT_EQ(d.controls.reference_providers, std::vector<std::string>{"torch"});
  EXPECT_EQ(d.controls.cycle_gap, std::chrono::minutes(30));
  EXPECT_EQ(d.controls.kept_cycles, 6U);
  EXPECT_EQ(d.controls.moved_threshold, 0.04);
  EXPECT_EQ(d.controls.host_duration_ratio, 3.0);
  EXPECT_EQ(d.controls.host_share, 0.3);
  EXPECT_EQ(d.controls.host_fraction, 0.2);
  EXPECT_EQ(d.controls.host_min_keys, 4U);
  ASSERT_EQ(config->notifiers.size(), 3U);
  const notifiers::Destination& slack = config->notifiers[0].destination;
  EXPECT_EQ(slack.type, "slack");
  EXPECT_EQ(slack.name, "slack-0");
  EXPECT_EQ(slack.url, kSlackUrl);
  EXPECT_EQ(slack.min_interval, std::chrono::seconds(2));
  const notifiers::Destination& webhook = config->notifiers[1].destination;
  EXPECT_EQ(webhook.type, "webhook");
  EXPECT_EQ(webhook.name, "webhook-1");
  EXPECT_EQ(webhook.secret, kSigningKey);
  for (const auto timeout :
       {webhook.timeouts.resolve, webhook.timeouts.connect, webhook.timeouts.handshake,
        webhook.timeouts.write, webhook.timeouts.read}) {
    EXPECT_EQ(timeout, std::chrono::seconds(5));
  }
  EXPECT_EQ(webhook.backoff.base, std::chrono::seconds(1));
  EXPECT_EQ(webhook.backoff.cap, std::chrono::minutes(5));
  EXPECT_EQ(webhook.backoff.max_age, std::chrono::hours(6));
  const notifiers::Destination& am = config->notifiers[2].destination;
  EXPECT_EQ(am.type, "alertmanager");
  EXPECT_EQ(am.name, "am");
  EXPECT_EQ(am.insecure_http, notifiers::InsecureHttp::Allow);
}

TEST(ParseConfig, ListenAddresses) {
  const struct {
    const char* listen;
    const char* host;
    int port;
  } good[] = {{"127.0.0.1:9477", "127.0.0.1", 9477},
              {"0.0.0.0:0", "0.0.0.0", 0},
              {"localhost:65535", "localhost", 65535},
              {"[::]:80", "::", 80}};
  for (const auto& c : good) {
    const auto config = parse(std::string(R"({"http": {"listen": ")") + c.listen + "\"}}");
    ASSERT_TRUE(config.has_value()) << c.listen << ": " << config.error().message;
    EXPECT_EQ(config->http.host, c.host);
    EXPECT_EQ(config->http.port, c.port);
  }
  EXPECT_EQ(error_of(R"({"http": {"listen": "127.0.0.1"}})"),
            "kernelwatch.json: http.listen: \"127.0.0.1\" is not host:port like "
            "\"127.0.0.1:9477\" or \"[::1]:9477\" (the port is missing)");
  EXPECT_EQ(error_of(R"({"http": {"listen": "::1:9477"}})"),
            "kernelwatch.json: http.listen: \"::1:9477\" is not host:port like "
            "\"127.0.0.1:9477\" or \"[::1]:9477\" (write IPv6 addresses in brackets)");
  EXPECT_EQ(error_of(R"({"http": {"listen": "127.0.0.1:65536"}})"),
            "kernelwatch.json: http.listen: \"127.0.0.1:65536\" is not host:port like "
            "\"127.0.0.1:9477\" or \"[::1]:9477\" (the port is above 65535)");
  EXPECT_EQ(error_of(R"({"http": {"listen": "localhost:http"}})"),
            "kernelwatch.json: http.listen: \"localhost:http\" is not host:port like "
            "\"127.0.0.1:9477\" or \"[::1]:9477\"");
}

TEST(ParseConfig, EmptyBenchmarkListIsValid) {
  const auto config = parse(R"({"benchmarks": []})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_TRUE(config->benchmarks.empty());
}

TEST(ParseConfig, BenchmarkProvidersDefaultToBoth) {
  const auto config = parse(R"({"benchmarks": [{"kernel": "layer_norm", "pass": "forward",
                                 "workloads": ["hidden4096-rows512-bf16-eps1e-05"]}]})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(own_kernels(config->benchmarks.at(0)).providers,
            (std::vector<Provider>{Provider::Fused, Provider::Reference}));
  EXPECT_EQ(own_kernels(config->benchmarks.at(0)).workloads.at(0).eps, 1e-5);
}

TEST(ParseConfig, RejectsUnknownFieldsWithTheirPath) {
  EXPECT_EQ(error_of(R"({"storge": {}})"), "kernelwatch.json: storge: unknown field");
  EXPECT_EQ(error_of(R"({"schedule": {"intervall": "15m"}})"),
            "kernelwatch.json: schedule.intervall: unknown field");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "webhook", "url": "https://example.com/a"},
                                       {"type": "slack", "uurl": "x"}]})"),
            "kernelwatch.json: notifiers[1].uurl: unknown field");
  EXPECT_EQ(error_of(R"({"detector": {"drift": {"zthreshold": 3}}})"),
            "kernelwatch.json: detector.drift.zthreshold: unknown field");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "forward",
                                         "workloads": ["tokens1-vocab2-fp32"], "dtype": "x"}]})"),
            "kernelwatch.json: benchmarks[0].dtype: unknown field");
  // An inline token is not a field: tokens come from files or the environment only.
  EXPECT_EQ(error_of(R"({"http": {"token": "abc"}})"),
            "kernelwatch.json: http.token: unknown field");
}

TEST(ParseConfig, RejectsWrongTypes) {
  EXPECT_EQ(error_of("[]"), "kernelwatch.json: expected an object at the top level, got array");
  EXPECT_EQ(error_of(R"({"storage": "/tmp/x"})"),
            "kernelwatch.json: storage: expected an object, got string");
  EXPECT_EQ(error_of(R"({"schedule": {"run_at_start": "yes"}})"),
            "kernelwatch.json: schedule.run_at_start: expected true or false, got string");
  EXPECT_EQ(error_of(R"({"schedule": {"interval": 900}})"),
            "kernelwatch.json: schedule.interval: expected a duration string like \"15m\", got "
            "number");
  EXPECT_EQ(error_of(R"({"detector": {"window": "20"}})"),
            "kernelwatch.json: detector.window: expected an integer, got string");
  EXPECT_EQ(error_of(R"({"detector": {"window": 20.5}})"),
            "kernelwatch.json: detector.window: expected an integer, got number");
  EXPECT_EQ(error_of(R"({"detector": {"window": 20.0}})"),
            "kernelwatch.json: detector.window: expected an integer, got number");
  EXPECT_EQ(error_of(R"({"detector": {"spread_factor": "3"}})"),
            "kernelwatch.json: detector.spread_factor: expected a number, got string");
  EXPECT_EQ(error_of(R"({"benchmarks": {}})"),
            "kernelwatch.json: benchmarks: expected an array, got object");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "slack", "url": 12}]})"),
            "kernelwatch.json: notifiers[0].url: expected a string, got number");
  EXPECT_EQ(error_of(R"({"backend": null})"),
            "kernelwatch.json: backend: expected a string, got null");
}

TEST(ParseConfig, RejectsBadDurationsAndRanges) {
  EXPECT_EQ(error_of(R"({"schedule": {"interval": "15 minutes"}})"),
            "kernelwatch.json: schedule.interval: \"15 minutes\" is not a duration like \"15m\" "
            "or \"30s\"");
  EXPECT_EQ(
      error_of(R"({"schedule": {"interval": "15"}})"),
      "kernelwatch.json: schedule.interval: \"15\" is not a duration like \"15m\" or \"30s\"");
  EXPECT_EQ(error_of(R"({"schedule": {"interval": "500ms"}})"),
            "kernelwatch.json: schedule.interval: 500ms is shorter than 1s");
  EXPECT_EQ(error_of(R"({"schedule": {"interval": "1m", "jitter": "1m"}})"),
            "kernelwatch.json: schedule.jitter: 1m is not shorter than schedule.interval (1m)");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "webhook", "url": "https://e.com/",
                                        "backoff": {"base": "-1s"}}]})"),
            "kernelwatch.json: notifiers[0].backoff.base: \"-1s\" is not a duration like \"15m\" "
            "or \"30s\"");
  EXPECT_EQ(error_of(R"({"detector": {"confirm_reruns": 6}})"),
            "kernelwatch.json: detector.confirm_reruns: 6 is not between 0 and 5");
  EXPECT_EQ(error_of(R"({"detector": {"confirm_reruns": -1}})"),
            "kernelwatch.json: detector.confirm_reruns: -1 is not between 0 and 5");
  EXPECT_EQ(error_of(R"({"detector": {"confirm_reruns": 18446744073709551615}})"),
            "kernelwatch.json: detector.confirm_reruns: 18446744073709551615 is not between 0 and "
            "5");
  EXPECT_EQ(error_of(R"({"detector": {"window": 4}})"),
            "kernelwatch.json: detector.min_history: 5 is larger than detector.window (4)");
  EXPECT_EQ(error_of(R"({"detector": {"min_relative_margin": 1.5}})"),
            "kernelwatch.json: detector.min_relative_margin: 1.5 is not at least 0.0 and at most "
            "1.0");
  EXPECT_EQ(error_of(R"({"backend": "gpu"})"),
            "kernelwatch.json: backend: \"gpu\" is not one of auto, cuda, cpu");
  EXPECT_EQ(error_of(R"({"detector": {"young_prior": "sometimes"}})"),
            "kernelwatch.json: detector.young_prior: expected \"auto\", \"always\" or "
            "\"never\", got \"sometimes\"");
  EXPECT_EQ(error_of(R"({"detector": {"young_tail": 0}})"),
            "kernelwatch.json: detector.young_tail: 0 is not above 0.0 and at most 0.5");
}

// The young-key settings are read into the band's parameters (each differs from its default).
TEST(ParseConfig, ReadsTheYoungKeySettings) {
  const auto config = parse(R"({"detector": {"young_prior": "never", "young_resolution_ns": 250,
      "young_spread_weight": 4, "young_tail": 0.01, "young_tail_alone": 0.001}})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const auto& band = config->detector.parameters.band;
  EXPECT_EQ(band.young_prior, detectors::YoungPrior::Never);
  EXPECT_EQ(band.young_resolution, std::chrono::nanoseconds(250));
  EXPECT_DOUBLE_EQ(band.young_spread_weight, 4);
  EXPECT_DOUBLE_EQ(band.young_tail, 0.01);
  EXPECT_DOUBLE_EQ(band.young_tail_alone, 0.001);
  EXPECT_EQ(redacted_json(*config)["detector"]["young_prior"], "never");
}

TEST(ParseConfig, RejectsBadBenchmarks) {
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "layer_norm", "pass": "backward",
                                         "workloads": ["hidden-rows4096-fp32"]}]})"),
            "kernelwatch.json: benchmarks[0].workloads[0]: workload \"hidden-rows4096-fp32\": "
            "expected hidden<N>-rows<M>-<dtype> with positive integers");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "forward",
                                         "workloads": ["hidden2048-rows2048-fp32"]}]})"),
            "kernelwatch.json: benchmarks[0].workloads[0]: \"hidden2048-rows2048-fp32\" is a "
            "layer_norm workload, not a tvd one");
  // An eps its runs could not carry in their workload label (the daemon would store nothing).
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "layer_norm", "pass": "forward",
                                         "workloads": ["hidden512-rows64-fp32-eps1000000"]}]})"),
            "kernelwatch.json: benchmarks[0].workloads[0]: \"hidden512-rows64-fp32-eps1000000\" "
            "would be recorded as \"hidden512-rows64-fp32-eps1e+06\": workload "
            "\"hidden512-rows64-fp32-eps1e+06\": only a-z, 0-9, '-', '_' and '.' are allowed");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "forward",
                                         "workloads": ["softmax-4096"]}]})"),
            "kernelwatch.json: benchmarks[0].workloads[0]: \"softmax-4096\" is not a tvd "
            "workload like \"tokens1024-vocab4096-fp32\"");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "softmax", "pass": "forward",
                                         "workloads": ["x"]}]})"),
            "kernelwatch.json: benchmarks[0].kernel: \"softmax\" is not one of " +
                kernels::kernel_names());
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "sideways",
                                         "workloads": ["x"]}]})"),
            "kernelwatch.json: benchmarks[0].pass: \"sideways\" is not one of forward, backward, "
            "full");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "forward",
                                         "providers": ["liger"],
                                         "workloads": ["tokens1-vocab2-fp32"]}]})"),
            "kernelwatch.json: benchmarks[0].providers[0]: \"liger\" is not one of "
            "kernelwatch-fused, kernelwatch-reference");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "forward"}]})"),
            "kernelwatch.json: benchmarks[0]: workloads is missing");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "forward", "workloads": []}]})"),
            "kernelwatch.json: benchmarks[0].workloads: lists no workload");
  EXPECT_EQ(error_of(R"({"benchmarks": [
                {"kernel": "tvd", "pass": "forward", "workloads": ["tokens1-vocab2-fp32"]},
                {"kernel": "tvd", "pass": "forward", "workloads": ["tokens4-vocab2-fp32"]}]})"),
            "kernelwatch.json: benchmarks[1]: tvd/forward is already listed in benchmarks[0]");
}

TEST(ParseConfig, RejectsBadNotifierUrlsAndSecrets) {
  testing::TempDir dir;
  const auto env = Environment::from_map({{"SLACK_URL", kSlackUrl}, {"BAD_URL", "ftp://x/y"}});
  const auto in_dir = [&](const std::string& text) {
    const auto config = parse_config(text, "kernelwatch.json", env, dir.path());
    return config ? std::string("(no error)") : config.error().message;
  };
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "slack"}]})", env),
            "kernelwatch.json: notifiers[0]: exactly one of url, url_file, url_env");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "slack", "url": ")" + kSlackUrl +
                         R"(", "url_env": "SLACK_URL"}]})",
                     env),
            "kernelwatch.json: notifiers[0]: exactly one of url, url_file, url_env");
  EXPECT_EQ(error_of(R"({"notifiers": [{"url_env": "SLACK_URL"}]})", env),
            "kernelwatch.json: notifiers[0]: type is missing");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "email", "url_env": "SLACK_URL"}]})", env),
            "kernelwatch.json: notifiers[0].type: \"email\" is not one of slack, webhook, "
            "alertmanager, ntfy");
  const auto missing =
      parse(R"({"notifiers": [{"type": "slack", "url_env": "SLACK_URL_2"}]})", env);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, core::ErrorCode::NotFound);
  EXPECT_EQ(missing.error().message,
            "kernelwatch.json: notifiers[0].url_env: environment variable SLACK_URL_2 is not set");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "webhook", "url_env": "BAD_URL"}]})", env),
            "kernelwatch.json: notifiers[0].url_env: the value of BAD_URL is not an http:// or "
            "https:// URL");
  EXPECT_EQ(
      error_of(R"({"notifiers": [{"type": "webhook", "url": "http://hooks.example.com/x"}]})"),
      "kernelwatch.json: notifiers[0].url: the value is plain http:// to a host other than "
      "loopback; use https:// or set allow_insecure_http: true");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "slack", "url_env": "SLACK_URL",
                                        "secret_env": "SLACK_URL"}]})",
                     env),
            "kernelwatch.json: notifiers[0].secret_env: only webhook or ntfy notifiers take a "
            "secret");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "webhook", "url_env": "SLACK_URL",
                                        "secret_file": "k", "secret_env": "SLACK_URL"}]})",
                     env),
            "kernelwatch.json: notifiers[0]: at most one of secret_file, secret_env");
  EXPECT_EQ(in_dir(R"({"notifiers": [{"type": "webhook", "url_env": "SLACK_URL",
                                      "secret_file": "missing-key"}]})"),
            "kernelwatch.json: notifiers[0].secret_file: cannot read secret file \"" +
                (dir / "missing-key").string() + "\": No such file or directory");
  EXPECT_EQ(in_dir(R"({"http": {"token_file": "no-token"}})"),
            "kernelwatch.json: http.token_file: cannot read secret file \"" +
                (dir / "no-token").string() + "\": No such file or directory");
  EXPECT_EQ(error_of(R"({"notifiers": [{"type": "slack", "url_env": "SLACK_URL"},
                                       {"type": "slack", "name": "slack-0", "url_env": "SLACK_URL"}]})",
                     env),
            "kernelwatch.json: notifiers[1].name: \"slack-0\" is already the name of notifiers[0]");
}

TEST(ParseConfig, ReportsMalformedJsonWithItsPosition) {
  const auto config = parse("{\n  \"storage\": {\n    \"path\": \"x\",\n  }\n}");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code, core::ErrorCode::ParseError);
  EXPECT_EQ(config.error().message,
            "kernelwatch.json: line 4 column 3: malformed JSON: syntax error while parsing "
            "object key - unexpected '}'; expected string literal");
  EXPECT_EQ(error_of(""),
            "kernelwatch.json: line 1 column 1: malformed JSON: syntax error while parsing value "
            "- unexpected end of input; expected '[', '{', or a literal");
  // The "last read" echo of nlohmann's message is cut: it may be part of a secret.
  EXPECT_EQ(error_of("{\"notifiers\": [{\"url\": \"https://hooks.example.com/abc\n\"}]}"),
            "kernelwatch.json: line 1 column 54: malformed JSON: syntax error while parsing value "
            "- invalid string: control character U+000A (LF) must be escaped to \\u000A or "
            "\\n");
}

// Every way a secret could reach a message: pasted into the wrong field, a bad value behind a
// variable, an unterminated string in malformed JSON, a URL as a key.
TEST(Secrets, NeverAppearInErrorMessages) {
  testing::TempDir dir;
  write_private(dir / "hook", kWebhookUrl + " extra\n");
  write_private(dir / "open", kSigningKey);
  fs::permissions(dir / "open", fs::perms::others_read, fs::perm_options::add);
  const auto env = Environment::from_map({{"SLACK_URL", "ftp" + kSlackUrl.substr(5)},
                                          {"HTTP_SLACK", "http" + kSlackUrl.substr(5)},
                                          {"TOKEN", kToken}});
  const std::vector<std::string> documents = {
      R"({"notifiers": [{"type": "slack", "url_env": ")" + kSlackUrl + R"("}]})",
      R"({"notifiers": [{"type": "slack", "url_file": ")" + kSlackUrl + R"("}]})",
      R"({"notifiers": [{"type": "slack", "url_env": "SLACK_URL"}]})",
      R"({"notifiers": [{"type": "slack", "url_env": "HTTP_SLACK"}]})",
      R"({"notifiers": [{"type": "webhook", "url_file": "hook"}]})",
      R"({"notifiers": [{"type": "webhook", "url": "https://e.com/", "secret_file": "open"}]})",
      R"({"notifiers": [{"type": ")" + kSlackUrl + R"(", "url": "https://e.com/"}]})",
      R"({"notifiers": [{"type": "slack", "name": ")" + kSlackUrl +
          R"(", "url": "https://e.com/"}]})",
      R"({"notifiers": [{")" + kSlackUrl + R"(": 1}]})",
      R"({"notifiers": [{"type": "slack", "url": ")" + kSlackUrl + R"(", "url_env": "TOKEN"}]})",
      R"({"notifiers": [{"type": "slack", "url": "http://)" + kSlackUrl.substr(8) + R"("}]})",
      R"({"notifiers": [{"type": "slack", "url": ")" + kSlackUrl + "\n",
      R"({"notifiers": [{"type": "slack", "url": ")" + kSlackUrl + R"(" "x"}]})",
      R"({"http": {"listen": ")" + kSlackUrl + R"("}})",
      R"({"http": {"public_url": "ftp://)" + kToken + R"("}})",
      R"({"benchmarks": [{"kernel": ")" + kWebhookUrl +
          R"(", "pass": "forward", "workloads": []}]})",
      R"({"backend": ")" + kWebhookUrl + R"("})",
      R"({"http": {"token_env": "TOKEN", "listen": "bad"}})",
  };
  for (const auto& document : documents) {
    const auto config = parse_config(document, "kernelwatch.json", env, dir.path());
    ASSERT_FALSE(config.has_value()) << document;
    expect_no_secret(config.error().message);
  }
}

TEST(Secrets, AreRedactedInTheEffectiveConfig) {
  testing::TempDir dir;
  write_private(dir / "key", kSigningKey + "\n");
  const auto env = Environment::from_map({{"SLACK_URL", kSlackUrl}, {"KW_TOKEN", kToken}});
  const auto config = parse_config(R"({
    "http": {"token_env": "KW_TOKEN"},
    "notifiers": [
      {"type": "slack", "url_env": "SLACK_URL"},
      {"type": "webhook", "url": ")" + kWebhookUrl +
                                       R"(", "secret_file": "key"}
    ]
  })",
                                   "kernelwatch.json", env, dir.path());
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const auto redacted = redacted_json(*config);
  const std::string text = redacted.dump();
  expect_no_secret(text);
  for (const auto& warning : config->warnings) expect_no_secret(warning);
  EXPECT_EQ(redacted["http"]["token"], "<redacted>");
  EXPECT_EQ(redacted["http"]["token_env"], "KW_TOKEN");
  EXPECT_EQ(redacted["notifiers"][0]["url"], "<redacted>");
  EXPECT_EQ(redacted["notifiers"][0]["url_env"], "SLACK_URL");
  EXPECT_EQ(redacted["notifiers"][1]["url"], "<redacted>");
  EXPECT_EQ(redacted["notifiers"][1]["secret"], "<redacted>");
  EXPECT_EQ(redacted["notifiers"][1]["secret_file"], (dir / "key").string());
  EXPECT_EQ(redacted["schedule"]["interval"], "15m");
  EXPECT_EQ(redacted["detector"]["repeat_interval"], "1d");
  // The secrets really were resolved: the redaction is not an artefact of empty values.
  EXPECT_EQ(config->notifiers[0].destination.url, kSlackUrl);
  EXPECT_EQ(config->notifiers[1].destination.secret, kSigningKey);
}

TEST(Secrets, RedactedExampleReloadsWithoutTheSecretFields) {
  const auto config = load_config(source_file("kernelwatch.example.json"),
                                  Environment::from_map({{"KERNELWATCH_TOKEN", kToken}}));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  auto redacted = redacted_json(*config);
  expect_no_secret(redacted.dump());
  redacted["http"].erase("token");
  const auto again = parse_config(redacted.dump(), "redacted", Environment::from_map({}), "/");
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(redacted_json(*again)["benchmarks"], redacted["benchmarks"]);
  EXPECT_EQ(redacted_json(*again)["detector"], redacted["detector"]);
}

// The logged config of an entry of every registered runner (and of kernelwatch's own kernels) is
// a config that reads back as the same entries. A runner added to runners/sources.cpp without an
// entry here fails the first check.
TEST(Secrets, TheLoggedEntryOfEveryRunnerReadsBackAsItself) {
  const auto config = parse(R"({"benchmarks": [
      {"kernel": "tvd", "pass": "forward", "workloads": ["tokens1024-vocab4096-fp32"]},
      {"kernel": "tvd", "pass": "backward", "workloads": ["tokens1024-vocab4096-fp32"],
       "gpus": [2, "GPU-8c3a0d4e-1f2b-4c5d-9e6f-0a1b2c3d4e5f"]},
      {"runner": "liger-bench", "python": "python3", "kernel": "tvd", "pass": "backward",
       "providers": ["torch", "liger"], "workloads": ["tokens1024-vocab4096-fp32"],
       "gpus": [1, 3], "interval": "1h"},
      {"runner": "liger-scripts", "name": "liger-rms", "checkout": "/opt/Liger-Kernel",
       "python": "python3", "scripts": ["benchmark/scripts/benchmark_rms_norm.py"],
       "env": {"CUDA_VISIBLE_DEVICES": "0", "HF_TOKEN": "secret"}, "confirm": "next"},
      {"runner": "command", "name": "gemm", "command": ["./bench_gemm", "--benchmark_format=json"],
       "format": "gbench-json", "output": "stdout", "env": {"CUDA_VISIBLE_DEVICES": "2"}},
      {"runner": "command", "name": "saxpy", "command": ["./saxpy"], "format": "gbench-json",
       "output": "stdout", "gpus": "all"}]})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  std::set<std::string_view> covered;
  for (const auto& b : config->benchmarks) covered.insert(b.runner());
  for (const auto runner : runners::source_catalogue().runners()) {
    EXPECT_TRUE(covered.contains(runner)) << runner << " has no entry in this test";
  }
  const nlohmann::json logged = redacted_json(*config)["benchmarks"];
  expect_no_secret(logged.dump());
  // kernelwatch's own kernels: `gpus` as given; none when absent (every GPU of a multi-GPU host).
  EXPECT_FALSE(logged[0].contains("gpus")) << logged[0].dump();
  EXPECT_EQ(logged[1]["gpus"],
            nlohmann::json::parse(R"([2, "GPU-8c3a0d4e-1f2b-4c5d-9e6f-0a1b2c3d4e5f"])"))
      << logged[1].dump();
  const auto again = parse(nlohmann::json{{"benchmarks", logged}}.dump());
  ASSERT_TRUE(again.has_value()) << again.error().message << "\n" << logged.dump(2);
  EXPECT_EQ(redacted_json(*again)["benchmarks"], logged);
}

TEST(ParseConfig, LigerBenchEntryParsesItsFields) {
  const auto config = parse(R"({"benchmarks": [
      {"runner": "liger-bench", "python": "venv/bin/python3", "kernel": "tvd", "pass": "backward",
       "providers": ["torch", "liger"], "workloads": ["tokens16384-vocab65536-fp32"],
       "timeout": "90s"},
      {"kernel": "tvd", "pass": "backward", "workloads": ["tokens1024-vocab4096-fp32"]}]})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->benchmarks.size(), 2U);  // the same kernel and pass under two runners
  const auto& b = config->benchmarks[0];
  EXPECT_EQ(b.runner(), "liger-bench");
  ASSERT_NE(b.source_as<runners::LigerBenchSource>(), nullptr);
  const runners::LigerBenchSource& liger = *b.source_as<runners::LigerBenchSource>();
  EXPECT_EQ(liger.options.python, kBaseDir / "venv/bin/python3");  // relative to the config file
  EXPECT_EQ(liger.options.timeout, std::chrono::seconds(90));
  EXPECT_TRUE(liger.options.script.empty());
  EXPECT_EQ(b.source_as<runners::HarnessSource>(), nullptr);  // not kernelwatch's own kernels
  EXPECT_EQ(config->benchmarks[1].runner(), "");
  EXPECT_NE(config->benchmarks[1].source_as<runners::HarnessSource>(), nullptr);
}

TEST(ParseConfig, LigerBenchEntryErrorsNameThePath) {
  const std::string head = R"({"benchmarks": [{"runner": "liger-bench", "kernel": "tvd", )"
                           R"("pass": "backward", "workloads": ["tokens16384-vocab65536-fp32"], )";
  EXPECT_EQ(error_of(R"({"benchmarks": [{"runner": "nvbench", "kernel": "tvd", "pass": "forward",
                        "workloads": ["tokens1024-vocab4096-fp32"]}]})"),
            "kernelwatch.json: benchmarks[0].runner: \"nvbench\" is not a known runner (known: "
            "liger-bench, liger-scripts, command; leave it out for kernelwatch's own kernels)");
  EXPECT_EQ(error_of(head + R"("providers": ["torch"]}]})"),
            "kernelwatch.json: benchmarks[0]: python is missing (the interpreter of a venv with "
            "torch, triton and liger-kernel, like \"/opt/venv/bin/python3\")");
  EXPECT_EQ(error_of(head + R"("python": "python3", "providers": ["huggingface"]}]})"),
            "kernelwatch.json: benchmarks[0].providers[0]: \"huggingface\" is not a provider "
            "liger-bench runs for tvd (liger, torch)");
  EXPECT_EQ(error_of(head + R"("python": "python3", "providers": ["kernelwatch-fused"]}]})"),
            "kernelwatch.json: benchmarks[0].providers[0]: \"kernelwatch-fused\" is not a "
            "provider liger-bench runs for tvd (liger, torch)");
  EXPECT_EQ(error_of(head + R"("python": "python3"}]})"),
            "kernelwatch.json: benchmarks[0]: providers is missing (liger-bench runs liger, "
            "torch for tvd)");
  EXPECT_EQ(error_of(head + R"("python": "python3", "providers": ["torch"], "timeout": "soon"}]})")
                .rfind("kernelwatch.json: benchmarks[0].timeout: ", 0),
            0U);
  EXPECT_EQ(error_of(head + R"("python": "python3", "providers": ["torch"], "timeout": "10ms"}]})"),
            "kernelwatch.json: benchmarks[0].timeout: 10ms is shorter than 1s");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "forward", "python": "p",
                        "workloads": ["tokens1024-vocab4096-fp32"]}]})"),
            "kernelwatch.json: benchmarks[0].python: applies to a benchmark with a \"runner\"");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"runner": "liger-bench", "python": "python3",
                        "kernel": "tvd", "pass": "forward", "providers": ["torch"],
                        "workloads": ["tokens1024-vocab4096-fp16"]}]})"),
            "kernelwatch.json: benchmarks[0].workloads[0]: \"tokens1024-vocab4096-fp16\": "
            "liger-bench runs fp32 and bf16, not fp16");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"runner": "liger-bench", "python": "python3",
                        "kernel": "layer_norm", "pass": "forward", "providers": ["liger"],
                        "script": "/nonexistent/liger_bench.py",
                        "workloads": ["hidden2048-rows2048-fp32"]}]})"),
            "kernelwatch.json: benchmarks[0].script: \"/nonexistent/liger_bench.py\" is not a "
            "file");
}

}  // namespace
}  // namespace kernelwatch::config
