#include "tests/support/conformance.hpp"

#include <atomic>

#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::testing {
namespace {

// Debian's interpreter, not whatever python3 comes first in PATH: the package under test is
// Debian's python3-jsonschema.
const std::filesystem::path kPython = "/usr/bin/python3";

std::filesystem::path validator() {
  return std::filesystem::path(KW_SOURCE_DIR) / "tests/conformance/validate_kernelindex.py";
}

std::filesystem::path schemas() {
  return std::filesystem::path(KW_SOURCE_DIR) / "third_party/kernelindex";
}

}  // namespace

bool jsonschema_available() {
  static const bool available = [] {
    if (!std::filesystem::exists(kPython)) return false;
    return run_process(kPython, {"-c", "import jsonschema"}).exit_code == 0;
  }();
  return available;
}

SchemaCheck check_file_against_schemas(const std::filesystem::path& file) {
  const ProcessResult r =
      run_process(kPython, {validator().string(), schemas().string(), file.string()});
  return SchemaCheck{r.exit_code == 0, r.out + r.err};
}

SchemaCheck check_against_schemas(const nlohmann::json& value, const std::filesystem::path& dir) {
  static std::atomic<int> counter{0};
  const auto file = dir / ("documents-" + std::to_string(counter++) + ".json");
  write_file(file, value.dump(2));
  return check_file_against_schemas(file);
}

}  // namespace kernelwatch::testing
