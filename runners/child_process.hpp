// Runs an external program as a child in its own process group: writes its stdin, hands each
// stdout line to a callback as it arrives, keeps the tail of stderr, and enforces a deadline by
// killing the whole group (SIGTERM, then SIGKILL after a grace period). The child is always
// reaped. POSIX (posix_spawn, poll, pidfd on Linux); core/ only.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace kernelwatch::runners {

struct ChildRequest {
  std::vector<std::string> argv;  // argv[0] is the program: a path, or a name looked up in PATH
  std::string stdin_text;         // written, then stdin is closed
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};  // SIGTERM -> SIGKILL
  std::size_t stderr_keep_bytes = 16 * 1024;
  std::vector<std::pair<std::string, std::string>> environment;  // set on top of the parent's
  std::function<void(int pid)> on_spawn;  // called once the child runs, before any output
};

// How the child ended.
enum class ChildEnd { Exited, Signalled, TimedOut };

struct ChildResult {
  ChildEnd end = ChildEnd::Exited;
  int exit_code = -1;       // Exited only
  int signal = 0;           // Signalled only
  int pid = 0;              // the child's pid (and process group id)
  std::string stderr_tail;  // the last stderr_keep_bytes bytes
  std::string stdout_rest;  // bytes after the last newline on stdout (a truncated line)

  // The last `count` non-empty lines of stderr, joined with " | ".
  [[nodiscard]] std::string last_stderr_lines(std::size_t count) const;
};

// Starts the child and runs it to its end. Errors only when it could not start at all:
// NotFound (program missing), Unavailable (not executable, fork failed), IoError (pipes).
// `on_line` is called on this thread for each complete stdout line (without the newline).
[[nodiscard]] core::Result<ChildResult> run_child(
    const ChildRequest& request, const std::function<void(std::string_view line)>& on_line);

}  // namespace kernelwatch::runners
