// Preloaded ahead of libfaketime in .ci/run's shifted-clock passes: timerfd_settime goes to the
// kernel unchanged. libfaketime 0.9.10 rewrites an absolute (TFD_TIMER_ABSTIME) value as a
// CLOCK_REALTIME time even on a CLOCK_MONOTONIC timerfd ("only CLOCK_REALTIME is handled" in its
// source), and Asio arms "fire now" exactly that way, so under faketime a due timer waited 2 days
// (-2d) or forever (+400d). The monotonic clock is not faked in those passes
// (FAKETIME_DONT_FAKE_MONOTONIC=1), so the kernel's own reading of the value is the right one.
// tests/daemon/asio_timer_test.cpp fails under faketime without this.
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

int timerfd_settime(int fd, int flags, const struct itimerspec* new_value,
                    struct itimerspec* old_value) {
  return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
}
