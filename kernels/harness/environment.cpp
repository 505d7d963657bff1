#include "kernels/harness/environment.hpp"

#include <algorithm>

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "core/key.hpp"

namespace kernelwatch::kernels {
namespace {

// The few NVML entry points kernelwatch reads, declared here so NVML is never a build
// dependency. Signatures follow nvml.h (return 0 = NVML_SUCCESS).
using NvmlDevice = void*;
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlGetHandleByIndex = int (*)(unsigned, NvmlDevice*);
using NvmlGetHandleByUuid = int (*)(const char*, NvmlDevice*);
using NvmlGetClock = int (*)(NvmlDevice, int, unsigned*);
using NvmlGetReasons = int (*)(NvmlDevice, unsigned long long*);
using NvmlGetTemperature = int (*)(NvmlDevice, int, unsigned*);
using NvmlGetUnsigned = int (*)(NvmlDevice, unsigned*);
using NvmlGetEnable = int (*)(NvmlDevice, int*);
struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2/v3 layout)
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
using NvmlGetProcesses = int (*)(NvmlDevice, unsigned*, NvmlProcessInfo*);
using NvmlDriverVersion = int (*)(char*, unsigned);
using NvmlGetName = int (*)(NvmlDevice, char*, unsigned);
using NvmlGetCapability = int (*)(NvmlDevice, int*, int*);
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlGetMemory = int (*)(NvmlDevice, NvmlMemory*);
using NvmlGetCount = int (*)(unsigned*);
using NvmlGetUuid = int (*)(NvmlDevice, char*, unsigned);
struct NvmlPciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_subsystem_id;
  char bus_id[32];
};
using NvmlGetPciInfo = int (*)(NvmlDevice, NvmlPciInfo*);

constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;
constexpr int kTemperatureGpu = 0;

template <class F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(::dlsym(library, name));
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  const auto last = s.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

std::string erase_all(std::string text, const std::string& what) {
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what))
    text.erase(pos, what.size());
  return text;
}

}  // namespace

CpuInfo probe_cpu() {
  CpuInfo cpu;
  cpu.logical_cores = std::thread::hardware_concurrency();
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && cpu.model.empty()) cpu.model = value;
    if (key == "vendor_id" && cpu.vendor.empty()) {
      cpu.vendor = value == "GenuineIntel"   ? "intel"
                   : value == "AuthenticAMD" ? "amd"
                                             : core::slug(value);
    }
    if (key == "CPU implementer" && cpu.vendor.empty()) cpu.vendor = "arm";
  }
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      std::istringstream in(line.substr(9));
      std::uint64_t kib = 0;
      in >> kib;
      cpu.memory_bytes = kib * 1024;
    }
  }
  utsname name{};
  if (::uname(&name) == 0) cpu.architecture = name.machine;
  if (cpu.model.empty())
    cpu.model = cpu.architecture.empty() ? "unknown cpu" : cpu.architecture + " cpu";
  return cpu;
}

core::Hardware cpu_hardware(const CpuInfo& cpu) {
  std::string product = cpu.model;
  if (const auto at = product.find(" @ "); at != std::string::npos) product.erase(at);
  for (const char* noise : {"(R)", "(r)", "(TM)", "(tm)", " CPU", " Processor"})
    product = erase_all(product, noise);
  core::Hardware hw;
  hw.vendor = cpu.vendor.empty() ? "unknown" : cpu.vendor;
  hw.product = trim(product);
  hw.architecture = cpu.architecture;
  return hw;
}

Nvml::Nvml() {
  library_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    reason_ = "libnvidia-ml.so.1 not found (no NVIDIA driver)";
    return;
  }
  auto init = symbol<NvmlInit>(library_, "nvmlInit_v2");
  if (init == nullptr || init() != kNvmlSuccess) {
    reason_ = "nvmlInit_v2 failed";
    return;
  }
  handle_ = library_;
}

Nvml::~Nvml() {
  if (handle_ != nullptr) {
    if (auto shutdown = symbol<NvmlShutdown>(library_, "nvmlShutdown")) shutdown();
  }
  if (library_ != nullptr) ::dlclose(library_);
}

std::string Nvml::driver_version() const {
  if (!available()) return {};
  auto get = symbol<NvmlDriverVersion>(library_, "nvmlSystemGetDriverVersion");
  char buffer[96] = {};
  if (get == nullptr || get(buffer, sizeof buffer) != kNvmlSuccess) return {};
  return buffer;
}

