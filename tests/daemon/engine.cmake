# The daemon's detection path over a real SQLite file (no process, no network).
kernelwatch_test(daemon_engine_test engine_test.cpp engine_replay_test.cpp LIBS kernelwatch::daemon
  SQLite::SQLite3)

# The real daemon against a notify socket the test owns (READY/STATUS/WATCHDOG/STOPPING), and
# `kernelwatch status` against it.
kernelwatch_test(daemon_systemd_test systemd_e2e_test.cpp LIBS kw_notifiers_test_support
  LABELS daemon)
add_dependencies(daemon_systemd_test kernelwatch)
if(SYSTEMD_FOUND)
  # The daemon was built with sd_notify: the test must run, not skip.
  target_compile_definitions(daemon_systemd_test PRIVATE KERNELWATCH_HAVE_SYSTEMD=1)
endif()

# The liger-bench runner's runs (a fake runner script) judged against imported Liger history.
kernelwatch_test(daemon_runner_engine_test runner_engine_test.cpp
  LIBS kernelwatch::daemon kernelwatch::runners)
