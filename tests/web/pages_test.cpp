// The dashboard's pages from the real Liger history in a real SQLite file: the key replay the
// key page draws (30 runs, bands, the 0.6.1 step as an alert), the overview rows, the query
// parsers (400s), unknown keys and alerts (404s), escaping of a hostile label imported from a
// CSV, and the static export.
#include "web/pages.hpp"

#include <algorithm>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "runners/liger_import.hpp"
#include "storage/importer.hpp"
#include "tests/support/test_support.hpp"
#include "web/export.hpp"
#include "web/model.hpp"

namespace kernelwatch::web {
namespace {

using kernelwatch::testing::TempDir;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

class LigerHistory : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = storage::Connection::open(dir_ / "kw.db", storage::OpenMode::Create);
    ASSERT_TRUE(opened) << opened.error().message;
    connection_.emplace(std::move(*opened));
    const std::vector<std::filesystem::path> paths{
        kernelwatch::testing::liger_csv("all_benchmark_data.tvd_layer_norm.csv"),
        kernelwatch::testing::liger_csv("weekly_ci.tvd_layer_norm.csv")};
    auto imported = storage::import_files(*connection_, paths, storage::InvalidPolicy::Abort,
                                          &runners::liger_csv_reader());
    ASSERT_TRUE(imported) << imported.error().message;
    // As the daemon judges imported history (and `kernelwatch backtest` by default).
    options_.confirm = detectors::ConfirmPolicy::Next;
  }

  // Every alert of the whole replay (what the daemon stores, what the report reads).
  const std::vector<core::Alert>& alerts() {
    if (!site_) {
      auto site = site_from_replay(*connection_, options_);
      EXPECT_TRUE(site) << site.error().message;
      site_ = std::move(*site);
    }
    return site_->alerts;
  }

  // The key with these labels, replayed.
  KeyReplay replay_of(const std::string& benchmark, const std::string& provider,
                      const std::string& workload, const std::string& environment) {
    auto keys = storage::RunStore(*connection_).keys();
    EXPECT_TRUE(keys);
    for (const auto& k : *keys) {
      const auto labels = detectors::key_labels(k.key);
      if (labels.benchmark == benchmark && labels.provider == provider &&
          labels.workload == workload && labels.environment == environment) {
        auto replay = replay_key(*connection_, key_ref(labels), options_, alerts());
        EXPECT_TRUE(replay && *replay);
        return **replay;
      }
    }
    ADD_FAILURE() << "no key " << benchmark << " " << provider << " " << workload;
    return {};
  }

  TempDir dir_;
  std::optional<storage::Connection> connection_;
  ReplayOptions options_;
  std::optional<SiteModel> site_;
};

