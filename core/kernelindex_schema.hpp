// Checks kernelindex.dev v1alpha1 documents against the project's public JSON Schemas (the files
// of third_party/kernelindex, compiled in): the one gate every record kernelwatch imports or is
// posted passes, so what it stores and exports is what any kernelindex tool accepts.
// Plain C++ and nlohmann/json; no I/O, no regular-expression engine (each pattern the schemas use
// has its own matcher, linear in the text).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace kernelwatch::core {

enum class DocumentKind {
  BenchmarkRun,
  BenchmarkProtocol,
  ExecutionEnvironment,
  WorkloadCase,
  ImplementationRevision,
};

[[nodiscard]] std::string_view to_string(DocumentKind kind) noexcept;
// "BenchmarkRun" -> DocumentKind::BenchmarkRun; an error naming the five kinds otherwise.
[[nodiscard]] Result<DocumentKind> parse_document_kind(std::string_view text);

// One way a document breaks its schema: the field's path from the document's root
// ("spec.sourceNative.metrics.achievedGBps") and why ("does not match ^[a-z][a-z0-9_]*$").
struct SchemaViolation {
  std::string path;
  std::string message;
};

// Every violation of the schema of `kind`, in document order (at most `limit`); none when valid.
[[nodiscard]] std::vector<SchemaViolation> schema_violations(const nlohmann::json& document,
                                                             DocumentKind kind,
                                                             std::size_t limit = 20);

// The document checked against the schema its `kind` names. The error names the first violation
// under `path` ("run.spec.status: \"failed\" is not one of passed, ..."), and how many more.
[[nodiscard]] Status validate_document(const nlohmann::json& document, std::string_view path = {});

// A metadata.name the schema accepts made from any text: lower case, runs of characters outside
// [a-z0-9._-] one '-', a leading letter or digit; over 200 characters, its first 183 and '-' and
// 16 hex digits of its SHA-256 (still unique, still readable).
[[nodiscard]] std::string document_name(std::string_view text);

// Whether the embedded schemas use only what schema_violations() understands (every keyword and
// pattern): a test runs it, so a schema update that needs more fails there, not in production.
[[nodiscard]] std::vector<std::string> unsupported_schema_features();

}  // namespace kernelwatch::core
