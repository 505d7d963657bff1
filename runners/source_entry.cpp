#include "runners/source_entry.hpp"

namespace kernelwatch::runners {

core::Result<std::vector<GpuDevice>> CycleHost::select(
    const GpuSelection& selection, const std::vector<std::pair<std::string, std::string>>& env) {
  if (!devices_) devices_ = services_.inventory ? services_.inventory() : std::vector<GpuDevice>{};
  if (!host_) host_ = services_.probe ? services_.probe() : HostIdentity{};
  return select_gpus(selection_for(selection, env), *devices_);
}

std::shared_ptr<RunProducer> CycleHost::per_gpu(const std::string& name,
                                                const std::vector<GpuDevice>& gpus,
                                                const MakeOnGpu& make) {
  if (!host_) host_ = services_.probe ? services_.probe() : HostIdentity{};
  if (gpus.empty()) return make(nullptr, *host_);
  std::vector<std::shared_ptr<RunProducer>> producers;
  for (const auto& gpu : gpus) producers.push_back(make(&gpu, on_device(*host_, gpu)));
  return producers.size() == 1 ? producers.front()
                               : std::make_shared<PerGpuProducer>(name, producers);
}

core::Result<core::Pass> read_pass(const core::JsonField& field,
                                   const EntryReaderServices& services) {
  const std::string text = KW_TRY(field.string());
  auto parsed = core::parse_pass(text);
  if (!parsed) {
    return field.error(services.shown(text) + " is not one of " + core::names_of(core::kPasses));
  }
  return parsed;
}

core::Status SourceEntry::name_taken(const core::JsonField& object, const std::string& earlier,
                                     const EntryReaderServices& services) const {
  return object["name"].error(services.shown(name()) + " is already the name of " + earlier);
}

core::Result<std::vector<ListedCase>> SourceEntry::list_cases(const CommandContext& context) const {
  (void)context;
  return core::fail(core::ErrorCode::InvalidArgument,
                    "a " + std::string(runner()) +
                        " entry cannot list its cases without running them: run discover without "
                        "--list to see its keys");
}

}  // namespace kernelwatch::runners