TEST_F(LigerHistory, TheLayerNormKeyReplaysThirtyRunsWithBandsAndTheStepOf061) {
  const auto replay = replay_of("layer_norm/backward", "liger", "hidden16384-rows4096-fp32",
                                "nvidia-h100-80gb-hbm3");
  ASSERT_EQ(replay.runs.size(), 30u);
  const auto banded = std::count_if(replay.runs.begin(), replay.runs.end(),
                                    [](const ReplayedRun& r) { return r.verdict.has_band; });
  EXPECT_GT(banded, 10);
  // The -80% step when 0.6.1 arrived: an improvement alert whose onset is the 0.6.1 run.
  const auto step = std::find_if(replay.alerts.begin(), replay.alerts.end(), [](const auto& a) {
    return a.kind == core::AlertKind::Step && a.relative_change < -0.7;
  });
  ASSERT_NE(step, replay.alerts.end());
  EXPECT_EQ(step->direction, core::Direction::Improvement);
  const auto onset = std::find_if(replay.runs.begin(), replay.runs.end(), [&](const auto& r) {
    return r.run.external_id == step->onset.external_id;
  });
  ASSERT_NE(onset, replay.runs.end());
  EXPECT_TRUE(onset->segment_start);
  ASSERT_FALSE(onset->changes.empty());
  EXPECT_EQ(onset->changes.front().to, "0.6.0");  // 0.6.0 began it; a 0.5.10-level run followed
  const auto fired = std::find_if(replay.runs.begin(), replay.runs.end(), [&](const auto& r) {
    return r.run.external_id == step->fired.external_id;
  });
  ASSERT_NE(fired, replay.runs.end());
  EXPECT_EQ(fired->run.implementation_version, "0.6.1");  // and 0.6.1 confirmed it

  const std::string html = render_key(replay, {}, KeyQuery{}, LinkMode::Served);
  EXPECT_EQ(count(html, "<path class=\"pt "), 30u);
  EXPECT_NE(html.find("<path class=\"band\""), std::string::npos);
  EXPECT_NE(html.find("-80."), std::string::npos);
  EXPECT_NE(html.find("data-alert=\"" + step->id.long_form() + "\""), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"run "), 30u);

  // The newest 10 only; a range that ends before the history has none.
  KeyQuery last10;
  last10.last = 10;
  EXPECT_EQ(count(render_key(replay, {}, last10, LinkMode::Served), "<path class=\"pt "), 10u);
  KeyQuery before;
  before.to = *core::parse_timestamp("2020-01-01T00:00:00Z");
  EXPECT_NE(render_key(replay, {}, before, LinkMode::Served).find("no runs in this range"),
            std::string::npos);
}

TEST_F(LigerHistory, AnImportedAlertHasAPageFromTheReplay) {
  const auto replay = replay_of("layer_norm/backward", "liger", "hidden16384-rows4096-fp32",
                                "nvidia-h100-80gb-hbm3");
  ASSERT_FALSE(replay.alerts.empty());
  // The page the key page links: a step inside an incident links to the incident.
  const auto& first = replay.alerts.front();
  const auto id =
      core::is_incident_member(first) ? first.incident.long_form() : alert_page_id(first);
  auto view = find_alert(*connection_, id, options_, alerts());
  ASSERT_TRUE(view) << view.error().message;
  ASSERT_TRUE(*view);
  EXPECT_FALSE((*view)->row);
  const std::string html = render_alert(**view, LinkMode::Served);
  EXPECT_NE(html.find("class=\"alert-band\""), std::string::npos);
  EXPECT_NE(html.find("never paged"), std::string::npos);
  EXPECT_EQ(html.find("id=\"ack-form\""), std::string::npos);  // not stored: nothing to ack

  auto unknown =
      find_alert(*connection_, "sha256:" + std::string(64, '0') + "@nope", options_, alerts());
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(*unknown);
  auto garbage = find_alert(*connection_, "no-at-sign", options_, alerts());
  ASSERT_TRUE(garbage);
  EXPECT_FALSE(*garbage);
}

TEST_F(LigerHistory, UnknownOrMalformedKeyReferencesAreNotFound) {
  for (const std::string& ref :
       {std::string(64, '0'), std::string("abc"), std::string("<script>"), std::string(64, 'G')}) {
    auto replay = replay_key(*connection_, ref, options_, alerts());
    ASSERT_TRUE(replay) << replay.error().message;
    EXPECT_FALSE(*replay) << ref;
  }
  const auto page = not_found_page("No key \"<script>\"", LinkMode::Served);
  EXPECT_EQ(page.status, 404u);
  EXPECT_EQ(page.html.find("<script>"), std::string::npos);
  EXPECT_NE(page.html.find("&lt;script&gt;"), std::string::npos);
}

