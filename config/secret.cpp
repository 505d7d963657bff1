#include "config/secret.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kernelwatch::config {
namespace {

using core::ErrorCode;

void trim_trailing_whitespace(std::string& text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.pop_back();
  }
}

std::string quoted(const std::filesystem::path& path) {
  return "\"" + path.string() + "\"";
}

}  // namespace

core::Result<std::string> read_secret_file(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    return core::fail(error == ENOENT ? ErrorCode::NotFound : ErrorCode::IoError,
                      "cannot read secret file " + quoted(path) + ": " + std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    return core::fail(ErrorCode::InvalidArgument,
                      "secret file " + quoted(path) + " is not a regular file");
  }
  if ((info.st_mode & S_IROTH) != 0) {
    return core::fail(
        ErrorCode::InvalidArgument,
        "secret file " + quoted(path) + " is readable by others; restrict it (chmod 600 or 640)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return core::fail(ErrorCode::IoError,
                      "cannot read secret file " + quoted(path) + ": " + std::strerror(error));
  }
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return core::fail(ErrorCode::IoError, "cannot read secret file " + quoted(path));
  }
  trim_trailing_whitespace(content);
  if (content.empty()) {
    return core::fail(ErrorCode::InvalidArgument, "secret file " + quoted(path) + " is empty");
  }
  return content;
}

core::Result<std::string> read_secret_env(const Environment& environment, const std::string& name) {
  if (!is_valid_variable_name(name)) {
    // The text is not echoed: a value pasted into the *_env field by mistake is a secret.
    return core::fail(ErrorCode::InvalidArgument, "not an environment variable name");
  }
  auto value = environment.get(name);
  if (!value) {
    return core::fail(ErrorCode::NotFound, "environment variable " + name + " is not set");
  }
  trim_trailing_whitespace(*value);
  if (value->empty()) {
    return core::fail(ErrorCode::InvalidArgument, "environment variable " + name + " is empty");
  }
  return std::move(*value);
}

}  // namespace kernelwatch::config
