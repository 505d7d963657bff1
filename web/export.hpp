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

// Creates `out` (and its parents) when missing; replaces the files it writes (each written to a
// new file beside it and renamed over it: a symbolic link there is replaced, never written
// through; a folder inside `out` that is a link is refused), removes none. Errors name the file
// and the system's reason.
[[nodiscard]] core::Result<ExportSummary> export_site(storage::Connection& store,
                                                      const ReplayOptions& options,
                                                      const std::filesystem::path& out);

}  // namespace kernelwatch::web