TEST_F(LigerHistory, OverviewRowsFromTheReplayListEveryKeyGrouped) {
  auto site = site_from_replay(*connection_, options_);
  ASSERT_TRUE(site) << site.error().message;
  const auto* rows = &site->rows;
  auto keys = storage::RunStore(*connection_).keys();
  ASSERT_TRUE(keys);
  ASSERT_EQ(rows->size(), keys->size());
  for (const auto& row : *rows) {
    EXPECT_FALSE(row.spark.empty()) << row.key.display();
    EXPECT_GT(row.run_count, 0);
  }
  OverviewQuery query;
  const std::string html = render_overview(*rows, query, nullptr, LinkMode::Served);
  EXPECT_EQ(count(html, "<tr class=\"key\""),
            std::min<std::size_t>(rows->size(), kOverviewPageSize) +
                std::count_if(rows->begin(), rows->end(),
                              [](const KeyRow& r) { return core::is_problem(r.standing.state); }));
  EXPECT_NE(html.find("<h3 class=\"env\">nvidia-h100-80gb-hbm3</h3>"), std::string::npos);

  query.environment = "nvidia-a100-sxm4-80gb";
  query.state = KeyState::InBand;
  const std::string filtered = render_overview(*rows, query, nullptr, LinkMode::Served);
  EXPECT_EQ(filtered.find("<h3 class=\"env\">nvidia-h100-80gb-hbm3</h3>"), std::string::npos);
  for (std::size_t at = filtered.find("data-state=\""); at != std::string::npos;
       at = filtered.find("data-state=\"", at + 1)) {
    EXPECT_EQ(filtered.compare(at + 12, 8, "in_band\""), 0);
  }
}

