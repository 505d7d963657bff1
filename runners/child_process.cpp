#include "runners/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>

#include "core/json_limits.hpp"
#include "runners/detail/child_guard.hpp"

extern char** environ;

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;
using Clock = std::chrono::steady_clock;

// Closes its descriptor on destruction; -1 is "none".
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool open() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

core::Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return core::fail(ErrorCode::IoError, std::string("pipe: ") + std::strerror(errno));
  }
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

// write() without letting a closed pipe raise SIGPIPE in the (daemon) process: SIGPIPE is
// blocked on this thread for the call, and one it raised is consumed.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set;
  sigset_t old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  const ssize_t written = ::write(fd, data, size);
  const int error = errno;
  if (written < 0 && error == EPIPE && !was_pending) {
    const timespec zero{};
    (void)sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = error;
  return written;
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

bool has_name(std::string_view entry, std::string_view name) {
  return entry.size() > name.size() && entry.substr(0, name.size()) == name &&
         entry[name.size()] == '=';
}

// What a program gets from the daemon's environment under EnvironmentBase::Minimal.
constexpr std::array<std::string_view, 8> kMinimalNames = {"PATH", "HOME",   "LANG", "LC_ALL",
                                                           "TZ",   "TMPDIR", "USER", "LOGNAME"};

std::vector<std::string> environment_for(const ChildRequest& request) {
  const auto& extra = request.environment;
  std::vector<std::string> out;
  bool has_path = false;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (request.environment_base == EnvironmentBase::Minimal &&
        std::none_of(kMinimalNames.begin(), kMinimalNames.end(),
                     [&](std::string_view name) { return has_name(entry, name); })) {
      continue;
    }
    const bool replaced = std::any_of(extra.begin(), extra.end(),
                                      [&](const auto& kv) { return has_name(entry, kv.first); });
    if (replaced) continue;
    has_path = has_path || has_name(entry, "PATH");
    out.emplace_back(entry);
  }
  for (const auto& [name, value] : extra) {
    has_path = has_path || name == "PATH";
    out.push_back(name + "=" + value);
  }
  if (!has_path) out.emplace_back("PATH=/usr/local/bin:/usr/bin:/bin");
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The program's path: argv[0] itself when it has a '/', else the first executable file of that
// name in the child's PATH. Looked up before fork (nothing may allocate after it).
core::Result<std::string> resolve_program(const std::string& name,
                                          const std::vector<std::string>& environment) {
  const auto check = [&](const std::string& path) -> core::Status {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
      const int error = errno;
      return core::fail(
          error == ENOENT || error == ENOTDIR ? ErrorCode::NotFound : ErrorCode::Unavailable,
          "cannot start " + name + ": " + std::strerror(error));
    }
    if (!S_ISREG(info.st_mode) || ::access(path.c_str(), X_OK) != 0) {
      return core::fail(ErrorCode::Unavailable,
                        "cannot start " + name + ": " +
                            (S_ISREG(info.st_mode) ? "not executable" : "not a file"));
    }
    return {};
  };
  if (name.empty()) return core::fail(ErrorCode::NotFound, "cannot start an empty program name");
  if (name.find('/') != std::string::npos) {
    KW_TRY(check(name));
    return name;
  }
  std::string path;
  for (const auto& entry : environment) {
    if (has_name(entry, "PATH")) path = entry.substr(5);
  }
  std::optional<core::Error> first_refusal;
  for (std::size_t start = 0; start <= path.size();) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end == start ? "." : path.substr(start, end - start);
    const std::string candidate = dir + "/" + name;
    auto ok = check(candidate);
    if (ok) return candidate;
    if (ok.error().code != ErrorCode::NotFound && !first_refusal) first_refusal = ok.error();
    start = end + 1;
  }
  if (first_refusal) return tl::unexpected(*first_refusal);
  return core::fail(ErrorCode::NotFound, "cannot start " + name + ": not found in PATH");
}

