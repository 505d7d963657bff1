// The daemon's log on stderr: one line per event, with a "<N>" syslog priority prefix when
// stderr goes to the journal (systemd sets JOURNAL_STREAM), plain "level: message" otherwise.
// Thread-safe. Callers never pass secrets: URLs are redacted before they get here.
#pragma once

#include <mutex>
#include <string_view>

namespace kernelwatch::daemon {

enum class LogLevel { Error = 3, Warning = 4, Notice = 5, Info = 6, Debug = 7 };

class Log {
 public:
  // Detects the journal from JOURNAL_STREAM matching stderr's device and inode; debug lines
  // (one per HTTP request) are written only when KERNELWATCH_LOG_LEVEL=debug.
  Log();
  void write(LogLevel level, std::string_view message);
  void error(std::string_view m) { write(LogLevel::Error, m); }
  void warning(std::string_view m) { write(LogLevel::Warning, m); }
  void info(std::string_view m) { write(LogLevel::Info, m); }
  [[nodiscard]] bool journal() const { return journal_; }

 private:
  std::mutex mutex_;
  bool journal_ = false;
  LogLevel threshold_ = LogLevel::Info;
};

}  // namespace kernelwatch::daemon
