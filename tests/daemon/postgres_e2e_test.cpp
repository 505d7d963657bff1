// The real kernelwatch binary on a real PostgreSQL server (issue #39): the CLI's --db with a
// postgresql:// URL reads what SQLite reads, and the daemon with "storage": {"postgresql": ...}
// judges posted runs, pages once, and loses nothing across a SIGKILL or a restart of the server.
#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/daemon/support/daemon_process.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using testing::http;
using testing::run_kernelwatch;
using namespace daemon_e2e;

// Every line with the database's name replaced, so that two databases' outputs compare.
std::string without(std::string text, const std::string& name) {
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at)) {
    text.replace(at, name.size(), "DB");
  }
  return text;
}

TEST(PostgresqlE2E, TheCliReadsAPostgresqlDatabaseAsItReadsSqlite) {
  KW_REQUIRE_POSTGRES(server);
  testing::TempDir dir;
  const std::string url = server.create_database();
  const std::string file = (dir / "kw.db").string();
  const std::string csv = testing::liger_csv("weekly_ci.tvd_layer_norm.csv").string();
  for (const auto& db : {file, url}) {
    const auto imported = run_kernelwatch({"import", "--db", db, csv});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }
  const std::vector<std::vector<std::string>> commands = {
      {"keys", "--json"},
      {"history", "--provider", "liger", "--limit", "40", "--json"},
      {"backtest"},
      {"backtest", "--confirm", "none", "--json"}};
  for (const auto& command : commands) {
    std::vector<std::string> on_file = command, on_server = command;
    on_file.insert(on_file.begin() + 1, {"--db", file});
    on_server.insert(on_server.begin() + 1, {"--db", url});
    const auto expected = run_kernelwatch(on_file);
    const auto actual = run_kernelwatch(on_server);
    ASSERT_EQ(expected.exit_code, 0) << command[0] << ": " << expected.err;
    EXPECT_EQ(actual.exit_code, 0) << command[0] << ": " << actual.err;
    EXPECT_GT(expected.out.size(), 100u) << command[0];
    EXPECT_EQ(without(actual.out, url), without(expected.out, file)) << command[0];
    EXPECT_EQ(actual.err.find(server.password()), std::string::npos);
  }
  // The static report (a folder of pages), written from each.
  const auto pages = [](const std::filesystem::path& folder) {
    std::map<std::string, std::string> out;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
      if (entry.is_regular_file()) {
        out[std::filesystem::relative(entry.path(), folder).string()] =
            testing::read_file(entry.path());
      }
    }
    return out;
  };
  for (const auto& [db, out] : {std::pair{file, dir / "file"}, std::pair{url, dir / "pg"}}) {
    const auto report = run_kernelwatch({"report", "--db", db, "--out", out.string()});
    ASSERT_EQ(report.exit_code, 0) << report.err;
  }
  const auto from_file = pages(dir / "file");
  const auto from_server = pages(dir / "pg");
  EXPECT_GT(from_file.size(), 10u);
  ASSERT_EQ(from_server.size(), from_file.size());
  for (const auto& [name, text] : from_file) {
    ASSERT_TRUE(from_server.contains(name)) << name;
    EXPECT_EQ(without(from_server.at(name), url), without(text, file)) << name;
  }
  // A URL with a password is refused before anything connects, and the password is not echoed.
  const auto with_password =
      run_kernelwatch({"keys", "--db",
                       "postgresql://kw:" + server.password() +
                           "@127.0.0.1:" + std::to_string(server.port()) + "/postgres"});
  EXPECT_NE(with_password.exit_code, 0);
  EXPECT_EQ(with_password.err.find(server.password()), std::string::npos) << with_password.err;
  EXPECT_NE(with_password.err.find("passfile"), std::string::npos) << with_password.err;
}