// Splits stdout into lines in one pass over each chunk: a line never grows past max_line_bytes
// (the rest of it is dropped and counted), so neither time nor memory depends on how the
// program breaks its output.
class LineSplitter {
 public:
  LineSplitter(std::size_t max_line_bytes, const std::function<void(std::string_view)>& on_line)
      : max_(max_line_bytes), on_line_(on_line) {}

  void feed(std::string_view data, ChildResult& result) {
    while (!data.empty()) {
      const std::size_t newline = data.find('\n');
      const std::string_view piece =
          newline == std::string_view::npos ? data : data.substr(0, newline);
      if (!dropping_) {
        if (pending_.size() + piece.size() > max_) {
          dropping_ = true;
          pending_.clear();
          pending_.shrink_to_fit();
          ++result.overlong_lines;
        } else {
          pending_.append(piece);
        }
      }
      if (newline == std::string_view::npos) return;
      if (!dropping_ && on_line_) on_line_(pending_);
      pending_.clear();
      dropping_ = false;
      data.remove_prefix(newline + 1);
    }
  }
  [[nodiscard]] std::string rest() && { return dropping_ ? std::string() : std::move(pending_); }

 private:
  std::size_t max_;
  const std::function<void(std::string_view)>& on_line_;
  std::string pending_;
  bool dropping_ = false;
};

// The guard's reports, read from its pipe in whole 8-byte messages.
class ReportReader {
 public:
  // Reads what is there; false at end of file (the guard and the program are gone).
  bool read(int fd, const std::function<void(const detail::GuardMessage&)>& handle) {
    char buffer[256];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    if (n == 0) return false;
    bytes_.append(buffer, static_cast<std::size_t>(n));
    std::size_t at = 0;
    for (; bytes_.size() - at >= sizeof(detail::GuardMessage); at += sizeof(detail::GuardMessage)) {
      detail::GuardMessage message{};
      std::memcpy(&message, bytes_.data() + at, sizeof message);
      handle(message);
    }
    bytes_.erase(0, at);
    return true;
  }

 private:
  std::string bytes_;
};

std::string exec_error(const std::string& program, int error) {
  return "cannot start " + program + ": " + std::strerror(error);
}

// One program's run under its guard: the guard forked with the five pipes (start), the loop that
// feeds the program's stdin and reads its stdout, stderr and the guard's reports until it ends,
// times out or is cancelled (pump), the guard's own end (end_guard), and how it ended (outcome).
class ChildRun {
 public:
  ChildRun(const ChildRequest& request, const std::function<void(std::string_view)>& on_line)
      : request_(request),
        deadline_(Clock::now() + request.timeout),
        lines_(request.max_line_bytes, on_line),
        ticking_(request.tick.count() > 0 && request.on_tick),
        next_tick_(Clock::now() + request.tick) {}

  // Resolves the program in the child's PATH and forks the guard, which execs it.
  core::Status start() {
    std::vector<std::string> env = environment_for(request_);
    const std::string program = KW_TRY(resolve_program(request_.argv[0], env));
    in_ = KW_TRY(make_pipe());
    out_ = KW_TRY(make_pipe());
    err_ = KW_TRY(make_pipe());
    reports_ = KW_TRY(make_pipe());
    lifeline_ = KW_TRY(make_pipe());
    std::vector<std::string> args = request_.argv;
    auto argv = pointers(args);
    auto envp = pointers(env);
    const std::string directory = request_.working_directory.string();
    detail::GuardSetup setup;
    setup.daemon_pid = ::getpid();
    setup.stdin_read = in_.read.get();
    setup.stdout_write = out_.write.get();
    setup.stderr_write = err_.write.get();
    setup.report_write = reports_.write.get();
    setup.lifeline_read = lifeline_.read.get();
    setup.program = program.c_str();
    setup.argv = argv.data();
    setup.envp = envp.data();
    setup.working_directory = directory.empty() ? nullptr : directory.c_str();
    guard_ = ::fork();
    if (guard_ < 0) {
      return core::fail(ErrorCode::Unavailable,
                        "cannot start " + request_.argv[0] + ": fork: " + std::strerror(errno));
    }
    if (guard_ == 0) detail::guard_main(setup);
    in_.read.reset();
    out_.write.reset();
    err_.write.reset();
    reports_.write.reset();
    lifeline_.read.reset();
    ::fcntl(in_.write.get(), F_SETFL, ::fcntl(in_.write.get(), F_GETFL) | O_NONBLOCK);
    if (request_.stdin_text.empty()) in_.write.reset();
    return {};
  }

