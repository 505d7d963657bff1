// The liger-bench runner against fake runners: small Python scripts these tests write, run by
// the system python3 in place of liger_bench.py (no GPU, no torch, no triton here). Each fake
// reads the request like the real one and prints what the test needs: a passing H100 result,
// or one of the failures the runner must turn into a `failed` run with its reason.
#include "runners/liger_bench.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "core/kernelindex_schema.hpp"
#include "core/key.hpp"
#include "runners/liger_csv.hpp"
#include "runners/producer.hpp"
#include "storage/kernelindex_reader.hpp"
#include "tests/support/conformance.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The test's clock: a fixed instant after the imported history (never today's date).
core::Timestamp test_now() {
  return core::parse_timestamp("2026-06-01T12:00:00Z").value();
}

// The fake's preamble: reads the request, echoes each case like liger_bench.py.
const std::string kPreamble = R"(import json, math, os, sys
cases = json.load(sys.stdin)["cases"]
def passed(case, p50, p20=None, p80=None, name="NVIDIA H100 80GB HBM3"):
    p20 = p50 * 0.99 if p20 is None else p20
    p80 = p50 * 1.01 if p80 is None else p80
    print(json.dumps({"case": case, "status": "passed", "ms": {"p50": p50, "p20": p20, "p80": p80},
        "device": {"name": name, "capability": "9.0", "index": 0},
        "versions": {"torch": "2.7.0+cu126", "triton": "3.3.0", "liger_kernel": "0.6.1",
                     "cuda": "12.6", "python": "3.12.3"}}), flush=True)
)";

class LigerBenchTest : public ::testing::Test {
 protected:
  LigerBenchOptions fake(const std::string& body) {
    const auto path = dir_ / ("fake" + std::to_string(count_++) + ".py");
    testing::write_file(path, kPreamble + body);
    LigerBenchOptions o;
    o.python = "python3";
    o.script = path;
    o.timeout = 60s;
    o.kill_grace = 200ms;
    return o;
  }
  static LigerCase tvd_torch_backward() {
    return {kernels::KernelRef("tvd"), core::Pass::Backward, LigerProvider::Torch,
            core::Workload::from_label("tokens16384-vocab65536-fp32").value()};
  }
  static LigerCase layer_norm_liger_backward() {
    return {kernels::KernelRef("layer_norm"), core::Pass::Backward, LigerProvider::Liger,
            core::Workload::from_label("hidden16384-rows4096-fp32").value()};
  }
  static std::string reason(const core::Record& o) { return o.run.status_reason; }
  static std::string reason(const core::Run& r) { return r.record().run.status_reason; }
  std::vector<core::Record> run(const LigerBenchOptions& o, const std::vector<LigerCase>& cases) {
    return run_liger_bench(o, cases, test_now);
  }
  kernelwatch::testing::TempDir dir_;
  int count_ = 0;
};

// The imported record of a CSV or kernelindex key, for comparison.
core::Record imported(const std::string& benchmark, const std::string& provider,
                      const std::string& workload) {
  const auto text = testing::read_file(testing::liger_csv("weekly_ci.tvd_layer_norm.csv"));
  auto items = runners::read_liger_csv(text, "weekly_ci.tvd_layer_norm.csv");
  EXPECT_TRUE(items) << items.error().message;
  for (const auto& item : *items) {
    if (item.kind != storage::ItemKind::Run) continue;
    const auto key = core::key_of(item.record);
    if (key && key->benchmark.label == benchmark && key->provider.label == provider &&
        key->workload.label == workload && key->environment.label == "nvidia-h100-80gb-hbm3") {
      return item.record;
    }
  }
  ADD_FAILURE() << "no H100 row for " << benchmark << " " << provider << " " << workload;
  return {};
}

// The kernels liger-bench runs, by their catalogue names; any other name lists them.
TEST(LigerKernels, AreTvdAndLayerNormByTheirCatalogueNames) {
  for (const std::string_view name : kLigerBenchKernels) {
    const auto kernel = parse_liger_bench_kernel(name);
    ASSERT_TRUE(kernel) << kernel.error().message;
    EXPECT_EQ(kernel->name(), name);
  }
  EXPECT_EQ(liger_bench_kernel_names(), "tvd, layer_norm");
  const auto kernel = parse_liger_bench_kernel("conv");
  ASSERT_FALSE(kernel);
  EXPECT_EQ(kernel.error().code, core::ErrorCode::InvalidArgument);
  EXPECT_EQ(kernel.error().message, "unknown kernel \"conv\" (known: tvd, layer_norm)");
  // A kernel of the catalogue that liger-bench does not run.
  EXPECT_FALSE(parse_liger_bench_kernel("rms_norm"));
  EXPECT_FALSE(supports(kernels::KernelRef("rms_norm"), LigerProvider::Liger));
}

