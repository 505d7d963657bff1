// kernelwatch's own kernels on another GPU, in a child `kernelwatch bench --json` (issue #27). The
// machine has no GPU: the cases run on the CPU backend and the GPUs are a stand-in list (the
// inventory NVML would give); the child is the real kernelwatch binary, or a small shell script
// standing in for a child that fails (exits, crashes, hangs, prints something else).
#include "runners/harness_child.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/key.hpp"
#include "core/placement.hpp"
#include "core/record.hpp"
#include "kernels/catalogue.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using namespace std::chrono_literals;

kernels::BenchRequest small_case(core::Provider provider = core::Provider::Fused) {
  kernels::BenchRequest request;
  request.id = {kernels::KernelRef("tvd"), core::Pass::Forward, provider, kernels::Backend::Cpu};
  request.spec.rows = 64;
  request.spec.cols = 512;
  request.policy.warmup = 1ms;
  request.policy.repetitions = 5ms;
  return request;
}

GpuDevice gpu(unsigned index) {
  GpuDevice d;
  d.index = index;
  d.uuid = "GPU-0000000" + std::to_string(index) + "-fake-4e6f-8d1a-h100sxm5x8";
  d.pci_bus_id = "00000000:" + std::to_string(19 + index) + ":00.0";
  d.name = "NVIDIA H100 80GB HBM3";
  d.compute_major = 9;
  return d;
}

core::Timestamp fixed_instant() {
  return core::parse_timestamp("2031-05-06T07:08:09.010000123Z").value();
}

std::string key_digest(const core::Run& run) {
  const auto key = core::key_of(run.record());
  EXPECT_TRUE(key.has_value());
  return key ? key->digest() : std::string();
}

// The case's key as the daemon's own harness gives it, in this process.
std::string in_process_key() {
  HarnessProducer producer(small_case());
  const auto produced = producer.run([] { return fixed_instant(); });
  EXPECT_TRUE(produced.has_value()) << produced.error().message;
  EXPECT_EQ(produced->runs.size(), 1U);
  return key_digest(produced->runs.front());
}

Produced run_on_gpu_5(const std::filesystem::path& program,
                      std::chrono::milliseconds timeout = std::chrono::minutes(2)) {
  HarnessChildOptions options;
  options.program = program;
  options.timeout = timeout;
  HarnessChildProducer producer(small_case(), gpu(5), placement_on("h100-a", gpu(5)), options);
  EXPECT_EQ(producer.name(), "tvd/forward/kernelwatch-fused/cpu tokens64-vocab512-fp32 on GPU 5");
  auto produced = producer.run([] { return fixed_instant(); });
  EXPECT_TRUE(produced.has_value()) << produced.error().message;
  return produced ? std::move(*produced) : Produced{};
}

void expect_on_gpu_5(const core::Run& run) {
  const core::Placement where = core::placement_of(run.record().run.metadata);
  EXPECT_EQ(where.host, "h100-a");
  EXPECT_EQ(where.gpu, "5");
  EXPECT_EQ(where.gpu_uuid, gpu(5).uuid);
  EXPECT_EQ(where.pci_bus_id, gpu(5).pci_bus_id);
  EXPECT_EQ(run.record().run.observed_at, fixed_instant());
}

TEST(HarnessChild, ACaseRunInAChildOnAGpuIsInTheKeyOfItsInProcessRunLabelledWithThatGpu) {
  const std::string key = in_process_key();
  const Produced produced = run_on_gpu_5(testing::kernelwatch_binary());
  ASSERT_EQ(produced.runs.size(), 1U);
  EXPECT_TRUE(produced.error.empty()) << produced.error;
  const auto& run = produced.runs.front();
  EXPECT_EQ(run.record().run.status, core::RunStatus::Passed) << run.record().run.status_reason;
  ASSERT_TRUE(run.record().run.median.has_value());
  EXPECT_GT(run.record().run.median->count(), 0);
  EXPECT_EQ(key_digest(run), key);
  expect_on_gpu_5(run);
}

