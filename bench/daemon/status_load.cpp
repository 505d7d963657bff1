// Load generator for the daemon's HTTP API: N client threads, each with one keep-alive HTTP/1.1
// connection to 127.0.0.1:PORT, send GET PATH back to back for a fixed time and record each
// request's latency (send to last body byte). Prints requests/s, p50/p90/p99/max latency, errors
// and the answer size. Loopback only; bounded in time (--duration) and in count (--max-requests).
//
//   kw_bench_status_load --port 9477 [--path /api/v1/status] [--threads 4] [--duration 10]
//                        [--max-requests 5000000] [--timeout-ms 5000]
//   kw_bench_status_load --port 9477 --once      # print one answer's body and exit
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int port = 0;
  std::string path = "/api/v1/status";
  int threads = 4;
  double duration_s = 10.0;
  std::uint64_t max_requests = 5'000'000;
  int timeout_ms = 5000;
  bool once = false;
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr,
               "kw_bench_status_load: %s\n"
               "usage: kw_bench_status_load --port PORT [--path /api/v1/status] [--threads 4]\n"
               "       [--duration 10] [--max-requests 5000000] [--timeout-ms 5000] [--once]\n",
               message);
  std::exit(2);
}

template <typename T>
T parse_number(std::string_view text, T low, T high, const char* what) {
  T value{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < low ||
      value > high) {
    usage(what);
  }
  return value;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) usage("missing value");
      return argv[++i];
    };
    if (arg == "--port") {
      o.port = parse_number<int>(value(), 1, 65535, "--port must be 1..65535");
    } else if (arg == "--path") {
      o.path = std::string(value());
      if (o.path.empty() || o.path[0] != '/' ||
          o.path.find_first_of(" \r\n") != std::string::npos) {
        usage("--path must start with / and contain no spaces");
      }
    } else if (arg == "--threads") {
      o.threads = parse_number<int>(value(), 1, 64, "--threads must be 1..64");
    } else if (arg == "--duration") {
      const std::string text(value());
      char* end = nullptr;
      o.duration_s = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || !(o.duration_s >= 0.1 && o.duration_s <= 300)) {
        usage("--duration must be 0.1..300 seconds");
      }
    } else if (arg == "--max-requests") {
      o.max_requests = parse_number<std::uint64_t>(value(), 1, 100'000'000,
                                                   "--max-requests must be 1..100000000");
    } else if (arg == "--timeout-ms") {
      o.timeout_ms = parse_number<int>(value(), 1, 60'000, "--timeout-ms must be 1..60000");
    } else if (arg == "--once") {
      o.once = true;
    } else {
      usage("unknown argument");
    }
  }
  if (o.port == 0) usage("--port is required");
  return o;
}

// One keep-alive connection with a small read buffer.
class Connection {
 public:
  Connection(int port, int timeout_ms) : port_(port), timeout_ms_(timeout_ms) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { close(); }

  bool open() {
    close();
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    timeval tv{};
    tv.tv_sec = timeout_ms_ / 1000;
    tv.tv_usec = static_cast<suseconds_t>((timeout_ms_ % 1000) * 1000);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only, by construction
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      close();
      return false;
    }
    buffer_.clear();
    return true;
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool is_open() const { return fd_ >= 0; }

  bool send_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  struct Response {
    int status = 0;
    std::string body;
    bool close = false;
  };

  // Reads one response: status line, headers, then a Content-Length or chunked body.
  std::optional<Response> read_response() {
    Response r;
    std::size_t header_end = 0;
    while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (buffer_.size() > 64 * 1024 || !fill()) return std::nullopt;
    }
    const std::string head = buffer_.substr(0, header_end);
    buffer_.erase(0, header_end + 4);
    // "HTTP/1.1 200 OK"
    if (head.size() < 12 || head.compare(0, 5, "HTTP/") != 0) return std::nullopt;
    const auto space = head.find(' ');
    if (space == std::string::npos) return std::nullopt;
    r.status = std::atoi(head.c_str() + space + 1);
    std::optional<std::size_t> content_length;
    bool chunked = false;
    std::size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos < head.size()) {
      const std::size_t start = pos + 2;
      std::size_t end = head.find("\r\n", start);
      if (end == std::string::npos) end = head.size();
      const std::string line = lower(head.substr(start, end - start));
      if (line.rfind("content-length:", 0) == 0) {
        content_length = std::strtoull(line.c_str() + 15, nullptr, 10);
      } else if (line.rfind("transfer-encoding:", 0) == 0) {
        chunked = line.find("chunked") != std::string::npos;
      } else if (line.rfind("connection:", 0) == 0) {
        r.close = line.find("close") != std::string::npos;
      }
      pos = end == head.size() ? std::string::npos : end;
    }
    if (chunked) {
      if (!read_chunked(r.body)) return std::nullopt;
    } else if (content_length) {
      if (*content_length > kMaxBody || !read_exact(*content_length, r.body)) return std::nullopt;
    } else {
      return std::nullopt;  // a body delimited by close: not expected from the daemon
    }
    return r;
  }

 private:
  static constexpr std::size_t kMaxBody = 256 * 1024 * 1024;

  static std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return s;
  }

  bool fill() {
    char chunk[64 * 1024];
    while (true) {
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;  // closed, timeout or error
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
  }

  bool read_exact(std::size_t n, std::string& out) {
    while (buffer_.size() < n) {
      if (!fill()) return false;
    }
    out.append(buffer_, 0, n);
    buffer_.erase(0, n);
    return true;
  }

  bool read_line(std::string& line) {
    std::size_t end = 0;
    while ((end = buffer_.find("\r\n")) == std::string::npos) {
      if (buffer_.size() > 64 * 1024 || !fill()) return false;
    }
    line = buffer_.substr(0, end);
    buffer_.erase(0, end + 2);
    return true;
  }

  bool read_chunked(std::string& out) {
    std::string line;
    while (true) {
      if (!read_line(line)) return false;
      const std::size_t size = std::strtoull(line.c_str(), nullptr, 16);  // ignores extensions
      if (size == 0) {
        // Trailers up to the empty line.
        do {
          if (!read_line(line)) return false;
        } while (!line.empty());
        return true;
      }
      if (out.size() + size > kMaxBody || !read_exact(size, out)) return false;
      std::string crlf;
      if (!read_exact(2, crlf) || crlf != "\r\n") return false;
    }
  }

  int port_;
  int timeout_ms_;
  int fd_ = -1;
  std::string buffer_;
};

