// compare's parts below the command: thresholds and their file, the id patterns, the pairing and
// exit-code precedence of two inputs, and what the report forms make of hostile text.
#include <sstream>

#include <gtest/gtest.h>

#include "daemon/compare_command.hpp"

namespace kernelwatch::daemon {
namespace {

runners::CompareCase timed_case(const std::string& id, std::vector<double> samples,
                                std::vector<std::pair<std::string, std::string>> env = {}) {
  runners::CompareCase c;
  c.id = id;
  c.environment = std::move(env);
  c.times.median_ns = samples.front();
  c.times.samples_ns = std::move(samples);
  return c;
}

runners::CompareInput input_of(std::vector<runners::CompareCase> cases) {
  runners::CompareInput in;
  in.cases = std::move(cases);
  return in;
}

const std::vector<double> kBase{100, 101, 102, 100.5, 101.5, 100.2};
const std::vector<double> kSlow{150, 151, 152, 150.5, 151.5, 150.2};

TEST(CompareParts, ThresholdsAreFractionsOrPercentagesAndABareFiveIsRefused) {
  EXPECT_DOUBLE_EQ(*parse_fraction("5%", "--threshold"), 0.05);
  EXPECT_DOUBLE_EQ(*parse_fraction(" 0.05 ", "--threshold"), 0.05);
  EXPECT_DOUBLE_EQ(*parse_fraction("0%", "--threshold"), 0.0);
  EXPECT_FALSE(parse_fraction("5", "--threshold"));
  EXPECT_FALSE(parse_fraction("-1%", "--threshold"));
  EXPECT_FALSE(parse_fraction("abc", "--threshold"));
  EXPECT_FALSE(parse_fraction("1e999%", "--threshold"));
  EXPECT_DOUBLE_EQ(*parse_fraction("99%", "--confidence"), 0.99);
  EXPECT_FALSE(parse_fraction("50%", "--confidence"));
  EXPECT_FALSE(parse_fraction("100%", "--confidence"));
}

TEST(CompareParts, PatternsAndTheThresholdsFileFirstMatchWins) {
  EXPECT_TRUE(glob_match("BM_Saxpy/*", "BM_Saxpy/4096"));
  EXPECT_TRUE(glob_match("*4096", "BM_Saxpy/4096"));
  EXPECT_TRUE(glob_match("BM_?axpy/*", "BM_Saxpy/1"));
  EXPECT_FALSE(glob_match("BM_Saxpy", "BM_Saxpy/4096"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match(std::string(50, '*') + "x", std::string(5000, 'a')));  // no blow-up
  const auto rules = parse_threshold_rules("# comment\n\nBM_Saxpy/16* 2%\r\n* 10%\n");
  ASSERT_TRUE(rules) << rules.error().message;
  ASSERT_EQ(rules->size(), 2U);
  EXPECT_EQ((*rules)[0].pattern, "BM_Saxpy/16*");
  EXPECT_DOUBLE_EQ((*rules)[1].threshold, 0.10);
  const auto bad = parse_threshold_rules("ok 5%\nno-threshold\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
}

TEST(CompareParts, RefusedWinsOverSlowerWhichWinsOverAmbiguous) {
  const auto report = [](std::vector<runners::CompareCase> cand, bool fail_on_ambiguous) {
    return compare_inputs(input_of({timed_case("a", kBase, {{"host_name", "h"}}),
                                    timed_case("b", kBase, {{"host_name", "h"}})}),
                          input_of(std::move(cand)), 0.05, {}, 0.95, {}, fail_on_ambiguous);
  };
  const std::vector<double> three{100, 150, 60};  // too few to tell
  EXPECT_EQ(report({timed_case("a", kBase, {{"host_name", "h"}}),
                    timed_case("b", kBase, {{"host_name", "h"}})},
                   true)
                .exit_code,
            kCompareSame);
  EXPECT_EQ(report({timed_case("a", kSlow, {{"host_name", "h"}}),
                    timed_case("b", three, {{"host_name", "h"}})},
                   true)
                .exit_code,
            kCompareSlower);
  EXPECT_EQ(report({timed_case("a", kBase, {{"host_name", "h"}}),
                    timed_case("b", three, {{"host_name", "h"}})},
                   true)
                .exit_code,
            kCompareAmbiguous);
  EXPECT_EQ(report({timed_case("a", kBase, {{"host_name", "h"}}),
                    timed_case("b", three, {{"host_name", "h"}})},
                   false)
                .exit_code,
            kCompareSame);
  const CompareReport refused = report({timed_case("a", kSlow, {{"host_name", "h"}}),
                                        timed_case("b", kBase, {{"host_name", "other"}})},
                                       false);
  EXPECT_EQ(refused.exit_code, kCompareRefused);
  EXPECT_EQ(refused.count("refused"), 1U);
  EXPECT_EQ(refused.count("slower"), 1U);
  // A case the candidate's output marks failed is a failure of the change.
  runners::CompareCase failed = timed_case("a", kBase, {{"host_name", "h"}});
  failed.failure = "the benchmark reported an error: boom";
  EXPECT_EQ(report({failed, timed_case("b", kBase, {{"host_name", "h"}})}, false).exit_code,
            kCompareSlower);
  // One file's runs of a case from two environments: refused, not pooled.
  runners::CompareCase mixed = timed_case("a", kBase, {{"host_name", "h"}});
  mixed.mixed_environments = "host_name \"other\"";
  EXPECT_EQ(report({mixed, timed_case("b", kBase, {{"host_name", "h"}})}, false).exit_code,
            kCompareRefused);
}

TEST(CompareParts, AThresholdRuleDecidesTheCasesItMatchesOnly) {
  // Both cases 50% slower; a rule of 90% for "fast*" makes that one not slower.
  const std::vector<ThresholdRule> rules{{"fast*", 0.90}};
  const CompareReport r =
      compare_inputs(input_of({timed_case("fast/1", kBase), timed_case("slow/1", kBase)}),
                     input_of({timed_case("fast/1", kSlow), timed_case("slow/1", kSlow)}), 0.05,
                     rules, 0.95, {}, false);
  ASSERT_EQ(r.rows.size(), 2U);
  EXPECT_DOUBLE_EQ(r.rows[0].threshold, 0.90);
  EXPECT_NE(r.rows[0].verdict, "slower") << r.rows[0].reason;
  EXPECT_DOUBLE_EQ(r.rows[1].threshold, 0.05);
  EXPECT_EQ(r.rows[1].verdict, "slower") << r.rows[1].reason;
  EXPECT_EQ(r.exit_code, kCompareSlower);
}

TEST(CompareParts, TheReportFormsEscapeWhatAResultFileSays) {
  runners::CompareCase hostile = timed_case("BM_<img src=x>|@team\x1b[31m", kBase);
  runners::CompareCase slow = hostile;
  slow.times.samples_ns = kSlow;
  slow.times.median_ns = kSlow.front();
  CompareReport r =
      compare_inputs(input_of({hostile}), input_of({slow}), 0.05, {}, 0.95, {}, false);
  r.rows[0].reason += " <script>alert(1)</script> [link](http://x) @team";
  std::ostringstream md;
  print_compare_report(r, CompareFormat::Markdown, md);
  EXPECT_EQ(md.str().find("<script>"), std::string::npos) << md.str();
  EXPECT_EQ(md.str().find("[link]("), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("&lt;script&gt;"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("\\|@team"), std::string::npos) << md.str();  // the id's pipe
  std::ostringstream xml;
  print_compare_report(r, CompareFormat::Junit, xml);
  EXPECT_EQ(xml.str().find("<img"), std::string::npos) << xml.str();
  EXPECT_EQ(xml.str().find('\x1b'), std::string::npos);
  EXPECT_NE(xml.str().find("&lt;img src=x&gt;"), std::string::npos) << xml.str();
  std::ostringstream table;
  print_compare_report(r, CompareFormat::Table, table);
  EXPECT_EQ(table.str().find('\x1b'), std::string::npos) << "no escape sequence reaches a terminal";
  std::ostringstream js;
  print_compare_report(r, CompareFormat::Json, js);
  EXPECT_NE(js.str().find("\"verdict\": \"slower\""), std::string::npos) << js.str();
}

}  // namespace
}  // namespace kernelwatch::daemon
