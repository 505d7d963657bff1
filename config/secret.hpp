// Secrets (tokens, webhook URLs, signing keys) read from files or environment variables. Errors
// name the file or the variable, never the value. Standard library and POSIX stat only.
#pragma once

#include <filesystem>
#include <string>

#include "config/environment.hpp"
#include "core/error.hpp"

namespace kernelwatch::config {

enum class SecretOrigin {
  None,         // not configured
  Inline,       // written in the config file itself
  File,         // *_file: the file's content
  Environment,  // *_env: the variable's value
};

// Where a secret came from: what redacted output and log lines may show instead of the value.
struct SecretSource {
  SecretOrigin origin = SecretOrigin::None;
  std::string name;  // the file path or the variable name; empty for None and Inline
};

// The file's content without trailing whitespace (the newline `echo` leaves). Errors: NotFound
// when it does not exist, IoError when it cannot be read, InvalidArgument when it is not a
// regular file, is readable by others (mode o+r), or is empty.
[[nodiscard]] core::Result<std::string> read_secret_file(const std::filesystem::path& path);

// The variable's value without trailing whitespace. Errors: NotFound when unset,
// InvalidArgument when the name is not a variable name or the value is empty.
[[nodiscard]] core::Result<std::string> read_secret_env(const Environment& environment,
                                                        const std::string& name);

}  // namespace kernelwatch::config
