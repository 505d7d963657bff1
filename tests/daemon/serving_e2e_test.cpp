// Serving while keys grow and things go wrong (issue #26), against the real daemon as a process:
// /metrics per-key series chosen by metrics.per_key (and SIGHUP), a full disk under posted runs
// (logged, counted, /readyz not ready until a write succeeds), health checks from an address
// that reconnects at once after each drop, and key pages kept rendered until their key changes.
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <regex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/digest.hpp"
#include "core/time.hpp"
#include "tests/daemon/support/daemon_child.hpp"
#include "tests/daemon/support/posted_record.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using Reply = testing::HttpReply;
using testing::eventually;
using testing::http;

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kToken = "serving-token-41d9";

// Run i of a workload's series is observed i minutes after day_before_now(): the one schema-valid
// record of the e2e tests (testing::posted_record).
json record(const std::string& workload, int minute, std::int64_t median_ns) {
  return testing::posted_record({testing::day_before_now() + std::chrono::minutes(minute),
                                 median_ns, workload, "posted", "serving-test"});
}

// `runs` runs of 1 ms with 0.5% deterministic noise, from minute `first` on.
json steady(const std::string& workload, int runs, int first = 0) {
  json batch = json::array();
  for (int i = 0; i < runs; ++i) {
    batch.push_back(record(workload, first + i, 1'000'000 + (i % 3) * 5'000));
  }
  return batch;
}

class Daemon {
 public:
  explicit Daemon(const testing::TempDir& dir, json extra = json::object()) : dir_(dir) {
    testing::write_file(dir / "token", std::string(kToken) + "\n");
    std::filesystem::permissions(
        dir / "token", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    write_config(std::move(extra));
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // The config with `extra` merged in at the top level (a section replaces the default one).
  void write_config(json extra) {
    json config = {{"storage", {{"path", (dir_ / "kw.db").string()}}},
                   {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir_ / "token").string()}}},
                   {"backend", "cpu"},
                   {"benchmarks", json::array()},
                   {"notifiers", json::array()}};
    for (auto& [name, value] : extra.items()) {
      if (name == "http") {
        config["http"].update(value);
      } else {
        config[name] = value;
      }
    }
    testing::write_file(dir_ / "kernelwatch.json", config.dump(2));
  }
  void start() {
    child_.start(dir_ / "kernelwatch.json",
                 dir_ / ("daemon-" + std::to_string(starts_++) + ".log"));
  }
  [[nodiscard]] std::uint16_t port() const { return child_.port(); }
  [[nodiscard]] pid_t pid() const { return child_.pid(); }
  [[nodiscard]] bool alive() const { return child_.alive(); }
  [[nodiscard]] std::string log() const { return child_.log(); }
  [[nodiscard]] Reply get(const std::string& path) const { return http(port(), "GET", path); }
  [[nodiscard]] Reply post(const json& body) const {
    return http(port(), "POST", "/api/v1/runs", body.dump(), kToken);
  }
  // The digest (64 hex digits) of the key of `workload`.
  [[nodiscard]] std::string ref_of(const std::string& workload) const {
    const auto keys = json::parse(get("/api/v1/keys").body);
    for (const auto& key : keys) {
      if (key["workload"] == workload) return key["digest"].get<std::string>().substr(7);
    }
    return "";
  }
  void stop() { child_.stop(20s); }

 private:
  const testing::TempDir& dir_;
  testing::DaemonChild child_;
  int starts_ = 0;
};

// The workloads that have a sample of `family` in a /metrics body.
std::set<std::string> workloads_in(const std::string& metrics, const std::string& family) {
  std::set<std::string> out;
  const std::regex sample("^" + family + "\\{[^}]*workload=\"([^\"]*)\"");
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, sample)) out.insert(m[1]);
  }
  return out;
}

// The value of the sample that starts `line_start` ("kernelwatch_keys{state=\"firing\"}").
std::optional<double> sample(const std::string& metrics, const std::string& line_start) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(line_start + " ", 0) == 0) return std::stod(line.substr(line_start.size() + 1));
  }
  return std::nullopt;
}

