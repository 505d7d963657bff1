// The one escaping function and the URL encoder every page uses.
#include "web/html.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::web {
namespace {

TEST(Escape, EveryMarkupAndQuoteCharacterBecomesAnEntity) {
  EXPECT_EQ(escape("<script>alert('x')</script>"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
  EXPECT_EQ(escape("a\" onmouseover=\"x"), "a&quot; onmouseover=&quot;x");
  EXPECT_EQ(escape("AT&T"), "AT&amp;T");
  EXPECT_EQ(escape("plain-label_1.0"), "plain-label_1.0");
  EXPECT_EQ(escape(""), "");
}

TEST(UrlComponent, KeepsUnreservedAndEncodesTheRest) {
  EXPECT_EQ(url_component("sha256:ab@run-1/drift"), "sha256%3Aab%40run-1%2Fdrift");
  EXPECT_EQ(url_component("a b&c=d"), "a%20b%26c%3Dd");
  EXPECT_EQ(url_component("A-z_0.9~"), "A-z_0.9~");
  EXPECT_EQ(url_component("\xC3\xA9"), "%C3%A9");
}

TEST(Formats, PercentAndTime) {
  EXPECT_EQ(core::format_change(-0.8049), "-80.5%");
  EXPECT_EQ(core::format_change(0.0123), "+1.2%");
  const auto t = core::parse_timestamp("2025-07-17T18:18:16Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(format_time(*t), "2025-07-17 18:18 UTC");
}

}  // namespace
}  // namespace kernelwatch::web
