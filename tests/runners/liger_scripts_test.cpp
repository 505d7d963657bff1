// The liger-scripts runner against a FAKE Liger-Kernel checkout (tests/runners/fake_liger, run by
// the system python3): it stands in for Liger because Liger's scripts need a GPU, PyTorch and
// Triton. Its utils.update_benchmark_data_csv writes rows as Liger's does (columns, quoting,
// timestamps without a time zone, the overwrite rule). What is proved: each row lands in the key
// the importer gives the same row of Liger's published history, the checkout is left byte for
// byte as it was, and a failing script is a failed run with its reason. The host probe is fixed
// (an H100, as NVML would answer on one: there is no GPU here); the clock is the test's.
#include "runners/liger_scripts.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <type_traits>

#include "core/key.hpp"
#include "runners/liger_csv.hpp"
#include "tests/support/fake_liger.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using nlohmann::json;

core::Timestamp test_now() {
  return core::parse_timestamp("2026-06-01T12:00:00Z").value();
}

// A stand-in for NVML's answer on an H100 host (there is no GPU here).
HostIdentity gpu_host(const std::string& name = "NVIDIA H100 80GB HBM3") {
  HostIdentity host;
  host.gpu_name = name;
  host.hardware = core::hardware_from_gpu_name(name);
  host.driver = "580.159.04";
  return host;
}

HostIdentity cpu_host() {
  HostIdentity host;
  host.hardware = {"intel", "Intel Xeon Test", "", "x86_64"};
  return host;
}

CommandContext context_on(HostIdentity host) {
  CommandContext context;
  context.now = test_now;
  context.probe = [host] { return host; };
  return context;
}

struct Checkout {
  testing::TempDir dir;
  std::filesystem::path root = testing::copy_fake_liger(dir / "Liger-Kernel");
};

LigerScriptsEntry entry_of(const Checkout& checkout, std::vector<std::string> scripts) {
  LigerScriptsEntry entry;
  entry.name = "liger";
  entry.checkout = checkout.root;
  entry.python = "/usr/bin/python3";
  entry.scripts = std::move(scripts);
  entry.timeout = std::chrono::minutes(2);
  return entry;
}

// The key the importer gives one CSV row of Liger's published history.
core::ComparabilityKey imported_key(const std::string& row) {
  const std::string header =
      "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,"
      "x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,"
      "liger_version\n";
  auto items = runners::read_liger_csv(header + row + "\n", "history.csv");
  EXPECT_TRUE(items && items->size() == 1 && (*items)[0].kind == storage::ItemKind::Run);
  return core::key_of((*items)[0].record).value();
}

