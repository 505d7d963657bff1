#pragma once
// The fake Liger-Kernel checkout of the liger-scripts tests (tests/runners/fake_liger: it stands
// in for Liger because Liger's scripts need a GPU, PyTorch and Triton), copied into a test's
// directory, and a byte-for-byte picture of a folder to prove a run left it as it was.

#include <filesystem>
#include <map>
#include <string>

#include "tests/support/test_support.hpp"

namespace kernelwatch::testing {

// Copies tests/runners/fake_liger to `target` (created); returns `target`.
inline std::filesystem::path copy_fake_liger(const std::filesystem::path& target) {
  const auto source = data_dir().parent_path() / "tests/runners/fake_liger";
  std::filesystem::copy(source, target, std::filesystem::copy_options::recursive);
  return target;
}

// Every entry under `root`: its path, and for a file its bytes ("<dir>" for a folder, "-> X" for
// a link), so that an added __pycache__, a changed CSV or a new file all show as a difference.
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& root) {
  std::map<std::string, std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string name = entry.path().lexically_relative(root).string();
    if (entry.is_symlink()) {
      out[name] = "-> " + std::filesystem::read_symlink(entry.path()).string();
    } else if (entry.is_directory()) {
      out[name] = "<dir>";
    } else {
      out[name] = read_file(entry.path());
    }
  }
  return out;
}

}  // namespace kernelwatch::testing
