#include "daemon/log.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kernelwatch::daemon {
namespace {

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return "error";
    case LogLevel::Warning:
      return "warning";
    case LogLevel::Notice:
      return "notice";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
  }
  return "info";
}

}  // namespace

Log::Log() {
  if (const char* level = std::getenv("KERNELWATCH_LOG_LEVEL");
      level != nullptr && std::string(level) == "debug") {
    threshold_ = LogLevel::Debug;
  }
  // JOURNAL_STREAM is "<device>:<inode>" of the stream systemd connected; stderr may have been
  // redirected since, so compare.
  if (const char* stream = std::getenv("JOURNAL_STREAM")) {
    struct stat st {};
    if (::fstat(2, &st) == 0) {
      const std::string expected = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
      journal_ = expected == stream;
    }
  }
}

void Log::write(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > static_cast<int>(threshold_)) return;
  std::lock_guard lock(mutex_);
  if (journal_) {
    std::fprintf(stderr, "<%d>%.*s\n", static_cast<int>(level), static_cast<int>(message.size()),
                 message.data());
  } else {
    std::fprintf(stderr, "kernelwatch: %s: %.*s\n", level_name(level),
                 static_cast<int>(message.size()), message.data());
  }
  std::fflush(stderr);
}

}  // namespace kernelwatch::daemon
