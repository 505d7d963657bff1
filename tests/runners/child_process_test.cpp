// The child process runner: stdin in, stdout lines out, stderr tail, exit status, the timeout,
// and the guard that leaves nothing the program started behind (its own session included);
// output of any shape in bounded memory. No GPU, no torch; /bin/sh, sleep and python3 only.
// Nothing here sleeps to synchronize: the tests wait on pipes and pids.
#include "runners/child_process.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
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

// Whether no process has this pid (a zombie still has one: everything must be reaped too).
bool gone(pid_t pid) {
  return ::kill(pid, 0) == -1 && errno == ESRCH;
}

// The pid after `word ` in a text ("grandchild 1234").
pid_t pid_after(const std::string& text, const std::string& word) {
  const auto at = text.find(word + " ");
  if (at == std::string::npos) return 0;
  return static_cast<pid_t>(std::stol(text.substr(at + word.size() + 1)));
}

TEST(RunChild, TheTimeoutKillsEverythingTheProgramStartedAndReapsIt) {
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
  // When run_child returns, the program and its grandchild are dead and reaped (no zombie).
  EXPECT_TRUE(gone(spawned));
  const pid_t grandchild = pid_after(result->stderr_tail, "grandchild");
  ASSERT_GT(grandchild, 0) << result->stderr_tail;
  EXPECT_TRUE(gone(grandchild));
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "no child of this process is left";
}

TEST(RunChild, LeftoversOfAChildThatExitedAreKilled) {
  ChildRequest request;
  // The child exits at once; the background process keeps stdout open and would run 60 s.
  request.argv = {"/bin/sh", "-c", "sh -c 'echo left $$ >&2; exec sleep 60' & echo done; exit 0"};
  request.timeout = 60s;
  request.kill_grace = 200ms;
  const auto start = std::chrono::steady_clock::now();
  auto result = run_child(request, {});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_EQ(result->end, ChildEnd::Exited);
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->leftover_processes, 1U);
  const pid_t left = pid_after(result->stderr_tail, "left");
  ASSERT_GT(left, 0) << result->stderr_tail;
  EXPECT_TRUE(gone(left));
}

TEST(RunChild, AGrandchildInItsOwnSessionHoldingThePipesIsKilledToo) {
  // setsid() takes it out of the program's process group: a group kill never reaches it.
  for (const bool program_exits : {true, false}) {
    ChildRequest request;
    request.argv = {"python3", "-c",
                    "import os, subprocess, sys, time\n"
                    "p = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
                    "print('setsid', p.pid, file=sys.stderr, flush=True)\n"
                    "print('ready', flush=True)\n" +
                        std::string(program_exits ? "sys.exit(0)\n" : "time.sleep(60)\n")};
    request.timeout = 60s;
    request.kill_grace = 300ms;
    // The program that never exits is stopped as the daemon stops one, once it is ready.
    int stop[2];
    ASSERT_EQ(::pipe(stop), 0);
    request.cancel_fd = stop[0];
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> lines;
    auto result = run_child(request, [&](std::string_view line) {
      lines.emplace_back(line);
      if (!program_exits) {
        ASSERT_EQ(::write(stop[1], "x", 1), 1);
      }
    });
    ::close(stop[0]);
    ::close(stop[1]);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
    EXPECT_EQ(lines, std::vector<std::string>{"ready"});
    EXPECT_EQ(result->end, program_exits ? ChildEnd::Exited : ChildEnd::Cancelled);
    const pid_t setsid = pid_after(result->stderr_tail, "setsid");
    ASSERT_GT(setsid, 0) << result->stderr_tail;
    EXPECT_TRUE(gone(setsid)) << "the grandchild in its own session survived";
    EXPECT_TRUE(gone(result->pid));
  }
}

