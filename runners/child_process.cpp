#include "runners/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

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

std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const auto& kv) {
      return entry.size() > kv.first.size() && entry.substr(0, kv.first.size()) == kv.first &&
             entry[kv.first.size()] == '=';
    });
    if (!replaced) out.emplace_back(entry);
  }
  for (const auto& [name, value] : extra) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string ChildResult::last_stderr_lines(std::size_t count) const {
  std::deque<std::string> lines;
  std::size_t start = 0;
  while (start <= stderr_tail.size()) {
    std::size_t end = stderr_tail.find('\n', start);
    if (end == std::string::npos) end = stderr_tail.size();
    std::string line = stderr_tail.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
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
  Pipe in = KW_TRY(make_pipe());
  Pipe out = KW_TRY(make_pipe());
  Pipe err = KW_TRY(make_pipe());

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err.write.get(), 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // Its own process group, so a timeout kills it with everything it started; default signal
  // handling and an empty mask whatever the daemon set for itself.
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attributes, &empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD})
    sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(
      &attributes,
      static_cast<short>(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF));
  std::vector<std::string> args = request.argv;
  std::vector<std::string> env = environment_with(request.environment);
  auto argv = pointers(args);
  auto envp = pointers(env);
  pid_t pid = 0;
  const int spawned =
      ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    return core::fail(spawned == ENOENT ? ErrorCode::NotFound : ErrorCode::Unavailable,
                      "cannot start " + request.argv[0] + ": " + std::strerror(spawned));
  }
  in.read.reset();
  out.write.reset();
  err.write.reset();
  ::fcntl(in.write.get(), F_SETFL, ::fcntl(in.write.get(), F_GETFL) | O_NONBLOCK);
  Fd pidfd(open_pidfd(pid));
  if (request.on_spawn) request.on_spawn(pid);

  ChildResult result;
  result.pid = pid;
  std::size_t written = 0;
  if (request.stdin_text.empty()) in.write.reset();
  bool exited = false;  // seen through the pidfd; not reaped yet, so the group id stays ours
  bool timed_out = false;
  enum class Phase { Running, Terminating } phase = Phase::Running;
  auto deadline = Clock::now() + request.timeout;
  std::string pending;  // stdout bytes of an unfinished line
  char buffer[16384];

  while (out.read.open() || err.read.open() || (pidfd.open() && !exited)) {
    if (exited && !out.read.open() && !err.read.open()) break;
    const auto now = Clock::now();
    if (now >= deadline) {
      if (exited) {
        // The child is gone but something it started still holds its pipes: kill the group.
        ::kill(-pid, SIGKILL);
        break;
      }
      if (phase == Phase::Running) {
        timed_out = true;
        phase = Phase::Terminating;
        ::kill(-pid, SIGTERM);
        in.write.reset();
        deadline = now + request.kill_grace;
        continue;
      }
      break;  // still there after the grace period: SIGKILL below
    }
    std::vector<pollfd> fds;
    if (in.write.open()) fds.push_back({in.write.get(), POLLOUT, 0});
    if (out.read.open()) fds.push_back({out.read.get(), POLLIN, 0});
    if (err.read.open()) fds.push_back({err.read.get(), POLLIN, 0});
    if (pidfd.open() && !exited) fds.push_back({pidfd.get(), POLLIN, 0});
    if (fds.empty()) break;
    const auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    const int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(wait_ms, 60'000)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (in.write.open() && p.fd == in.write.get()) {
        const ssize_t n = write_without_sigpipe(in.write.get(), request.stdin_text.data() + written,
                                                request.stdin_text.size() - written);
        if (n > 0) written += static_cast<std::size_t>(n);
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == request.stdin_text.size())
          in.write.reset();
      } else if (out.read.open() && p.fd == out.read.get()) {
        const ssize_t n = ::read(out.read.get(), buffer, sizeof buffer);
        if (n <= 0) {
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          out.read.reset();
          continue;
        }
        pending.append(buffer, static_cast<std::size_t>(n));
        std::size_t start = 0;
        for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos;
             start = nl + 1) {
          if (on_line) on_line(std::string_view(pending).substr(start, nl - start));
        }
        pending.erase(0, start);
      } else if (err.read.open() && p.fd == err.read.get()) {
        const ssize_t n = ::read(err.read.get(), buffer, sizeof buffer);
        if (n <= 0) {
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          err.read.reset();
          continue;
        }
        result.stderr_tail.append(buffer, static_cast<std::size_t>(n));
        if (result.stderr_tail.size() > request.stderr_keep_bytes)
          result.stderr_tail.erase(0, result.stderr_tail.size() - request.stderr_keep_bytes);
      } else if (pidfd.open() && p.fd == pidfd.get()) {
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == pid) {
          exited = true;
          // Whatever it left behind gets a short time to finish writing, then the group goes.
          if (phase == Phase::Running)
            deadline = std::min(deadline, Clock::now() + request.kill_grace);
        }
      }
    }
  }
  // Nothing of the group may outlive the run: SIGKILL whatever is left (the leader is a zombie
  // at most, so its id is still ours), then reap the child.
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.stdout_rest = std::move(pending);
  if (timed_out) {
    result.end = ChildEnd::TimedOut;
  } else if (WIFEXITED(status)) {
    result.end = ChildEnd::Exited;
    result.exit_code = WEXITSTATUS(status);
  } else {
    result.end = ChildEnd::Signalled;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  return result;
}

}  // namespace kernelwatch::runners
