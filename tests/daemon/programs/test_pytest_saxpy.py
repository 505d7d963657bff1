# A real pytest-benchmark suite (Debian's python3-pytest-benchmark) that the command e2e test
# runs through the daemon. It reads a slowdown factor from the file named by KW_SLOWDOWN_FILE
# (absent or unreadable: 1) and repeats its work that many times, so a test can make it slower
# without changing its command, its environment or its key.
import os

import pytest


def slowdown():
    try:
        with open(os.environ["KW_SLOWDOWN_FILE"]) as f:
            return max(1, int(f.read().strip()))
    except (KeyError, OSError, ValueError):
        return 1


def saxpy(n, repeat):
    total = 0.0
    for _ in range(repeat):
        for i in range(n):
            total += 1.0001 * i
    return total


@pytest.mark.parametrize("n", [2000, 8000])
def test_saxpy(benchmark, n):
    repeat = slowdown()
    benchmark(saxpy, n, repeat)