  // Until the guard is gone, the program could not start or the run is cancelled, or the program
  // ended and its output is read to the end.
  void pump() {
    while (!guard_gone_ && !start_error_ && !cancelled_) {
      if (program_status_ && !out_.read.open() && !err_.read.open()) break;
      auto now = Clock::now();
      if (ticking_ && now >= next_tick_ && result_.pid != 0 && !program_status_) {
        request_.on_tick();
        now = Clock::now();
        next_tick_ = now + request_.tick;
      }
      if (now >= deadline_) {
        if (program_status_ || phase_ == Phase::Terminating) break;  // killed by end_guard
        terminate(now);
        continue;
      }
      if (!wait_and_serve(now)) break;
    }
    if (result_.stderr_tail.size() > request_.stderr_keep_bytes)
      result_.stderr_tail.erase(0, result_.stderr_tail.size() - request_.stderr_keep_bytes);
  }

  // The guard kills whatever is left (the program, if it still runs, and every descendant,
  // wherever it moved), reaps it, reports, and exits.
  void end_guard() {
    lifeline_.write.reset();
    in_.write.reset();
    out_.read.reset();
    err_.read.reset();
    Fd guard_fd(open_pidfd(guard_));
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    while (!guard_gone_) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(give_up - Clock::now()).count();
      if (left <= 0) break;
      pollfd p{reports_.read.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) break;
      if (p.revents != 0 && !read_reports()) guard_gone_ = true;
    }
    // A guard stuck on a descendant in uninterruptible sleep is killed; that descendant is left
    // to init (it cannot be killed by anyone until it wakes).
    if (!guard_gone_) ::kill(guard_, SIGKILL);
    int guard_status = 0;
    while (::waitpid(guard_, &guard_status, 0) < 0 && errno == EINTR) {
    }
  }

  core::Result<ChildResult> outcome() && {
    result_.stdout_rest = std::move(lines_).rest();
    if (start_error_)
      return core::fail(*start_error_ == ENOENT ? ErrorCode::NotFound : ErrorCode::Unavailable,
                        exec_error(request_.argv[0], *start_error_));
    if (result_.pid == 0) {
      return core::fail(ErrorCode::Unavailable,
                        "cannot start " + request_.argv[0] + ": its guard process ended first");
    }
    if (cancelled_) {
      result_.end = ChildEnd::Cancelled;
    } else if (timed_out_) {
      result_.end = ChildEnd::TimedOut;
    } else if (program_status_ && WIFEXITED(*program_status_)) {
      result_.end = ChildEnd::Exited;
      result_.exit_code = WEXITSTATUS(*program_status_);
    } else {
      result_.end = ChildEnd::Signalled;
      result_.signal =
          program_status_ && WIFSIGNALED(*program_status_) ? WTERMSIG(*program_status_) : SIGKILL;
    }
    return std::move(result_);
  }

 private:
  enum class Phase { Running, Terminating };

  // Past the deadline: the guard is told to terminate the program, which gets kill_grace.
  void terminate(Clock::time_point now) {
    timed_out_ = true;
    phase_ = Phase::Terminating;
    const char command = detail::kGuardTerminate;
    (void)write_without_sigpipe(lifeline_.write.get(), &command, 1);
    in_.write.reset();
    deadline_ = now + request_.kill_grace;
  }

  // One poll of every open descriptor until the deadline or the next tick, and what is ready
  // served; false when poll itself failed.
  bool wait_and_serve(Clock::time_point now) {
    std::vector<pollfd> fds;
    if (in_.write.open()) fds.push_back({in_.write.get(), POLLOUT, 0});
    if (out_.read.open()) fds.push_back({out_.read.get(), POLLIN, 0});
    if (err_.read.open()) fds.push_back({err_.read.get(), POLLIN, 0});
    fds.push_back({reports_.read.get(), POLLIN, 0});
    if (request_.cancel_fd >= 0) fds.push_back({request_.cancel_fd, POLLIN, 0});
    const auto until = ticking_ && !program_status_ ? std::min(deadline_, next_tick_) : deadline_;
    const auto wait_ms =
        std::max<long long>(0, std::chrono::ceil<std::chrono::milliseconds>(until - now).count());
    const int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(wait_ms, 60'000)));
    if (ready < 0) return errno == EINTR;
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == request_.cancel_fd) {
        cancelled_ = true;
      } else if (p.fd == reports_.read.get()) {
        if (!read_reports()) guard_gone_ = true;
      } else if (in_.write.open() && p.fd == in_.write.get()) {
        write_stdin();
      } else if (out_.read.open() && p.fd == out_.read.get()) {
        read_stdout();
      } else if (err_.read.open() && p.fd == err_.read.get()) {
        read_stderr();
      }
    }
    return true;
  }

  bool read_reports() {
    return report_reader_.read(reports_.read.get(),
                               [this](const detail::GuardMessage& m) { handle_report(m); });
  }

  void handle_report(const detail::GuardMessage& m) {
    switch (static_cast<detail::GuardReport>(m.kind)) {
      case detail::GuardReport::Started:
        result_.pid = m.value;
        if (request_.on_spawn) request_.on_spawn(m.value);
        break;
      case detail::GuardReport::ExecFailed:
        start_error_ = m.value;
        break;
      case detail::GuardReport::Exited:
        program_status_ = m.value;
        // Whatever it left behind gets a short time to finish writing, then it is killed.
        if (phase_ == Phase::Running)
          deadline_ = std::min(deadline_, Clock::now() + request_.kill_grace);
        break;
      case detail::GuardReport::Leftovers:
        result_.leftover_processes = static_cast<std::size_t>(std::max(0, m.value));
        break;
    }
  }

  void write_stdin() {
    const std::string& text = request_.stdin_text;
    const ssize_t n =
        write_without_sigpipe(in_.write.get(), text.data() + written_, text.size() - written_);
    if (n > 0) written_ += static_cast<std::size_t>(n);
    if ((n < 0 && errno != EAGAIN && errno != EINTR) || written_ == text.size()) in_.write.reset();
  }

  // What one read() of `fd` gave; empty at its end (then closed) or when nothing was there.
  std::string_view read_some(Fd& fd) {
    const ssize_t n = ::read(fd.get(), buffer_.data(), buffer_.size());
    if (n <= 0) {
      if (!(n < 0 && (errno == EINTR || errno == EAGAIN))) fd.reset();
      return {};
    }
    return {buffer_.data(), static_cast<std::size_t>(n)};
  }

  void read_stdout() {
    const std::string_view chunk = read_some(out_.read);
    if (chunk.empty()) return;
    result_.stdout_bytes += chunk.size();
    if (request_.stdout_keep_bytes > 0) {
      const std::size_t room = request_.stdout_keep_bytes - result_.stdout_text.size();
      result_.stdout_text.append(chunk.substr(0, room));
      if (chunk.size() > room) result_.stdout_overflow = true;
    }
    lines_.feed(chunk, result_);
  }

  void read_stderr() {
    const std::string_view chunk = read_some(err_.read);
    if (chunk.empty()) return;
    result_.stderr_tail.append(chunk);
    // Trimmed when twice the size kept: linear in what the program writes.
    if (result_.stderr_tail.size() > 2 * request_.stderr_keep_bytes)
      result_.stderr_tail.erase(0, result_.stderr_tail.size() - request_.stderr_keep_bytes);
  }

  const ChildRequest& request_;
  Pipe in_, out_, err_, reports_, lifeline_;
  pid_t guard_ = -1;
  ChildResult result_;
  std::size_t written_ = 0;
  std::optional<int> program_status_;  // its wait status, once the guard reaped it
  std::optional<int> start_error_;     // errno of a failed exec
  bool guard_gone_ = false;
  bool timed_out_ = false;
  bool cancelled_ = false;
  Phase phase_ = Phase::Running;
  Clock::time_point deadline_;
  LineSplitter lines_;
  ReportReader report_reader_;
  bool ticking_;
  Clock::time_point next_tick_;
  std::array<char, 65536> buffer_{};
};

}  // namespace