// Three keys: `calm` in band, `stepped` firing (a 30% step in the posted batch), `young` with
// too few runs. With metrics.per_key all each has series of its own; problems: only the firing
// one; none: no key. The per-state counts are there whatever the setting; SIGHUP switches it; a
// bad value is refused with the field named and the running setting kept; promtool accepts
// each body.
TEST(ServingE2E, MetricsPerKeyChoosesWhichKeysGetSeriesAndSighupSwitchesIt) {
  KW_REQUIRE_PROGRAM(promtool, "promtool", "prometheus");
  testing::TempDir dir;
  Daemon daemon(dir, {{"metrics", {{"per_key", "all"}}}});
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  json batch = steady("calm", 12);
  for (auto& run : steady("stepped", 12)) batch.push_back(run);
  batch.push_back(record("stepped", 12, 1'300'000));
  for (auto& run : steady("young", 2)) batch.push_back(run);
  const Reply posted = daemon.post(batch);
  ASSERT_EQ(posted.status, 200) << posted.body;

  const auto metrics_when = [&](const std::function<bool(const std::string&)>& done) {
    std::string body;
    EXPECT_TRUE(eventually([&] {
      const Reply r = daemon.get("/metrics");
      body = r.body;
      return r.status == 200 && done(body);
    })) << body;
    return body;
  };
  const auto promtool_accepts = [&](const std::string& body) {
    testing::write_file(dir / "metrics.txt", body);
    const auto check =
        testing::run_process("/bin/sh", {"-c", "exec \"$0\" check metrics < \"$1\"",
                                         promtool.string(), (dir / "metrics.txt").string()});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err << body;
  };
  const std::set<std::string> every{"calm", "stepped", "young"};
  const std::set<std::string> problems{"stepped"};
  const auto counts_hold = [](const std::string& body) {
    EXPECT_EQ(sample(body, "kernelwatch_keys{state=\"firing\"}"), 1.0) << body;
    EXPECT_EQ(sample(body, "kernelwatch_keys{state=\"in_band\"}"), 1.0) << body;
    EXPECT_EQ(sample(body, "kernelwatch_keys{state=\"insufficient_data\"}"), 1.0) << body;
  };

  std::string body = metrics_when(
      [&](const std::string& b) { return workloads_in(b, "kernelwatch_key_alert_open") == every; });
  EXPECT_EQ(workloads_in(body, "kernelwatch_key_median_seconds"), every);
  EXPECT_EQ(workloads_in(body, "kernelwatch_key_band_upper_seconds"),
            (std::set<std::string>{"calm", "stepped"}));
  counts_hold(body);
  promtool_accepts(body);

  daemon.write_config({{"metrics", {{"per_key", "problems"}}}});
  ASSERT_EQ(::kill(daemon.pid(), SIGHUP), 0);
  body = metrics_when([&](const std::string& b) {
    return workloads_in(b, "kernelwatch_key_alert_open") == problems;
  });
  EXPECT_EQ(workloads_in(body, "kernelwatch_key_median_seconds"), problems);
  // The key label is the first 16 hex digits of the key's digest.
  EXPECT_EQ(sample(body,
                   "kernelwatch_key_alert_open{benchmark=\"synthetic/forward\",provider="
                   "\"posted\",workload=\"stepped\",environment=\"nvidia-h100-80gb-hbm3\",protocol="
                   "\"e2e-protocol\",key=\"" +
                       daemon.ref_of("stepped").substr(0, 16) + "\"}"),
            1.0)
      << body;
  counts_hold(body);
  promtool_accepts(body);

  daemon.write_config({{"metrics", {{"per_key", "none"}}}});
  ASSERT_EQ(::kill(daemon.pid(), SIGHUP), 0);
  body = metrics_when(
      [&](const std::string& b) { return workloads_in(b, "kernelwatch_key_alert_open").empty(); });
  EXPECT_EQ(body.find("workload="), std::string::npos) << body;
  counts_hold(body);
  promtool_accepts(body);

  // A bad value: the running config stays, and the log names the field and the choices.
  daemon.write_config({{"metrics", {{"per_key", "some"}}}});
  ASSERT_EQ(::kill(daemon.pid(), SIGHUP), 0);
  ASSERT_TRUE(eventually([&] {
    return daemon.log().find("keeping the running config") != std::string::npos;
  })) << daemon.log();
  EXPECT_NE(daemon.log().find("metrics.per_key: \"some\" is not one of all, problems, none"),
            std::string::npos)
      << daemon.log();
  EXPECT_TRUE(workloads_in(daemon.get("/metrics").body, "kernelwatch_key_alert_open").empty());
  daemon.stop();

  // At start, the same message and exit 1.
  const auto refused =
      testing::run_kernelwatch({"daemon", "--config", (dir / "kernelwatch.json").string()});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("metrics.per_key: \"some\" is not one of all, problems, none"),
            std::string::npos)
      << refused.err;
}

