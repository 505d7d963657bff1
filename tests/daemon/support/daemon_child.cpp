#include "tests/daemon/support/daemon_child.hpp"

#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <optional>
#include <regex>

#include <gtest/gtest.h>

#include "tests/notifiers/support/spawn.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::testing {

namespace spawn = notifiers::testing;

core::Timestamp day_before_now() {
  using namespace std::chrono_literals;
  static const core::Timestamp start =
      std::chrono::floor<std::chrono::hours>(core::Timestamp::clock::now()) - 24h;
  return start;
}

DaemonChild::~DaemonChild() {
  // waitpid answers 0 only for our own child still running (a reaped pid, even if reused, is
  // ECHILD).
  int status = 0;
  if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == 0) kill_hard();
}

void DaemonChild::start(const std::filesystem::path& config, std::filesystem::path log,
                        std::chrono::seconds deadline) {
  log_ = std::move(log);
  pid_ = spawn::spawn(kernelwatch_binary(), {"daemon", "--config", config.string()}, log_);
  eventually([&] { return port_from_log() != 0 || exited(); }, deadline);
  port_ = port_from_log();
}

std::uint16_t DaemonChild::port_from_log() const {
  std::ifstream in(log_);
  std::string line;
  static const std::regex listening("kernelwatch: listening on 127\\.0\\.0\\.1:([0-9]+)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, listening)) return static_cast<std::uint16_t>(std::stoi(m[1]));
  }
  return 0;
}

std::string DaemonChild::log() const {
  return read_file(log_);
}

bool DaemonChild::exited() {
  int status = 0;
  return ::waitpid(pid_, &status, WNOHANG) == pid_;
}

bool DaemonChild::alive() const {
  return ::kill(pid_, 0) == 0;
}

void DaemonChild::kill_hard() {
  spawn::kill_hard(pid_);
}

void DaemonChild::stop(std::chrono::seconds deadline) {
  ASSERT_EQ(::kill(pid_, SIGTERM), 0);
  EXPECT_EQ(spawn::wait_exit(pid_, deadline), std::optional<int>(0)) << log();
}

}  // namespace kernelwatch::testing
