#pragma once
// The real programs the daemon's end-to-end tests start beside kernelwatch (Alertmanager,
// Prometheus): a child process killed when the test ends, loopback ports the OS just handed out,
// and the JSON and metric reads that poll their state.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kernelwatch::testing {

// A port the OS has just handed out and taken back, free for TCP and UDP (Alertmanager's
// gossip listens on both): free for the child that binds it next. 0 when none could be had.
[[nodiscard]] std::uint16_t free_port();

// A child process killed (and reaped) when the test ends, however it ends.
class Child {
 public:
  Child(const std::filesystem::path& program, const std::vector<std::string>& args,
        std::filesystem::path log);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] std::string log() const;
  // Reaps the child if it has exited (it could not start).
  bool exited();
  // SIGTERM, and waits until it has exited (it is killed after 10 s); true when it exited by
  // itself.
  bool stop();

 private:
  std::filesystem::path log_;
  pid_t pid_;
};

// GET path on 127.0.0.1:port as JSON; null when the answer is not a 200 with JSON.
[[nodiscard]] nlohmann::json get_json(std::uint16_t port, const std::string& path);

// The value of one sample of a Prometheus text page at 127.0.0.1:port/metrics, named with its
// labels as written (`alertmanager_cluster_members`,
// `alertmanager_notifications_total{integration="webhook"}`); nullopt when absent.
[[nodiscard]] std::optional<double> metric(std::uint16_t port, const std::string& sample);

// Alertmanager's alerts (GET /api/v2/alerts: the active, silenced and inhibited ones) carrying
// kernelwatch's alert_id label.
[[nodiscard]] nlohmann::json alertmanager_alerts(std::uint16_t port, const std::string& alert_id);

}  // namespace kernelwatch::testing