// Issue 26: every POST failed on a full disk while /readyz said ready and the log said nothing.
// The disk is made full for the daemon alone by its file-size limit (prlimit RLIMIT_FSIZE, a
// little above what its files hold; the daemon ignores SIGXFSZ, so writes fail with EFBIG).
TEST(ServingE2E, PostsFailingOnAFullDiskAreLoggedCountedAndMakeTheDaemonNotReady) {
  testing::TempDir dir;
  Daemon daemon(dir);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_EQ(daemon.post(steady("before", 1)).status, 200);
  ASSERT_EQ(daemon.get("/readyz").status, 200);

  std::uintmax_t largest = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.is_regular_file()) largest = std::max(largest, entry.file_size());
  }
  rlimit old{};
  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, nullptr, &old), 0);
  rlimit full = old;
  full.rlim_cur = largest + 64 * 1024;
  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, &full, nullptr), 0);

  const json batch = steady("full-disk", 600, 10);  // under the 1 MiB body limit
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const Reply refused = daemon.post(batch);
    ASSERT_EQ(refused.status, 500) << refused.body;
  }
  const Reply readyz = daemon.get("/readyz");
  EXPECT_EQ(readyz.status, 503) << readyz.body;
  const json ready = json::parse(readyz.body);
  EXPECT_EQ(ready["status"], "not ready");
  EXPECT_NE(ready["error"].get<std::string>().find("storage writes are failing (runs)"),
            std::string::npos)
      << readyz.body;
  EXPECT_EQ(ready["storageWriteFailures"], 2) << readyz.body;
  EXPECT_EQ(daemon.get("/healthz").status, 200);
  // Each failure has its log line (who, how many runs, the reason), never the token.
  const std::string log = daemon.log();
  std::size_t lines = 0;
  for (std::size_t at = 0;
       (at = log.find("storing 600 run(s) failed, none stored: ", at)) != std::string::npos; ++at) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u) << log;
  EXPECT_NE(log.find("POST /api/v1/runs from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_EQ(log.find(kToken), std::string::npos) << log;
  std::string metrics = daemon.get("/metrics").body;
  EXPECT_EQ(sample(metrics, "kernelwatch_storage_write_failures_total"), 2.0) << metrics;
  EXPECT_EQ(sample(metrics, "kernelwatch_storage_writes_failing"), 1.0) << metrics;

  // Room again: the next write succeeds and the daemon is ready again.
  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, &old, nullptr), 0);
  const Reply stored = daemon.post(batch);
  ASSERT_EQ(stored.status, 200) << stored.body;
  EXPECT_EQ(json::parse(stored.body)["stored"], 600);
  EXPECT_EQ(daemon.get("/readyz").status, 200);
  ASSERT_TRUE(eventually([&] {
    metrics = daemon.get("/metrics").body;
    return sample(metrics, "kernelwatch_storage_writes_failing") == 0.0;
  })) << metrics;
  EXPECT_EQ(sample(metrics, "kernelwatch_storage_write_failures_total"), 2.0) << metrics;
  daemon.stop();
}

