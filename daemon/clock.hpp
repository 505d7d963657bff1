// The wall clock of the daemon's commands, in the core::Timestamp the records use. Only the
// composition root reads clocks; the libraries take time as an argument.
#pragma once

#include <chrono>

#include "core/time.hpp"

namespace kernelwatch::daemon {

[[nodiscard]] inline core::Timestamp wall_now() {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

}  // namespace kernelwatch::daemon
