#include "core/digest.hpp"

#include <array>

#include <openssl/evp.h>

#include "core/error.hpp"

namespace kernelwatch::core {

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

std::string document_digest(const nlohmann::json& document) {
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
