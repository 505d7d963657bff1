#include "tests/daemon/support/neighbour_process.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <sstream>

#include "tests/notifiers/support/spawn.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::testing {

namespace spawn = notifiers::testing;

namespace {

// Binds 127.0.0.1:port (0: any) with the socket type; the bound port, 0 on failure.
std::uint16_t bind_once(int type, std::uint16_t port) {
  const int fd = ::socket(AF_INET, type, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  socklen_t size = sizeof addr;
  std::uint16_t bound = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0) {
    bound = ntohs(addr.sin_port);
  }
  ::close(fd);
  return bound;
}

}  // namespace

std::uint16_t free_port() {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const std::uint16_t port = bind_once(SOCK_STREAM, 0);
    if (port != 0 && bind_once(SOCK_DGRAM, port) == port) return port;
  }
  return 0;
}

Child::Child(const std::filesystem::path& program, const std::vector<std::string>& args,
             std::filesystem::path log)
    : log_(std::move(log)), pid_(spawn::spawn(program, args, log_)) {}

Child::~Child() {
  int status = 0;
  if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == 0) spawn::kill_hard(pid_);
}

std::string Child::log() const {
  return read_file(log_);
}

bool Child::exited() {
  int status = 0;
  return ::waitpid(pid_, &status, WNOHANG) == pid_;
}

bool Child::stop() {
  if (pid_ <= 0) return false;
  ::kill(pid_, SIGTERM);
  const auto code = spawn::wait_exit(pid_, std::chrono::seconds(10));
  pid_ = -1;
  return code.has_value();
}

nlohmann::json get_json(std::uint16_t port, const std::string& path) {
  const auto reply = http(port, "GET", path);
  if (reply.status != 200) return nullptr;
  return nlohmann::json::parse(reply.body, nullptr, false);
}

std::optional<double> metric(std::uint16_t port, const std::string& sample) {
  const auto reply = http(port, "GET", "/metrics");
  if (reply.status != 200) return std::nullopt;
  std::istringstream lines(reply.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > sample.size() && line.compare(0, sample.size(), sample) == 0 &&
        line[sample.size()] == ' ') {
      return std::stod(line.substr(sample.size() + 1));
    }
  }
  return std::nullopt;
}

nlohmann::json alertmanager_alerts(std::uint16_t port, const std::string& alert_id) {
  const nlohmann::json all = get_json(port, "/api/v2/alerts");
  nlohmann::json out = nlohmann::json::array();
  if (!all.is_array()) return out;
  for (const auto& a : all) {
    if (a.contains("labels") && a["labels"].value("alert_id", "") == alert_id) out.push_back(a);
  }
  return out;
}

}  // namespace kernelwatch::testing
