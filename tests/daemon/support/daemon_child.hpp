#pragma once
// The kernelwatch daemon as a child process, shared by the daemon's end-to-end tests.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/time.hpp"

namespace kernelwatch::testing {

// Runs are dated relative to the test's clock, never to a calendar date: the hour that began a
// day before the test started (run i of a series is usually observed i minutes after it).
[[nodiscard]] core::Timestamp day_before_now();

// `kernelwatch daemon --config CONFIG` as a child process writing to LOG. A test that failed
// half-way leaves no daemon running behind it: the destructor kills a child still running.
class DaemonChild {
 public:
  DaemonChild() = default;
  ~DaemonChild();
  DaemonChild(const DaemonChild&) = delete;
  DaemonChild& operator=(const DaemonChild&) = delete;

  // Spawns it (again, after a stop) and waits until it listens or exits; port() is 0 when it
  // did not start, and log() says why.
  void start(const std::filesystem::path& config, std::filesystem::path log,
             std::chrono::seconds deadline = std::chrono::seconds(60));
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] std::string log() const;
  // It has exited (it could not start); reaps it.
  bool exited();
  [[nodiscard]] bool alive() const;
  void kill_hard();
  // SIGTERM; it must exit 0 within `deadline`.
  void stop(std::chrono::seconds deadline = std::chrono::seconds(10));

 private:
  [[nodiscard]] std::uint16_t port_from_log() const;

  std::filesystem::path log_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace kernelwatch::testing