TEST(RunChild, OutputWithoutNewlinesIsReadInBoundedMemoryAndLinearTime) {
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  ChildRequest request;
  // 100 MB on one line, then a good line.
  request.argv = {"python3", "-c",
                  "import sys\n"
                  "chunk = b'x' * (1 << 20)\n"
                  "for _ in range(100): sys.stdout.buffer.write(chunk)\n"
                  "sys.stdout.buffer.write(b'\\nlast line\\npartial')\n"};
  request.max_line_bytes = 64 * 1024;
  std::vector<std::string> lines;
  const auto start = std::chrono::steady_clock::now();
  auto result = run_child(request, [&](std::string_view line) { lines.emplace_back(line); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(result) << result.error().message;
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(result->stdout_bytes, 100U * (1U << 20) + 18U);
  EXPECT_EQ(result->overlong_lines, 1U);
  EXPECT_EQ(lines, std::vector<std::string>{"last line"});
  EXPECT_EQ(result->stdout_rest, "partial");
  // The old reader kept the whole line (100 MB and more) and rescanned it at every read.
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 16 * 1024) << "kB of peak RSS added";
  EXPECT_LT(seconds, 20.0);
  std::printf("100 MB without a newline read in %.2f s, peak RSS +%ld kB\n", seconds,
              after.ru_maxrss - before.ru_maxrss);
}

TEST(RunChild, KeptStdoutStopsAtItsLimitAndTheRestIsDrained) {
  ChildRequest request;
  request.argv = {"python3", "-c", "import sys\nsys.stdout.buffer.write(b'y' * 5000000)\n"};
  request.stdout_keep_bytes = 1000;
  auto result = run_child(request, {});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->end, ChildEnd::Exited);
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->stdout_text, std::string(1000, 'y'));
  EXPECT_TRUE(result->stdout_overflow);
  EXPECT_EQ(result->stdout_bytes, 5000000U);
}

TEST(RunChild, ACancelKillsTheProgramAtOnce) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  ChildRequest request;
  request.argv = {"sleep", "60"};
  request.cancel_fd = fds[0];
  const auto start = std::chrono::steady_clock::now();
  auto result = run_child(request, {});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(result->end, ChildEnd::Cancelled);
  EXPECT_TRUE(gone(result->pid));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(RunChild, TheMinimalEnvironmentHasOnlyThePathAndTheEntrysVariables) {
  ::setenv("KERNELWATCH_TEST_LEAK", "leaked", 1);
  ChildRequest request;
  request.argv = {"/bin/sh", "-c", "echo ${KERNELWATCH_TEST_LEAK-unset} $FOO; env | wc -l"};
  request.environment_base = EnvironmentBase::Minimal;
  request.environment = {{"FOO", "bar"}};
  std::vector<std::string> lines;
  auto result = run_child(request, [&](std::string_view line) { lines.emplace_back(line); });
  ::unsetenv("KERNELWATCH_TEST_LEAK");
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0], "unset bar");
  EXPECT_LE(std::stoi(lines[1]), 10);
}

TEST(RunChild, NoDescriptorOfThisProcessIsLeftOpenOrPassedOn) {
  const auto count_fds = [] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
      ++n;
    return n;
  };
  const std::size_t before = count_fds();
  ChildRequest request;
  // The program sees stdin, stdout, stderr and nothing else.
  request.argv = {"python3", "-c",
                  "import os\n"
                  "def is_open(fd):\n"
                  "    try:\n"
                  "        os.fstat(fd)\n"
                  "        return True\n"
                  "    except OSError:\n"
                  "        return False\n"
                  "print([fd for fd in range(4096) if is_open(fd)])\n"};
  std::vector<std::string> lines;
  auto result = run_child(request, [&](std::string_view line) { lines.emplace_back(line); });
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(lines, (std::vector<std::string>{"[0, 1, 2]"}));
  EXPECT_EQ(count_fds(), before);
}

TEST(ReadableLine, InvalidBytesAndControlCharactersBecomeOneValidLine) {
  EXPECT_EQ(readable_line("a\xff"
                          "b\n\tc\r\n"),
            "a\xEF\xBF\xBD"
            "b c");
  // A two-byte character cut by the limit is left out whole, and the cut is marked.
  const std::string text = std::string(9, 'x') + "\xC3\xA9" + "yyyy";
  EXPECT_EQ(readable_line(text, 13), std::string(9, 'x') + "\xE2\x80\xA6");
  EXPECT_EQ(readable_line(std::string(100'000'000, '\xff'), 30).size(), 30U);
}

}  // namespace
}  // namespace kernelwatch::runners