std::optional<NvmlIdentity> Nvml::identity(unsigned index) const {
  if (!available()) return std::nullopt;
  NvmlDevice device = nullptr;
  auto by_index = symbol<NvmlGetHandleByIndex>(library_, "nvmlDeviceGetHandleByIndex_v2");
  auto get_name = symbol<NvmlGetName>(library_, "nvmlDeviceGetName");
  if (by_index == nullptr || get_name == nullptr || by_index(index, &device) != kNvmlSuccess) {
    return std::nullopt;
  }
  char name[96] = {};
  if (get_name(device, name, sizeof name) != kNvmlSuccess || name[0] == '\0') return std::nullopt;
  NvmlIdentity out;
  out.name = name;
  if (auto get = symbol<NvmlGetCapability>(library_, "nvmlDeviceGetCudaComputeCapability")) {
    (void)get(device, &out.compute_major, &out.compute_minor);
  }
  if (auto get = symbol<NvmlGetMemory>(library_, "nvmlDeviceGetMemoryInfo")) {
    NvmlMemory memory{};
    if (get(device, &memory) == kNvmlSuccess) out.memory_bytes = memory.total;
  }
  return out;
}

std::vector<NvmlDeviceInfo> Nvml::devices() const {
  std::vector<NvmlDeviceInfo> out;
  if (!available()) return out;
  auto count = symbol<NvmlGetCount>(library_, "nvmlDeviceGetCount_v2");
  auto by_index = symbol<NvmlGetHandleByIndex>(library_, "nvmlDeviceGetHandleByIndex_v2");
  unsigned n = 0;
  if (count == nullptr || by_index == nullptr || count(&n) != kNvmlSuccess) return out;
  auto get_uuid = symbol<NvmlGetUuid>(library_, "nvmlDeviceGetUUID");
  auto get_pci = symbol<NvmlGetPciInfo>(library_, "nvmlDeviceGetPciInfo_v3");
  for (unsigned index = 0; index < n; ++index) {
    auto named = identity(index);
    NvmlDevice device = nullptr;
    if (!named || by_index(index, &device) != kNvmlSuccess) continue;
    NvmlDeviceInfo info;
    info.index = index;
    info.identity = std::move(*named);
    char uuid[96] = {};
    if (get_uuid != nullptr && get_uuid(device, uuid, sizeof uuid) == kNvmlSuccess)
      info.uuid = uuid;
    NvmlPciInfo pci{};
    if (get_pci != nullptr && get_pci(device, &pci) == kNvmlSuccess) {
      pci.bus_id[sizeof pci.bus_id - 1] = '\0';
      info.pci_bus_id = pci.bus_id;
    }
    out.push_back(std::move(info));
  }
  return out;
}

