// Hostile input through the real `kernelwatch import` (issue #15): each file below once crashed
// import (SIGSEGV, SIGABRT, an uncaught exception), wrapped a value silently, or was rejected for
// no good reason. The inputs are generated here; nothing big is committed.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using testing::run_kernelwatch;

const char* const kHeader =
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,"
    "x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,"
    "liger_version\n";

// extra_benchmark_config_str as Liger writes it, CSV-quoted.
const std::string kConfig =
    "\"{\"\"M\"\": 4096, \"\"dtype\"\": \"\"torch.float32\"\", \"\"eps\"\": 1e-06}\"";

// One Liger speed row; `median` is y_value_50, `config` extra_benchmark_config_str (CSV-quoted).
std::string csv_row(const std::string& hidden, const std::string& median = "0.0302",
                    const std::string& config = kConfig,
                    const std::string& timestamp = "2024-09-03 15:39:14",
                    const std::string& version = "0.2.1") {
  return "layer_norm,liger,forward,speed,ms,N,hidden size," + hidden + "," + median +
         ",0.0292,0.0314," + config + ",NVIDIA A100-SXM4-80GB," + timestamp + "," + version + "\n";
}

// The first fixture record, as text.
std::string fixture_text() {
  return testing::read_file(
      testing::fixture("layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json"));
}

struct Import {
  testing::ProcessResult result;
  std::string db;
};

Import import(const testing::TempDir& dir, const std::string& name, const std::string& content,
              bool skip_invalid = false) {
  const auto path = dir / name;
  testing::write_file(path, content);
  std::vector<std::string> args = {"import", "--db", (dir / "kw.db").string()};
  if (skip_invalid) args.push_back("--skip-invalid");
  args.push_back(path.string());
  return {run_kernelwatch(args), (dir / "kw.db").string()};
}

std::size_t run_count(const testing::TempDir& dir) {
  const auto history =
      run_kernelwatch({"history", "--db", (dir / "kw.db").string(), "--limit", "0", "--json"});
  if (history.exit_code != 0) return 0;
  return json::parse(history.out).size();
}

