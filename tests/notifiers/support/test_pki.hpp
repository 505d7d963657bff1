// Certificates made at test time with OpenSSL: a CA, a server certificate for 127.0.0.1 and
// localhost, and one for another host name (which a client must refuse). PEM text only.
#pragma once

#include <filesystem>
#include <string>

namespace kernelwatch::notifiers::testing {

struct CertifiedKey {
  std::string cert_pem;  // leaf certificate
  std::string key_pem;
};

struct TestPki {
  std::string ca_pem;
  CertifiedKey server;  // SAN: IP:127.0.0.1, DNS:localhost
  CertifiedKey other;   // SAN: DNS:other.example.invalid, signed by the same CA
};

// EC P-256 keys, SHA-256 signatures, valid from an hour ago for a day. Aborts on failure.
[[nodiscard]] TestPki make_test_pki();

void write_text(const std::filesystem::path& path, const std::string& text);

}  // namespace kernelwatch::notifiers::testing
