#include "core/url.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

TEST(ParseUrl, SplitsTheParts) {
  auto url = parse_url("https://am.example.org:9093/api/v2/alerts?x=1#f");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->host, "am.example.org");
  EXPECT_EQ(url->port, 9093);
  EXPECT_EQ(url->target, "/api/v2/alerts?x=1");
  auto bare = parse_url("http://localhost");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->port, 80);
  EXPECT_EQ(bare->target, "/");
  auto odd = parse_url("HTTPS://user:pass@[::1]:8443?q=1");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->scheme, "https");
  EXPECT_EQ(odd->host, "::1");
  EXPECT_EQ(odd->port, 8443);
  EXPECT_EQ(odd->target, "/?q=1");
}

TEST(ParseUrl, ErrorsNeverRepeatThePathOrQuery) {
  for (const char* text : {"ftp://host/secret-path", "https://host:99999/secret-path",
                           "https:///secret-path", "https://host/secret path"}) {
    auto url = parse_url(text);
    ASSERT_FALSE(url) << text;
    EXPECT_EQ(url.error().message.find("secret"), std::string::npos) << url.error().message;
  }
}

TEST(ParseUrl, ErrorsSayTheSubjectAndNeverTheText) {
  const auto message = [](std::string_view text) {
    auto url = parse_url(text, "the value of HOOK");
    return url ? std::string("(ok)") : url.error().message;
  };
  EXPECT_EQ(message("ftp://x/y"), "the value of HOOK is not an http:// or https:// URL");
  EXPECT_EQ(message("secret-token://x/y"), "the value of HOOK is not an http:// or https:// URL");
  EXPECT_EQ(message("https://user:secret@/x"), "the value of HOOK has no host");
  EXPECT_EQ(message("https://h:0/x"),
            "the value of HOOK has a port that is not a number in 1..65535");
  EXPECT_EQ(message("https://::1/x"), "the value of HOOK: write IPv6 addresses in brackets");
  EXPECT_EQ(message("https://[::1/x"),
            "the value of HOOK: the bracket around the IPv6 address is not closed");
  EXPECT_EQ(message("https://a b/x"),
            "the value of HOOK: the host has characters other than A-Z, a-z, 0-9, '.', '-', '_'");
  EXPECT_EQ(parse_url("http://h/\x01").error().code, ErrorCode::InvalidArgument);
}

TEST(ParseHostPort, SplitsHostAndPortAsWritten) {
  auto v4 = parse_host_port("127.0.0.1:9477");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, "9477");
  auto v6 = parse_host_port("[::1]:http");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, "http");
  auto name = parse_host_port("localhost");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->host, "localhost");
  EXPECT_FALSE(name->port);
  EXPECT_EQ(parse_host_port("::1:9477").error().message, "write IPv6 addresses in brackets");
  EXPECT_EQ(parse_host_port(":9477").error().message, "the host is empty");
  EXPECT_EQ(parse_host_port("[::1]9477").error().message,
            "only :port may follow an IPv6 address in brackets");
}

}  // namespace
}  // namespace kernelwatch::core
