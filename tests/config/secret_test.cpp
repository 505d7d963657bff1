#include "config/secret.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/test_support.hpp"

namespace kernelwatch::config {
namespace {

namespace fs = std::filesystem;

void write_private(const fs::path& path, const std::string& content) {
  testing::write_file(path, content);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
}

TEST(ReadSecretFile, TrimsTheTrailingNewline) {
  testing::TempDir dir;
  write_private(dir / "token", "s3cret-value\n");
  const auto secret = read_secret_file(dir / "token");
  ASSERT_TRUE(secret.has_value()) << secret.error().message;
  EXPECT_EQ(*secret, "s3cret-value");
}

TEST(ReadSecretFile, GroupReadableIsAccepted) {
  testing::TempDir dir;
  write_private(dir / "token", "abc\r\n");
  fs::permissions(dir / "token", fs::perms::group_read, fs::perm_options::add);
  const auto secret = read_secret_file(dir / "token");
  ASSERT_TRUE(secret.has_value()) << secret.error().message;
  EXPECT_EQ(*secret, "abc");
}

TEST(ReadSecretFile, RejectsMissingEmptyWorldReadableAndDirectories) {
  testing::TempDir dir;
  const std::string base = dir.path().string();

  auto secret = read_secret_file(dir / "missing");
  ASSERT_FALSE(secret.has_value());
  EXPECT_EQ(secret.error().code, core::ErrorCode::NotFound);
  EXPECT_EQ(secret.error().message,
            "cannot read secret file \"" + base + "/missing\": No such file or directory");

  write_private(dir / "empty", "\n");
  secret = read_secret_file(dir / "empty");
  ASSERT_FALSE(secret.has_value());
  EXPECT_EQ(secret.error().message, "secret file \"" + base + "/empty\" is empty");

  write_private(dir / "open", "very-secret-value-42\n");
  fs::permissions(dir / "open", fs::perms::others_read, fs::perm_options::add);
  secret = read_secret_file(dir / "open");
  ASSERT_FALSE(secret.has_value());
  EXPECT_EQ(secret.error().code, core::ErrorCode::InvalidArgument);
  EXPECT_EQ(secret.error().message, "secret file \"" + base +
                                        "/open\" is readable by others; restrict it (chmod 600 "
                                        "or 640)");

  secret = read_secret_file(dir.path());
  ASSERT_FALSE(secret.has_value());
  EXPECT_EQ(secret.error().message, "secret file \"" + base + "\" is not a regular file");
}

TEST(ReadSecretEnv, ReadsTrimsAndNamesTheVariable) {
  const auto env = Environment::from_map({{"TOKEN", "tok-value\n"}, {"BLANK", " \n"}});
  auto value = read_secret_env(env, "TOKEN");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, "tok-value");

  value = read_secret_env(env, "UNSET");
  ASSERT_FALSE(value.has_value());
  EXPECT_EQ(value.error().code, core::ErrorCode::NotFound);
  EXPECT_EQ(value.error().message, "environment variable UNSET is not set");

  value = read_secret_env(env, "BLANK");
  ASSERT_FALSE(value.has_value());
  EXPECT_EQ(value.error().message, "environment variable BLANK is empty");

  value = read_secret_env(env, "https://hooks.slack.com/services/T0/B0/XYZ");
  ASSERT_FALSE(value.has_value());
  EXPECT_EQ(value.error().message, "not an environment variable name");
}

}  // namespace
}  // namespace kernelwatch::config