int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A connection that holds a slot busy: a request whose body never comes (the server waits for
// it until its read timeout, 10 s), as a flood of slow uploads or large downloads would.
int busy_connection(std::uint16_t port) {
  const int fd = connect_loopback(port);
  if (fd < 0) return fd;
  const std::string header =
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n";
  (void)::send(fd, header.data(), header.size(), MSG_NOSIGNAL);
  return fd;
}

// Issue 26: a client that holds every connection its address may have and reconnects at once
// after each drop starved /healthz from the same address (1 of 144 answered), although the
// README promises that health checks from that address are not locked out. Its connections are
// busy (a request body that never comes), so none can be replaced; a new connection from the
// address gets a spare slot where health checks are answered, and anything else gets 503.
TEST(ServingE2E, HealthChecksAreAnsweredFromAnAddressThatReconnectsAtOnceAfterEachDrop) {
  constexpr int kCap = 16;
  constexpr int kHeld = 2 * kCap;  // more than the cap: the rest are refused and reconnect
  testing::TempDir dir;
  Daemon daemon(dir, {{"http", {{"max_connections_per_client", kCap}}}});
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const auto port = daemon.port();

  // The client: kHeld busy connections; each one the server closes is opened again at once.
  std::atomic<bool> stop{false};
  std::atomic<long> reconnects{0};
  std::thread client([&] {
    std::vector<pollfd> fds;
    for (int i = 0; i < kHeld; ++i) fds.push_back({busy_connection(port), POLLIN, 0});
    while (!stop) {
      if (::poll(fds.data(), fds.size(), 20) < 0) continue;
      for (auto& p : fds) {
        if (p.fd >= 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        char buffer[4096];
        if (p.fd >= 0 && ::recv(p.fd, buffer, sizeof buffer, MSG_DONTWAIT) > 0) continue;
        if (p.fd >= 0) ::close(p.fd);
        p.fd = busy_connection(port);
        p.revents = 0;
        ++reconnects;
      }
    }
    for (auto& p : fds) {
      if (p.fd >= 0) ::close(p.fd);
    }
  });
  struct Join {
    std::thread& thread;
    std::atomic<bool>& stop;
    ~Join() {
      stop = true;
      thread.join();
    }
  } join{client, stop};
  ASSERT_TRUE(eventually([&] { return reconnects.load() > 4 * kCap; }))
      << "the client is not refused and reconnecting: " << reconnects.load() << "\n"
      << daemon.log();

  int answered = 0;
  constexpr int kChecks = 40;
  for (int i = 0; i < kChecks; ++i) {
    answered += daemon.get("/healthz").status == 200;
    answered += daemon.get("/readyz").status == 200;
  }
  EXPECT_EQ(answered, 2 * kChecks) << reconnects.load() << " reconnects\n" << daemon.log();
  // What needs a handler is refused with a reason on those connections, not dropped.
  const Reply keys = daemon.get("/api/v1/keys");
  EXPECT_EQ(keys.status, 503) << keys.body;
  EXPECT_NE(keys.body.find("http.max_connections_per_client"), std::string::npos) << keys.body;
  stop = true;
  daemon.stop();
}

// The page's "N runs from ... (of M stored)" caption: how many runs the page shows.
std::string stored_count(const std::string& page) {
  static const std::regex caption("\\(of ([0-9]+) stored\\)");
  std::smatch m;
  return std::regex_search(page, m, caption) ? m[1].str() : "";
}

// A key page is rendered once and kept (answered again without the engine) until its key gets
// a run or one of its alerts changes: the page after a new run shows it, the page after an
// acknowledgement shows the alert acknowledged, and a run of another key leaves it as it was.
TEST(ServingE2E, AKeyPageIsKeptUntilItsKeyGetsARunOrItsAlertChanges) {
  testing::TempDir dir;
  Daemon daemon(dir);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  json batch = steady("watched", 12);
  batch.push_back(record("watched", 12, 1'300'000));
  for (auto& run : steady("other", 3)) batch.push_back(run);
  ASSERT_EQ(daemon.post(batch).status, 200);
  const std::string page_path = "/keys/" + daemon.ref_of("watched") + "?last=all";

  const Reply first = daemon.get(page_path);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(stored_count(first.body), "13");
  EXPECT_EQ(daemon.get(page_path).body, first.body);
  // Another key's run: the page is the same one.
  ASSERT_EQ(daemon.post(record("other", 3, 1'000'000)).status, 200);
  EXPECT_EQ(daemon.get(page_path).body, first.body);

  // A new run of the key: the next page shows it.
  const Reply posted = daemon.post(record("watched", 13, 1'310'000));
  ASSERT_EQ(posted.status, 200) << posted.body;
  const Reply after_run = daemon.get(page_path);
  ASSERT_EQ(after_run.status, 200);
  EXPECT_EQ(stored_count(after_run.body), "14") << after_run.body.substr(0, 2000);
  EXPECT_NE(after_run.body.find(core::format_id_timestamp(testing::day_before_now() + 13min)),
            std::string::npos);

  // The key's alert acknowledged: the next page says so.
  const auto alerts = json::parse(daemon.get("/api/v1/alerts?state=firing").body);
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump();
  const std::string id = alerts[0]["id"];
  const auto ack_count = [](const std::string& page) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = page.find("acknowledged", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  const std::size_t before_ack = ack_count(after_run.body);
  const Reply ack = http(daemon.port(), "POST", "/api/v1/alerts/" + id + "/ack",
                         R"({"rebaseline": false})", kToken);
  ASSERT_EQ(ack.status, 200) << ack.body;
  const Reply after_ack = daemon.get(page_path);
  EXPECT_GT(ack_count(after_ack.body), before_ack);
  EXPECT_EQ(stored_count(after_ack.body), "14");
  daemon.stop();
}

}  // namespace
}  // namespace kernelwatch
