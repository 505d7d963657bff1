#include "storage/kernelindex_reader.hpp"

#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using nlohmann::json;

json fixture_json() {
  return json::parse(testing::read_file(
      testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json")));
}

TEST(KernelindexReaderTest, OneRecordArrayAndJsonLines) {
  const json record = fixture_json();
  const auto one = read_kernelindex(record.dump(2));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].kind, ItemKind::Run);

  const auto array = read_kernelindex("[\n" + record.dump(2) + ",\n" + record.dump(2) + "\n]\n");
  ASSERT_EQ(array.size(), 2u);
  EXPECT_EQ(array[0].line, 2u);
  const std::string pretty = record.dump(2);
  const auto record_lines =
      static_cast<std::size_t>(std::count(pretty.begin(), pretty.end(), '\n'));
  EXPECT_EQ(array[1].line, 2u + record_lines + 1);

  const auto lines = read_kernelindex(record.dump() + "\n\n" + record.dump() + "\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].line, 1u);
  EXPECT_EQ(lines[1].line, 3u);
  EXPECT_EQ(lines[1].kind, ItemKind::Run);
}

TEST(KernelindexReaderTest, TruncatedJsonNamesTheLine) {
  const std::string text = fixture_json().dump(2);
  const auto items = read_kernelindex(text.substr(0, text.size() / 2));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].kind, ItemKind::Invalid);
  EXPECT_NE(items[0].reason.find("malformed JSON"), std::string::npos) << items[0].reason;
  EXPECT_GT(items[0].line, 10u);
}

TEST(KernelindexReaderTest, BadLineInJsonLinesIsNamed) {
  json bad = fixture_json();
  bad["run"]["spec"]["timing"]["latencyNs"]["median"] = "slow";
  const auto items = read_kernelindex(fixture_json().dump() + "\n" + bad.dump() + "\n{broken\n");
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].kind, ItemKind::Run);
  EXPECT_EQ(items[1].kind, ItemKind::Invalid);
  EXPECT_EQ(items[1].line, 2u);
  EXPECT_EQ(items[1].reason.rfind(
                "run.spec.timing.latencyNs.median: matches none of its allowed forms", 0),
            0u)
      << items[1].reason;
  EXPECT_EQ(items[2].kind, ItemKind::Invalid);
  EXPECT_EQ(items[2].line, 3u);
}

TEST(KernelindexReaderTest, EmptyInputIsInvalid) {
  const auto items = read_kernelindex("  \n");
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].kind, ItemKind::Invalid);
}

}  // namespace
}  // namespace kernelwatch::storage
