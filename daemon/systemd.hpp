// systemd integration through libsystemd's sd_notify: READY, STATUS, WATCHDOG, STOPPING, and
// the watchdog interval. Every call is a no-op outside systemd or when built without libsystemd.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace kernelwatch::daemon::systemd {

void notify_ready(std::string_view status);
void notify_status(std::string_view status);
void notify_watchdog();
void notify_stopping();
void notify_reloading();
// Half of WATCHDOG_USEC (the interval to ping at), when systemd expects pings from this process.
[[nodiscard]] std::optional<std::chrono::microseconds> watchdog_interval();

}  // namespace kernelwatch::daemon::systemd
