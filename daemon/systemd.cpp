#include "daemon/systemd.hpp"

#include <string>

#ifdef KERNELWATCH_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace kernelwatch::daemon::systemd {
namespace {

void notify(const std::string& state) {
#ifdef KERNELWATCH_HAVE_SYSTEMD
  (void)sd_notify(0, state.c_str());
#else
  (void)state;
#endif
}

}  // namespace

void notify_ready(std::string_view status) {
  notify("READY=1\nSTATUS=" + std::string(status));
}
void notify_status(std::string_view status) {
  notify("STATUS=" + std::string(status));
}
void notify_watchdog() {
  notify("WATCHDOG=1");
}
void notify_stopping() {
  notify("STOPPING=1");
}
void notify_reloading() {
  notify("RELOADING=1");
}

std::optional<std::chrono::microseconds> watchdog_interval() {
#ifdef KERNELWATCH_HAVE_SYSTEMD
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) return std::chrono::microseconds(usec / 2);
#endif
  return std::nullopt;
}

}  // namespace kernelwatch::daemon::systemd
