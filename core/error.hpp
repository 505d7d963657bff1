// Error vocabulary shared by every module: ErrorCode, Error, Result<T> and the bug assert.
// Plain C++ plus tl::expected; expected failures travel as values, bugs abort.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include <tl/expected.hpp>

namespace kernelwatch::core {

// Documented in docs/ERRORS.md. Codes are stable: the CLI and the HTTP API map them to exit
// codes and status codes.
enum class ErrorCode {
  InvalidArgument,  // a caller passed a value outside the documented domain
  ParseError,       // input text (JSON, CSV, duration, timestamp) is malformed
  NotFound,         // a named file, row or key does not exist
  IoError,          // the operating system refused a read or write
  NotADatabase,     // a file that should be a kernelindex SQLite database is not one
  VersionTooNew,    // a database written by a newer kernelwatch
  Conflict,         // a write collides with existing state
  Unavailable,      // a resource (GPU, peer, lock) is not there right now
  OutOfMemory,      // an allocation (host or device) failed
  DeviceError,      // the GPU runtime reported an error
  Internal,         // an invariant of a third-party library broke
};

[[nodiscard]] std::string_view to_string(ErrorCode code) noexcept;

struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;

  // Prefixes the message with where it happened ("file.csv:12: " + message).
  [[nodiscard]] Error with_context(std::string_view context) const {
    return Error{code, std::string(context) + ": " + message};
  }
};

template <class T>
using Result = tl::expected<T, Error>;

using Status = tl::expected<void, Error>;

[[nodiscard]] inline tl::unexpected<Error> fail(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

[[noreturn]] void assertion_failed(const char* expression, const char* file, int line,
                                   const char* message) noexcept;

namespace detail {
// KW_TRY's value: the T of a Result<T>, nothing of a Status.
template <class T>
T try_value(tl::expected<T, Error>&& result) {
  return std::move(*result);
}
inline void try_value(tl::expected<void, Error>&&) {}
}  // namespace detail

}  // namespace kernelwatch::core

// Evaluates a Result<T> or Status expression; on error returns that error from the enclosing
// function (which returns a Result or Status), otherwise yields the value:
//   const Config config = KW_TRY(load_config(path));
//   KW_TRY(store.commit());
// A GNU statement expression (g++ and clang; __extension__ keeps -Wpedantic quiet). Not for
// coroutines: co_return there by hand.
#define KW_TRY(...)                                                                           \
  __extension__({                                                                             \
    auto kw_try_result_ = (__VA_ARGS__);                                                      \
    if (!kw_try_result_) {                                                                    \
      return ::tl::unexpected<::kernelwatch::core::Error>(std::move(kw_try_result_).error()); \
    }                                                                                         \
    ::kernelwatch::core::detail::try_value(std::move(kw_try_result_));                        \
  })

// KW_TRY that puts where it happened in front of the error's message (Error::with_context):
//   run.status = KW_TRY_WITH(parse_run_status(text), "run.spec.status");
// The context is evaluated only when there is an error.
#define KW_TRY_WITH(expression, context)                               \
  __extension__({                                                      \
    auto kw_try_result_ = (expression);                                \
    if (!kw_try_result_) {                                             \
      return ::tl::unexpected<::kernelwatch::core::Error>(             \
          kw_try_result_.error().with_context(context));               \
    }                                                                  \
    ::kernelwatch::core::detail::try_value(std::move(kw_try_result_)); \
  })

// Bugs, not bad input: abort with the expression and where it failed.
#define KW_ASSERT(condition, message)                                                   \
  do {                                                                                  \
    if (!(condition)) {                                                                 \
      ::kernelwatch::core::assertion_failed(#condition, __FILE__, __LINE__, (message)); \
    }                                                                                   \
  } while (false)
