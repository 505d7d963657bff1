// `kernelwatch compare` (issue #37) as a CI job runs it: the real binary over the output of a real
// Google Benchmark program (Debian's libbenchmark, built with these tests) and a real
// pytest-benchmark suite (Debian's python3-pytest-benchmark), unchanged and slowed by a factor
// written to the file the programs read. Its verdicts and exit codes, and its refusals of bad
// input (exit 3, naming the file).
//
// The slowdowns and thresholds are sized to this project's 2-core CI machines: there a program's
// medians drift by 20-40% over a few seconds (measured: the same saxpy loop at 9.3 us, then 7.1 us
// two seconds later), so two separate runs cannot tell 10% apart, and 40 interleaved rounds tell
// it only some of the time (docs/PERFORMANCE.md has the measured rates). The tests check what must
// hold whatever the machine: an unchanged candidate is never slower at a threshold above the
// machine's drift (20% in rounds; 900% between two separate runs, as one .ci/run measured the
// same program 2x slower in its second run), and a candidate doing 2 (rounds) to 40 (files)
// times the work always is.
#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

#ifndef KW_GBENCH_SAXPY
#define KW_GBENCH_SAXPY ""
#endif

namespace kernelwatch {
namespace {

using nlohmann::json;

std::vector<std::string> gbench_argv() {
  return {KW_GBENCH_SAXPY, "--benchmark_min_time=0.005", "--benchmark_format=json"};
}

std::vector<std::string> slowed(const std::filesystem::path& factor_file,
                                std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/usr/bin/env", "KW_SLOWDOWN_FILE=" + factor_file.string()});
  return argv;
}

testing::ProcessResult compare_rounds(const std::vector<std::string>& options,
                                      const std::vector<std::string>& baseline,
                                      const std::vector<std::string>& candidate) {
  std::vector<std::string> args{"compare"};
  args.insert(args.end(), options.begin(), options.end());
  args.emplace_back("--");
  args.insert(args.end(), baseline.begin(), baseline.end());
  args.emplace_back("--");
  args.insert(args.end(), candidate.begin(), candidate.end());
  return testing::run_kernelwatch(args);
}

// Every case's verdict in a --json report.
std::map<std::string, std::string> verdicts(const std::string& out) {
  std::map<std::string, std::string> v;
  const json report = json::parse(out);
  for (const auto& c : report.at("cases")) v[c.at("id")] = c.at("verdict");
  return v;
}

TEST(CompareE2E, AGoogleBenchmarkProgramInRoundsIsNeverSlowerUnchangedAndSlowerWhenSlowed) {
  ASSERT_TRUE(std::filesystem::exists(KW_GBENCH_SAXPY)) << "libbenchmark-dev (scripts/setup)";
  testing::TempDir dir;
  testing::write_file(dir / "factor", "2\n");
  // One program against itself: at 95% each case's interval misses "no change" one time in 20 by
  // design, and under the suite's load (a round's median moving 13..30 us) that once came with an
  // estimate past 20% (-18.4%, [-32.6%, -0.2%]: "faster"). At 99.5% two cases err far less often;
  // the slowed program below is judged at the default 95%.
  const auto same =
      compare_rounds({"--rounds", "30", "--threshold", "20%", "--confidence", "99.5%", "--json"},
                     gbench_argv(), gbench_argv());
  ASSERT_EQ(same.exit_code, 0) << same.out << same.err;
  const auto unchanged = verdicts(same.out);
  ASSERT_EQ(unchanged.size(), 2U) << same.out;
  for (const auto& [id, verdict] : unchanged) {
    EXPECT_NE(verdict, "slower") << id << ": " << same.out;
    EXPECT_NE(verdict, "faster") << id << ": " << same.out;
  }
  const json report = json::parse(same.out);
  EXPECT_EQ(report["cases"][0]["id"], "BM_Saxpy/16384");
  EXPECT_EQ(report["cases"][0]["method"], "rounds");
  EXPECT_EQ(report["format"], "gbench-json");
  EXPECT_NE(same.err.find("round 30 of 30"), std::string::npos) << same.err;

  const auto slow = compare_rounds({"--rounds", "30", "--threshold", "20%", "--json"},
                                   gbench_argv(), slowed(dir / "factor", gbench_argv()));
  ASSERT_EQ(slow.exit_code, 1) << slow.out << slow.err;
  for (const auto& [id, verdict] : verdicts(slow.out)) {
    EXPECT_EQ(verdict, "slower") << id << ": " << slow.out;
  }
  const json slower = json::parse(slow.out);
  EXPECT_GT(slower["cases"][0]["change"].get<double>(), 0.5) << slow.out;
  EXPECT_LT(slower["cases"][0]["low"].get<double>(), slower["cases"][0]["change"].get<double>());
}

TEST(CompareE2E, AConfigsCommandEntryRunsInTheTwoBuildDirectories) {
  ASSERT_TRUE(std::filesystem::exists(KW_GBENCH_SAXPY)) << "libbenchmark-dev (scripts/setup)";
  testing::TempDir dir;
  // Each "build" directory has its own factor file; the entry names it relatively, so the
  // program run in the candidate's directory reads the candidate's.
  std::filesystem::create_directories(dir / "base");
  std::filesystem::create_directories(dir / "cand");
  testing::write_file(dir / "base" / "factor", "1\n");
  testing::write_file(dir / "cand" / "factor", "2\n");
  const json config = {
      {"storage", {{"path", (dir / "kw.db").string()}}},
      {"backend", "cpu"},
      {"benchmarks",
       json::array({{{"runner", "command"},
                     {"name", "saxpy"},
                     {"command",
                      {KW_GBENCH_SAXPY, "--benchmark_min_time=0.005", "--benchmark_format=json"}},
                     {"format", "gbench-json"},
                     {"env", {{"KW_SLOWDOWN_FILE", "factor"}}}}})}};
  testing::write_file(dir / "kernelwatch.json", config.dump(2));
  const auto r = testing::run_kernelwatch(
      {"compare", "--config", (dir / "kernelwatch.json").string(), "--entry", "saxpy", "--baseline",
       (dir / "base").string(), "--candidate", (dir / "cand").string(), "--rounds", "30",
       "--threshold", "20%", "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  for (const auto& [id, verdict] : verdicts(r.out)) EXPECT_EQ(verdict, "slower") << id << r.out;
  const auto missing = testing::run_kernelwatch(
      {"compare", "--config", (dir / "kernelwatch.json").string(), "--entry", "nope", "--baseline",
       (dir / "base").string(), "--candidate", (dir / "cand").string()});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("no command entry named \"nope\" (it has saxpy)"), std::string::npos)
      << missing.err;
}

TEST(CompareE2E, TwoGoogleBenchmarkFilesAreComparedAndAHostChangeIsRefused) {
  ASSERT_TRUE(std::filesystem::exists(KW_GBENCH_SAXPY)) << "libbenchmark-dev (scripts/setup)";
  testing::TempDir dir;
  testing::write_file(dir / "factor", "40\n");
  const std::vector<std::string> args{"--benchmark_repetitions=5", "--benchmark_min_time=0.01",
                                      "--benchmark_format=json"};
  const auto run = [&](const std::filesystem::path& out, bool slow) {
    std::vector<std::string> argv = args;
    if (slow)
      argv.insert(argv.begin(), {"KW_SLOWDOWN_FILE=" + (dir / "factor").string(), KW_GBENCH_SAXPY});
    const auto r = slow ? testing::run_process("/usr/bin/env", argv)
                        : testing::run_process(KW_GBENCH_SAXPY, argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    testing::write_file(out, r.out);
  };
  run(dir / "base.json", false);
  run(dir / "again.json", false);
  run(dir / "slow.json", true);
  const std::string base = (dir / "base.json").string();
  // Unchanged: never slower at a threshold above the machine's drift between two runs.
  const auto same = testing::run_kernelwatch(
      {"compare", base, (dir / "again.json").string(), "--threshold", "900%"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_EQ(same.out.find("slower"), std::string::npos) << same.out;
  // Forty times the work: slower, exit 1, with a table a person reads and a JUnit failure.
  const auto slow = testing::run_kernelwatch(
      {"compare", base, (dir / "slow.json").string(), "--threshold", "900%"});
  EXPECT_EQ(slow.exit_code, 1) << slow.out << slow.err;
  EXPECT_NE(slow.out.find("BM_Saxpy/16384"), std::string::npos) << slow.out;
  EXPECT_NE(slow.out.find("slower"), std::string::npos) << slow.out;
  EXPECT_NE(slow.out.find("samples 5/5"), std::string::npos) << slow.out;
  const auto junit = testing::run_kernelwatch(
      {"compare", base, (dir / "slow.json").string(), "--threshold", "900%", "--junit"});
  EXPECT_EQ(junit.exit_code, 1);
  EXPECT_NE(junit.out.find("<testcase classname=\"kernelwatch.compare\" name=\"BM_Saxpy/16384\""),
            std::string::npos)
      << junit.out;
  EXPECT_NE(junit.out.find("<failure type=\"slower\""), std::string::npos) << junit.out;
  const auto markdown = testing::run_kernelwatch(
      {"compare", base, (dir / "slow.json").string(), "--threshold", "900%", "--markdown"});
  EXPECT_EQ(markdown.exit_code, 1);
  EXPECT_NE(markdown.out.find(":red_circle: kernelwatch compare: 2 slower of 2 cases"),
            std::string::npos)
      << markdown.out;
  // A thresholds file: the matching case gets its threshold, the other keeps the default (the
  // verdicts under a rule are in compare_report_test: here the machine's drift decides them).
  testing::write_file(dir / "thresholds", "# per case\nBM_Saxpy/16* 950%\n");
  const auto per_case =
      testing::run_kernelwatch({"compare", base, (dir / "slow.json").string(), "--threshold",
                                "900%", "--thresholds", (dir / "thresholds").string(), "--json"});
  EXPECT_NE(per_case.exit_code, 3) << per_case.err;
  for (const auto& c : json::parse(per_case.out).at("cases")) {
    EXPECT_DOUBLE_EQ(c.at("threshold").get<double>(), c.at("id") == "BM_Saxpy/16384" ? 9.5 : 9.0)
        << per_case.out;
  }

  // The same program's output from another host is refused, naming the field.
  json other = json::parse(testing::read_file(dir / "again.json"));
  other["context"]["host_name"] = "another-host";
  testing::write_file(dir / "other.json", other.dump());
  const auto refused = testing::run_kernelwatch({"compare", base, (dir / "other.json").string()});
  EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
  EXPECT_NE(refused.out.find("host_name"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("\"another-host\" in the candidate"), std::string::npos)
      << refused.out;
  const auto ignored =
      testing::run_kernelwatch({"compare", base, (dir / "other.json").string(), "--threshold",
                                "900%", "--ignore-environment", "host_name"});
  EXPECT_EQ(ignored.exit_code, 0) << ignored.out << ignored.err;
  // Before the files the option takes one value: the files stay files.
  const auto before =
      testing::run_kernelwatch({"compare", "--ignore-environment", "host_name", base,
                                (dir / "other.json").string(), "--threshold", "900%"});
  EXPECT_EQ(before.exit_code, 0) << before.out << before.err;
}

TEST(CompareE2E, APytestBenchmarkSuiteUnchangedIsNotSlowerAndSlowedIs) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/python3"));
  const auto suite = testing::data_dir().parent_path() / "tests/daemon/programs";
  testing::TempDir dir;
  testing::write_file(dir / "factor", "3\n");
  const auto run = [&](const std::filesystem::path& out, const std::string& factor) {
    testing::write_file(dir / "factor", factor + "\n");
    const auto r = testing::run_process(
        "/usr/bin/env",
        {"KW_SLOWDOWN_FILE=" + (dir / "factor").string(), "/usr/bin/python3", "-m", "pytest", "-q",
         "-p", "no:cacheprovider", "--benchmark-json=" + out.string(), "--benchmark-max-time=0.1",
         "--benchmark-min-rounds=10", (suite / "test_pytest_saxpy.py").string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  };
  run(dir / "base.json", "1");
  run(dir / "again.json", "1");
  run(dir / "slow.json", "40");
  const auto same =
      testing::run_kernelwatch({"compare", (dir / "base.json").string(),
                                (dir / "again.json").string(), "--threshold", "900%", "--json"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  const auto unchanged = verdicts(same.out);
  ASSERT_EQ(unchanged.size(), 2U) << same.out;
  for (const auto& [id, verdict] : unchanged) EXPECT_NE(verdict, "slower") << id;
  // Paired by pytest's node id, so the same test name in two classes or modules stays two cases.
  // (relative to pytest's rootdir, which is this repository or the suite's folder).
  const std::string node = "test_pytest_saxpy.py::test_saxpy[2000]";
  EXPECT_TRUE(std::any_of(unchanged.begin(), unchanged.end(), [&](const auto& c) {
    return c.first.size() >= node.size() &&
           c.first.compare(c.first.size() - node.size(), node.size(), node) == 0;
  })) << same.out;
  const json report = json::parse(same.out);
  EXPECT_EQ(report["format"], "pytest-benchmark-json");
  EXPECT_EQ(report["cases"][0]["method"], "samples");
  const auto slow =
      testing::run_kernelwatch({"compare", (dir / "base.json").string(),
                                (dir / "slow.json").string(), "--threshold", "900%", "--json"});
  EXPECT_EQ(slow.exit_code, 1) << slow.out << slow.err;
  for (const auto& [id, verdict] : verdicts(slow.out)) EXPECT_EQ(verdict, "slower") << id;
}

TEST(CompareE2E, BadInputIsRefusedWithExitThreeNamingTheFile) {
  testing::TempDir dir;
  const std::string gbench = testing::read_file(testing::data_dir().parent_path() /
                                                "tests/daemon/programs/gbench_sample.json");
  testing::write_file(dir / "base.json", gbench);
  testing::write_file(dir / "empty.json", "");
  testing::write_file(dir / "truncated.json", gbench.substr(0, gbench.size() / 2));
  testing::write_file(dir / "notes.txt", "not a benchmark\n");
  json renamed = json::parse(gbench);
  for (auto& row : renamed["benchmarks"]) {
    row["name"] = "BM_Other";
    row["run_name"] = "BM_Other";
  }
  testing::write_file(dir / "other.json", renamed.dump());
  const std::string base = (dir / "base.json").string();
  const auto expect_refused = [&](const std::vector<std::string>& args, const std::string& says) {
    std::vector<std::string> all{"compare"};
    all.insert(all.end(), args.begin(), args.end());
    const auto r = testing::run_kernelwatch(all);
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  };
  expect_refused({base, (dir / "empty.json").string()}, "empty.json: the file is empty");
  expect_refused({base, (dir / "truncated.json").string()}, "truncated.json: not Google Benchmark");
  expect_refused({(dir / "notes.txt").string(), base}, "notes.txt: not a result file");
  expect_refused({base, (dir / "missing.json").string()}, "missing.json: no such file");
  expect_refused({base, (dir / "other.json").string()}, "no case in common");
  expect_refused({base, base, "--format", "pytest-benchmark-json"},
                 "base.json: not pytest-benchmark JSON");
  expect_refused({base, base, "--threshold", "5"}, "write 5% or 0.05");
  expect_refused({base, base, "--no-such-option"}, "unknown option --no-such-option");
  expect_refused({base}, "give two result files");
  expect_refused({"--rounds", "1", "--", "/bin/true", "--", "/bin/true"}, "--rounds: 1");
  expect_refused({"--", "/bin/false", "--", "/bin/true"},
                 "round 1, the baseline: exited with status 1");
  // The candidate's program failing is the change's failure: exit 1, not a refusal.
  const auto broken =
      testing::run_kernelwatch({"compare", "--", "/bin/cat", base, "--", "/bin/false"});
  EXPECT_EQ(broken.exit_code, 1) << broken.err;
  EXPECT_NE(broken.err.find("the candidate failed: exited with status 1"), std::string::npos)
      << broken.err;
  expect_refused({"--", "/bin/echo", "hello", "--", "/bin/echo", "hello"},
                 "round 1, the baseline's output: not a result file");
  const auto help = testing::run_kernelwatch({"compare", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--fail-on-ambiguous"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace kernelwatch
