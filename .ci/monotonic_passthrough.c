// Preloaded ahead of libfaketime in .ci/run's shifted-clock passes: waits on the monotonic clock
// go to the kernel unchanged. libfaketime 0.9.10 rewrites an absolute time as a CLOCK_REALTIME
// time even where the clock is CLOCK_MONOTONIC, which those passes do not fake
// (FAKETIME_DONT_FAKE_MONOTONIC=1), so the kernel's own reading of the value is the right one:
//  - timerfd_settime with TFD_TIMER_ABSTIME: Asio arms a timer already due as "absolute 1 ns",
//    which became 2 days late under -2d and an invalid time (the timer never fired) under +400d;
//    tests/daemon/asio_timer_test.cpp fails under faketime without this;
//  - clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME), which Python's time.sleep uses: EINVAL
//    under both shifts. Other clocks go on to libfaketime.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int timerfd_settime(int fd, int flags, const struct itimerspec* new_value,
                    struct itimerspec* old_value) {
  return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
}

int clock_nanosleep(clockid_t clock, int flags, const struct timespec* request,
                    struct timespec* remain) {
  if (clock == CLOCK_MONOTONIC) {
    return syscall(SYS_clock_nanosleep, clock, flags, request, remain) == 0 ? 0 : errno;
  }
  typedef int (*next_t)(clockid_t, int, const struct timespec*, struct timespec*);
  next_t next = (next_t)dlsym(RTLD_NEXT, "clock_nanosleep");
  return next == NULL ? ENOSYS : next(clock, flags, request, remain);
}
