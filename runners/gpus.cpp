#include "runners/gpus.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "core/key.hpp"
#include "kernels/harness/environment.hpp"

namespace kernelwatch::runners {
namespace {

using nlohmann::json;

bool is_uuid(std::string_view id) {
  return id.starts_with("GPU-") && id.size() > 4;
}

bool is_index(std::string_view id) {
  return !id.empty() && id.size() <= 4 &&
         std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string GpuDevice::visible_id() const {
  return uuid.empty() ? std::to_string(index) : uuid;
}

core::Result<GpuSelection> read_gpu_selection(const core::JsonField& field) {
  GpuSelection out;
  if (!field.present()) return out;
  out.given = true;
  if (field.value().is_string()) {
    const std::string text = KW_TRY(field.string());
    if (text == "all") return out;
    return field.error("\"" + text.substr(0, 64) +
                       "\" is not \"all\" (every GPU of the host) or a list of GPU indices or "
                       "UUIDs ([0, 1] or [\"GPU-8c3a...\"])");
  }
  const auto items = KW_TRY(field.array("\"all\" or a list of GPU indices or UUIDs"));
  if (items.empty()) return field.error("lists no GPU (leave it out, or \"all\", for every GPU)");
  out.all = false;
  std::set<std::string> seen;
  for (const auto& item : items) {
    std::string id;
    if (item.value().is_number_integer()) {
      const auto index = KW_TRY(item.integer());
      if (index < 0 || index > 1023) return item.error("a GPU index is 0..1023");
      id = std::to_string(index);
    } else if (item.value().is_string()) {
      id = KW_TRY(item.string());
      if (!is_uuid(id) && !is_index(id)) {
        return item.error("\"" + id.substr(0, 64) +
                          "\" is neither a GPU index nor a GPU UUID (\"GPU-...\" as nvidia-smi -L "
                          "prints it)");
      }
    } else {
      return item.error("a GPU index (0) or UUID (\"GPU-...\")");
    }
    if (!seen.insert(id).second) return item.error("GPU " + id + " is listed twice");
    out.ids.push_back(std::move(id));
  }
  return out;
}

json gpu_selection_json(const GpuSelection& selection) {
  if (selection.all) return "all";
  json out = json::array();
  for (const auto& id : selection.ids) {
    if (is_index(id)) {
      out.push_back(std::stoi(id));
    } else {
      out.push_back(id);
    }
  }
  return out;
}

core::Result<std::vector<GpuDevice>> select_gpus(const GpuSelection& selection,
                                                 const std::vector<GpuDevice>& devices) {
  if (selection.all) return devices;
  std::vector<GpuDevice> out;
  if (selection.ids.empty()) return out;
  for (const auto& id : selection.ids) {
    const auto it = std::find_if(devices.begin(), devices.end(), [&](const GpuDevice& d) {
      return is_index(id) ? std::to_string(d.index) == id : d.uuid == id;
    });
    if (it == devices.end()) {
      return core::fail(core::ErrorCode::NotFound, "gpus: GPU " + id +
                                                       " is not on this host (it has " +
                                                       std::to_string(devices.size()) + " GPU(s))");
    }
    out.push_back(*it);
  }
  std::sort(out.begin(), out.end(),
            [](const GpuDevice& a, const GpuDevice& b) { return a.index < b.index; });
  return out;
}

GpuSelection selection_for(const GpuSelection& selection,
                           const std::vector<std::pair<std::string, std::string>>& env,
                           bool* pinned) {
  if (pinned != nullptr) *pinned = false;
  if (selection.given) return selection;
  for (const auto& [name, value] : env) {
    if (name != "CUDA_VISIBLE_DEVICES") continue;
    if (pinned != nullptr) *pinned = true;
    GpuSelection one;
    one.all = false;
    if (is_index(value) || is_uuid(value)) one.ids = {value};
    return one;
  }
  return selection;
}

core::Result<std::vector<GpuDevice>> read_fake_gpus(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return core::fail(core::ErrorCode::NotFound, path.string() + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  const json document = json::parse(text.str(), nullptr, false);
  if (!document.is_array()) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      path.string() + ": not a JSON array of GPUs");
  }
  std::vector<GpuDevice> out;
  for (const auto& item : document) {
    if (!item.is_object() || !item.contains("index") || !item["index"].is_number_unsigned() ||
        !item.contains("name") || !item["name"].is_string()) {
      return core::fail(core::ErrorCode::InvalidArgument,
                        path.string() + ": each GPU needs \"index\" and \"name\"");
    }
    GpuDevice d;
    d.index = item["index"].get<unsigned>();
    d.name = item["name"].get<std::string>();
    d.uuid = item.value("uuid", std::string());
    d.pci_bus_id = item.value("pci_bus_id", std::string());
    d.compute_major = item.value("compute_major", 0);
    d.compute_minor = item.value("compute_minor", 0);
    out.push_back(std::move(d));
  }
  return out;
}

std::string fake_gpus_notice() {
  const char* fake = std::getenv(std::string(kFakeGpusVariable).c_str());
  if (fake == nullptr || *fake == '\0') return {};
  return std::string(kFakeGpusVariable) + " is set: the GPUs are the list in " + fake +
         ", a stand-in for NVML for tests, not this host's GPUs";
}

GpuInventory system_gpu_inventory(std::string* problem) {
  if (const char* fake = std::getenv(std::string(kFakeGpusVariable).c_str());
      fake != nullptr && *fake != '\0') {
    const std::filesystem::path path = fake;
    return [path, problem] {
      auto devices = read_fake_gpus(path);
      if (!devices) {
        if (problem != nullptr) *problem = devices.error().message;
        return std::vector<GpuDevice>{};
      }
      return std::move(*devices);
    };
  }
  auto nvml = std::make_shared<kernels::Nvml>();
  return [nvml] {
    std::vector<GpuDevice> out;
    for (auto& info : nvml->devices()) {
      GpuDevice d;
      d.index = info.index;
      d.uuid = std::move(info.uuid);
      d.pci_bus_id = std::move(info.pci_bus_id);
      d.name = std::move(info.identity.name);
      d.compute_major = info.identity.compute_major;
      d.compute_minor = info.identity.compute_minor;
      d.memory_bytes = info.identity.memory_bytes;
      out.push_back(std::move(d));
    }
    return out;
  };
}

HarnessHost this_harness_host() {
  HarnessHost out;
  out.stand_in_gpus = !fake_gpus_notice().empty();
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
    out.daemon_visible_devices = visible;
  return out;
}

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0 || buffer[0] == '\0') return "localhost";
  return buffer;
}

