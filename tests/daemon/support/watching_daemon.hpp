#pragma once
// A daemon that runs benchmark programs, for the e2e tests of runners (runner_e2e_test,
// command_e2e_test): its config written from JSON, its cycles triggered and counted from the log,
// its runs, keys and alerts read from the HTTP API.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/daemon/support/daemon_child.hpp"

namespace kernelwatch::testing {

class WatchingDaemon {
 public:
  static constexpr const char* kToken = "watching-daemon-token-7d1c";

  // Writes DIR/kernelwatch.json: storage in DIR, any free port, the token, CPU backend, the
  // schedule given (run_at_start), `benchmarks`, `detector` and `notifiers` as given.
  WatchingDaemon(const std::filesystem::path& dir, nlohmann::json benchmarks,
                 nlohmann::json detector = nlohmann::json::object(),
                 const std::string& interval = "1h",
                 nlohmann::json notifiers = nlohmann::json::array());

  void start();
  [[nodiscard]] DaemonChild& child() { return child_; }
  [[nodiscard]] std::uint16_t port() const { return child_.port(); }
  [[nodiscard]] std::string log() const { return child_.log(); }

  // GET answers parsed (an empty array when the request fails).
  [[nodiscard]] nlohmann::json get(const std::string& path) const;
  [[nodiscard]] nlohmann::json runs() const { return get("/api/v1/runs?limit=10000"); }
  // Polls until at least `count` runs are stored; returns them.
  [[nodiscard]] nlohmann::json wait_for_runs(
      std::size_t count, std::chrono::seconds deadline = std::chrono::seconds(180)) const;
  // The log's "cycle N (...) done" lines so far.
  [[nodiscard]] std::size_t cycles_done() const;
  // Waits until `count` cycles are done; false at the deadline.
  bool wait_for_cycles(std::size_t count,
                       std::chrono::seconds deadline = std::chrono::seconds(180)) const;
  // POST /api/v1/trigger, then waits for that cycle to be done; false when either failed.
  bool run_cycle(std::chrono::seconds deadline = std::chrono::seconds(180));

 private:
  std::filesystem::path dir_;
  DaemonChild child_;
  int starts_ = 0;
};

// A run's reason, wherever the record form keeps it.
[[nodiscard]] std::string reason_of(const nlohmann::json& record);

}  // namespace kernelwatch::testing
