// The `detector` section of the config file (config.cpp reads the rest).
#pragma once

#include "config/config.hpp"
#include "config/detail/reader.hpp"

namespace kernelwatch::config::detail {

// Reads `field` (the `detector` object) into `out`; retired settings are warnings.
Status read_detector(Reader& reader, const JsonField& field, DetectorSettings& out);

// The effective `detector` section, every setting with its value.
json detector_json(const DetectorSettings& detector);

}  // namespace kernelwatch::config::detail
