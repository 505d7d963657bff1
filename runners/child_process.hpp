// Runs an external program as a child: writes its stdin, hands each stdout line to a callback as
// it arrives (or keeps the whole stdout up to a limit), keeps the tail of stderr, and enforces a
// deadline. Nothing the program starts outlives the run or the daemon: a guard process between
// the two (runners/child_guard.cpp) is a subreaper that kills every descendant, those in other
// sessions included, when the run ends or when the daemon dies, even by SIGKILL. Memory is
// bounded whatever the program prints. POSIX and Linux (fork, poll, signalfd, prctl); core/ only.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace kernelwatch::runners {

// Where the child's environment comes from: the daemon's own (with `environment` on top), or only
// PATH, HOME, LANG, TZ, TMPDIR and USER from the daemon's plus `environment` (a command entry:
// whatever else the daemon happens to have must not change a program's timings).
enum class EnvironmentBase { Inherit, Minimal };

struct ChildRequest {
  std::vector<std::string> argv;  // argv[0] is the program: a path, or a name looked up in PATH
  std::string stdin_text;         // written, then stdin is closed
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};  // SIGTERM -> SIGKILL
  std::size_t stderr_keep_bytes = 16 * 1024;
  // A stdout line longer than this is dropped (never buffered beyond it) and counted.
  std::size_t max_line_bytes = 1024 * 1024;
  // > 0: the whole stdout is kept in ChildResult::stdout_text up to this many bytes; the rest is
  // read and dropped (stdout_overflow), so the program never blocks on a full pipe.
  std::size_t stdout_keep_bytes = 0;
  EnvironmentBase environment_base = EnvironmentBase::Inherit;
  std::vector<std::pair<std::string, std::string>> environment;  // set on top of the base
  std::filesystem::path working_directory;                       // empty: the daemon's
  std::function<void(int pid)> on_spawn;  // called once the program runs, before any output
  // Called about every `tick` while the program runs (GPU samples during the run); 0: never.
  std::chrono::milliseconds tick{0};
  std::function<void()> on_tick;
  // Readable (a byte written, or the write end closed): stop the run now and kill everything.
  int cancel_fd = -1;
};

// How the child ended.
enum class ChildEnd { Exited, Signalled, TimedOut, Cancelled };

struct ChildResult {
  ChildEnd end = ChildEnd::Exited;
  int exit_code = -1;            // Exited only
  int signal = 0;                // Signalled only
  int pid = 0;                   // the program's pid (and process group id)
  std::string stderr_tail;       // the last stderr_keep_bytes bytes, as written (may not be UTF-8)
  std::string stdout_rest;       // bytes after the last newline on stdout (a truncated line)
  std::string stdout_text;       // stdout_keep_bytes > 0: the first stdout_keep_bytes bytes
  bool stdout_overflow = false;  // stdout was longer than stdout_keep_bytes
  std::size_t stdout_bytes = 0;  // everything read from stdout
  std::size_t overlong_lines = 0;      // stdout lines over max_line_bytes, dropped
  std::size_t leftover_processes = 0;  // descendants still running at the end, killed

  // The last `count` non-empty lines of stderr, joined with " | ", each readable_line()d.
  [[nodiscard]] std::string last_stderr_lines(std::size_t count) const;
};

// Starts the child and runs it to its end. Errors only when it could not start at all:
// NotFound (program missing), Unavailable (not executable, fork failed), IoError (pipes).
// `on_line` is called on this thread for each complete stdout line (without the newline).
// When it returns, the program and everything it started are dead and reaped.
[[nodiscard]] core::Result<ChildResult> run_child(
    const ChildRequest& request, const std::function<void(std::string_view line)>& on_line);

// Bytes a program wrote, made fit for a log line, a message or a JSON string: invalid UTF-8
// replaced by U+FFFD, control characters (newlines, tabs, escapes) by spaces, runs of spaces
// collapsed, cut between characters at max_bytes (an ellipsis marks the cut).
[[nodiscard]] std::string readable_line(std::string_view bytes, std::size_t max_bytes = 400);

// A timeout as a config would write it: "1h", "20m", "6s", "700ms".
[[nodiscard]] std::string duration_text(std::chrono::milliseconds duration);

// The stderr lines a failure reason quotes.
inline constexpr std::size_t kReasonStderrLines = 3;

// Why a child's execution failed as a whole, in the words a failed run's reason starts with:
// "<what> not found: <path>", "the <what> could not start: ...", the timeout, the signal (with
// its name), the daemon stopping, a non-zero exit with the stderr tail; "" when it exited 0.
// `what` names the program ("program", "python interpreter").
[[nodiscard]] std::string child_failure(const core::Result<ChildResult>& child,
                                        std::string_view what, std::string_view path,
                                        std::chrono::milliseconds timeout);

}  // namespace kernelwatch::runners
