// The kernelindex.dev v1alpha1 JSON Schema texts compiled into the binary (generated from
// third_party/kernelindex by cmake/embed_schemas.cmake). Private to core.
#pragma once

#include <array>
#include <string_view>

namespace kernelwatch::core::detail {

struct EmbeddedSchema {
  std::string_view kind;  // "BenchmarkRun"
  std::string_view text;  // the schema file as it is in third_party/kernelindex
};

[[nodiscard]] const std::array<EmbeddedSchema, 5>& embedded_schemas();

}  // namespace kernelwatch::core::detail
