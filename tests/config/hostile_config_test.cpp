// Hostile config files through the real `kernelwatch daemon --config` (issue #15): each is
// refused at start with a clear message naming the problem, and the process exits 1 (never a
// crash, never a daemon that starts with a guess).
#include <string>

#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

testing::ProcessResult start_with(const testing::TempDir& dir, const std::string& config) {
  testing::write_file(dir / "kernelwatch.json", config);
  return testing::run_kernelwatch({"daemon", "--config", (dir / "kernelwatch.json").string()});
}

std::string minimal(const testing::TempDir& dir, const std::string& extra) {
  return "{\"storage\": {\"path\": \"" + (dir / "kw.db").string() +
         "\"}, \"http\": {\"listen\": \"127.0.0.1:0\"}, \"benchmarks\": []" + extra + "}";
}

TEST(HostileConfig, ANumberBeyondADoubleIsRefused) {
  testing::TempDir dir;
  const auto r = start_with(dir, minimal(dir, ", \"detector\": {\"window\": 1e400}"));
  EXPECT_EQ(r.exit_code, 1) << r.err;  // once an uncaught exception (abort)
  EXPECT_NE(r.err.find("out of range"), std::string::npos) << r.err;
}

TEST(HostileConfig, DeepNestingIsRefused) {
  testing::TempDir dir;
  const auto r = start_with(
      dir, minimal(dir, ", \"x\": " + std::string(65'000, '[') + std::string(65'000, ']')));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("line 1: nesting deeper than 256 levels"), std::string::npos) << r.err;
}

TEST(HostileConfig, ADuplicateKeyIsRefusedWithItsPlace) {
  testing::TempDir dir;
  const auto r = start_with(
      dir, minimal(dir, ", \"schedule\": {\"interval\": \"15m\", \"interval\": \"1m\"}"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("duplicate key: \"interval\" appears twice in schedule"), std::string::npos)
      << r.err;
  const auto top = start_with(dir, minimal(dir, ", \"backend\": \"cpu\", \"backend\": \"cuda\""));
  EXPECT_EQ(top.exit_code, 1) << top.err;
  EXPECT_NE(top.err.find("\"backend\" appears twice in the top-level object"), std::string::npos)
      << top.err;
}

TEST(HostileConfig, AnIntervalTooLongForTheTimerIsRefused) {
  testing::TempDir dir;
  // 106,752 days once overflowed the timer: cycles back to back.
  const auto r = start_with(dir, minimal(dir, ", \"schedule\": {\"interval\": \"106752d\"}"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("schedule.interval: 106752d is longer than 365d"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace kernelwatch
