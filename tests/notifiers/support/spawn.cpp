#include "tests/notifiers/support/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <future>

extern char** environ;

namespace kernelwatch::notifiers::testing {

pid_t spawn(const std::filesystem::path& program, const std::vector<std::string>& args,
            const std::filesystem::path& log) {
  std::vector<std::string> storage{program.string()};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::fprintf(stderr, "spawn %s failed: %d\n", program.c_str(), rc);
    std::abort();
  }
  return pid;
}

void kill_hard(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds deadline) {
  // waitpid has no timeout: reap on another thread and wait for that with a deadline.
  auto reaped = std::async(std::launch::async, [pid] {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  });
  if (reaped.wait_for(deadline) != std::future_status::ready) {
    ::kill(pid, SIGKILL);
    (void)reaped.get();
    return std::nullopt;
  }
  const int status = reaped.get();
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return -1;
}

}  // namespace kernelwatch::notifiers::testing
