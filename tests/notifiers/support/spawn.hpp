// Child processes the crash test controls directly: start without waiting, SIGKILL, wait.
// POSIX only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kernelwatch::notifiers::testing {

// Starts `program args...` with stdout and stderr appended to `log`. Aborts when it cannot.
[[nodiscard]] pid_t spawn(const std::filesystem::path& program,
                          const std::vector<std::string>& args, const std::filesystem::path& log);

// SIGKILL and reap.
void kill_hard(pid_t pid);

// The exit code, -1 when killed by a signal, nullopt when still running at the deadline (the
// child is then killed).
[[nodiscard]] std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds deadline);

}  // namespace kernelwatch::notifiers::testing
