// The independent check of what kernelwatch writes: tests/conformance/validate_kernelindex.py, run
// with Debian's python3 and python3-jsonschema against the schemas in third_party/kernelindex
// (Draft 2020-12), recomputing each digest a bundled run carries. Used by every suite that makes
// a kind of record (harness, runners, importer, migration, API, webhook).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace kernelwatch::testing {

// Whether /usr/bin/python3 can import jsonschema.
[[nodiscard]] bool jsonschema_available();

struct SchemaCheck {
  bool valid = false;
  std::string report;  // the validator's lines: counts per kind, then each problem
};

// Validates a JSON value (a record, a document, or an array of them) written to a file in
// `dir`, or a file kernelwatch wrote (array or JSON Lines).
[[nodiscard]] SchemaCheck check_against_schemas(const nlohmann::json& value,
                                                const std::filesystem::path& dir);
[[nodiscard]] SchemaCheck check_file_against_schemas(const std::filesystem::path& file);

}  // namespace kernelwatch::testing

// Ends the test where the independent validator cannot run: FAIL under scripts/test (which
// installs python3-jsonschema), GTEST_SKIP elsewhere, naming the package.
#define KW_REQUIRE_JSONSCHEMA()                                                                \
  if (!::kernelwatch::testing::jsonschema_available()) {                                       \
    if (::kernelwatch::testing::neighbours_required()) {                                       \
      FAIL() << "python3-jsonschema is not installed (Debian package python3-jsonschema); "    \
                "scripts/setup installs it";                                                   \
    }                                                                                          \
    GTEST_SKIP() << "python3-jsonschema is not installed: skipped; scripts/setup installs it"; \
  }
