// `kernelwatch report`: the dashboard's pages as static files in a folder (index pages, one page
// per key in each scale, one per alert, the assets), linked relatively so the folder works from
// a CI artifact, a file:// URL or any web server. Storage, detectors and web/ only.
#pragma once

#include <cstddef>
#include <filesystem>

#include "core/error.hpp"
#include "storage/connection.hpp"
#include "web/model.hpp"

namespace kernelwatch::web {

struct ExportSummary {
  std::size_t keys = 0;
  std::size_t alerts = 0;
  std::size_t files = 0;
};

// Creates `out` (and its parents) when missing; overwrites the files it writes, removes none.
[[nodiscard]] core::Result<ExportSummary> export_site(storage::Connection& store,
                                                      const ReplayOptions& options,
                                                      const std::filesystem::path& out);

}  // namespace kernelwatch::web