// A stand-in child: a shell script run with the child's arguments and environment.
class FailingChild : public ::testing::Test {
 protected:
  std::filesystem::path script(const std::string& body) {
    const auto path = dir_.path() / ("child-" + std::to_string(++count_) + ".sh");
    testing::write_file(path, "#!/bin/sh\n" + body + "\n");
    ::chmod(path.c_str(), 0700);
    return path;
  }
  std::filesystem::path seen() const { return dir_.path() / "seen"; }

  testing::TempDir dir_;
  int count_ = 0;
};

TEST_F(FailingChild, EachFailureBeforeItsRecordIsAFailedRunInTheCasesKeyOnThatGpu) {
  const std::string key = in_process_key();
  const std::string binary = testing::kernelwatch_binary().string();
  struct Case {
    std::string body;
    core::RunStatus status;
    std::string reason;  // a part of the run's reason
    std::chrono::milliseconds timeout = std::chrono::minutes(2);
  };
  const std::vector<Case> cases = {
      {"echo \"$CUDA_VISIBLE_DEVICES $*\" > '" + seen().string() +
           "'\necho 'cudaErrorNoDevice: no CUDA-capable device is detected' >&2\nexit 3",
       core::RunStatus::RuntimeError, "exited with status 3: cudaErrorNoDevice"},
      {"kill -SEGV $$", core::RunStatus::RuntimeError, "killed by signal 11 (SIGSEGV)"},
      {"echo 'not a record'", core::RunStatus::RuntimeError, "output that is not JSON"},
      {"echo '[]'", core::RunStatus::RuntimeError, "not a JSON array of one record"},
      // The record of another case (the reference kernel): never stored as this case's.
      {"exec '" + binary +
           "' bench --json --kernel tvd --pass forward --provider kernelwatch-reference "
           "--backend cpu --workload tokens64-vocab512-fp32 --warmup-ms 1 --rep-ms 5",
       core::RunStatus::RuntimeError, "not of the case it was asked for"},
      {"exec sleep 60", core::RunStatus::Timeout, "still running after its timeout", 1s},
      // Status 1 without kernelwatch bench's own last line: a failure, not "cannot run".
      {"echo 'Segmentation fault in libcuda' >&2; exit 1", core::RunStatus::RuntimeError,
       "exited with status 1: Segmentation fault in libcuda"},
      {"echo 'CUDA error: out of memory' >&2; exit 2", core::RunStatus::ResourceExceeded,
       "out of memory"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    const Produced produced = run_on_gpu_5(script(c.body), c.timeout);
    ASSERT_EQ(produced.runs.size(), 1U);
    const auto& run = produced.runs.front();
    EXPECT_EQ(run.record().run.status, c.status);
    EXPECT_NE(run.record().run.status_reason.find(c.reason), std::string::npos)
        << run.record().run.status_reason;
    EXPECT_NE(run.record().run.status_reason.find("on GPU 5"), std::string::npos);
    EXPECT_FALSE(run.record().run.median.has_value());
    EXPECT_EQ(key_digest(run), key);
    expect_on_gpu_5(run);
    EXPECT_EQ(produced.error, run.record().run.status_reason);
  }
  // The child sees only its GPU, by UUID, and is asked for the case at the daemon's instant.
  EXPECT_EQ(testing::read_file(seen()),
            gpu(5).uuid +
                " bench --json --kernel tvd --pass forward --provider kernelwatch-fused --backend "
                "cpu --workload tokens64-vocab512-fp32 --warmup-ms 1 --rep-ms 5 --seed 1 "
                "--observed-at 2031-05-06T07:08:09.010000123Z\n");
}

// `kernelwatch bench: ...` and status 1: the case cannot run at all on that GPU (here: larger
// than its free memory), an error of the cycle as in the daemon's own process, never a run.
TEST_F(FailingChild, AChildSayingTheCaseCannotRunIsAnErrorNamingTheGpuAndNoRun) {
  HarnessChildOptions options;
  options.program = script(
      "echo 'bench: [1/1] tvd/forward/kernelwatch-fused/cpu: checking correctness' >&2\n"
      "echo 'kernelwatch bench: tvd/forward/kernelwatch-fused/cpu tokens64-vocab512-fp32 needs at "
      "least 9 bytes (0.00 GiB) but 1 bytes (0.00 GiB) are free' >&2\nexit 1");
  HarnessChildProducer producer(small_case(), gpu(5), placement_on("h100-a", gpu(5)), options);
  const auto produced = producer.run([] { return fixed_instant(); });
  ASSERT_FALSE(produced.has_value());
  EXPECT_EQ(produced.error().message,
            "on GPU 5: tvd/forward/kernelwatch-fused/cpu tokens64-vocab512-fp32 needs at least 9 "
            "bytes (0.00 GiB) but 1 bytes (0.00 GiB) are free");
}

// On a GPU: a failed run is recorded in the key of the hardware the GPU's last record named (the
// CUDA runtime's name of it), not NVML's name when the two differ; before any record, NVML's,
// and an unknown compute capability is never "sm_00".
TEST_F(FailingChild, AFailedRunOnAGpuIsInTheKeyItsLastRecordNamed) {
  kernels::BenchRequest cuda = small_case();
  cuda.id.backend = kernels::Backend::Cuda;
  kernels::GpuInfo runtime;  // what cudaGetDeviceProperties said in the child
  runtime.name = "NVIDIA H200";
  runtime.compute_major = 9;
  const core::Record printed = kernels::failed_record(
      cuda, runtime, std::nullopt, core::RunStatus::RuntimeError, "x", fixed_instant());
  const std::string h200 = core::key_of(printed)->digest();
  testing::write_file(dir_.path() / "record.json",
                      nlohmann::json::array({core::to_json(printed)}).dump());
  const auto ok = dir_.path() / "ok";
  testing::write_file(ok, "");
  HarnessChildOptions options;
  options.program = script("if [ -f '" + ok.string() + "' ]; then cat '" +
                           (dir_.path() / "record.json").string() + "'; else exit 3; fi");
  const auto key_of_run = [&](HarnessChildProducer& producer) {
    const auto produced = producer.run([] { return fixed_instant(); });
    EXPECT_TRUE(produced.has_value());
    EXPECT_EQ(produced->runs.size(), 1U);
    return std::pair{core::key_of(produced->runs.front().record())->digest(),
                     produced->runs.front().record().environment.hardware.architecture};
  };
  // NVML names GPU 5 another way ("NVIDIA H100 80GB HBM3").
  HarnessChildProducer first(cuda, gpu(5), placement_on("h100-a", gpu(5)), options);
  EXPECT_EQ(key_of_run(first).first, h200);
  std::filesystem::remove(ok);
  EXPECT_EQ(key_of_run(first).first, h200);  // failed: in the key its last record named
  // The next cycle's producer of the same GPU learns it; another GPU's does not.
  HarnessChildProducer next(cuda, gpu(5), placement_on("h100-a", gpu(5)), options);
  next.learn_from(first);
  EXPECT_EQ(key_of_run(next).first, h200);
  HarnessChildProducer other(cuda, gpu(6), placement_on("h100-a", gpu(6)), options);
  other.learn_from(first);
  const auto nvml = key_of_run(other);
  EXPECT_NE(nvml.first, h200);
  EXPECT_EQ(nvml.second, "sm_90");
  // NVML without a compute capability: the name's architecture, not "sm_00".
  GpuDevice unknown = gpu(7);
  unknown.compute_major = 0;
  HarnessChildProducer bare(cuda, unknown, placement_on("h100-a", unknown), options);
  const auto named = key_of_run(bare);
  EXPECT_EQ(named.first, nvml.first);
  EXPECT_EQ(named.second, "sm_90");
}

TEST_F(FailingChild, AChildTheDaemonStopsLeavesNothingToStore) {
  int stop[2];
  ASSERT_EQ(::pipe(stop), 0);
  ::close(stop[1]);  // the daemon is stopping
  HarnessChildOptions options;
  options.program = script("exec sleep 60");
  options.cancel_fd = stop[0];
  HarnessChildProducer producer(small_case(), gpu(1), placement_on("h100-a", gpu(1)), options);
  const auto produced = producer.run([] { return fixed_instant(); });
  ::close(stop[0]);
  ASSERT_TRUE(produced.has_value()) << produced.error().message;
  EXPECT_TRUE(produced->cancelled);
  EXPECT_TRUE(produced->runs.empty());
}

// Where each case of an entry runs: nothing runs here, only the producers are made.
struct Where {
  std::vector<GpuDevice> gpus;
  HarnessHost host;
  kernels::Backend backend = kernels::Backend::Cpu;

  std::shared_ptr<RunProducer> producer(const GpuSelection& selection) const {
    RunnerServices services;
    services.inventory = [gpus = gpus] { return gpus; };
    services.probe = [] {
      HostIdentity host;
      host.placement.host = "h100-a";
      return host;
    };
    CycleHost cycle(services);
    kernels::BenchRequest request = small_case();
    request.id.backend = backend;
    return harness_producer(cycle, selection, request, host, HarnessChildOptions{});
  }
};

GpuSelection gpus(std::vector<std::string> ids) {
  return GpuSelection{.all = false, .ids = std::move(ids), .given = true};
}

template <class T>
bool is(const std::shared_ptr<RunProducer>& producer) {
  return dynamic_cast<const T*>(producer.get()) != nullptr;
}

TEST(HarnessProducerChoice, ACaseRunsInProcessOnOneGpuAndInAChildPerGpuOnSeveral) {
  std::vector<GpuDevice> eight;
  for (unsigned i = 0; i < 8; ++i) eight.push_back(gpu(i));
  const GpuSelection all;  // absent: all
  const GpuSelection all_given{.all = true, .ids = {}, .given = true};

  // The CPU backend on a host whose GPUs are real: the CPU's kernels, once.
  Where cpu{eight, {}, kernels::Backend::Cpu};
  const auto in_process = cpu.producer(all);
  ASSERT_TRUE(is<HarnessProducer>(in_process));
  EXPECT_EQ(in_process->name(), "tvd/forward/kernelwatch-fused/cpu");  // the case, not moved from
  EXPECT_TRUE(is<FailingProducer>(cpu.producer(all_given)));

  // CUDA on 8 GPUs: a child per GPU, all eight at once; `gpus` picks some; one is one child.
  Where cuda{eight, {}, kernels::Backend::Cuda};
  const auto per_gpu = cuda.producer(all);
  ASSERT_TRUE(is<PerGpuProducer>(per_gpu));
  EXPECT_EQ(per_gpu->name(), "tvd/forward/kernelwatch-fused/cuda tokens64-vocab512-fp32");
  EXPECT_TRUE(is<PerGpuProducer>(cuda.producer(gpus({"2", gpu(6).uuid}))));
  const auto one = cuda.producer(gpus({"3"}));
  ASSERT_TRUE(is<HarnessChildProducer>(one));
  EXPECT_EQ(one->name(), "tvd/forward/kernelwatch-fused/cuda tokens64-vocab512-fp32 on GPU 3");
  // A GPU the host lacks: the case fails this cycle, saying why.
  const auto missing = cuda.producer(gpus({"9"}));
  ASSERT_TRUE(is<FailingProducer>(missing));
  const auto failed = missing->run([] { return fixed_instant(); });
  ASSERT_FALSE(failed.has_value());
  EXPECT_NE(failed.error().message.find('9'), std::string::npos) << failed.error().message;

  // The daemon pinned by the operator's CUDA_VISIBLE_DEVICES: an entry without `gpus` keeps it.
  Where pinned{
      eight, {.stand_in_gpus = false, .daemon_visible_devices = "4"}, kernels::Backend::Cuda};
  EXPECT_TRUE(is<HarnessProducer>(pinned.producer(all)));
  EXPECT_TRUE(is<PerGpuProducer>(pinned.producer(all_given)));

  // A host with one GPU, or none NVML found: the daemon's own device, in process.
  EXPECT_TRUE(is<HarnessProducer>(Where{{gpu(0)}, {}, kernels::Backend::Cuda}.producer(all)));
  EXPECT_TRUE(is<HarnessProducer>(Where{{}, {}, kernels::Backend::Cuda}.producer(all)));

  // Stand-in GPUs (KERNELWATCH_FAKE_GPUS): the CPU backend's cases run per listed GPU.
  Where stand_in{
      eight, {.stand_in_gpus = true, .daemon_visible_devices = ""}, kernels::Backend::Cpu};
  EXPECT_TRUE(is<PerGpuProducer>(stand_in.producer(all)));
}

}  // namespace
}  // namespace kernelwatch::runners
