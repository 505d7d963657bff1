// What the config tests share: distinctive secrets, parsing a text as kernelwatch.json, and the
// shipped files of config/.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "runners/harness_config.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::config::test {

namespace fs = std::filesystem;

// Distinctive secret values: no message or redacted output may ever contain them.
inline const std::string kSlackUrl =
    "https://hooks.slack.com/services/T0000/B0000/SLACKSECRETxyzzy";
inline const std::string kWebhookUrl = "https://alerts.example.com/hook?key=WEBHOOKSECRETplugh";
inline const std::string kSigningKey = "SIGNINGKEYfrobozz";
inline const std::string kToken = "TOKENSECRETgrue";
inline const std::vector<std::string> kSecrets = {
    kSlackUrl, kWebhookUrl, kSigningKey, kToken, "SLACKSECRETxyzzy", "WEBHOOKSECRETplugh"};

inline const fs::path kBaseDir = "/etc/kernelwatch";

inline Result<Config> parse(const std::string& text,
                            const Environment& env = Environment::from_map({})) {
  return parse_config(text, "kernelwatch.json", env, kBaseDir);
}

inline std::string error_of(const std::string& text,
                            const Environment& env = Environment::from_map({})) {
  const auto config = parse(text, env);
  if (config) return "(no error)";
  return config.error().message;
}

// An entry of kernelwatch's own kernels as its source read it; fails the test when it is not one.
inline const runners::HarnessSource& own_kernels(const BenchmarkConfig& entry) {
  const auto* own = entry.source_as<runners::HarnessSource>();
  if (own == nullptr) {
    ADD_FAILURE() << entry.name() << " is not an entry of kernelwatch's own kernels";
    static const runners::HarnessSource none;
    return none;
  }
  return *own;
}

inline void expect_no_secret(const std::string& text) {
  for (const auto& secret : kSecrets) {
    EXPECT_EQ(text.find(secret), std::string::npos) << "leaks a secret: " << text;
  }
}

inline void write_private(const fs::path& path, const std::string& content) {
  testing::write_file(path, content);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
}

inline fs::path source_file(const std::string& name) {
  return fs::path(KW_SOURCE_DIR) / "config" / name;
}

}  // namespace kernelwatch::config::test