GpuSample Nvml::sample(const std::string& uuid, unsigned index,
                       const std::vector<unsigned>& ours) const {
  GpuSample s;
  if (!available()) return s;
  NvmlDevice device = nullptr;
  auto by_uuid = symbol<NvmlGetHandleByUuid>(library_, "nvmlDeviceGetHandleByUUID");
  auto by_index = symbol<NvmlGetHandleByIndex>(library_, "nvmlDeviceGetHandleByIndex_v2");
  if (!(by_uuid != nullptr && !uuid.empty() && by_uuid(uuid.c_str(), &device) == kNvmlSuccess) &&
      !(by_index != nullptr && by_index(index, &device) == kNvmlSuccess)) {
    return s;
  }
  const auto read_clock = [&](const char* name, int type) -> std::optional<unsigned> {
    auto get = symbol<NvmlGetClock>(library_, name);
    unsigned value = 0;
    if (get != nullptr && get(device, type, &value) == kNvmlSuccess) return value;
    return std::nullopt;
  };
  s.sm_clock_mhz = read_clock("nvmlDeviceGetClockInfo", kClockSm);
  s.sm_clock_max_mhz = read_clock("nvmlDeviceGetMaxClockInfo", kClockSm);
  s.memory_clock_mhz = read_clock("nvmlDeviceGetClockInfo", kClockMem);
  s.memory_clock_max_mhz = read_clock("nvmlDeviceGetMaxClockInfo", kClockMem);
  for (const char* name :
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}) {
    auto get = symbol<NvmlGetReasons>(library_, name);
    unsigned long long reasons = 0;
    if (get != nullptr && get(device, &reasons) == kNvmlSuccess) {
      s.clock_event_reasons = reasons;
      break;
    }
  }
  if (auto get = symbol<NvmlGetTemperature>(library_, "nvmlDeviceGetTemperature")) {
    unsigned t = 0;
    if (get(device, kTemperatureGpu, &t) == kNvmlSuccess) s.temperature_c = t;
  }
  if (auto get = symbol<NvmlGetUnsigned>(library_, "nvmlDeviceGetPowerUsage")) {
    unsigned mw = 0;
    if (get(device, &mw) == kNvmlSuccess) s.power_w = mw / 1000.0;
  }
  if (auto get = symbol<NvmlGetUnsigned>(library_, "nvmlDeviceGetEnforcedPowerLimit")) {
    unsigned mw = 0;
    if (get(device, &mw) == kNvmlSuccess) s.power_limit_w = mw / 1000.0;
  }
  if (auto get = symbol<NvmlGetEnable>(library_, "nvmlDeviceGetPersistenceMode")) {
    int mode = 0;
    if (get(device, &mode) == kNvmlSuccess) s.persistence_mode = mode != 0;
  }
  for (const char* name :
       {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"}) {
    auto get = symbol<NvmlGetProcesses>(library_, name);
    if (get == nullptr) continue;
    std::vector<NvmlProcessInfo> infos(64);
    unsigned count = static_cast<unsigned>(infos.size());
    int rc = get(device, &count, infos.data());
    if (rc == kNvmlInsufficientSize) {
      infos.resize(count + 16);
      count = static_cast<unsigned>(infos.size());
      rc = get(device, &count, infos.data());
    }
    if (rc == kNvmlSuccess) {
      const auto self = static_cast<unsigned>(::getpid());
      unsigned others = 0;
      for (unsigned i = 0; i < count; ++i) {
        const bool own =
            infos[i].pid == self || std::find(ours.begin(), ours.end(), infos[i].pid) != ours.end();
        others += own ? 0 : 1;
      }
      s.other_compute_processes = others;
    }
    break;
  }
  return s;
}

void add_sample_metrics(const GpuSample& s, std::string_view when, nlohmann::json& metrics) {
  const auto put = [&](const char* name, const auto& value) {
    if (value) metrics[std::string(name) + "_" + std::string(when)] = *value;
  };
  put("sm_clock_mhz", s.sm_clock_mhz);
  put("sm_clock_max_mhz", s.sm_clock_max_mhz);
  put("memory_clock_mhz", s.memory_clock_mhz);
  put("memory_clock_max_mhz", s.memory_clock_max_mhz);
  put("clock_event_reasons", s.clock_event_reasons);
  put("temperature_c", s.temperature_c);
  put("power_w", s.power_w);
  put("power_limit_w", s.power_limit_w);
  if (s.persistence_mode) {
    metrics["persistence_mode_" + std::string(when)] = *s.persistence_mode ? 1 : 0;
  }
  put("other_compute_processes", s.other_compute_processes);
}

std::string inconclusive_reason(const GpuSample& before, const GpuSample& after) {
  for (const GpuSample* s : {&before, &after}) {
    if (s->sm_clock_mhz && s->sm_clock_max_mhz && *s->sm_clock_max_mhz > 0 &&
        *s->sm_clock_mhz * 4 < *s->sm_clock_max_mhz * 3) {
      return "SM clock " + std::to_string(*s->sm_clock_mhz) + " MHz is under 75% of its maximum " +
             std::to_string(*s->sm_clock_max_mhz) + " MHz" +
             (s->clock_event_reasons
                  ? " (clock event reasons 0x" +
                        [&] {
                          char buffer[32];
                          std::snprintf(buffer, sizeof buffer, "%llx",
                                        static_cast<unsigned long long>(*s->clock_event_reasons));
                          return std::string(buffer);
                        }() +
                        ")"
                  : std::string());
    }
    if (s->other_compute_processes && *s->other_compute_processes > 0) {
      return std::to_string(*s->other_compute_processes) + " other compute process(es) on the GPU";
    }
  }
  return {};
}

}  // namespace kernelwatch::kernels
