#include "runners/detail/child_guard.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <initializer_list>

// Only async-signal-safe calls below this line: this code runs in a child forked from a
// multi-threaded process, whose other threads may have held any lock at the fork.

namespace kernelwatch::runners::detail {
namespace {

void report(int fd, GuardReport kind, std::int32_t value) {
  const GuardMessage message{static_cast<std::int32_t>(kind), value};
  while (::write(fd, &message, sizeof message) < 0 && errno == EINTR) {
  }
}

// Closes every descriptor in [low, high].
void close_range_of(int low, int high) {
  if (low > high) return;
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(low), static_cast<unsigned>(high), 0U) == 0)
    return;
#endif
  rlimit limit{};
  int last = 65535;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur < static_cast<rlim_t>(INT_MAX)) {
    last = static_cast<int>(limit.rlim_cur) - 1;
  }
  for (int fd = low; fd <= high && fd <= last; ++fd) ::close(fd);
}

// Closes every descriptor from `low` up except `keep` (sorted here, at most 8).
void close_all_but(int low, int* keep, int count) {
  for (int i = 1; i < count; ++i) {
    for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
      const int t = keep[j];
      keep[j] = keep[j - 1];
      keep[j - 1] = t;
    }
  }
  for (int i = 0; i < count; ++i) {
    if (keep[i] < low) continue;
    close_range_of(low, keep[i] - 1);
    low = keep[i] + 1;
  }
  close_range_of(low, INT_MAX);
}

// Appends the decimal pids of a "/proc/.../children" style text ("12 345 ") to out.
int parse_pids(const char* text, ssize_t size, pid_t* out, int count, int capacity,
               pid_t& partial) {
  for (ssize_t i = 0; i < size; ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      partial = partial * 10 + (c - '0');
    } else {
      if (partial > 0 && count < capacity) out[count++] = partial;
      partial = 0;
    }
  }
  return count;
}

// The parent pid in a /proc/<pid>/stat text: the 2nd field after the ")" that ends the name.
pid_t parent_in_stat(const char* text, ssize_t size) {
  ssize_t close = -1;
  for (ssize_t i = 0; i < size; ++i) {
    if (text[i] == ')') close = i;
  }
  if (close < 0) return -1;
  ssize_t i = close + 1;
  int field = 0;
  pid_t value = 0;
  for (; i < size; ++i) {
    if (text[i] == ' ') {
      if (field == 2) return value;
      ++field;
      continue;
    }
    if (field == 2) {
      if (text[i] < '0' || text[i] > '9') return -1;
      value = value * 10 + (text[i] - '0');
    }
  }
  return -1;
}

// This process's children, by scanning every /proc/<pid>/stat: for kernels without
// /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN).
int scan_children(pid_t self, pid_t* out, int capacity) {
  const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int count = 0;
  alignas(8) char entries[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dir, entries, sizeof entries);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen = 0;
      __builtin_memcpy(&reclen, entries + at + 16, sizeof reclen);
      const char* name = entries + at + 19;
      at += reclen;
      pid_t pid = 0;
      bool numeric = name[0] != '\0';
      for (const char* p = name; *p != '\0'; ++p) {
        if (*p < '0' || *p > '9') {
          numeric = false;
          break;
        }
        pid = pid * 10 + (*p - '0');
      }
      if (!numeric || count >= capacity) continue;
      char path[48] = "/proc/";
      int length = 6;
      for (const char* p = name; *p != '\0' && length < 40; ++p) path[length++] = *p;
      const char tail[] = "/stat";
      for (const char c : tail) path[length++] = c;
      const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char stat[512];
      const ssize_t size = ::read(fd, stat, sizeof stat);
      ::close(fd);
      if (size > 0 && parent_in_stat(stat, size) == self) out[count++] = pid;
    }
  }
  ::close(dir);
  return count;
}

int children_of_self(pid_t self, pid_t* out, int capacity) {
  const int fd = ::open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return scan_children(self, out, capacity);
  int count = 0;
  pid_t partial = 0;
  char buffer[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    count = parse_pids(buffer, n, out, count, capacity, partial);
  }
  if (partial > 0 && count < capacity) out[count++] = partial;
  ::close(fd);
  return count;
}

// SIGKILLs the program's group and every descendant (orphans are re-parented to this subreaper,
// so killing the children repeatedly reaches the whole tree), reaping each. Returns how many
// descendants other than the program were killed.
int kill_everything(pid_t self, pid_t program, bool& program_reaped, int& program_status) {
  if (!program_reaped) ::kill(-program, SIGKILL);
  int killed = 0;
  pid_t children[256];
  for (;;) {
    const int count = children_of_self(self, children, 256);
    for (int i = 0; i < count; ++i) ::kill(children[i], SIGKILL);
    int status = 0;
    const pid_t reaped = ::waitpid(-1, &status, __WALL);
    if (reaped < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: nothing left
    }
    if (reaped == program) {
      program_reaped = true;
      program_status = status;
    } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      ++killed;
    }
  }
  return killed;
}

