// The real neighbours a user has (Debian's Alertmanager, Prometheus, promtool, Chromium,
// chromedriver, nginx...): tests start them for real. scripts/setup installs them, and
// scripts/test exports KERNELWATCH_REQUIRE_NEIGHBOURS=1, so there a missing program is a failure;
// elsewhere (a developer's machine without the package) the test skips and names the package.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

namespace kernelwatch::testing {

// The program's path if it is an executable file in $PATH (or the name is already a path).
[[nodiscard]] std::optional<std::filesystem::path> find_program(const std::string& name);

// True where scripts/test runs: a missing neighbour must fail the test, not skip it.
[[nodiscard]] bool neighbours_required();

}  // namespace kernelwatch::testing

// KW_REQUIRE_PROGRAM(path_var, "promtool", "prometheus"): declares `path_var` (a path) or ends
// the test: FAIL under scripts/test, GTEST_SKIP elsewhere, naming the Debian package either way.
#define KW_REQUIRE_PROGRAM(var, program, package)                         \
  const auto var##_found = ::kernelwatch::testing::find_program(program); \
  if (!var##_found) {                                                     \
    if (::kernelwatch::testing::neighbours_required()) {                  \
      FAIL() << program " is not installed (Debian package " package      \
                        "); scripts/setup installs it";                   \
    }                                                                     \
    GTEST_SKIP() << program " is not installed (Debian package " package  \
                            "): skipped; "                                \
                            "scripts/setup installs it";                  \
  }                                                                       \
  const std::filesystem::path var = *var##_found