TEST_F(LigerHistory, MarkupImportedFromACsvIsShownAsText) {
  // The importer turns labels into [a-z0-9._-] (a `<script>` in the GPU name or the config
  // becomes '_'), so what reaches a page raw from a CSV is the version column: a Liger row with
  // markup there, a year after the history, lands in an existing key.
  std::ifstream in(kernelwatch::testing::liger_csv("all_benchmark_data.tvd_layer_norm.csv"));
  std::string header;
  std::string line;
  std::getline(in, header);
  while (std::getline(in, line) && line.rfind("layer_norm,liger,backward", 0) != 0) {
  }
  std::string hostile =
      std::regex_replace(line, std::regex(",[0-9.]+\r?$"), ",0.9.9<script>alert(1)</script>");
  hostile = std::regex_replace(hostile, std::regex("20[0-9-]+ [0-9:]+"), "2026-06-01 00:00:00");
  hostile = std::regex_replace(hostile, std::regex("torch\\.float32\"\""),
                               "torch.float32\"\", \"\"<i>x\"\": \"\"<script>y\"\"");
  ASSERT_NE(hostile, line);
  kernelwatch::testing::write_file(dir_ / "hostile.csv", header + "\n" + hostile + "\n");
  const std::vector<std::filesystem::path> paths{dir_ / "hostile.csv"};
  auto imported = storage::import_files(*connection_, paths, storage::InvalidPolicy::Abort,
                                        &runners::liger_csv_reader());
  ASSERT_TRUE(imported) << imported.error().message;
  ASSERT_EQ(imported->inserted, 1u);

  auto site = site_from_replay(*connection_, options_);
  ASSERT_TRUE(site);
  const auto* rows = &site->rows;
  const std::string overview = render_overview(*rows, {}, nullptr, LinkMode::Served);
  EXPECT_EQ(overview.find("<script>"), std::string::npos);
  EXPECT_EQ(overview.find("<i>"), std::string::npos);

  bool found = false;
  for (const auto& row : *rows) {
    auto replay = replay_key(*connection_, key_ref(row.key), options_, site->alerts);
    ASSERT_TRUE(replay && *replay);
    const bool hostile_key =
        std::any_of((*replay)->runs.begin(), (*replay)->runs.end(), [](const auto& r) {
          return r.run.implementation_version.find("<script>") != std::string::npos;
        });
    if (!hostile_key) continue;
    found = true;
    const std::string key_page = render_key(**replay, {}, {}, LinkMode::Served);
    EXPECT_EQ(key_page.find("<script>alert"), std::string::npos);
    EXPECT_NE(key_page.find("0.9.9&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
    for (const auto& alert : (*replay)->alerts) {
      auto view = find_alert(
          *connection_,
          core::is_incident_member(alert) ? alert.incident.long_form() : alert_page_id(alert),
          options_, site->alerts);
      ASSERT_TRUE(view && *view);
      EXPECT_EQ(render_alert(**view, LinkMode::Served).find("<script>alert"), std::string::npos);
    }
  }
  EXPECT_TRUE(found);
}

TEST(QueryParsing, MalformedParametersAreRefusedWithTheirName) {
  const auto overview_error = [](Query q) {
    auto parsed = parse_overview_query(q);
    return parsed ? std::string() : parsed.error().message;
  };
  EXPECT_NE(overview_error({{"page", "abc"}}).find("page"), std::string::npos);
  EXPECT_NE(overview_error({{"page", "0"}}).find("page"), std::string::npos);
  EXPECT_NE(overview_error({{"state", "bogus"}}).find("state"), std::string::npos);
  EXPECT_NE(overview_error({{"<x>", "1"}}).find("unknown query parameter"), std::string::npos);
  auto ok = parse_overview_query({{"state", "firing"}, {"page", "2"}, {"environment", ""}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->page, 2u);
  EXPECT_EQ(ok->state, KeyState::Firing);

  const auto key_error = [](Query q) {
    auto parsed = parse_key_query(q);
    return parsed ? std::string() : parsed.error().message;
  };
  EXPECT_NE(key_error({{"scale", "cubic"}}).find("scale"), std::string::npos);
  EXPECT_NE(key_error({{"from", "yesterday"}}).find("from"), std::string::npos);
  EXPECT_NE(key_error({{"last", "-1"}}).find("last"), std::string::npos);
  EXPECT_NE(key_error({{"from", "2025-02-01"}, {"to", "2025-01-01"}}).find("after"),
            std::string::npos);
  auto key = parse_key_query({{"from", "2025-01-01"},
                              {"to", "2025-01-31"},
                              {"last", "all"},
                              {"scale", "log"},
                              {"rows", "3"}});
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ(key->last, 0u);
  EXPECT_EQ(key->scale, Scale::Log);
  EXPECT_EQ(*key->to - *key->from, std::chrono::hours(24 * 31));
  const auto bad = bad_request_page("scale must be <linear> or log", LinkMode::Served);
  EXPECT_EQ(bad.status, 400u);
  EXPECT_NE(bad.html.find("&lt;linear&gt;"), std::string::npos);
}

TEST_F(LigerHistory, TheStaticReportLinksRelativelyBetweenItsFiles) {
  TempDir out;
  auto summary = export_site(*connection_, options_, out.path() / "site");
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_GT(summary->keys, 100u);
  EXPECT_GT(summary->alerts, 0u);
  const auto root = out.path() / "site";
  ASSERT_TRUE(std::filesystem::exists(root / "index.html"));
  ASSERT_TRUE(std::filesystem::exists(root / "assets" / "kw.css"));
  // Every relative href of the index and of one key page names a file that exists.
  const auto check_links = [&](const std::filesystem::path& page) {
    const std::string html = kernelwatch::testing::read_file(page);
    static const std::regex href("(?:href|src)=\"([^\"#?]+)\"");
    std::size_t links = 0;
    for (std::sregex_iterator it(html.begin(), html.end(), href), end; it != end; ++it) {
      const std::string target = (*it)[1];
      if (target.rfind("data:", 0) == 0) continue;
      EXPECT_NE(target.front(), '/') << page << ": " << target;
      EXPECT_TRUE(std::filesystem::exists(page.parent_path() / target)) << page << ": " << target;
      ++links;
    }
    EXPECT_GT(links, 2u) << page;
  };
  check_links(root / "index.html");
  const auto replay = replay_of("layer_norm/backward", "liger", "hidden16384-rows4096-fp32",
                                "nvidia-h100-80gb-hbm3");
  check_links(root / key_file(key_ref(replay.key), Scale::Linear));
  const auto& first = replay.alerts.front();
  check_links(root / alert_file(core::is_incident_member(first) ? first.incident.long_form()
                                                                : alert_page_id(first)));
}

// A host's row carries its open host alert: one out of line with its sibling hosts, or an
// incident about the host out of line with its fleet (storage.fleet_controls); a GPU's row its
// GPU alert; an incident without a host, or closed, none.
TEST(HostsAndGpus, AHostsRowCarriesItsOpenHostAlertOrFleetIncident) {
  replay::PlacedCounts counts;
  counts.count(core::Placement{"host_d", "", "", ""}, core::Timestamp{});
  counts.count(core::Placement{"host_e", "", "", ""}, core::Timestamp{});
  core::Alert fleet;
  fleet.id = core::AlertId("env@host:host_d@t");
  fleet.incident = fleet.id;
  fleet.kind = core::AlertKind::Environment;
  fleet.state = core::AlertState::Firing;
  fleet.placement = core::Placement{"host_d", "", "", ""};
  core::Alert member;
  member.id = core::AlertId("member");
  member.incident = fleet.id;
  member.placement = fleet.placement;
  fleet.members.push_back(member);
  core::Alert plain = fleet;  // an incident of the cycle: no host
  plain.id = core::AlertId("env@t");
  plain.placement = {};
  core::Alert closed = fleet;
  closed.id = core::AlertId("env@host:host_e@t");
  closed.placement.host = "host_e";
  closed.state = core::AlertState::Resolved;
  const auto rows = placed_rows(counts, {fleet, plain, closed, member});
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    if (row.placement.host == "host_d") {
      EXPECT_EQ(row.host_alert_id, alert_page_id(fleet));
      EXPECT_EQ(row.host_alert_state, core::AlertState::Firing);
    } else {
      EXPECT_TRUE(row.host_alert_id.empty()) << row.host_alert_id;
    }
    EXPECT_TRUE(row.alert_id.empty());
  }
}

// Hosts and GPUs: per host, per GPU its runs and whether it is out of line, with its open alert;
// left out when the runs name only one host and no GPU (a daemon's own runs on a CPU).
TEST(HostsAndGpus, TheOverviewListsEachGpuOfEachHostWithItsOpenAlert) {
  std::vector<PlacedRow> placed;
  for (int g = 0; g < 3; ++g) {
    PlacedRow row;
    row.placement = {"h100-a", std::to_string(g), "GPU-" + std::to_string(g), "00000000:19:00.0"};
    row.runs = 10 + g;
    if (g == 1) {
      row.alert_id = "env@gpu:h100-a/GPU-1@t";
      row.alert_state = core::AlertState::Acknowledged;
      row.alert_text = "GPU 1 <of> host h100-a is 12.0% slower";
    }
    placed.push_back(row);
  }
  const std::string html = render_overview({}, {}, nullptr, LinkMode::Served, placed);
  EXPECT_NE(html.find("<h2>Hosts and GPUs</h2>"), std::string::npos);
  EXPECT_NE(html.find("data-host=\"h100-a\" data-gpu=\"GPU-0\" data-state=\"in_line\""),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("data-gpu=\"GPU-1\" data-state=\"acknowledged\""), std::string::npos);
  EXPECT_NE(html.find(alert_href("env@gpu:h100-a/GPU-1@t", LinkMode::Served, 0)),
            std::string::npos);
  EXPECT_EQ(html.find("<of>"), std::string::npos);  // the explanation is escaped
  EXPECT_NE(html.find("<td class=\"num\">12</td>"), std::string::npos);

  PlacedRow cpu;
  cpu.placement.host = "build-1";
  cpu.runs = 5;
  EXPECT_EQ(render_overview({}, {}, nullptr, LinkMode::Served, {cpu}).find("Hosts and GPUs"),
            std::string::npos);
  PlacedRow other = cpu;
  other.placement.host = "build-2";
  other.host_alert_id = "env@host:build-2@t";
  const std::string hosts = render_overview({}, {}, nullptr, LinkMode::Served, {cpu, other});
  EXPECT_NE(hosts.find("<h2>Hosts and GPUs</h2>"), std::string::npos);
  EXPECT_NE(hosts.find("out of line with its sibling hosts"), std::string::npos);
}

}  // namespace
}  // namespace kernelwatch::web
