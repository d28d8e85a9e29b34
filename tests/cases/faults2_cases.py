"""User cases for tests/test_faults2_a.py: cases that start processes of their own, write to the message pipe
that is not theirs, or write much output."""

import os
import subprocess
import sys
import time


def _matmul(m, k, n, dtype):
    import numpy as np

    a = np.ones((m, k), dtype=dtype)
    b = np.ones((k, n), dtype=dtype)
    out = np.empty((m, n), dtype=dtype)

    def step():
        np.matmul(a, b, out=out)

    return step, lambda: None


def spawning_case(m, k, n, dtype, device):
    """Starts a process that would run for 13 minutes, then measures as usual."""
    subprocess.Popen(["sleep", "777"])
    return _matmul(m, k, n, dtype)


def spawning_slow_case(m, k, n, dtype, device):
    """Starts a process, then takes its time setting up (a test stops the run meanwhile)."""
    subprocess.Popen(["sleep", "777"])
    print("spawning_slow_case: setting up", flush=True)
    time.sleep(120)
    raise AssertionError("the test should have stopped this case")
