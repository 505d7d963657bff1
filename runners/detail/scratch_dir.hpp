// A fresh private directory for one execution of a program (a command's {out}, a Liger script's
// copy of its checkout), under `base` or else $TMPDIR or /tmp; removed with everything in it
// (links are removed, never followed). Shared by the runners in runners/.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.hpp"

namespace kernelwatch::runners::detail {

class ScratchDir {
 public:
  // `what` names the directory in the error ("a directory for {out}").
  static core::Result<ScratchDir> create(const std::filesystem::path& base,
                                         const std::string& entry, std::string_view what) {
    std::filesystem::path root = base;
    if (root.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      root = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    }
    std::string pattern = (root / ("kernelwatch-" + entry + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return core::fail(core::ErrorCode::IoError, "cannot create " + std::string(what) + " in " +
                                                      root.string() + ": " + std::strerror(errno));
    }
    return ScratchDir(pattern);
  }
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  explicit ScratchDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace kernelwatch::runners::detail