TEST(LigerRequest, WorkloadLabelsBecomeLigersXAndConfig) {
  LigerCase tvd{kernels::KernelRef("tvd"), core::Pass::Forward, LigerProvider::Liger,
                core::Workload::from_label("tokens16384-vocab65536-fp32").value()};
  EXPECT_EQ(request_case(tvd).value(),
            json::parse(R"({"kernel": "tvd", "pass": "forward", "provider": "liger",
                            "x_name": "V", "x_value": 65536, "config": {"B": 8, "T": 2048}})"));
  LigerCase ln{kernels::KernelRef("layer_norm"), core::Pass::Full, LigerProvider::Huggingface,
               core::Workload::from_label("hidden16384-rows4096-bf16").value()};
  EXPECT_EQ(request_case(ln).value(),
            json::parse(R"({"kernel": "layer_norm", "pass": "full", "provider": "huggingface",
                            "x_name": "N", "x_value": 16384,
                            "config": {"M": 4096, "dtype": "torch.bfloat16", "eps": 1e-06}})"));
  LigerCase bad = tvd;
  bad.provider = LigerProvider::Huggingface;
  EXPECT_FALSE(request_case(bad));
}

TEST_F(LigerBenchTest, AnH100ResultLandsInTheKeyOfTheImportedRowAndTheSeedRecord) {
  auto outcomes = run(fake("for c in cases: passed(c, 0.5)\n"),
                      {tvd_torch_backward(), layer_norm_liger_backward()});
  ASSERT_EQ(outcomes.size(), 2U);
  for (const auto& o : outcomes) {
    ASSERT_EQ(o.run.status, core::RunStatus::Passed) << reason(o);
  }
  const auto& r = outcomes[0];
  EXPECT_EQ(r.run.median, std::chrono::nanoseconds(500'000));
  EXPECT_EQ(r.run.latency("p20"), std::chrono::nanoseconds(495'000));
  EXPECT_EQ(r.run.observed_at, test_now());
  EXPECT_EQ(r.run.source_native.source, "kernelwatch-liger-bench");
  EXPECT_EQ(r.run.metadata.labels.at("liger_version"), "0.6.1");
  EXPECT_EQ(r.environment.software["framework"]["version"], "2.7.0+cu126");
  EXPECT_EQ(r.environment.software["cudaToolkit"], "12.6");
  const auto key = core::key_of(r).value();
  EXPECT_EQ(key.display(), "tvd/backward torch tokens16384-vocab65536-fp32 nvidia-h100-80gb-hbm3");
  EXPECT_EQ(key.protocol.label, "liger-bench-do-bench-backward");
  // Key digest equal to the imported weekly CSV row's and to the founding kernelindex record's.
  const auto csv_key =
      core::key_of(imported("tvd/backward", "torch", "tokens16384-vocab65536-fp32"));
  ASSERT_TRUE(csv_key);
  EXPECT_EQ(key.digest(), csv_key->digest());
  for (const auto& [name, run] :
       {std::pair{std::string("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json"), 0},
        std::pair{std::string("layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json"),
                  1}}) {
    const auto items = storage::read_kernelindex(testing::read_file(testing::fixture(name)));
    ASSERT_FALSE(items.empty());
    ASSERT_EQ(items[0].kind, storage::ItemKind::Run) << items[0].reason;
    const auto seed = core::key_of(items[0].record).value();
    EXPECT_EQ(core::key_of(outcomes[static_cast<std::size_t>(run)])->digest(), seed.digest())
        << name;
  }
  // The implementation of the same Liger release is the imported row's: no false attribution.
  const auto row = imported("layer_norm/backward", "liger", "hidden16384-rows4096-fp32");
  EXPECT_EQ(core::key_of(outcomes[1])->digest(), core::key_of(row)->digest());
}

TEST_F(LigerBenchTest, OneFailedCaseDoesNotLoseTheOthers) {
  auto outcomes = run(fake(R"(
print(json.dumps({"case": cases[0], "status": "failed",
    "reason": "CUDA out of memory: Tried to allocate 8.00 GiB"}), flush=True)
print("this is not json", flush=True)
passed(cases[2], float("nan"))
passed(cases[3], 0.7)
)"),
                      {tvd_torch_backward(), tvd_torch_backward(), tvd_torch_backward(),
                       layer_norm_liger_backward()});
  ASSERT_EQ(outcomes.size(), 4U);
  EXPECT_TRUE(core::is_failure(outcomes[0].run.status)) << core::to_string(outcomes[0].run.status);
  EXPECT_EQ(reason(outcomes[0]), "CUDA out of memory: Tried to allocate 8.00 GiB");
  EXPECT_TRUE(core::is_failure(outcomes[1].run.status)) << core::to_string(outcomes[1].run.status);
  EXPECT_EQ(reason(outcomes[1]).rfind("malformed runner output (not a JSON object)", 0), 0U)
      << reason(outcomes[1]);
  EXPECT_TRUE(core::is_failure(outcomes[2].run.status)) << core::to_string(outcomes[2].run.status);
  EXPECT_EQ(reason(outcomes[2]).rfind("NaN, infinite or non-positive time", 0), 0U)
      << reason(outcomes[2]);
  EXPECT_EQ(outcomes[3].run.status, core::RunStatus::Passed);
  // Failed runs stay in their key, on the GPU the run named.
  EXPECT_EQ(core::key_of(outcomes[0])->environment.label, "nvidia-h100-80gb-hbm3");
  EXPECT_FALSE(outcomes[0].run.median.has_value());
}

TEST_F(LigerBenchTest, NonPositiveTimesAreFailedRuns) {
  auto outcomes = run(fake("passed(cases[0], 0.0)\n"), {tvd_torch_backward()});
  EXPECT_TRUE(core::is_failure(outcomes[0].run.status)) << core::to_string(outcomes[0].run.status);
  EXPECT_EQ(reason(outcomes[0]).rfind("NaN, infinite or non-positive time", 0), 0U);
}

TEST_F(LigerBenchTest, AMissingInterpreterIsAFailedRun) {
  auto o = fake("");
  o.python = dir_ / "venv/bin/python3";
  o.fallback_gpu_name = "NVIDIA H100 80GB HBM3";
  auto outcomes = run(o, {tvd_torch_backward()});
  ASSERT_EQ(outcomes.size(), 1U);
  EXPECT_TRUE(core::is_failure(outcomes[0].run.status)) << core::to_string(outcomes[0].run.status);
  EXPECT_EQ(reason(outcomes[0]), "python interpreter not found: " + o.python.string());
  EXPECT_EQ(core::key_of(outcomes[0])->environment.label, "nvidia-h100-80gb-hbm3");
}

TEST_F(LigerBenchTest, AnImportFailureNamesTheModule) {
  auto outcomes = run(fake(R"(
print("liger_bench: cannot import triton: ModuleNotFoundError: No module named 'triton'",
      file=sys.stderr)
sys.exit(3)
)"),
                      {tvd_torch_backward()});
  EXPECT_TRUE(core::is_failure(outcomes[0].run.status)) << core::to_string(outcomes[0].run.status);
  EXPECT_EQ(reason(outcomes[0]),
            "import failure: liger_bench: cannot import triton: ModuleNotFoundError: No module "
            "named 'triton'");
}

TEST_F(LigerBenchTest, ANonZeroExitKeepsTheLastLinesOfStderr) {
  auto outcomes = run(fake(R"(
passed(cases[0], 0.5)
for i in range(10): print("line", i, file=sys.stderr)
os._exit(1)
)"),
                      {tvd_torch_backward(), tvd_torch_backward()});
  EXPECT_EQ(outcomes[0].run.status, core::RunStatus::Passed);
  EXPECT_TRUE(core::is_failure(outcomes[1].run.status)) << core::to_string(outcomes[1].run.status);
  EXPECT_EQ(reason(outcomes[1]), "runner exited with status 1: line 7 | line 8 | line 9");
}

TEST_F(LigerBenchTest, MissingOutputIsAFailedRun) {
  auto outcomes = run(fake(""), {tvd_torch_backward()});
  EXPECT_TRUE(core::is_failure(outcomes[0].run.status)) << core::to_string(outcomes[0].run.status);
  EXPECT_EQ(reason(outcomes[0]), "runner exited without any result (missing output)");
  auto truncated =
      run(fake("sys.stdout.write('{\"case\": 1'); sys.stdout.flush()\n"), {tvd_torch_backward()});
  EXPECT_EQ(reason(truncated[0]).rfind("malformed runner output (a line without its newline)", 0),
            0U)
      << reason(truncated[0]);
}

TEST_F(LigerBenchTest, NoCudaDeviceIsAFailedRun) {
  auto outcomes = run(fake(R"(
print("liger_bench: no CUDA device: torch.cuda.is_available() is False", file=sys.stderr)
sys.exit(4)
)"),
                      {tvd_torch_backward()});
  EXPECT_EQ(reason(outcomes[0]),
            "no CUDA device: liger_bench: no CUDA device: torch.cuda.is_available() is False");
}

TEST_F(LigerBenchTest, ATimeoutKillsTheRunnerAndEverythingItStarted) {
  // The fake answers the first case, then starts a grandchild that would outlive it (it ignores
  // SIGTERM) and hangs: the timeout must end both. It reports the grandchild's pid on stderr.
  auto o = fake(R"(
import signal, subprocess, time
passed(cases[0], 0.5)
child = subprocess.Popen(["/bin/sh", "-c", "trap '' TERM; exec sleep 60"])
print("grandchild", child.pid, file=sys.stderr, flush=True)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.read()
while True:
    time.sleep(60)  # never wait(): reaping the grandchild here would hide it from the test
)");
  // Long enough for python to start and answer the first case on a loaded machine (2 s was not,
  // under a parallel ctest on 2 cores).
  o.timeout = 6s;
  auto outcomes = run(o, {tvd_torch_backward(), tvd_torch_backward()});
  EXPECT_EQ(outcomes[0].run.status, core::RunStatus::Passed);
  EXPECT_TRUE(core::is_failure(outcomes[1].run.status)) << core::to_string(outcomes[1].run.status);
  const std::string why = reason(outcomes[1]);
  EXPECT_EQ(why.rfind("runner still running after its timeout of 6s: killed with everything it "
                      "started",
                      0),
            0U)
      << why;
  const auto at = why.find("grandchild ");
  ASSERT_NE(at, std::string::npos) << why;
  const pid_t grandchild = std::stoi(why.substr(at + 11));
  // Killed and reaped by the time the runner returned.
  EXPECT_EQ(::kill(grandchild, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

// The probe of issue #24: output that is not UTF-8 once killed the daemon (its reason could not
// be written as JSON). Every such reason is now one valid line.
TEST_F(LigerBenchTest, BytesThatAreNotUtf8MakeAFailedRunWithAValidReason) {
  const std::vector<std::pair<std::string, std::string>> fakes = {
      // A partial last line with 0xff.
      {"sys.stdout.buffer.write(b'{\"case\": \\xff\\xfe'); sys.stdout.flush()\n",
       "malformed runner output (a line without its newline): {\"case\": \xEF\xBF\xBD"},
      // A two-byte character across the 120-byte excerpt of a partial line.
      {"sys.stdout.buffer.write(b'x' * 119 + '\\u00e9'.encode() + b'tail'); sys.stdout.flush()\n",
       "malformed runner output (a line without its newline): " + std::string(117, 'x')},
      // Invalid bytes on stderr with a non-zero exit.
      {"sys.stderr.buffer.write(b'bad \\xc3\\x28 bytes\\x1b[31m red\\n'); sys.stderr.flush()\n"
       "os._exit(1)\n",
       "runner exited with status 1: bad \xEF\xBF\xBD( bytes [31m red"},
      // A result line that is not UTF-8.
      {"sys.stdout.buffer.write(b'\\x80\\x81 not json\\n'); sys.stdout.flush()\n",
       "malformed runner output (not a JSON object): \xEF\xBF\xBD\xEF\xBF\xBD not json"},
  };
  for (const auto& [body, expected] : fakes) {
    auto outcomes = run(fake(body), {tvd_torch_backward()});
    ASSERT_EQ(outcomes.size(), 1U);
    EXPECT_TRUE(core::is_failure(outcomes[0].run.status));
    const std::string why = reason(outcomes[0]);
    EXPECT_EQ(why.rfind(expected, 0), 0U) << why;
    // The record can be written as JSON (this threw, and aborted the daemon).
    EXPECT_NO_THROW((void)core::to_json(outcomes[0]).dump()) << why;
  }
}

TEST_F(LigerBenchTest, QuantilesOutOfOrderAreAFailedRun) {
  auto outcomes = run(fake("passed(cases[0], 1.0, p20=1.2, p80=0.8)\n"), {tvd_torch_backward()});
  EXPECT_TRUE(core::is_failure(outcomes[0].run.status));
  EXPECT_EQ(reason(outcomes[0]),
            "quantiles out of order: p50=1 p20=1.2 p80=0.8 ms (p20 <= p50 <= p80 expected)");
  EXPECT_FALSE(outcomes[0].run.median.has_value());
}

TEST_F(LigerBenchTest, AHundredMegabytesWithoutANewlineIsAFailedRunInBoundedMemory) {
  auto outcomes = run(fake("chunk = b'x' * (1 << 20)\n"
                           "for _ in range(100): sys.stdout.buffer.write(chunk)\n"
                           "sys.stdout.flush()\n"),
                      {tvd_torch_backward()});
  EXPECT_TRUE(core::is_failure(outcomes[0].run.status));
  EXPECT_EQ(reason(outcomes[0]),
            "malformed runner output: 1 stdout line(s) longer than 65536 bytes, dropped unread");
}

TEST_F(LigerBenchTest, AThrottledGpuMakesTheRunInconclusive) {
  auto o = fake("passed(cases[0], 0.5)\n");
  int calls = 0;
  o.sampler = [&](int) {
    kernels::GpuSample s;
    s.sm_clock_max_mhz = 1980;
    s.sm_clock_mhz = ++calls == 1 ? 1980 : 900;  // throttled by the end of the case
    return s;
  };
  auto outcomes = run(o, {tvd_torch_backward()});
  EXPECT_EQ(outcomes[0].run.status, core::RunStatus::IncompleteEvidence);
  EXPECT_EQ(reason(outcomes[0]).rfind("SM clock 900 MHz is under 75%", 0), 0U)
      << reason(outcomes[0]);
}

// Every kind of record the runner writes, valid by the public schemas (checked here and by
// Debian's python3-jsonschema), each failure with the public status that says why.
TEST_F(LigerBenchTest, EveryKindOfRecordTheRunnerWritesIsValid) {
  std::vector<core::Record> all;
  const auto add = [&](std::vector<core::Record> outcomes) {
    for (auto& o : outcomes) all.push_back(std::move(o));
  };
  add(run(fake("passed(cases[0], 0.5)\n"
               "print(json.dumps({'case': cases[1], 'status': 'failed', 'reason': "
               "'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB'}))\n"),
          {tvd_torch_backward(), layer_norm_liger_backward()}));
  add(run(fake("print(json.dumps({'case': cases[0], 'status': 'failed', 'reason': "
               "'RuntimeError: CUDA error: device-side assert triggered'}), flush=True)\n"),
          {tvd_torch_backward()}));
  auto slow = fake("import time\ntime.sleep(30)\n");
  slow.timeout = 300ms;
  add(run(slow, {tvd_torch_backward()}));
  auto throttled = fake("passed(cases[0], 0.5)\n");
  int calls = 0;
  throttled.sampler = [&](int) {
    kernels::GpuSample s;
    s.sm_clock_max_mhz = 1980;
    s.sm_clock_mhz = ++calls == 1 ? 1980 : 900;
    s.persistence_mode = true;
    return s;
  };
  add(run(throttled, {tvd_torch_backward()}));
  ASSERT_EQ(all.size(), 5U);
  const core::RunStatus expected[] = {core::RunStatus::Passed, core::RunStatus::ResourceExceeded,
                                      core::RunStatus::RuntimeError, core::RunStatus::Timeout,
                                      core::RunStatus::IncompleteEvidence};
  json documents = json::array();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& record = all[i];
    EXPECT_EQ(record.run.status, expected[i]) << i << ": " << reason(all[i]);
    const json doc = core::to_json(record);
    for (const char* member : {"run", "protocol", "environment"}) {
      const auto valid = core::validate_document(doc[member], member);
      EXPECT_TRUE(valid) << i << ": " << valid.error().message;
    }
    EXPECT_EQ(doc["run"]["spec"]["environmentDigest"], core::document_digest(doc["environment"]));
    documents.push_back(doc);
  }
  // The versions the runner reported are the environment's software, in the schema's places.
  EXPECT_EQ(documents[0]["environment"]["spec"]["software"],
            json::parse(R"({"cudaToolkit": "12.6", "framework": {"name": "pytorch",
                            "version": "2.7.0+cu126"}, "libraries": {"liger_kernel": "0.6.1",
                            "python": "3.12.3", "triton": "3.3.0"}})"));
  EXPECT_EQ(documents[4]["run"]["spec"]["sourceNative"]["metrics"]["sm_clock_mhz_after"], 900);
  KW_REQUIRE_JSONSCHEMA();
  const auto checked = kernelwatch::testing::check_against_schemas(documents, dir_.path());
  EXPECT_TRUE(checked.valid) << checked.report;
}

TEST_F(LigerBenchTest, TheProducerRemembersTheGpuForALaterFailedRun) {
  auto o = fake("for c in cases: passed(c, 0.5)\n");
  LigerBenchProducer producer(o, tvd_torch_backward());
  auto first = producer.run(test_now);
  ASSERT_TRUE(first && first->runs.size() == 1);
  const core::Record& first_record = first->runs[0].record();
  EXPECT_EQ(first_record.run.status, core::RunStatus::Passed);
  EXPECT_EQ(producer.name(), "tvd/backward/torch/liger-bench tokens16384-vocab65536-fp32");
  std::filesystem::remove(o.script);  // the runner can no longer run: python fails at once
  auto second = producer.run(test_now);
  ASSERT_TRUE(second && second->runs.size() == 1);
  EXPECT_EQ(second->runs[0].record().run.status, core::RunStatus::RuntimeError);
  EXPECT_EQ(core::key_of(second->runs[0].record())->digest(), core::key_of(first_record)->digest());
}

// `kernelwatch bench --runner liger-bench`'s way through the seam: every case in one child (the
// fake appends a line to a file each time it starts), the runs in case order, and without a
// placement the labels the runner gave (gpu_index) kept.
TEST_F(LigerBenchTest, AProducerOfSeveralCasesRunsThemInOneChild) {
  const auto starts = dir_ / "starts";
  auto o = fake("open(" + json(starts.string()).dump() +
                ", 'a').write('start\\n')\nfor c in cases: passed(c, 0.5)\n");
  o.placement = std::nullopt;
  LigerBenchProducer producer(
      o, std::vector<LigerCase>{tvd_torch_backward(), layer_norm_liger_backward()});
  EXPECT_EQ(producer.name(),
            "tvd/backward/torch/liger-bench tokens16384-vocab65536-fp32 and 1 more");
  auto produced = producer.run(test_now);
  ASSERT_TRUE(produced);
  ASSERT_EQ(produced->runs.size(), 2U);
  EXPECT_EQ(testing::read_file(starts), "start\n");
  EXPECT_EQ(produced->runs[0].record().run.source_native.benchmark, "tvd/backward");
  EXPECT_EQ(produced->runs[1].record().run.source_native.benchmark, "layer_norm/backward");
  for (const auto& run : produced->runs) {
    EXPECT_EQ(run.record().run.status, core::RunStatus::Passed) << reason(run);
    EXPECT_EQ(run.record().run.metadata.labels.at("gpu_index"), "0");
    EXPECT_EQ(run.figures().repetitions, 0);  // its times are the record's alone
    EXPECT_EQ(run.record().run.median, std::chrono::nanoseconds(500'000));
  }
}

// The one expansion of a liger-bench entry: each provider on each workload, providers outer.
TEST(LigerCases, EachProviderOnEachWorkloadProvidersOuter) {
  const auto w1 = core::Workload::from_label("tokens16384-vocab65536-fp32").value();
  const auto w2 = core::Workload::from_label("tokens4096-vocab32768-bf16").value();
  const auto cases = liger_cases({kernels::KernelRef("tvd"),
                                  core::Pass::Full,
                                  {LigerProvider::Liger, LigerProvider::Torch},
                                  {w1, w2}});
  ASSERT_EQ(cases.size(), 4U);
  EXPECT_EQ(cases[0].name(), "tvd/full/liger/liger-bench tokens16384-vocab65536-fp32");
  EXPECT_EQ(cases[1].name(), "tvd/full/liger/liger-bench tokens4096-vocab32768-bf16");
  EXPECT_EQ(cases[2].name(), "tvd/full/torch/liger-bench tokens16384-vocab65536-fp32");
  EXPECT_EQ(cases[3].name(), "tvd/full/torch/liger-bench tokens4096-vocab32768-bf16");
}

TEST(LigerBenchScript, TheShippedScriptIsFoundAndAnswersHelp) {
  auto script = default_script();
  ASSERT_TRUE(script) << script.error().message;
  EXPECT_EQ(script->filename(), "liger_bench.py");
  const auto help = testing::run_process("/usr/bin/env", {"python3", script->string(), "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("liger_bench.py"), std::string::npos);
}

}  // namespace
}  // namespace kernelwatch::runners
