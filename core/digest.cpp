#include "core/digest.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include <openssl/evp.h>

#include "core/error.hpp"

namespace kernelwatch::core {
namespace {

// The next code point of UTF-8 text at `i` (advancing i); text kernelwatch holds is valid UTF-8
// (nlohmann checks it on parse), anything else is taken byte by byte.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(s[at]); };
  const unsigned char lead = byte(i);
  int extra = 0;
  char32_t cp = lead;
  if (lead >= 0xF0 && lead < 0xF8) {
    extra = 3;
    cp = lead & 0x07;
  } else if (lead >= 0xE0) {
    extra = 2;
    cp = lead & 0x0F;
  } else if (lead >= 0xC0) {
    extra = 1;
    cp = lead & 0x1F;
  }
  if (i + extra >= s.size()) {  // a sequence cut short: its lead byte alone
    ++i;
    return lead;
  }
  for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
  i += 1 + extra;
  return cp;
}

// a < b by UTF-16 code units (RFC 8785 section 3.2.3).
bool utf16_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  char16_t pending_a = 0, pending_b = 0;
  const auto unit = [](std::string_view s, std::size_t& at, char16_t& pending) -> char16_t {
    if (pending != 0) return std::exchange(pending, char16_t{0});
    const char32_t cp = next_code_point(s, at);
    if (cp < 0x10000) return static_cast<char16_t>(cp);
    const char32_t v = cp - 0x10000;
    pending = static_cast<char16_t>(0xDC00 + (v & 0x3FF));
    return static_cast<char16_t>(0xD800 + (v >> 10));
  };
  while ((i < a.size() || pending_a != 0) && (j < b.size() || pending_b != 0)) {
    const char16_t x = unit(a, i, pending_a);
    const char16_t y = unit(b, j, pending_b);
    if (x != y) return x < y;
  }
  return !(i < a.size() || pending_a != 0) && (j < b.size() || pending_b != 0);
}

void jcs_string(std::string_view s, std::string& out) {
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 0x0F];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void jcs_value(const nlohmann::json& v, std::string& out) {
  using T = nlohmann::json::value_t;
  switch (v.type()) {
    case T::null:
    case T::discarded:
      out += "null";
      return;
    case T::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case T::number_integer:
      out += ecmascript_number(static_cast<double>(v.get<std::int64_t>()));
      return;
    case T::number_unsigned:
      out += ecmascript_number(static_cast<double>(v.get<std::uint64_t>()));
      return;
    case T::number_float:
      out += ecmascript_number(v.get<double>());
      return;
    case T::string:
      jcs_string(v.get_ref<const std::string&>(), out);
      return;
    case T::binary:
      KW_ASSERT(false, "JSON documents never hold binary values");
      return;
    case T::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v) {
        if (!first) out += ',';
        first = false;
        jcs_value(item, out);
      }
      out += ']';
      return;
    }
    case T::object: {
      std::vector<const std::string*> names;
      names.reserve(v.size());
      for (auto it = v.begin(); it != v.end(); ++it) names.push_back(&it.key());
      std::sort(names.begin(), names.end(),
                [](const std::string* a, const std::string* b) { return utf16_less(*a, *b); });
      out += '{';
      bool first = true;
      for (const std::string* name : names) {
        if (!first) out += ',';
        first = false;
        jcs_string(*name, out);
        out += ':';
        jcs_value(v.at(*name), out);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string ecmascript_number(double value) {
  KW_ASSERT(std::isfinite(value), "JSON numbers are finite");
  if (value == 0) return "0";  // -0 too
  std::string out;
  if (value < 0) {
    out += '-';
    value = -value;
  }
  // The shortest digits that round-trip (what ECMAScript also picks), as d.ddde[+-]x.
  char buffer[64];
  const auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  KW_ASSERT(ec == std::errc(), "a double fits in 64 characters");
  const std::string_view text(buffer, static_cast<std::size_t>(end - buffer));
  const auto e = text.find('e');
  std::string digits;
  for (char c : text.substr(0, e)) {
    if (c != '.') digits += c;
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int exponent = 0;
  std::from_chars(text.data() + e + 1 + (text[e + 1] == '+' ? 1 : 0), text.data() + text.size(),
                  exponent);
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;  // value = 0.digits * 10^n
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, static_cast<std::size_t>(n));
    out += '.';
    out += digits.substr(static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += 'e';
    out += n - 1 >= 0 ? '+' : '-';
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

std::string jcs(const nlohmann::json& value) {
  std::string out;
  jcs_value(value, out);
  return out;
}

std::string canonical_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> hash{};
  unsigned int length = 0;
  const int ok =
      EVP_Digest(bytes.data(), bytes.size(), hash.data(), &length, EVP_sha256(), nullptr);
  KW_ASSERT(ok == 1 && length == 32, "EVP_Digest(sha256) cannot fail on in-memory input");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * length, '0');
  for (unsigned int i = 0; i < length; ++i) {
    out[2 * i] = kHex[hash[i] >> 4];
    out[2 * i + 1] = kHex[hash[i] & 0x0f];
  }
  return out;
}

std::string digest_of(const nlohmann::json& value) {
  return "sha256:" + sha256_hex(canonical_json(value));
}

namespace {

// {apiVersion, kind, spec} of a document (whatever of them it has).
nlohmann::json identity_part(const nlohmann::json& document) {
  if (!document.is_object()) return document;
  nlohmann::json identity = nlohmann::json::object();
  for (const char* name : {"apiVersion", "kind", "spec"}) {
    if (const auto it = document.find(name); it != document.end()) identity[name] = *it;
  }
  return identity;
}

}  // namespace

std::string document_digest(const nlohmann::json& document) {
  return "sha256:" + sha256_hex(jcs(identity_part(document)));
}

std::string identity_digest(const nlohmann::json& document) {
  nlohmann::json identity = document;
  if (identity.is_object()) identity.erase("metadata");
  return digest_of(identity);
}

bool is_digest(std::string_view text) noexcept {
  constexpr std::string_view kPrefix = "sha256:";
  if (text.size() != kPrefix.size() + 64 || text.substr(0, kPrefix.size()) != kPrefix) {
    return false;
  }
  for (char c : text.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string short_digest(std::string_view value) {
  constexpr std::size_t kShown = 12;
  if (!is_digest(value)) return std::string(value);
  return std::string(value.substr(0, std::string_view("sha256:").size() + kShown));
}

}  // namespace kernelwatch::core