core::Placement placement_on(const std::string& host, const GpuDevice& device) {
  return core::Placement{host, std::to_string(device.index), device.uuid, device.pci_bus_id};
}

HostIdentity on_device(const HostIdentity& host, const GpuDevice& device) {
  HostIdentity out;
  out.gpu_name = device.name;
  out.hardware = core::hardware_from_gpu_name(device.name);
  if (device.compute_major > 0) {
    out.hardware.architecture =
        "sm_" + std::to_string(device.compute_major) + std::to_string(device.compute_minor);
  }
  out.memory_bytes = device.memory_bytes;
  out.driver = host.driver;
  out.placement =
      placement_on(host.placement.host.empty() ? host_name() : host.placement.host, device);
  return out;
}

DeviceSamplers nvml_device_samplers() {
  auto nvml = std::make_shared<kernels::Nvml>();
  auto mutex = std::make_shared<std::mutex>();
  return [nvml, mutex](const GpuDevice& device) -> GpuSampler {
    return [nvml, mutex, uuid = device.uuid, index = device.index](int child_pid) {
      std::lock_guard lock(*mutex);
      if (!nvml->available()) return kernels::GpuSample{};
      std::vector<unsigned> ours;
      if (child_pid > 0) ours.push_back(static_cast<unsigned>(child_pid));
      return nvml->sample(uuid, index, ours);
    };
  };
}

core::Result<Produced> PerGpuProducer::run(const std::function<core::Timestamp()>& now) {
  // Every GPU starts now; GPU i's runs are observed at this start + i ms (+ 1 us per reading),
  // so the runs of one key come in GPU order, each at its own instant, and after the last
  // execution's.
  core::Timestamp base = now();
  if (last_base_ && base <= *last_base_ + kSpacing * static_cast<std::int64_t>(per_gpu_.size())) {
    base = *last_base_ + kSpacing * static_cast<std::int64_t>(per_gpu_.size()) + kSpacing;
  }
  last_base_ = base;
  std::vector<std::future<core::Result<Produced>>> running;
  running.reserve(per_gpu_.size());
  for (std::size_t i = 0; i < per_gpu_.size(); ++i) {
    running.push_back(std::async(std::launch::async, [this, i, base] {
      auto readings = std::make_shared<std::int64_t>(0);
      const std::function<core::Timestamp()> at = [base, i, readings] {
        return base + kSpacing * static_cast<std::int64_t>(i) +
               std::chrono::microseconds((*readings)++);
      };
      return per_gpu_[i]->run(at);
    }));
  }
  Produced out;
  std::string errors;
  std::size_t ran = 0;
  for (auto& one : running) {
    auto produced = one.get();
    if (!produced) {
      errors += (errors.empty() ? "" : "; ") + produced.error().message;
      continue;
    }
    ++ran;
    out.cancelled = out.cancelled || produced->cancelled;
    if (!produced->error.empty()) {
      out.error += (out.error.empty() ? "" : "; ") + produced->error;
    }
    for (auto& r : produced->runs) out.runs.push_back(std::move(r));
  }
  if (ran == 0 && !errors.empty()) return core::fail(core::ErrorCode::Unavailable, errors);
  if (!errors.empty()) out.error += (out.error.empty() ? "" : "; ") + errors;
  std::stable_sort(out.runs.begin(), out.runs.end(), [](const core::Run& a, const core::Run& b) {
    return a.record().run.observed_at < b.record().run.observed_at;
  });
  return out;
}

ConfirmMode PerGpuProducer::confirm() const {
  return per_gpu_.empty() ? ConfirmMode::Rerun : per_gpu_.front()->confirm();
}

void PerGpuProducer::learn_from(const RunProducer& earlier) {
  const auto* same = dynamic_cast<const PerGpuProducer*>(&earlier);
  if (same != nullptr) last_base_ = same->last_base_;
  for (std::size_t i = 0; i < per_gpu_.size(); ++i) {
    if (same != nullptr && i < same->per_gpu_.size()) {
      per_gpu_[i]->learn_from(*same->per_gpu_[i]);
    } else if (same == nullptr) {
      per_gpu_[i]->learn_from(earlier);
    }
  }
}

core::Result<Produced> FailingProducer::run(const std::function<core::Timestamp()>& now) {
  (void)now;
  return core::fail(core::ErrorCode::NotFound, reason_);
}

}  // namespace kernelwatch::runners
