#include "tests/daemon/support/watching_daemon.hpp"

#include <filesystem>
#include <sstream>

#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::testing {

using nlohmann::json;

WatchingDaemon::WatchingDaemon(const std::filesystem::path& dir, json benchmarks, json detector,
                               const std::string& interval, json notifiers)
    : dir_(dir) {
  write_file(dir / "token", std::string(kToken) + "\n");
  std::filesystem::permissions(
      dir / "token", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const json config = {
      {"storage", {{"path", (dir / "kw.db").string()}}},
      {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir / "token").string()}}},
      {"backend", "cpu"},
      {"schedule", {{"interval", interval}, {"run_at_start", true}}},
      {"benchmarks", std::move(benchmarks)},
      {"detector", std::move(detector)},
      {"notifiers", std::move(notifiers)}};
  write_file(dir / "kernelwatch.json", config.dump(2));
}

void WatchingDaemon::start() {
  child_.start(dir_ / "kernelwatch.json", dir_ / ("daemon-" + std::to_string(starts_++) + ".log"));
}

json WatchingDaemon::get(const std::string& path) const {
  const auto reply = http(port(), "GET", path);
  if (reply.status != 200) return json::array();
  auto parsed = json::parse(reply.body, nullptr, false);
  return parsed.is_discarded() ? json::array() : parsed;
}

json WatchingDaemon::wait_for_runs(std::size_t count, std::chrono::seconds deadline) const {
  json out = json::array();
  eventually(
      [&] {
        out = runs();
        return out.size() >= count;
      },
      deadline);
  return out;
}

std::size_t WatchingDaemon::cycles_done() const {
  std::istringstream in(child_.log());
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find(") done in ") != std::string::npos) ++n;
  }
  return n;
}

bool WatchingDaemon::wait_for_cycles(std::size_t count, std::chrono::seconds deadline) const {
  return eventually([&] { return cycles_done() >= count; }, deadline);
}

bool WatchingDaemon::run_cycle(std::chrono::seconds deadline) {
  const std::size_t before = cycles_done();
  if (http(port(), "POST", "/api/v1/trigger", "{}", kToken).status != 202) return false;
  return wait_for_cycles(before + 1, deadline);
}

std::string reason_of(const json& record) {
  const json& run = record["run"];
  if (run.contains("metadata") && run["metadata"].contains("description")) {
    return run["metadata"]["description"];
  }
  return "";
}

}  // namespace kernelwatch::testing