struct ThreadResult {
  std::vector<std::uint32_t> latency_us;
  std::uint64_t errors = 0;
  std::uint64_t non_2xx = 0;
  std::uint64_t reconnects = 0;
  std::size_t body_min = SIZE_MAX;
  std::size_t body_max = 0;
};

void client(const Options& o, const std::string& request, Clock::time_point deadline,
            std::atomic<std::uint64_t>& issued, ThreadResult& out) {
  out.latency_us.reserve(1 << 16);
  Connection conn(o.port, o.timeout_ms);
  while (Clock::now() < deadline) {
    if (issued.fetch_add(1, std::memory_order_relaxed) >= o.max_requests) break;
    if (!conn.is_open()) {
      if (!conn.open()) {
        ++out.errors;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded error loop
        continue;
      }
      ++out.reconnects;
    }
    const auto start = Clock::now();
    auto response = conn.send_all(request) ? conn.read_response() : std::nullopt;
    const auto elapsed = Clock::now() - start;
    if (!response) {
      ++out.errors;
      conn.close();
      continue;
    }
    if (response->status < 200 || response->status > 299) ++out.non_2xx;
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
    out.latency_us.push_back(static_cast<std::uint32_t>(std::min<long long>(us, UINT32_MAX)));
    out.body_min = std::min(out.body_min, response->body.size());
    out.body_max = std::max(out.body_max, response->body.size());
    if (response->close) conn.close();
  }
}

double percentile_ms(const std::vector<std::uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)] / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const std::string request = "GET " + o.path +
                              " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(o.port) +
                              "\r\nAccept: application/json\r\n\r\n";
  if (o.once) {
    Connection conn(o.port, o.timeout_ms);
    if (!conn.open() || !conn.send_all(request)) {
      std::fprintf(stderr, "kw_bench_status_load: cannot reach 127.0.0.1:%d\n", o.port);
      return 1;
    }
    const auto response = conn.read_response();
    if (!response) {
      std::fprintf(stderr, "kw_bench_status_load: no valid answer\n");
      return 1;
    }
    std::fwrite(response->body.data(), 1, response->body.size(), stdout);
    std::fprintf(stdout, "\n");
    std::fprintf(stderr, "status %d, body %zu bytes\n", response->status, response->body.size());
    return response->status >= 200 && response->status <= 299 ? 0 : 1;
  }

  std::vector<ThreadResult> results(static_cast<std::size_t>(o.threads));
  std::vector<std::thread> workers;
  std::atomic<std::uint64_t> issued{0};
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(o.duration_s));
  for (int t = 0; t < o.threads; ++t) {
    workers.emplace_back(client, std::cref(o), std::cref(request), deadline, std::ref(issued),
                         std::ref(results[static_cast<std::size_t>(t)]));
  }
  for (auto& w : workers) w.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<std::uint32_t> all;
  std::uint64_t errors = 0, non_2xx = 0, connects = 0;
  std::size_t body_min = SIZE_MAX, body_max = 0;
  for (auto& r : results) {
    all.insert(all.end(), r.latency_us.begin(), r.latency_us.end());
    errors += r.errors;
    non_2xx += r.non_2xx;
    connects += r.reconnects;
    body_min = std::min(body_min, r.body_min);
    body_max = std::max(body_max, r.body_max);
  }
  std::sort(all.begin(), all.end());
  double sum_ms = 0;
  for (auto v : all) sum_ms += v / 1000.0;
  std::printf("GET http://127.0.0.1:%d%s, %d threads (keep-alive), %.1f s\n", o.port,
              o.path.c_str(), o.threads, wall);
  std::printf("requests %zu, %.0f requests/s, errors %llu, non-2xx %llu, connections %llu\n",
              all.size(), static_cast<double>(all.size()) / wall,
              static_cast<unsigned long long>(errors), static_cast<unsigned long long>(non_2xx),
              static_cast<unsigned long long>(connects));
  std::printf("latency ms: mean %.3f p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.3f\n",
              all.empty() ? 0.0 : sum_ms / static_cast<double>(all.size()),
              percentile_ms(all, 0.50), percentile_ms(all, 0.90), percentile_ms(all, 0.99),
              percentile_ms(all, 0.999), all.empty() ? 0.0 : all.back() / 1000.0);
  std::printf("body bytes: min %zu max %zu\n", all.empty() ? 0 : body_min, body_max);
  return errors == 0 && non_2xx == 0 ? 0 : 1;
}
