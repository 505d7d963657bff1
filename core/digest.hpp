// Canonical JSON (sorted keys, no whitespace) and sha256 digests of it, as kernelindex.dev uses.
// Uses nlohmann/json; OpenSSL stays inside digest.cpp.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kernelwatch::core {

// nlohmann::json keeps object keys sorted, so dump() without indent is the canonical form.
[[nodiscard]] std::string canonical_json(const nlohmann::json& value);

// Lowercase hex SHA-256 of bytes.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

// "sha256:<hex>" of the canonical JSON of value.
[[nodiscard]] std::string digest_of(const nlohmann::json& value);

// A kernelindex document's digest: its canonical form without `metadata`
// ({apiVersion, kind, spec}); names and titles never change identity.
[[nodiscard]] std::string document_digest(const nlohmann::json& document);

[[nodiscard]] bool is_digest(std::string_view text) noexcept;

// A digest as "sha256:" and its first 12 hex digits, enough to tell two apart in a terminal line
// or a log (JSON answers keep them whole); any other text as it is.
[[nodiscard]] std::string short_digest(std::string_view value);

}  // namespace kernelwatch::core