std::string readable_line(std::string_view bytes, std::size_t max_bytes) {
  // Anything past a few times the limit cannot survive the cut: never look at it.
  const std::string valid = core::utf8_prefix(bytes.substr(0, max_bytes * 4 + 16), max_bytes * 12);
  std::string out;
  out.reserve(std::min(valid.size(), max_bytes + 8));
  for (const char c : valid) {
    const auto byte = static_cast<unsigned char>(c);
    const bool space = byte < 0x20 || byte == 0x7f || c == ' ';
    if (space) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
    if (out.size() > max_bytes + 4) break;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  const bool cut = out.size() > max_bytes || bytes.size() > max_bytes * 4 + 16;
  if (!cut) return out;
  const std::size_t room = max_bytes > 3 ? max_bytes - 3 : 0;
  return core::utf8_prefix(out, room) + "\xE2\x80\xA6";  // U+2026
}

std::string ChildResult::last_stderr_lines(std::size_t count) const {
  std::deque<std::string> lines;
  std::size_t start = 0;
  while (start <= stderr_tail.size()) {
    std::size_t end = stderr_tail.find('\n', start);
    if (end == std::string::npos) end = stderr_tail.size();
    std::string line = readable_line(std::string_view(stderr_tail).substr(start, end - start));
    if (!line.empty()) {
      lines.push_back(std::move(line));
      if (lines.size() > count) lines.pop_front();
    }
    start = end + 1;
  }
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : " | ") + line;
  return out;
}

