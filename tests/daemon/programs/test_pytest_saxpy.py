# A real pytest-benchmark suite (Debian's python3-pytest-benchmark) that the command e2e test
# runs through the daemon. It reads a slowdown factor from the file named by KW_SLOWDOWN_FILE
# (absent or unreadable: 1; a decimal such as 1.1 is allowed) and does that much work: floor(factor)
# whole passes plus one pass over round(n * fraction) values, so an integer factor repeats the work
# exactly as before, and a test can make it slower without changing its command, environment or key.
import os

import pytest


def slowdown():
    try:
        with open(os.environ["KW_SLOWDOWN_FILE"]) as f:
            factor = float(f.read().strip())
    except (KeyError, OSError, ValueError):
        return 1.0
    return factor if 1.0 <= factor <= 1e6 else 1.0


def saxpy(n, factor):
    total = 0.0
    whole = int(factor)
    for _ in range(whole):
        for i in range(n):
            total += 1.0001 * i
    for i in range(round(n * (factor - whole))):
        total += 1.0001 * i
    return total


@pytest.mark.parametrize("n", [2000, 8000])
def test_saxpy(benchmark, n):
    repeat = slowdown()
    benchmark(saxpy, n, repeat)
