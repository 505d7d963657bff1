#include "core/placement.hpp"

#include <utility>

namespace kernelwatch::core {
namespace {

std::string label(const Metadata& metadata, std::string_view name) {
  const auto it = metadata.labels.find(std::string(name));
  return it == metadata.labels.end() ? std::string() : it->second;
}

void put(Metadata& metadata, std::string_view name, const std::string& value) {
  if (value.empty()) {
    metadata.labels.erase(std::string(name));
  } else {
    metadata.labels[std::string(name)] = value;
  }
}

// Appends `text` with '%' and '/' escaped (UnitId).
void append_escaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    if (c == '%') {
      out += "%25";
    } else if (c == '/') {
      out += "%2F";
    } else {
      out += c;
    }
  }
}

}  // namespace

void UnitId::write(std::string& out, const Placement& placement) {
  const std::string_view gpu = placement.gpu_uuid.empty() ? placement.gpu : placement.gpu_uuid;
  out.assign(gpu.empty() ? "host:" : "gpu:");
  append_escaped(out, placement.host);
  if (gpu.empty()) return;
  out += '/';
  append_escaped(out, gpu);
}

UnitId UnitId::of(const Placement& placement) {
  std::string text;
  write(text, placement);
  return UnitId(std::move(text));
}

UnitId UnitId::host_of(const Placement& placement) {
  std::string text = "host:";
  append_escaped(text, placement.host);
  return UnitId(std::move(text));
}

std::string Placement::describe() const {
  std::string text;
  if (!gpu.empty() || !gpu_uuid.empty()) {
    text = "GPU " + (gpu.empty() ? std::string("?") : gpu);
    if (!gpu_uuid.empty()) text += " (UUID " + gpu_uuid + ")";
  }
  if (!host.empty()) text += (text.empty() ? "host " : " of host ") + host;
  return text;
}

SharedPlacement::SharedPlacement(Placement placement) {
  const bool none = placement.host.empty() && placement.gpu.empty() && placement.gpu_uuid.empty() &&
                    placement.pci_bus_id.empty();
  if (!none) p_ = std::make_shared<const Placement>(std::move(placement));
}

const Placement& SharedPlacement::empty_placement() {
  static const Placement empty;
  return empty;
}

Placement placement_of(const Metadata& metadata) {
  return Placement{label(metadata, kHostLabel), label(metadata, kGpuLabel),
                   label(metadata, kGpuUuidLabel), label(metadata, kPciBusIdLabel)};
}

void set_placement(Metadata& metadata, const Placement& placement) {
  put(metadata, kHostLabel, placement.host);
  put(metadata, kGpuLabel, placement.gpu);
  put(metadata, kGpuUuidLabel, placement.gpu_uuid);
  put(metadata, kPciBusIdLabel, placement.pci_bus_id);
}

}  // namespace kernelwatch::core