// The first row of data/liger/weekly_ci.tvd_layer_norm.csv that starts with `prefix`, without the
// two columns the weekly CI adds.
std::string history_row(const std::string& prefix) {
  std::ifstream in(testing::liger_csv("weekly_ci.tvd_layer_norm.csv"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    for (int cut = 0; cut < 2; ++cut) line.erase(line.rfind(','));
    return line;
  }
  ADD_FAILURE() << "no history row " << prefix;
  return {};
}

const core::Record* find_run(const std::vector<core::Record>& runs,
                             const core::ComparabilityKey& key) {
  for (const auto& run : runs) {
    if (core::key_of(run).value().digest() == key.digest()) return &run;
  }
  return nullptr;
}

std::string keys_of(const std::vector<core::Record>& runs) {
  std::string out;
  for (const auto& run : runs) out += core::key_of(run).value().display() + "\n";
  return out;
}

TEST(LigerScripts, EachRowLandsInTheKeyOfItsImportedHistoryAndTheCheckoutIsUntouched) {
  Checkout checkout;
  const auto before = testing::snapshot(checkout.root);
  LigerScriptKeys known;
  const auto out =
      run_liger_scripts(entry_of(checkout, {"benchmark/scripts/benchmark_layer_norm.py"}),
                        context_on(gpu_host()), known);
  EXPECT_EQ(out.error, "");
  // 2 providers x 2 hidden sizes of speed rows; the memory rows are no runs.
  ASSERT_EQ(out.runs.size(), 4U) << keys_of(out.runs);
  const auto history =
      imported_key(history_row("layer_norm,liger,forward,speed,ms,N,hidden size,1024,"));
  EXPECT_EQ(history.display(),
            "layer_norm/forward liger hidden1024-rows4096-fp32 nvidia-h100-80gb-hbm3");
  const auto* run = find_run(out.runs, history);
  ASSERT_NE(run, nullptr) << "not in the imported key " << history.display() << ":\n"
                          << keys_of(out.runs);
  const auto& r = run->run;
  EXPECT_EQ(r.status, core::RunStatus::Passed) << r.status_reason;
  EXPECT_EQ(r.median, std::chrono::nanoseconds(20'000));
  EXPECT_EQ(r.latency("p20"), std::chrono::nanoseconds(19'600));
  EXPECT_EQ(r.latency("p80"), std::chrono::nanoseconds(20'400));
  EXPECT_EQ(r.observed_at, test_now());  // the daemon's clock, not the script's naive local time
  EXPECT_EQ(r.source_native.source, kLigerScriptsSource);
  EXPECT_EQ(r.metadata.labels.at("liger_version"), "0.7.0");
  EXPECT_EQ(r.metadata.labels.at("script"), "benchmark/scripts/benchmark_layer_norm.py");
  EXPECT_EQ(r.metadata.labels.at("gpu_checked"), "nvml");
  EXPECT_EQ(run->environment.software.value("driver", ""), "580.159.04");
  // Its times are the record's alone: a runner hands over records, no harness statistics.
  static_assert(std::is_same_v<decltype(out.runs)::value_type, core::Record>);
  // huggingface, the reference the script imports from the checkout's test/ package.
  const auto reference =
      imported_key(history_row("layer_norm,huggingface,forward,speed,ms,N,hidden size,2048,"));
  EXPECT_NE(find_run(out.runs, reference), nullptr) << keys_of(out.runs);
  EXPECT_EQ(known["benchmark/scripts/benchmark_layer_norm.py"].size(), 4U);
  // Not one byte of the checkout changed: its data file, no __pycache__, no new file.
  EXPECT_EQ(testing::snapshot(checkout.root), before);
}

TEST(LigerScripts, AllRunsEveryBenchmarkScriptAndAnyKernelLandsInItsImportedKey) {
  Checkout checkout;
  const auto before = testing::snapshot(checkout.root);
  ASSERT_EQ(list_liger_scripts(checkout.root).value(),
            (std::vector<std::string>{"benchmark/scripts/benchmark_layer_norm.py",
                                      "benchmark/scripts/benchmark_swiglu.py"}));
  LigerScriptKeys known;
  const auto out = run_liger_scripts(entry_of(checkout, {}), context_on(gpu_host()), known);
  EXPECT_EQ(out.error, "");
  ASSERT_EQ(out.runs.size(), 5U) << keys_of(out.runs);
  // A row of Liger's published weekly CI for swiglu (data/liger/other_kernels).
  const auto swiglu = imported_key(
      "swiglu,liger,forward,speed,ms,T,sequence length,1024,1.493455946445465,1.4926271438598633,"
      "1.4945407629013063,\"{\"\"B\"\": 4, \"\"hidden_size\"\": 4096, \"\"dtype\"\": "
      "\"\"torch.bfloat16\"\", \"\"intermediate_size\"\": 11008, \"\"hidden_act\"\": "
      "\"\"silu\"\"}\",NVIDIA H100 80GB HBM3,2025-06-14 01:43:58,0.5.10");
  const auto* run = find_run(out.runs, swiglu);
  ASSERT_NE(run, nullptr) << swiglu.display() << " not among\n" << keys_of(out.runs);
  EXPECT_EQ(run->run.median, std::chrono::nanoseconds(1'500'000));
  EXPECT_EQ(testing::snapshot(checkout.root), before);
}

TEST(LigerScripts, AScriptThatFailsIsAFailedRunWithItsReasonAndTheCheckoutIsUntouched) {
  Checkout checkout;
  testing::write_file(checkout.root / "benchmark/scripts/benchmark_rms_norm.py",
                      "import sys\n"
                      "print('**** BENCHMARKING SPEED for RMS_NORM ****')\n"
                      "raise RuntimeError('CUDA out of memory (fake)')\n");
  const auto before = testing::snapshot(checkout.root);
  LigerScriptKeys known;
  // Never ran before: its failure goes to the key named after the script.
  auto out = run_liger_scripts(entry_of(checkout, {"benchmark/scripts/benchmark_rms_norm.py"}),
                               context_on(gpu_host()), known);
  ASSERT_EQ(out.runs.size(), 1U) << keys_of(out.runs);
  const auto& failed = out.runs[0].run;
  EXPECT_EQ(failed.outcome(), core::RunOutcome::Failed);
  EXPECT_EQ(failed.status_reason.rfind(
                "benchmark/scripts/benchmark_rms_norm.py: exited with status 1: ", 0),
            0U)
      << failed.status_reason;
  EXPECT_NE(failed.status_reason.find("RuntimeError: CUDA out of memory (fake)"), std::string::npos)
      << failed.status_reason;
  EXPECT_EQ(out.error, failed.status_reason);
  EXPECT_EQ(core::key_of(out.runs[0]).value().display(),
            "rms_norm/full liger-scripts script nvidia-h100-80gb-hbm3");
  EXPECT_FALSE(out.runs[0].run.median.has_value());
  EXPECT_EQ(testing::snapshot(checkout.root), before);

  // A script that wrote rows before and now fails: a failed run in each key it wrote.
  auto entry = entry_of(checkout, {"benchmark/scripts/benchmark_layer_norm.py"});
  ASSERT_EQ(run_liger_scripts(entry, context_on(gpu_host()), known).runs.size(), 4U);
  entry.python = checkout.dir / "no-such-python";
  out = run_liger_scripts(entry, context_on(gpu_host()), known);
  ASSERT_EQ(out.runs.size(), 4U) << keys_of(out.runs);
  for (const auto& run : out.runs) {
    EXPECT_EQ(run.run.outcome(), core::RunOutcome::Failed);
    EXPECT_NE(run.run.status_reason.find("python interpreter not found"), std::string::npos)
        << run.run.status_reason;
  }
  const auto history =
      imported_key(history_row("layer_norm,liger,forward,speed,ms,N,hidden size,1024,"));
  EXPECT_NE(find_run(out.runs, history), nullptr) << keys_of(out.runs);
  // Exit 0 with no rows written is a failure too.
  testing::write_file(checkout.root / "benchmark/scripts/benchmark_quiet.py", "print('nothing')\n");
  out = run_liger_scripts(entry_of(checkout, {"benchmark/scripts/benchmark_quiet.py"}),
                          context_on(gpu_host()), known);
  ASSERT_EQ(out.runs.size(), 1U);
  EXPECT_NE(out.error.find("exited 0 but wrote no rows"), std::string::npos) << out.error;
}

// A script that writes its own CSV (as update_benchmark_data_csv would) with the given rows.
std::string csv_writer(const std::string& rows) {
  return "import os\n"
         "path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '../data/"
         "all_benchmark_data.csv')\n"
         "with open(path, 'w') as f:\n"
         "    f.write('kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,"
         "x_name,x_label,x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,"
         "gpu_name,timestamp,liger_version\\n')\n"
         "    f.write(" +
         json(rows).dump() + ")\n";
}

TEST(LigerScripts, RowsThatAreNotAMeasurementAndAScriptThatHangsAreFailedRuns) {
  Checkout checkout;
  const std::string head = "swiglu,liger,forward,speed,ms,T,sequence length,1024,";
  const std::string tail = ",\"{\"\"B\"\": 4}\",NVIDIA H100 80GB HBM3,2026-06-01 12:00:00,0.7.0\n";
  testing::write_file(checkout.root / "benchmark/scripts/benchmark_disorder.py",
                      csv_writer(head + "1.0,1.5,0.5" + tail));
  testing::write_file(checkout.root / "benchmark/scripts/benchmark_nan.py",
                      csv_writer(head + "nan,nan,nan" + tail));
  testing::write_file(checkout.root / "benchmark/scripts/benchmark_hang.py",
                      "import signal\nsignal.pause()\n");
  const auto before = testing::snapshot(checkout.root);
  auto entry = entry_of(
      checkout, {"benchmark/scripts/benchmark_disorder.py", "benchmark/scripts/benchmark_nan.py",
                 "benchmark/scripts/benchmark_hang.py"});
  entry.timeout = std::chrono::milliseconds(700);
  entry.kill_grace = std::chrono::milliseconds(200);
  LigerScriptKeys known;
  const auto out = run_liger_scripts(entry, context_on(gpu_host()), known);
  ASSERT_EQ(out.runs.size(), 3U) << keys_of(out.runs);
  // p20 > median > p80: a failed run in the row's own key, never a judged one.
  EXPECT_EQ(out.runs[0].run.outcome(), core::RunOutcome::Failed);
  EXPECT_NE(out.runs[0].run.status_reason.find("quantiles out of order: y_value_20=1.5"),
            std::string::npos)
      << out.runs[0].run.status_reason;
  EXPECT_EQ(core::key_of(out.runs[0]).value().benchmark.label, "swiglu/forward");
  // A NaN time: the row is no run; the script's execution fails with the line and why.
  EXPECT_NE(out.runs[1].run.status_reason.find(
                "benchmark/scripts/benchmark_nan.py: all_benchmark_data.csv line 2: y_value_"),
            std::string::npos)
      << out.runs[1].run.status_reason;
  // Killed at its timeout: status timeout.
  EXPECT_EQ(out.runs[2].run.status, core::RunStatus::Timeout);
  EXPECT_NE(out.runs[2].run.status_reason.find(
                "benchmark_hang.py: still running after its timeout of 700ms"),
            std::string::npos)
      << out.runs[2].run.status_reason;
  EXPECT_EQ(testing::snapshot(checkout.root), before);
}

TEST(LigerScripts, ARowClaimingAnotherGpuThanTheProbedOneFailsAndWithoutAGpuTheClaimStands) {
  Checkout checkout;
  const auto entry = entry_of(checkout, {"benchmark/scripts/benchmark_swiglu.py"});
  LigerScriptKeys known;
  auto out = run_liger_scripts(entry, context_on(gpu_host("NVIDIA H200")), known);
  ASSERT_EQ(out.runs.size(), 1U);
  const auto& refuted = out.runs[0];
  EXPECT_EQ(refuted.run.outcome(), core::RunOutcome::Failed);
  EXPECT_NE(refuted.run.status_reason.find(
                "says it ran on \"NVIDIA H100 80GB HBM3\", the daemon probed \"NVIDIA H200\""),
            std::string::npos)
      << refuted.run.status_reason;
  EXPECT_EQ(core::key_of(refuted).value().environment.label,
            core::environment_label(core::hardware_from_gpu_name("NVIDIA H200")));
  // No GPU found through NVML: nothing to check the claim against; the run says so.
  out = run_liger_scripts(entry, context_on(cpu_host()), known);
  ASSERT_EQ(out.runs.size(), 1U);
  EXPECT_EQ(out.runs[0].run.status, core::RunStatus::Passed);
  EXPECT_EQ(core::key_of(out.runs[0]).value().environment.label, "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(out.runs[0].run.metadata.labels.at("gpu_checked"),
            "no: the daemon found no GPU through NVML");
}

}  // namespace
}  // namespace kernelwatch::runners
