// The daemon's deadlines (a request header's, a body's, an idle connection's, the notifier's
// retries) are Asio timers. A timer that is already due when Asio arms its reactor is armed as
// "fire at absolute time 1 ns" on a CLOCK_MONOTONIC timerfd. libfaketime 0.9.10, which .ci/run
// uses to run these suites under shifted wall clocks, shifts every absolute timerfd value as if it
// were CLOCK_REALTIME, so that timer fired 2 days late under -2d and never under +400d: the
// header-deadline test timed out now and then. .ci/run preloads .ci/monotonic_passthrough.c ahead of
// libfaketime; this test fails under faketime without it.
#include <chrono>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace kernelwatch::http {
namespace {

TEST(AsioTimer, ATimerAlreadyDueWhenArmedFires) {
  boost::asio::io_context io;
  boost::asio::steady_timer timer(io);
  timer.expires_after(std::chrono::milliseconds(0));
  bool fired = false;
  timer.async_wait([&fired](const boost::system::error_code& ec) { fired = !ec; });
  // run_for is the bound of a test that would otherwise hang, not a synchronization: the handler
  // runs at once or the test fails.
  io.run_for(std::chrono::seconds(10));
  EXPECT_TRUE(fired);
}

}  // namespace
}  // namespace kernelwatch::http