core::Result<ChildResult> run_child(const ChildRequest& request,
                                    const std::function<void(std::string_view line)>& on_line) {
  KW_ASSERT(!request.argv.empty(), "a child needs a program");
  ChildRun run(request, on_line);
  KW_TRY(run.start());
  run.pump();
  run.end_guard();
  return std::move(run).outcome();
}

std::string duration_text(std::chrono::milliseconds d) {
  if (d.count() % 3'600'000 == 0 && d.count() != 0)
    return std::to_string(d.count() / 3'600'000) + "h";
  if (d.count() % 60'000 == 0 && d.count() != 0) return std::to_string(d.count() / 60'000) + "m";
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

std::string child_failure(const core::Result<ChildResult>& child, std::string_view what,
                          std::string_view path, std::chrono::milliseconds timeout) {
  if (!child) {
    if (child.error().code == core::ErrorCode::NotFound) {
      return std::string(what) + " not found: " + readable_line(path, 200);
    }
    return "the " + std::string(what) + " could not start: " + child.error().message;
  }
  const std::string tail = child->last_stderr_lines(kReasonStderrLines);
  const std::string with_tail = tail.empty() ? "" : "; stderr: " + tail;
  switch (child->end) {
    case ChildEnd::TimedOut:
      return "still running after its timeout of " + duration_text(timeout) +
             ": killed with everything it started" + with_tail;
    case ChildEnd::Signalled: {
      const char* name = ::sigabbrev_np(child->signal);
      return "killed by signal " + std::to_string(child->signal) + " (" +
             (name != nullptr ? "SIG" + std::string(name) : std::to_string(child->signal)) + ")" +
             with_tail;
    }
    case ChildEnd::Cancelled:
      return "killed: the daemon is stopping";
    case ChildEnd::Exited:
      break;
  }
  if (child->exit_code != 0) {
    return "exited with status " + std::to_string(child->exit_code) +
           (tail.empty() ? " (nothing on stderr)" : ": " + tail);
  }
  return {};
}

}  // namespace kernelwatch::runners
