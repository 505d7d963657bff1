#include "core/error.hpp"

namespace kernelwatch::core {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "invalid_argument";
    case ErrorCode::ParseError:
      return "parse_error";
    case ErrorCode::NotFound:
      return "not_found";
    case ErrorCode::IoError:
      return "io_error";
    case ErrorCode::NotADatabase:
      return "not_a_database";
    case ErrorCode::VersionTooNew:
      return "version_too_new";
    case ErrorCode::Conflict:
      return "conflict";
    case ErrorCode::Unavailable:
      return "unavailable";
    case ErrorCode::OutOfMemory:
      return "out_of_memory";
    case ErrorCode::DeviceError:
      return "device_error";
    case ErrorCode::Internal:
      return "internal";
  }
  return "unknown";
}

void assertion_failed(const char* expression, const char* file, int line,
                      const char* message) noexcept {
  std::fprintf(stderr, "kernelwatch: assertion failed: %s (%s) at %s:%d\n", expression, message,
               file, line);
  std::abort();
}

}  // namespace kernelwatch::core
