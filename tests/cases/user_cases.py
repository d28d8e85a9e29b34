"""User cases for the tests: the same protocol as the built-in ones."""

import time

import numpy as np


def add_case(m, k, n, dtype, device):
    a = np.random.default_rng(1).random((m, n)).astype(dtype)
    b = np.random.default_rng(2).random((m, n)).astype(dtype)
    out = np.empty_like(a)

    def step():
        np.add(a, b, out=out)

    return step, lambda: None


def raising_case(m, k, n, dtype, device):
    print("raising_case: what it printed before it raised")  # found through the log its error names
    raise ValueError("this factory refuses to build")


def step_raises(m, k, n, dtype, device):
    """Builds, and its step raises at its first call (a broken build of a library: numpy.matmul replaced by one
    that raises)."""
    def step():
        raise RuntimeError("broken build")

    return step, lambda: None


def step_reads_stdin(m, k, n, dtype, device):
    """Its step asks for a line on stdin (a script's `input()` left in a case)."""
    def step():
        input("go on? ")

    return step, lambda: None


def factory_reads_stdin(m, k, n, dtype, device):
    """Reads all of stdin while it builds (what it reads is not used), then adds as add_case does."""
    import sys

    sys.stdin.read()
    return add_case(m, k, n, dtype, device)


def not_a_pair(m, k, n, dtype, device):
    return 42


def spin_case(m, k, n, dtype, device):
    def step():
        end = time.perf_counter() + 20e-6
        while time.perf_counter() < end:
            pass

    return step, lambda: None


def fails_after_first(m, k, n, dtype, device):
    """Builds in the first process only: counts its builds in the file $FLAMETOOL_TEST_BUILDS names."""
    import os
    from pathlib import Path

    builds = Path(os.environ["FLAMETOOL_TEST_BUILDS"])
    count = int(builds.read_text() or 0) + 1 if builds.exists() else 1
    builds.write_text(str(count))
    if count > 1:
        raise RuntimeError(f"build {count} refused")
    return add_case(m, k, n, dtype, device)


def fails_from_128(m, k, n, dtype, device):
    """A case that cannot be built at 128 and above (as a GPU runs out of memory at the largest sizes)."""
    if m >= 128:
        raise ValueError(f"refuses {m}x{k}x{n}")
    return add_case(m, k, n, dtype, device)


NAP_SECONDS = 0.0005


def napping_case(m, k, n, dtype, device):
    """Each call sleeps half a millisecond: a loop that lasts on the clock and costs next to no CPU, for a test that
    needs a process still timing (or started beside another) when it acts; a busy loop as long costs the suite's
    other workers its CPU (numpy's 64^3 product at 400,000 calls: 2.4 s of a core per process)."""
    def step():
        time.sleep(NAP_SECONDS)

    return step, lambda: None


def step_exits(m, k, n, dtype, device):
    """Its step calls sys.exit(0): the child ended 'with code 0 before reporting', the step not named."""
    import sys

    def step():
        sys.exit(0)

    return step, lambda: None


def step_raises_keyboard_interrupt(m, k, n, dtype, device):
    def step():
        raise KeyboardInterrupt

    return step, lambda: None


def factory_raises_keyboard_interrupt(m, k, n, dtype, device):
    raise KeyboardInterrupt
