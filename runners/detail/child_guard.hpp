// The guard process between the daemon and a program it runs (runners/child_process.cpp). It is
// forked from the (multi-threaded) daemon and never execs, so it calls only async-signal-safe
// functions: it becomes a child subreaper, forks the program into its own process group with
// PR_SET_PDEATHSIG, reports the program's pid and wait status on a pipe, and kills every
// descendant it has (those that called setsid() too) when the daemon asks, closes its end of the
// lifeline pipe, or dies. POSIX and Linux only; no allocation after fork.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace kernelwatch::runners::detail {

// Reports on the report pipe, each 8 bytes (atomic on a pipe).
enum class GuardReport : std::int32_t {
  Started = 1,     // value: the program's pid
  ExecFailed = 2,  // value: errno of chdir() or execve() in the program's process
  Exited = 3,      // value: the program's wait status
  Leftovers = 4,   // value: descendants still running when the guard was told to end, killed
};
struct GuardMessage {
  std::int32_t kind;
  std::int32_t value;
};

// One byte on the lifeline: SIGTERM the program's process group (the timeout's polite step).
// End of file on it (the daemon closed it, or died): SIGKILL everything, reap it, report, exit.
inline constexpr char kGuardTerminate = 'T';

// Everything the guard and the program need, prepared before fork (nothing is built after it).
struct GuardSetup {
  pid_t daemon_pid = 0;
  int stdin_read = -1;
  int stdout_write = -1;
  int stderr_write = -1;
  int report_write = -1;
  int lifeline_read = -1;
  const char* program = nullptr;  // a resolved path
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* working_directory = nullptr;  // nullptr: unchanged
};

// The guard's whole life; runs in the forked child and never returns.
[[noreturn]] void guard_main(const GuardSetup& setup) noexcept;

}  // namespace kernelwatch::runners::detail
