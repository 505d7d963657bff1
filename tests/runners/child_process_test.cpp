// The child process runner: stdin in, stdout lines out, stderr tail, exit status, and the
// timeout that kills the whole process group. No GPU, no torch; /bin/sh and python3 only.
// Nothing here sleeps to synchronize: the tests wait on pipes and pids.
#include "runners/child_process.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using namespace std::chrono_literals;

TEST(RunChild, PassesStdinAndCollectsLinesAndStderr) {
  ChildRequest request;
  request.argv = {"/bin/sh", "-c",
                  "while read -r l; do echo \"got $l\"; done; echo oops >&2; exit 7"};
  request.stdin_text = "a\nb\n";
  std::vector<std::string> lines;
  auto result = run_child(request, [&](std::string_view line) { lines.emplace_back(line); });
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->end, ChildEnd::Exited);
  EXPECT_EQ(result->exit_code, 7);
  EXPECT_EQ(lines, (std::vector<std::string>{"got a", "got b"}));
  EXPECT_EQ(result->last_stderr_lines(3), "oops");
}

TEST(RunChild, AMissingProgramIsNotFound) {
  ChildRequest request;
  request.argv = {"/nonexistent/bin/python3", "x.py"};
  auto result = run_child(request, {});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, core::ErrorCode::NotFound);
}

TEST(RunChild, TheTimeoutKillsTheWholeProcessGroupAndReapsTheChild) {
  // The grandchild is re-parented to this test (a subreaper) when its parent dies, so the test
  // can wait for it: it must die of the group kill, not run out its 60 s.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  ChildRequest request;
  // The grandchild ignores SIGTERM: only the SIGKILL after the grace period ends it.
  request.argv = {"/bin/sh", "-c",
                  "sh -c 'trap \"\" TERM; echo grandchild $$ >&2; exec sleep 60' & "
                  "echo started; wait"};
  request.timeout = 300ms;
  request.kill_grace = 200ms;
  std::vector<std::string> lines;
  int spawned = 0;
  request.on_spawn = [&](int pid) { spawned = pid; };
  auto result = run_child(request, [&](std::string_view line) { lines.emplace_back(line); });
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->end, ChildEnd::TimedOut);
  EXPECT_EQ(result->pid, spawned);
  EXPECT_EQ(lines, std::vector<std::string>{"started"});
  // The child itself was reaped by run_child: no zombie left to wait for.
  EXPECT_EQ(::waitpid(spawned, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  // The grandchild: its pid from its stderr line; wait for it (it is ours now) and check it was
  // killed, then that it is gone.
  const std::string tail = result->stderr_tail;
  const auto at = tail.find("grandchild ");
  ASSERT_NE(at, std::string::npos) << tail;
  const pid_t grandchild = std::stoi(tail.substr(at + 11));
  int status = 0;
  ASSERT_EQ(::waitpid(grandchild, &status, 0), grandchild);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(::kill(grandchild, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

TEST(RunChild, LeftoversOfAChildThatExitedAreKilled) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  ChildRequest request;
  // The child exits at once; the background process keeps stdout open and would run 60 s.
  request.argv = {"/bin/sh", "-c", "sh -c 'echo left $$ >&2; exec sleep 60' & echo done; exit 0"};
  request.timeout = 60s;
  request.kill_grace = 200ms;
  auto result = run_child(request, {});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->end, ChildEnd::Exited);
  EXPECT_EQ(result->exit_code, 0);
  const auto at = result->stderr_tail.find("left ");
  ASSERT_NE(at, std::string::npos) << result->stderr_tail;
  const pid_t left = std::stoi(result->stderr_tail.substr(at + 5));
  int status = 0;
  ASSERT_EQ(::waitpid(left, &status, 0), left);
  EXPECT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

}  // namespace
}  // namespace kernelwatch::runners
