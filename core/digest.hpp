// Canonical JSON and sha256 digests of it: RFC 8785 (JCS) for kernelindex documents, and the
// comparability key's own part identities. Uses nlohmann/json; OpenSSL stays inside digest.cpp.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kernelwatch::core {

// nlohmann's dump (sorted keys, no whitespace): the form the comparability key's part identities
// and stored records are written in. It equals jcs() for documents of strings, integers,
// booleans and objects with keys in the Basic Multilingual Plane; it differs for fractions and
// exponents ("1.0", "1e-06"), which is why key identities never move to jcs(): every stored key
// keeps its digest.
[[nodiscard]] std::string canonical_json(const nlohmann::json& value);

// RFC 8785 JSON Canonicalization Scheme: object members sorted by their names' UTF-16 code
// units, no whitespace, strings escaped only where JSON requires (\b \t \n \f \r, other
// control characters as \u00xx), numbers printed as ECMAScript prints an IEEE double (1.0 -> 1,
// 1e-06 -> 0.000001, 1e21 -> 1e+21; integers beyond 2^53 rounded as a double would).
[[nodiscard]] std::string jcs(const nlohmann::json& value);

// ECMAScript's Number::toString of a finite double (what jcs() prints for a number).
[[nodiscard]] std::string ecmascript_number(double value);

// Lowercase hex SHA-256 of bytes.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

// "sha256:<hex>" of the canonical JSON of value.
[[nodiscard]] std::string digest_of(const nlohmann::json& value);

// A kernelindex document's digest as kernelindex.dev defines it: "sha256:" + SHA-256 of the JCS
// form of {apiVersion, kind, spec} (metadata left out: names and titles never change identity).
[[nodiscard]] std::string document_digest(const nlohmann::json& document);

// The comparability key's identity of a document: digest_of({apiVersion, kind, spec}) in
// canonical_json() form, as every key stored so far was made (see canonical_json()).
[[nodiscard]] std::string identity_digest(const nlohmann::json& document);

[[nodiscard]] bool is_digest(std::string_view text) noexcept;

// A digest as "sha256:" and its first 12 hex digits, enough to tell two apart in a terminal line
// or a log (JSON answers keep them whole); any other text as it is.
[[nodiscard]] std::string short_digest(std::string_view value);

}  // namespace kernelwatch::core
