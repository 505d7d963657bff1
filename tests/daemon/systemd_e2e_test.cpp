// The real kernelwatch daemon as a process under a stand-in for systemd: the test owns the
// NOTIFY_SOCKET (a unix datagram socket in its temporary directory) and sets WATCHDOG_USEC, then
// checks READY/STATUS, the watchdog pings and STOPPING on SIGTERM. `kernelwatch status` is run
// against the same daemon. Every wait is a blocking receive with a timeout, never a sleep.
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/notifiers/support/spawn.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace spawn = notifiers::testing;

// A unix datagram socket bound in the test's directory: what systemd listens on.
class NotifySocket {
 public:
  explicit NotifySocket(const std::filesystem::path& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      error_ = std::string("socket: ") + std::strerror(errno);
      return;
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.string().size() >= sizeof addr.sun_path) {
      error_ = "socket path too long: " + path.string();
      return;
    }
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      error_ = "bind " + path.string() + ": " + std::strerror(errno);
      return;
    }
    // Generous: a datagram that does not come in 10 s is a failure, not a slow machine.
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  // Receives datagrams until one contains `needle`; nullopt when none came within the timeout.
  std::optional<std::string> wait_for(const std::string& needle) {
    while (true) {
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::nullopt;  // EAGAIN: the timeout passed
      std::string datagram(buffer, static_cast<std::size_t>(n));
      received_.push_back(datagram);
      if (datagram.find(needle) != std::string::npos) return datagram;
    }
  }
  // Everything received so far, for failure messages.
  [[nodiscard]] std::string transcript() const {
    std::string out;
    for (const auto& d : received_) out += "[" + d + "]\n";
    return out;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::string error_;
  std::vector<std::string> received_;
};

// Sets an environment variable for the children spawned in its lifetime; restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

constexpr const char* kToken = "systemd-e2e-token-91c2";

void write_config(const testing::TempDir& dir) {
  testing::write_file(dir / "token", std::string(kToken) + "\n");
  // The config loader refuses secret files that others can read.
  std::filesystem::permissions(
      dir / "token", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const json config = {
      {"storage", {{"path", (dir / "kw.db").string()}}},
      {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir / "token").string()}}},
      {"backend", "cpu"},
      {"schedule", {{"interval", "1h"}, {"jitter", "0s"}, {"run_at_start", true}}},
      {"benchmarks", json::array()}};
  testing::write_file(dir / "kernelwatch.json", config.dump(2));
}

// The port from the READY datagram's STATUS ("listening on 127.0.0.1:PORT, backend cpu").
int port_from_status(const std::string& datagram) {
  static const std::regex listening("STATUS=listening on 127\\.0\\.0\\.1:([0-9]+)");
  std::smatch m;
  if (!std::regex_search(datagram, m, listening)) return 0;
  return std::stoi(m[1]);
}

// The daemon started with NOTIFY_SOCKET and WATCHDOG_USEC pointing at `socket`; the variables
// are set only for the spawn (the child copies the environment) and restored right after.
pid_t start_daemon(const testing::TempDir& dir, const NotifySocket& socket) {
  ScopedEnv notify("NOTIFY_SOCKET", socket.path().string());
  ScopedEnv watchdog("WATCHDOG_USEC", "200000");
  ScopedEnv watchdog_pid("WATCHDOG_PID", std::nullopt);  // would name another process
  return spawn::spawn(testing::kernelwatch_binary(),
                      {"daemon", "--config", (dir / "kernelwatch.json").string()},
                      dir / "daemon.log");
}

// Stops the daemon if a test ended early, so no process outlives the test.
class DaemonGuard {
 public:
  explicit DaemonGuard(pid_t pid) : pid_(pid) {}
  ~DaemonGuard() {
    if (pid_ > 0) spawn::kill_hard(pid_);
  }
  DaemonGuard(const DaemonGuard&) = delete;
  DaemonGuard& operator=(const DaemonGuard&) = delete;
  void release() { pid_ = -1; }

 private:
  pid_t pid_;
};

TEST(SystemdE2E, ReadyStatusWatchdogStoppingAndStatusCommand) {
#ifndef KERNELWATCH_HAVE_SYSTEMD
  GTEST_SKIP() << "kernelwatch was built without libsystemd (libsystemd-dev missing at "
                  "configure time): the daemon sends no sd_notify messages";
#else
  testing::TempDir dir;
  write_config(dir);
  NotifySocket socket(dir / "notify");
  ASSERT_EQ(socket.error(), "");
  const pid_t pid = start_daemon(dir, socket);
  DaemonGuard guard(pid);
  const auto log = [&] { return testing::read_file(dir / "daemon.log"); };

  const auto ready = socket.wait_for("READY=1");
  ASSERT_TRUE(ready.has_value()) << "no READY=1 within 10 s; received:\n"
                                 << socket.transcript() << "log:\n"
                                 << log();
  EXPECT_NE(ready->find("STATUS="), std::string::npos) << *ready;
  const int port = port_from_status(*ready);
  ASSERT_GT(port, 0) << *ready;
  EXPECT_NE(ready->find("backend cpu"), std::string::npos) << *ready;
  // READY is sent once the port is bound and announced.
  EXPECT_NE(log().find("kernelwatch: listening on 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << log();

  // WATCHDOG_USEC=200000: pings every 100 ms while running (one after READY proves the timer).
  const auto ping = socket.wait_for("WATCHDOG=1");
  ASSERT_TRUE(ping.has_value()) << "no WATCHDOG=1 after READY; received:\n"
                                << socket.transcript() << "log:\n"
                                << log();

  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const auto table = testing::run_kernelwatch({"status", "--url", url});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("kernelwatch"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("backend cpu"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("key(s)\n  with a problem: "), std::string::npos) << table.out;

  const auto as_json = testing::run_kernelwatch({"status", "--url", url, "--json"});
  EXPECT_EQ(as_json.exit_code, 0) << as_json.err;
  const json status = json::parse(as_json.out, nullptr, false);
  ASSERT_FALSE(status.is_discarded()) << as_json.out;
  ASSERT_TRUE(status.contains("keys")) << as_json.out;
  EXPECT_TRUE(status["keys"].is_array()) << as_json.out;
  EXPECT_EQ(status.value("backend", ""), "cpu") << as_json.out;

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const auto stopping = socket.wait_for("STOPPING=1");
  EXPECT_TRUE(stopping.has_value()) << "no STOPPING=1 after SIGTERM; received:\n"
                                    << socket.transcript() << "log:\n"
                                    << log();
  const auto code = spawn::wait_exit(pid, 10s);
  guard.release();
  EXPECT_EQ(code, std::optional<int>(0)) << log();
  // The token never reaches the log.
  EXPECT_EQ(log().find(kToken), std::string::npos);
#endif
}

TEST(SystemdE2E, StatusAgainstNoDaemonExitsOneNamingTheAddress) {
  // Port 1 (tcpmux) is privileged and not served on a test machine: the connection is refused.
  const auto result = testing::run_kernelwatch({"status", "--url", "http://127.0.0.1:1"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("127.0.0.1:1"), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

TEST(SystemdE2E, StatusWithAUrlThatIsNotHttpIsBadUsage) {
  const auto result = testing::run_kernelwatch({"status", "--url", "https://127.0.0.1:1"});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("http://"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace kernelwatch