[[noreturn]] void program_main(const GuardSetup& s, pid_t guard) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Ignored signals stay ignored across exec: give the program the defaults.
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  for (int signal = 1; signal < NSIG; ++signal) {
    if (signal != SIGKILL && signal != SIGSTOP) ::sigaction(signal, &defaults, nullptr);
  }
  ::setpgid(0, 0);
  // Dies with its guard, whatever kills the guard.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != guard) ::_exit(127);
  // Above the three standard numbers first, so that no dup2 overwrites another source.
  const int in = ::fcntl(s.stdin_read, F_DUPFD, 10);
  const int out = ::fcntl(s.stdout_write, F_DUPFD, 10);
  const int err = ::fcntl(s.stderr_write, F_DUPFD, 10);
  int report_fd = ::fcntl(s.report_write, F_DUPFD_CLOEXEC, 10);
  if (in < 0 || out < 0 || err < 0 || report_fd < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 ||
      ::dup2(err, 2) < 0) {
    report(report_fd >= 0 ? report_fd : s.report_write, GuardReport::ExecFailed, errno);
    ::_exit(127);
  }
  int keep[] = {report_fd};
  close_all_but(3, keep, 1);
  if (s.working_directory != nullptr && ::chdir(s.working_directory) != 0) {
    report(report_fd, GuardReport::ExecFailed, errno);
    ::_exit(127);
  }
  ::execve(s.program, s.argv, s.envp);
  report(report_fd, GuardReport::ExecFailed, errno);
  ::_exit(127);
}

}  // namespace

void guard_main(const GuardSetup& s) noexcept {
  // Out of the daemon's process group (a terminal's Ctrl-C goes to the daemon alone), a
  // subreaper for everything below, and nothing open but its five pipe ends (not even the
  // daemon's standard streams, which a reader may wait on for their end).
  ::setpgid(0, 0);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (::getppid() != s.daemon_pid) ::_exit(1);  // the daemon died before this line
  int keep[] = {s.stdin_read, s.stdout_write, s.stderr_write, s.report_write, s.lifeline_read};
  close_all_but(0, keep, 5);

  sigset_t watched;
  sigemptyset(&watched);
  for (int signal : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&watched, signal);
  ::sigprocmask(SIG_SETMASK, &watched, nullptr);
  const int signals = ::signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK);
  const pid_t self = ::getpid();

  const pid_t program = ::fork();
  if (program < 0) {
    report(s.report_write, GuardReport::ExecFailed, errno);
    ::_exit(1);
  }
  if (program == 0) program_main(s, self);
  ::setpgid(program, program);  // also here, so no kill(-program) can precede the child's own
  ::close(s.stdin_read);
  ::close(s.stdout_write);
  ::close(s.stderr_write);
  report(s.report_write, GuardReport::Started, program);

  bool program_reaped = false;
  int program_status = 0;
  const auto reap = [&] {
    for (;;) {
      int status = 0;
      const pid_t reaped = ::waitpid(-1, &status, WNOHANG | __WALL);
      if (reaped <= 0) return;
      if (reaped == program) {
        program_reaped = true;
        program_status = status;
        report(s.report_write, GuardReport::Exited, status);
      }
    }
  };
  for (bool running = true; running;) {
    pollfd fds[2] = {{s.lifeline_read, POLLIN, 0}, {signals, POLLIN, 0}};
    const int nfds = signals >= 0 ? 2 : 1;
    // Without a signalfd (it cannot fail short of resource exhaustion), reap every 100 ms.
    if (::poll(fds, static_cast<nfds_t>(nfds), signals >= 0 ? -1 : 100) < 0 && errno != EINTR) {
      break;
    }
    if (signals >= 0 && fds[1].revents != 0) {
      signalfd_siginfo info{};
      while (::read(signals, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo != SIGCHLD) running = false;  // told to stop by someone: kill all
      }
    }
    reap();
    if (fds[0].revents != 0) {
      char command = 0;
      const ssize_t n = ::read(s.lifeline_read, &command, 1);
      if (n == 1 && command == kGuardTerminate) {
        if (!program_reaped) ::kill(-program, SIGTERM);
      } else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        running = false;
      }
    }
  }
  const bool reported = program_reaped;
  const int killed = kill_everything(self, program, program_reaped, program_status);
  if (program_reaped && !reported) report(s.report_write, GuardReport::Exited, program_status);
  report(s.report_write, GuardReport::Leftovers, killed);
  ::_exit(0);
}

}  // namespace kernelwatch::runners::detail