TEST(HostileImport, DeepNestingIsRefusedWithAClearError) {
  testing::TempDir dir;
  // 47,000 levels inside a record and 65,000 at the top level (both once SIGSEGV).
  std::string inside = json::parse(fixture_text()).dump();
  inside.insert(inside.size() - 1,
                ",\"deep\":" + std::string(47'000, '[') + std::string(47'000, ']'));
  const auto a = import(dir, "inside.json", inside);
  EXPECT_EQ(a.result.exit_code, 1) << a.result.err;
  EXPECT_NE(a.result.err.find("inside.json:1: "), std::string::npos) << a.result.err;
  EXPECT_NE(a.result.err.find("nesting deeper than 256 levels"), std::string::npos) << a.result.err;
  const auto b = import(dir, "top.json", std::string(65'000, '[') + std::string(65'000, ']'));
  EXPECT_EQ(b.result.exit_code, 1) << b.result.err;
  EXPECT_NE(b.result.err.find("nesting deeper than 256 levels"), std::string::npos) << b.result.err;
  // A JSON Lines file with one deep line: the other lines are imported with --skip-invalid.
  const std::string line = json::parse(fixture_text()).dump();
  const auto c = import(dir, "lines.jsonl", line + "\n" + std::string(10'000, '{') + "\n",
                        /*skip_invalid=*/true);
  EXPECT_EQ(c.result.exit_code, 0) << c.result.err;
  EXPECT_EQ(run_count(dir), 1u);
}

TEST(HostileImport, NumbersOutOfRangeAreRefusedNeverWrappedOrThrown) {
  testing::TempDir dir;
  for (const std::string median : {"1e400", "9223372036854775807", "9223372036854775808", "0"}) {
    json record = json::parse(fixture_text());
    std::string text = record.dump();
    const std::string value = record["run"]["spec"]["timing"]["latencyNs"]["median"].dump();
    const std::string needle = "\"median\":" + value;
    ASSERT_NE(text.find(needle), std::string::npos);
    text.replace(text.find(needle), needle.size(), "\"median\":" + median);
    const auto r = import(dir, "median.json", text);
    EXPECT_EQ(r.result.exit_code, 1) << median << ": " << r.result.err;
    EXPECT_NE(r.result.err.find("median.json:1: "), std::string::npos) << r.result.err;
  }
  EXPECT_EQ(run_count(dir), 0u);
  // In a CSV cell: a latency and a number inside extra_benchmark_config_str.
  const auto csv = import(dir, "big.csv",
                          std::string(kHeader) + csv_row("1024", "1e400") +
                              csv_row("2048", "0.03", "\"{\"\"M\"\": 1e400}\"") + csv_row("4096"),
                          /*skip_invalid=*/true);
  EXPECT_EQ(csv.result.exit_code, 0) << csv.result.err;
  EXPECT_NE(csv.result.err.find("big.csv:2: "), std::string::npos) << csv.result.err;
  EXPECT_NE(csv.result.err.find("big.csv:3: "), std::string::npos) << csv.result.err;
  EXPECT_EQ(run_count(dir), 1u);
}

TEST(HostileImport, TimestampsOutsideTheRangeAreRefusedInJsonAndCsv) {
  testing::TempDir dir;
  json record = json::parse(fixture_text());
  record["run"]["spec"]["observedAt"] = "9999-12-31T00:00:00Z";
  const auto r = import(dir, "late.json", record.dump());
  EXPECT_EQ(r.result.exit_code, 1) << r.result.err;
  EXPECT_NE(r.result.err.find("outside the years 1678 to 2261"), std::string::npos) << r.result.err;
  const auto csv =
      import(dir, "late.csv",
             std::string(kHeader) + csv_row("1024", "0.03", kConfig, "9999-12-31 00:00:00"));
  EXPECT_EQ(csv.result.exit_code, 1) << csv.result.err;
  EXPECT_NE(csv.result.err.find("outside the years 1678 to 2261"), std::string::npos)
      << csv.result.err;
  EXPECT_EQ(run_count(dir), 0u);
}

// A run dated a day after the clock would be its key's newest until then, and keep every run
// posted before that date from being judged: refused, relative to the test's own clock.
TEST(HostileImport, ARunDatedInTheFutureIsRefused) {
  testing::TempDir dir;
  json record = json::parse(fixture_text());
  const auto tomorrow = std::chrono::system_clock::now() + std::chrono::hours(24);
  record["run"]["spec"]["observedAt"] =
      core::format_timestamp(std::chrono::time_point_cast<std::chrono::nanoseconds>(tomorrow));
  const auto r = import(dir, "future.json", record.dump());
  EXPECT_EQ(r.result.exit_code, 1) << r.result.err;
  EXPECT_NE(r.result.err.find("minutes after this machine's clock"), std::string::npos)
      << r.result.err;
  EXPECT_EQ(run_count(dir), 0u);
}

TEST(HostileImport, InvalidUtf8InACsvCellIsAnInvalidRowNotAnAbort) {
  testing::TempDir dir;
  const std::string content =
      std::string(kHeader) + csv_row("1024") +
      csv_row("2048", "0.03", "\"{\"\"M\"\": 4096}\"", "2024-09-03 15:39:14", "0.2.\xff\xfe");
  const auto strict = import(dir, "bad.csv", content);
  EXPECT_EQ(strict.result.exit_code, 1) << strict.result.err;  // once SIGABRT (-1)
  EXPECT_NE(strict.result.err.find("bad.csv:3: column 15 (liger_version) is not valid UTF-8"),
            std::string::npos)
      << strict.result.err;
  EXPECT_EQ(run_count(dir), 0u);
  const auto skipping = import(dir, "bad.csv", content, /*skip_invalid=*/true);
  EXPECT_EQ(skipping.result.exit_code, 0) << skipping.result.err;
  EXPECT_EQ(run_count(dir), 1u);
}

TEST(HostileImport, ACsvWithAByteOrderMarkIsRead) {
  testing::TempDir dir;
  const auto r = import(dir, "bom.csv", "\xEF\xBB\xBF" + std::string(kHeader) + csv_row("1024"));
  EXPECT_EQ(r.result.exit_code, 0) << r.result.err;
  EXPECT_EQ(run_count(dir), 1u);
}

TEST(HostileImport, DevicesAndPipesAreRefusedBeforeAnythingIsRead) {
  testing::TempDir dir;
  const auto zero = run_kernelwatch({"import", "--db", (dir / "kw.db").string(), "/dev/zero"});
  EXPECT_EQ(zero.exit_code, 1) << zero.err;
  EXPECT_NE(zero.err.find("is not a regular file"), std::string::npos) << zero.err;
  ASSERT_EQ(::mkfifo((dir / "pipe.json").c_str(), 0600), 0);
  const auto pipe =
      run_kernelwatch({"import", "--db", (dir / "kw.db").string(), (dir / "pipe.json").string()});
  EXPECT_EQ(pipe.exit_code, 1) << pipe.err;
  EXPECT_NE(pipe.err.find("is not a regular file"), std::string::npos) << pipe.err;
}

TEST(HostileImport, TheDatabaseIsCreatedReadableByItsOwnerOnly) {
  testing::TempDir dir;
  const mode_t old = ::umask(022);
  const auto r = import(dir, "one.json", fixture_text());
  ::umask(old);
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  struct stat info {};
  ASSERT_EQ(::stat((dir / "kw.db").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

// A full disk, made real with a file-size limit the child inherits (SIGXFSZ ignored, so the
// write fails with EFBIG instead of killing it): the import fails, stores nothing, and does not
// suggest --skip-invalid, which cannot help.
TEST(HostileImport, AFullDiskFailsCleanlyWithoutSuggestingSkipInvalid) {
  testing::TempDir dir;
  // The database exists (schema and one run) before the disk fills.
  ASSERT_EQ(import(dir, "one.json", fixture_text()).result.exit_code, 0);
  std::uintmax_t largest = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.is_regular_file()) largest = std::max(largest, entry.file_size());
  }
  const auto csv = testing::liger_csv("weekly_ci.tvd_layer_norm.csv");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = largest + 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const auto r = run_kernelwatch({"import", "--db", (dir / "kw.db").string(), csv.string()});
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("nothing was imported"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--skip-invalid"), std::string::npos) << r.err;
  EXPECT_EQ(run_count(dir), 1u);  // the import stored nothing
}

}  // namespace
}  // namespace kernelwatch