TEST(PostgresqlE2E, ADaemonOnPostgresqlPagesOnceAcrossASigkillAndARestartOfTheServer) {
  KW_REQUIRE_POSTGRES(server);
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;
  receiver.set_script(
      [](std::size_t, const auto&) { return notifiers::testing::Action::respond(503, "down"); });
  DaemonProcess daemon(dir, receiver.url());
  const std::string url = server.create_database();
  daemon.set_storage(receiver.url(), {{"postgresql", url}});
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const json batch = stepped_batch({"synthetic-e2e"});
  const auto posted = http(daemon.port(), "POST", "/api/v1/runs", batch.dump(), kToken);
  ASSERT_EQ(posted.status, 200) << posted.body;
  // The receiver is down: the notification is tried, refused, and stays queued in PostgreSQL.
  ASSERT_TRUE(receiver.wait_for_requests(1)) << daemon.log();
  // A second daemon on the same database is refused while this one runs (one judge of its
  // alerts and one sender of its outbox), naming the database and not the password.
  testing::TempDir other_dir;
  DaemonProcess other(other_dir, receiver.url());
  other.set_storage(receiver.url(), {{"postgresql", url}});
  const auto refused =
      run_kernelwatch({"daemon", "--config", (other_dir / "kernelwatch.json").string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  const std::string said = refused.out + refused.err;
  EXPECT_NE(said.find("another kernelwatch daemon uses this database"), std::string::npos) << said;
  EXPECT_EQ(said.find(server.password()), std::string::npos) << said;
  daemon.kill_hard();
  // The server restarts while no daemon runs; what was acknowledged is still there.
  server.stop(/*immediate=*/true);
  server.start_again();
  receiver.set_script(
      [](std::size_t, const auto&) { return notifiers::testing::Action::respond(200); });
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(receiver.wait_for_2xx(1)) << daemon.log();
  std::set<std::string> keys;
  for (const auto& r : receiver.snapshot().requests) keys.insert(r.header("idempotency-key"));
  EXPECT_EQ(keys.size(), 1u);  // every attempt, before and after the crash, is one notification
  const auto alerts = http(daemon.port(), "GET", "/api/v1/alerts");
  ASSERT_EQ(alerts.status, 200) << alerts.body;
  EXPECT_NE(alerts.body.find("firing"), std::string::npos) << alerts.body;
  // The same batch again stores nothing new: the runs are there, once.
  const auto again = http(daemon.port(), "POST", "/api/v1/runs", batch.dump(), kToken);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_NE(again.body.find("\"duplicates\":" + std::to_string(batch.size())), std::string::npos)
      << again.body;
  daemon.stop();
  const std::string log = daemon.log();
  EXPECT_EQ(log.find(server.password()), std::string::npos);
}

// Hosts' daemons, each with its own folder and receiver, on one PostgreSQL database, each in
// the schema named after its host (storage.schema); not started.
struct FleetOfDaemons {
  FleetOfDaemons(const std::string& url, std::vector<std::string> names) : hosts(std::move(names)) {
    for (const auto& host : hosts) {
      dirs.push_back(std::make_unique<testing::TempDir>());
      receivers.push_back(std::make_unique<notifiers::testing::TestReceiver>());
      daemons.push_back(std::make_unique<DaemonProcess>(*dirs.back(), receivers.back()->url()));
      daemons.back()->set_storage(receivers.back()->url(), {{"postgresql", url}, {"schema", host}});
    }
  }
  std::vector<std::string> hosts;
  std::vector<std::unique_ptr<testing::TempDir>> dirs;
  std::vector<std::unique_ptr<notifiers::testing::TestReceiver>> receivers;
  std::vector<std::unique_ptr<DaemonProcess>> daemons;
};

// A fleet's database (docs/FLEET.md): three hosts' daemons on one PostgreSQL database, each in its
// own schema (storage.schema). Each stores and judges its own runs and sends its own alerts to
// its own receiver; a second daemon for one host's schema is refused; the CLI reads one host's
// schema through libpq's search_path in the URL.
TEST(PostgresqlE2E, ThreeHostsDaemonsShareOneDatabaseEachInItsOwnSchema) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  FleetOfDaemons hosts_daemons(url, {"host_a", "host_b", "host_c"});
  const auto& hosts = hosts_daemons.hosts;
  auto& receivers = hosts_daemons.receivers;
  auto& daemons = hosts_daemons.daemons;
  // Each creates its own schema at its start.
  for (auto& daemon : daemons) daemon->start();
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    ASSERT_NE(daemons[i]->port(), 0) << hosts[i] << ": " << daemons[i]->log();
  }
  // host_a and host_c step 30%; host_b's runs stay in their band.
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const std::string workload = "workload-of-" + hosts[i];
    json batch = json::array();
    const core::Timestamp step_at = day_before_now() + std::chrono::minutes(10);
    if (hosts[i] == "host_b") {
      for (int r = 0; r < 11; ++r) {
        batch.push_back(
            synthetic_record(r, noisy(r), workload, step_at - std::chrono::minutes(10), "posted"));
      }
    } else {
      add_stepped_series(batch, workload, step_at);
    }
    const auto posted = http(daemons[i]->port(), "POST", "/api/v1/runs", batch.dump(), kToken);
    ASSERT_EQ(posted.status, 200) << hosts[i] << ": " << posted.body;
  }
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const bool stepped = hosts[i] != "host_b";
    if (stepped) {
      ASSERT_TRUE(receivers[i]->wait_for_2xx(1)) << hosts[i] << ": " << daemons[i]->log();
    }
    const auto runs = http(daemons[i]->port(), "GET", "/api/v1/runs?limit=1000");
    ASSERT_EQ(runs.status, 200);
    EXPECT_EQ(json::parse(runs.body).size(), 11u) << hosts[i] << ": its own runs only";
    const auto alerts = json::parse(http(daemons[i]->port(), "GET", "/api/v1/alerts").body);
    EXPECT_EQ(alerts.size(), stepped ? 1u : 0u) << hosts[i] << ": " << alerts.dump();
  }
  // Any host's daemon shows the whole fleet, problems first: the two with a firing alert (by
  // name), then the quiet one.
  const auto fleet = http(daemons[1]->port(), "GET", "/api/v1/fleet");
  ASSERT_EQ(fleet.status, 200) << fleet.body;
  const json rows = json::parse(fleet.body).at("hosts");
  ASSERT_EQ(rows.size(), 3u) << fleet.body;
  EXPECT_EQ(rows[0]["schema"], "host_a");
  EXPECT_EQ(rows[1]["schema"], "host_c");
  EXPECT_EQ(rows[2]["schema"], "host_b");
  EXPECT_EQ(rows[0]["firing"], 1);
  EXPECT_EQ(rows[2]["firing"], 0);
  EXPECT_EQ(rows[2]["self"], true);
  EXPECT_EQ(rows[0]["self"], false);
  ASSERT_EQ(rows[1]["openAlerts"].size(), 1u) << fleet.body;
  EXPECT_EQ(rows[1]["openAlerts"][0]["workload"], "workload-of-host_c") << fleet.body;
  EXPECT_EQ(fleet.body.find(server.password()), std::string::npos);
  // `kernelwatch status --fleet` prints the same rows, in the same order, with their alerts.
  const auto status = run_kernelwatch(
      {"status", "--fleet", "--url", "http://127.0.0.1:" + std::to_string(daemons[1]->port())});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_LT(status.out.find("\nhost_a "), status.out.find("\nhost_c ")) << status.out;
  EXPECT_LT(status.out.find("\nhost_c "), status.out.find("\nhost_b (this) ")) << status.out;
  EXPECT_NE(status.out.find("host_c: firing"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("workload-of-host_c"), std::string::npos) << status.out;
  EXPECT_EQ(status.out.find(server.password()), std::string::npos);
  const auto page = http(daemons[1]->port(), "GET", "/fleet");
  ASSERT_EQ(page.status, 200);
  EXPECT_LT(page.body.find("data-schema=\"host_a\" data-state=\"firing\""),
            page.body.find("data-schema=\"host_b\" data-state=\"quiet\""))
      << page.body;
  // Each receiver heard of its own host's step only.
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    daemons[i]->stop();
    for (const auto& request : receivers[i]->snapshot().requests) {
      for (std::size_t j = 0; j < hosts.size(); ++j) {
        EXPECT_EQ(request.body.find("workload-of-" + hosts[j]) != std::string::npos, i == j)
            << hosts[i] << "'s receiver: " << request.body;
      }
    }
  }
  // One daemon per host's schema: a second for host_b is refused while the first runs.
  daemons[1]->start();
  ASSERT_NE(daemons[1]->port(), 0) << daemons[1]->log();
  testing::TempDir other_dir;
  DaemonProcess other(other_dir, receivers[1]->url());
  other.set_storage(receivers[1]->url(), {{"postgresql", url}, {"schema", "host_b"}});
  const auto refused =
      run_kernelwatch({"daemon", "--config", (other_dir / "kernelwatch.json").string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  const std::string said = refused.out + refused.err;
  EXPECT_NE(said.find("another kernelwatch daemon uses this database's schema"), std::string::npos)
      << said;
  EXPECT_NE(said.find("schema host_b"), std::string::npos) << said;
  daemons[1]->stop();
  // The CLI reads one host's schema by libpq's search_path, as psql would.
  const auto keys =
      run_kernelwatch({"keys", "--db", url + "&options=-csearch_path%3Dhost_c", "--json"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  EXPECT_NE(keys.out.find("workload-of-host_c"), std::string::npos) << keys.out;
  EXPECT_EQ(keys.out.find("workload-of-host_a"), std::string::npos) << keys.out;
}

// The database server of a fleet killed while three hosts' daemons post to it: every batch a
// daemon acknowledged (200) is stored, the batches in flight are refused (503) and nothing else
// is lost, and each daemon reconnects by itself once the server is back.
TEST(PostgresqlE2E, TheServerKilledWhileThreeHostsPostLosesNothingAcknowledged) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  FleetOfDaemons hosts_daemons(url, {"host_a", "host_b", "host_c"});
  const auto& hosts = hosts_daemons.hosts;
  auto& daemons = hosts_daemons.daemons;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    daemons[i]->start();
    ASSERT_NE(daemons[i]->port(), 0) << hosts[i] << ": " << daemons[i]->log();
  }
  // Each host posts batches of one run of each of three keys, a minute apart, until told to stop
  // (at most a few hundred: the runs stay in the past).
  struct Poster {
    std::vector<std::string> acknowledged;  // metadata.name of every run of a 200 batch
    int after_restart = 0;                  // 200s after the server came back
    int refused = 0;                        // anything but 200
    std::string last_refusal;               // its status and body, for the failure message
    std::set<unsigned> refusal_statuses;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Poster> posters(hosts.size());
  int phase = 0;  // 0: before the kill, 1: killed, 2: back
  bool done = false;
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    threads.emplace_back([&, i] {
      const core::Timestamp start = day_before_now() - std::chrono::hours(24);
      // A refused batch is posted again (as a host's client does), so the runs' dates only move
      // on with what was acknowledged.
      for (int b = 0; b < 2500;) {  // 2,500 minutes: all of them in the past
        json batch = json::array();
        std::vector<std::string> names;
        for (const char* workload : {"fleet-0", "fleet-1", "fleet-2"}) {
          batch.push_back(synthetic_record(b, noisy(b), workload, start));
          names.push_back(batch.back()["run"]["metadata"]["name"].get<std::string>());
        }
        int seen_phase = 0;
        {
          std::lock_guard lock(mutex);
          if (done) return;
          seen_phase = phase;
        }
        const auto answer = http(daemons[i]->port(), "POST", "/api/v1/runs", batch.dump(), kToken);
        {
          std::lock_guard lock(mutex);
          auto& p = posters[i];
          if (answer.status == 200) {
            p.acknowledged.insert(p.acknowledged.end(), names.begin(), names.end());
            if (seen_phase == 2) ++p.after_restart;
            ++b;
          } else {
            ++p.refused;
            p.last_refusal = std::to_string(answer.status) + " " + answer.body;
            p.refusal_statuses.insert(answer.status);
          }
        }
        changed.notify_all();
        // Pacing, not synchronisation: a client does not re-post a refused batch in a busy loop,
        // which on two cores would starve the server's own restart.
        if (answer.status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  const auto wait_until = [&](auto ready) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(60), ready);
  };
  // Every host has had batches acknowledged; then the server dies mid-stream.
  EXPECT_TRUE(wait_until([&] {
    return std::all_of(posters.begin(), posters.end(),
                       [](const Poster& p) { return p.acknowledged.size() >= 9; });
  }));
  {
    std::lock_guard lock(mutex);
    phase = 1;
  }
  server.stop(/*immediate=*/true);
  // While it is down, the daemons refuse what they cannot store.
  EXPECT_TRUE(wait_until([&] {
    return std::all_of(posters.begin(), posters.end(),
                       [](const Poster& p) { return p.refused > 0; });
  }));
  server.start_again();
  {
    std::lock_guard lock(mutex);
    phase = 2;
  }
  // Each daemon reconnects by itself: batches are acknowledged again.
  const bool reconnected = wait_until([&] {
    return std::all_of(posters.begin(), posters.end(),
                       [](const Poster& p) { return p.after_restart >= 2; });
  });
  if (!reconnected) {
    std::lock_guard lock(mutex);
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      ADD_FAILURE() << hosts[i] << ": " << posters[i].after_restart
                    << " acknowledged after the restart; last refusal: " << posters[i].last_refusal
                    << "\n"
                    << daemons[i]->log();
    }
  }
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const auto runs = http(daemons[i]->port(), "GET", "/api/v1/runs?limit=10000");
    ASSERT_EQ(runs.status, 200) << hosts[i] << ": " << runs.body;
    std::set<std::string> stored;
    for (const auto& record : json::parse(runs.body)) {
      stored.insert(record["run"]["metadata"]["name"].get<std::string>());
    }
    EXPECT_GT(posters[i].acknowledged.size(), 9u) << hosts[i];
    // What a daemon could not store it refused as unavailable (503), nothing else.
    EXPECT_EQ(posters[i].refusal_statuses, (std::set<unsigned>{503})) << posters[i].last_refusal;
    for (const auto& name : posters[i].acknowledged) {
      EXPECT_TRUE(stored.contains(name)) << hosts[i] << " acknowledged " << name << " and lost it";
    }
    EXPECT_EQ(http(daemons[i]->port(), "GET", "/readyz").status, 200) << hosts[i];
    daemons[i]->stop();
    EXPECT_EQ(daemons[i]->log().find(server.password()), std::string::npos) << hosts[i];
  }
}

// A new host of a fleet starts warm by importing the other hosts' history of its keys into its
// own schema before its first start (docs/FLEET.md): its first runs are judged against the band
// of the three hosts' runs, and the new host 12% slower than them on every key is one alert about
// the host (one incident, one notification), not one per key.
// A record that names the host it ran on.
json on_host(json record, const std::string& host) {
  record["run"]["metadata"]["labels"]["host"] = host;
  return record;
}

// The fleet's first three hosts each post ten runs of every workload (1% noise around 1 ms, one
// run a minute from `start`, each host's a few seconds apart from the others': one key, one run
// per instant), naming their host when `name_hosts`; each daemon is stopped after.
void post_fleet_history(FleetOfDaemons& fleet, const std::vector<std::string>& workloads,
                        core::Timestamp start, bool name_hosts) {
  for (std::size_t h = 0; h < 3; ++h) {
    auto& daemon = *fleet.daemons[h];
    daemon.start();
    ASSERT_NE(daemon.port(), 0) << daemon.log();
    json batch = json::array();
    for (const auto& workload : workloads) {
      for (int r = 0; r < 10; ++r) {
        json record = synthetic_record(r, noisy(r + static_cast<int>(h) * 3), workload,
                                       start + std::chrono::seconds(7 * h));
        batch.push_back(name_hosts ? on_host(std::move(record), fleet.hosts[h]) : record);
      }
    }
    ASSERT_EQ(http(daemon.port(), "POST", "/api/v1/runs", batch.dump(), kToken).status, 200);
    daemon.stop();
  }
}

TEST(PostgresqlE2E, ANewHostImportingTheFleetsHistoryIsJudgedByItsBandFromItsFirstRun) {
  KW_REQUIRE_POSTGRES(server);
  testing::TempDir work;
  const std::string url = server.create_database();
  FleetOfDaemons hosts_daemons(url, {"host_a", "host_b", "host_c", "host_d"});
  auto& daemons = hosts_daemons.daemons;
  const std::vector<std::string> workloads = {"warm-0", "warm-1", "warm-2",
                                              "warm-3", "warm-4", "warm-5"};
  const core::Timestamp start = day_before_now();
  ASSERT_NO_FATAL_FAILURE(post_fleet_history(hosts_daemons, workloads, start, false));
  // The new host imports the three hosts' history into its own schema, then starts.
  const auto schema_url = [&](const std::string& schema) {
    return url + "&options=-csearch_path%3D" + schema;
  };
  for (const std::string host : {"host_a", "host_b", "host_c"}) {
    const auto history =
        run_kernelwatch({"history", "--db", schema_url(host), "--json", "--limit", "0"});
    ASSERT_EQ(history.exit_code, 0) << history.err;
    testing::write_file(work / (host + ".json"), history.out);
    const auto imported = run_kernelwatch(
        {"import", "--db", schema_url("host_d"), (work / (host + ".json")).string()});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }
  auto& d = *daemons[3];
  auto& receiver = *hosts_daemons.receivers[3];
  d.start();
  ASSERT_NE(d.port(), 0) << d.log();
  EXPECT_TRUE(json::parse(http(d.port(), "GET", "/api/v1/alerts").body).empty())
      << "the fleet's history is quiet";
  // Its first run of each key, 12% slower than the fleet.
  json first = json::array();
  for (const auto& workload : workloads) {
    first.push_back(synthetic_record(20, 1'120'000, workload, start));
  }
  const auto posted = http(d.port(), "POST", "/api/v1/runs", first.dump(), kToken);
  ASSERT_EQ(posted.status, 200) << posted.body;
  for (const auto& result : json::parse(posted.body)["results"]) {
    EXPECT_EQ(result["verdict"], "regression") << posted.body;
  }
  ASSERT_TRUE(receiver.wait_for_2xx(1)) << d.log();
  const json alerts = json::parse(http(d.port(), "GET", "/api/v1/alerts?state=firing").body);
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump(2);
  EXPECT_EQ(alerts[0]["kind"], "environment") << alerts.dump(2);
  EXPECT_EQ(alerts[0]["members"].size(), workloads.size()) << alerts.dump(2);
  d.stop();
  std::set<std::string> notifications;
  for (const auto& r : receiver.snapshot().requests) {
    notifications.insert(r.header("idempotency-key"));
  }
  EXPECT_EQ(notifications.size(), 1u);
}

// storage.warm_start (docs/FLEET.md): a new host's daemon starts a key new to it from the fleet's
// newest runs of it in the other hosts' schemas, by itself. Its first run of each key is judged
// against the three hosts' band; 12% slower on every key is one incident, one notification, and
// a restart pages nothing again. A host without the setting starts cold (its bands are its own).
// A daemon's alerts as its replay must rebuild them (their delivery goes on meanwhile).
json judged_alerts(DaemonProcess& daemon) {
  json out = json::parse(http(daemon.port(), "GET", "/api/v1/alerts").body);
  for (auto& alert : out) {
    alert.erase("notified");
    alert.erase("notifiedAt");
  }
  return out;
}

// Every notification a daemon has queued, sent or given up on (its status's outbox).
std::size_t outbox_rows(DaemonProcess& daemon) {
  const json status = json::parse(http(daemon.port(), "GET", "/api/v1/status").body);
  std::size_t rows = 0;
  for (const auto& d : status["outbox"]) {
    rows += d["pending"].get<std::size_t>() + d["delivered"].get<std::size_t>() +
            d["dead"].get<std::size_t>();
  }
  return rows;
}

TEST(PostgresqlE2E, ANewHostThatStartsWarmIsJudgedByTheFleetsBandFromItsFirstRun) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  FleetOfDaemons fleet(url, {"host_a", "host_b", "host_c", "host_d", "host_e"});
  auto& daemons = fleet.daemons;
  const std::vector<std::string> workloads = {"warm-0", "warm-1", "warm-2",
                                              "warm-3", "warm-4", "warm-5"};
  const core::Timestamp start = day_before_now();
  ASSERT_NO_FATAL_FAILURE(post_fleet_history(fleet, workloads, start, true));
  // Its first run of each key, 12% slower than the fleet, more than an hour after the fleet's
  // newest (runs of the last hour are no seed).
  const auto first_runs = [&](const std::string& host) {
    json first = json::array();
    for (const auto& workload : workloads) {
      first.push_back(on_host(synthetic_record(80, 1'120'000, workload, start), host));
    }
    return first.dump();
  };

  auto& d = *daemons[3];
  auto& receiver = *fleet.receivers[3];
  d.set_storage(receiver.url(), {{"postgresql", url}, {"schema", "host_d"}, {"warm_start", true}});
  d.start();
  ASSERT_NE(d.port(), 0) << d.log();
  const auto posted = http(d.port(), "POST", "/api/v1/runs", first_runs("host_d"), kToken);
  ASSERT_EQ(posted.status, 200) << posted.body;
  for (const auto& result : json::parse(posted.body)["runs"]) {
    EXPECT_EQ(result["verdict"], "regression") << posted.body;
    ASSERT_TRUE(result.contains("warmStart")) << posted.body;
    EXPECT_EQ(result["warmStart"]["runs"], 20) << posted.body;
    EXPECT_EQ(result["warmStart"]["hosts"], json::array({"host_a", "host_b", "host_c"}))
        << posted.body;
  }
  ASSERT_TRUE(receiver.wait_for_2xx(1)) << d.log();
  const json alerts = json::parse(http(d.port(), "GET", "/api/v1/alerts?state=firing").body);
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump(2);
  EXPECT_EQ(alerts[0]["kind"], "environment") << alerts.dump(2);
  EXPECT_EQ(alerts[0]["members"].size(), workloads.size()) << alerts.dump(2);
  // It says where the steps began: on this host, against the other hosts' runs.
  const std::string why = alerts[0]["explanation"];
  EXPECT_NE(why.find("this host against the other hosts' runs"), std::string::npos) << why;
  EXPECT_NE(why.find("-> host_d (in 6 of 6 keys)"), std::string::npos) << why;
  // The seeds are this host's history now (each key: 20 of the fleet's runs and its own).
  EXPECT_EQ(json::parse(http(d.port(), "GET", "/api/v1/runs?limit=1000").body).size(),
            workloads.size() * 21);
  EXPECT_NE(d.log().find("started from the fleet's 20 newest run(s)"), std::string::npos)
      << d.log();
  // A restart replays the seeds as history and the same alert: nothing is paged again.
  d.stop();
  d.start();
  ASSERT_NE(d.port(), 0) << d.log();
  const json again = json::parse(http(d.port(), "GET", "/api/v1/alerts?state=firing").body);
  ASSERT_EQ(again.size(), 1u) << again.dump(2);
  EXPECT_EQ(again[0]["id"], alerts[0]["id"]);
  // What a restart would page again is queued before the daemon answers: the outbox holds the
  // one notification.
  EXPECT_EQ(outbox_rows(d), 1u) << d.log();
  d.stop();
  std::set<std::string> notifications;
  for (const auto& r : receiver.snapshot().requests) {
    notifications.insert(r.header("idempotency-key"));
  }
  EXPECT_EQ(notifications.size(), 1u);

  // Without the setting, the same first runs start cold: no band, no alert, no other host's run.
  auto& cold = *daemons[4];
  cold.start();
  ASSERT_NE(cold.port(), 0) << cold.log();
  const auto cold_posted = http(cold.port(), "POST", "/api/v1/runs", first_runs("host_e"), kToken);
  ASSERT_EQ(cold_posted.status, 200) << cold_posted.body;
  for (const auto& result : json::parse(cold_posted.body)["runs"]) {
    EXPECT_EQ(result["verdict"], "insufficient_data") << cold_posted.body;
    EXPECT_FALSE(result.contains("warmStart")) << cold_posted.body;
  }
  EXPECT_TRUE(json::parse(http(cold.port(), "GET", "/api/v1/alerts").body).empty());
  EXPECT_EQ(json::parse(http(cold.port(), "GET", "/api/v1/runs?limit=1000").body).size(),
            workloads.size());
  cold.stop();

  // host_e has judged runs now (minute 80). A key new to it later starts from the fleet's
  // newest runs of it from before its first run here less an hour, wherever they fall among
  // host_e's own runs: host_a ran it at minutes 10..19 and 100..109, host_e's first run of it is
  // at minute 200. A restart replays those seeds as the key's start and nothing else.
  auto& a = *daemons[0];
  a.start();
  ASSERT_NE(a.port(), 0) << a.log();
  json late = json::array();
  for (int r = 0; r < 10; ++r) {
    late.push_back(on_host(synthetic_record(10 + r, noisy(r), "late"), "host_a"));
    late.push_back(on_host(synthetic_record(100 + r, noisy(r + 5), "late"), "host_a"));
  }
  late.push_back(on_host(synthetic_record(150, noisy(3), "late"), "host_a"));  // the last hour's
  ASSERT_EQ(http(a.port(), "POST", "/api/v1/runs", late.dump(), kToken).status, 200);
  a.stop();
  cold.set_storage(fleet.receivers[4]->url(),
                   {{"postgresql", url}, {"schema", "host_e"}, {"warm_start", true}});
  cold.start();
  ASSERT_NE(cold.port(), 0) << cold.log();
  const json first_late =
      json::array({on_host(synthetic_record(200, 1'120'000, "late"), "host_e")});
  const auto late_posted = http(cold.port(), "POST", "/api/v1/runs", first_late.dump(), kToken);
  ASSERT_EQ(late_posted.status, 200) << late_posted.body;
  const json late_result = json::parse(late_posted.body)["runs"][0];
  ASSERT_TRUE(late_result.contains("warmStart")) << late_posted.body;
  EXPECT_EQ(late_result["warmStart"]["runs"], 20) << late_posted.body;
  EXPECT_EQ(late_result["warmStart"]["hosts"], json::array({"host_a"})) << late_posted.body;
  EXPECT_EQ(late_result["verdict"], "regression") << late_posted.body;
  // The alerts as the replay must rebuild them (their delivery goes on meanwhile).
  const json alerts_before = judged_alerts(cold);
  ASSERT_EQ(alerts_before.size(), 1u) << alerts_before.dump(2);
  cold.stop();
  cold.start();
  ASSERT_NE(cold.port(), 0) << cold.log();
  EXPECT_EQ(judged_alerts(cold), alerts_before);
  EXPECT_EQ(outbox_rows(cold), 1u) << cold.log();
  cold.stop();
}

// storage.fleet_controls (docs/FLEET.md, "Host against host"): four hosts' daemons run the same
// keys, each judged against its own history. host_d alone turns 12% slower on six keys while the
// three others run them as before: its steps are one alert about the host (an incident with the
// host's placement, one notification), decided against the other hosts' runs read from their
// schemas and stored as controls, so that a restart rebuilds it alike and pages nothing. Six other
// keys on which every host turns 12% slower stay an incident of the cycle, not the host's.
TEST(PostgresqlE2E, AHostSlowerThanTheFleetsOtherHostsIsOneAlertAboutTheHost) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  FleetOfDaemons fleet(url, {"host_a", "host_b", "host_c", "host_d"});
  const std::vector<std::string> alone = {"alone-0", "alone-1", "alone-2",
                                          "alone-3", "alone-4", "alone-5"};
  const std::vector<std::string> together = {"together-0", "together-1", "together-2",
                                             "together-3", "together-4", "together-5"};
  const core::Timestamp start = day_before_now();
  // Each host's runs: ten quiet ones of every key (minutes 0-9), then at `minute` its run of
  // `keys` at `median` (each host a few seconds apart from the others).
  const auto runs_of = [&](std::size_t h, const std::vector<std::string>& keys, int minute,
                           std::optional<std::int64_t> median) {
    json batch = json::array();
    const core::Timestamp at = start + std::chrono::seconds(7 * static_cast<int>(h));
    for (const auto& workload : keys) {
      const auto runs = median ? 1 : 10;
      for (int r = 0; r < runs; ++r) {
        const int index = median ? minute : r;
        batch.push_back(
            on_host(synthetic_record(index, median.value_or(noisy(r + 3 * h)), workload, at),
                    fleet.hosts[h]));
      }
    }
    return batch.dump();
  };
  auto& d = *fleet.daemons[3];
  auto& receiver = *fleet.receivers[3];
  d.set_storage(receiver.url(),
                {{"postgresql", url}, {"schema", "host_d"}, {"fleet_controls", true}});
  std::vector<std::string> keys = alone;
  keys.insert(keys.end(), together.begin(), together.end());
  for (std::size_t h = 0; h < 4; ++h) {
    auto& daemon = *fleet.daemons[h];
    daemon.start();
    ASSERT_NE(daemon.port(), 0) << daemon.log();
    ASSERT_EQ(http(daemon.port(), "POST", "/api/v1/runs", runs_of(h, keys, 0, std::nullopt), kToken)
                  .status,
              200);
    // Two hours later the three others run the first keys as before and the others 12% slower.
    if (h < 3) {
      ASSERT_EQ(
          http(daemon.port(), "POST", "/api/v1/runs", runs_of(h, alone, 120, 1'000'000), kToken)
              .status,
          200);
      ASSERT_EQ(
          http(daemon.port(), "POST", "/api/v1/runs", runs_of(h, together, 200, 1'120'000), kToken)
              .status,
          200);
      daemon.stop();
    }
  }
  EXPECT_TRUE(json::parse(http(d.port(), "GET", "/api/v1/alerts").body).empty());

  // host_d alone 12% slower on the first keys: one alert about the host.
  const auto posted =
      http(d.port(), "POST", "/api/v1/runs", runs_of(3, alone, 120, 1'120'000), kToken);
  ASSERT_EQ(posted.status, 200) << posted.body;
  ASSERT_TRUE(receiver.wait_for_2xx(1)) << d.log();
  json alerts = json::parse(http(d.port(), "GET", "/api/v1/alerts?state=firing").body);
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump(2);
  EXPECT_EQ(alerts[0]["kind"], "environment") << alerts.dump(2);
  EXPECT_EQ(alerts[0]["members"].size(), alone.size()) << alerts.dump(2);
  EXPECT_EQ(alerts[0]["placement"]["host"], "host_d") << alerts.dump(2);
  const std::string why = alerts[0]["explanation"];
  EXPECT_NE(why.find("host host_d's runs are +12.0% against those of 3 other host(s) of its "
                     "fleet on 6 of 6 benchmarks"),
            std::string::npos)
      << why;
  const auto delivered = receiver.snapshot().requests;
  ASSERT_EQ(delivered.size(), 1u);
  const json sent = json::parse(delivered[0].body);
  EXPECT_NE(sent.dump().find("\"host\":\"host_d\""), std::string::npos) << sent.dump(2);
  const std::string host_alert = alerts[0]["id"];

  // Every host 12% slower on the other keys: their steps are the cycle's incident, not the host's.
  const auto moved =
      http(d.port(), "POST", "/api/v1/runs", runs_of(3, together, 200, 1'120'000), kToken);
  ASSERT_EQ(moved.status, 200) << moved.body;
  ASSERT_TRUE(receiver.wait_for_2xx(2)) << d.log();
  alerts = json::parse(http(d.port(), "GET", "/api/v1/alerts?state=firing").body);
  ASSERT_EQ(alerts.size(), 2u) << alerts.dump(2);
  for (const auto& alert : alerts) {
    if (alert["id"] == host_alert) continue;
    EXPECT_EQ(alert["members"].size(), together.size()) << alert.dump(2);
    EXPECT_FALSE(alert.contains("placement")) << alert.dump(2);
  }

  // A restart replays the stored controls into the same decisions: nothing is paged again.
  const json before_restart = judged_alerts(d);
  d.stop();
  d.start();
  ASSERT_NE(d.port(), 0) << d.log();
  EXPECT_EQ(judged_alerts(d), before_restart);
  EXPECT_EQ(outbox_rows(d), 2u) << d.log();
  // Every other host's schema was read.
  EXPECT_EQ(d.log().find("storage.fleet_controls: "), std::string::npos) << d.log();
  d.stop();
}

// A daemon on a SQLite file holds its own host only: its fleet page and API say so.
TEST(PostgresqlE2E, TheFleetOfADaemonOnASqliteFileIsItsOwnHostOnly) {
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;
  DaemonProcess daemon(dir, receiver.url());
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const auto fleet = http(daemon.port(), "GET", "/api/v1/fleet");
  ASSERT_EQ(fleet.status, 200) << fleet.body;
  EXPECT_EQ(json::parse(fleet.body)["postgresql"], false);
  EXPECT_TRUE(json::parse(fleet.body)["hosts"].empty());
  const auto page = http(daemon.port(), "GET", "/fleet");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("SQLite file"), std::string::npos) << page.body;
  EXPECT_EQ(http(daemon.port(), "GET", "/fleet?x=1").status, 400);
  const auto status = run_kernelwatch(
      {"status", "--fleet", "--url", "http://127.0.0.1:" + std::to_string(daemon.port())});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("SQLite file"), std::string::npos) << status.out;
  daemon.stop();
}

}  // namespace
}  // namespace kernelwatch
