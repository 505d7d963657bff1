#include "kernels/harness/environment.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::kernels {
namespace {

TEST(Environment, CpuHardwareDropsMarketingNoise) {
  CpuInfo cpu;
  cpu.vendor = "intel";
  cpu.model = "Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz";
  cpu.architecture = "x86_64";
  const core::Hardware hw = cpu_hardware(cpu);
  EXPECT_EQ(hw.vendor, "intel");
  EXPECT_EQ(hw.product, "Intel Xeon Platinum 8480+");
  EXPECT_EQ(hw.architecture, "x86_64");
}

TEST(Environment, ProbeReadsThisMachine) {
  const CpuInfo cpu = probe_cpu();
  EXPECT_GT(cpu.logical_cores, 0u);
  EXPECT_GT(cpu.memory_bytes, 0u);
  EXPECT_FALSE(cpu.model.empty());
  EXPECT_FALSE(cpu.architecture.empty());
}

TEST(Environment, NvmlIsOptional) {
  Nvml nvml;
  if (nvml.available()) GTEST_SKIP() << "NVML present: this test covers machines without it";
  EXPECT_FALSE(nvml.unavailable_reason().empty());
  const GpuSample sample = nvml.sample("", 0);
  EXPECT_FALSE(sample.sm_clock_mhz.has_value());
  nlohmann::json metrics = nlohmann::json::object();
  add_sample_metrics(sample, "before", metrics);
  EXPECT_TRUE(metrics.empty());
}

TEST(Environment, ThrottledClockOrBusyGpuIsInconclusive) {
  GpuSample fine;
  fine.sm_clock_mhz = 1980;
  fine.sm_clock_max_mhz = 1980;
  fine.other_compute_processes = 0;
  EXPECT_EQ(inconclusive_reason(fine, fine), "");

  GpuSample edge = fine;
  edge.sm_clock_mhz = 1485;  // exactly 75%: still fine
  EXPECT_EQ(inconclusive_reason(fine, edge), "");

  GpuSample throttled = fine;
  throttled.sm_clock_mhz = 1200;
  throttled.clock_event_reasons = 0x20;
  const std::string reason = inconclusive_reason(fine, throttled);
  EXPECT_NE(reason.find("SM clock 1200 MHz is under 75% of its maximum 1980 MHz"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("0x20"), std::string::npos);

  GpuSample busy = fine;
  busy.other_compute_processes = 2;
  EXPECT_EQ(inconclusive_reason(busy, fine), "2 other compute process(es) on the GPU");

  GpuSample unknown;  // no NVML: nothing to hold against the run
  EXPECT_EQ(inconclusive_reason(unknown, unknown), "");
}

}  // namespace
}  // namespace kernelwatch::kernels
