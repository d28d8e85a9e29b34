"""User cases for tests/test_process_hygiene.py: cases whose processes leave the child's process group, and a
step() that never returns."""

import os
import subprocess
import time

from run_fault_cases import _matmul  # the case's folder is on sys.path in the child


def setsid_case(m, k, n, dtype, device):
    """Starts a process in a session of its own (out of the child's process group), then measures."""
    subprocess.Popen(["setsid", "sleep", "600"])
    return _matmul(m, k, n, dtype)


def double_fork_case(m, k, n, dtype, device):
    """A daemon's double fork: the first child leaves the session (os.setsid) and exits, its own child runs on,
    an orphan of no process group of the run."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "601"])
        os._exit(0)
    os.waitpid(pid, 0)
    return _matmul(m, k, n, dtype)


def escaping_slow_case(m, k, n, dtype, device):
    """Starts a process of its own session, then takes its time setting up (a test stops the run meanwhile)."""
    subprocess.Popen(["setsid", "sleep", "602"])
    print("escaping_slow_case: setting up", flush=True)
    time.sleep(120)
    raise AssertionError("the test should have stopped this case")


def never_returns(m, k, n, dtype, device):
    """step() sleeps for ever: the first warm-up call never comes back."""
    def step():
        time.sleep(1e9)

    return step, lambda: None


def segfault_case(m, k, n, dtype, device):
    """Dies of SIGSEGV while it sets up, writing nothing."""
    import ctypes

    ctypes.string_at(0)


def always_fails(m, k, n, dtype, device):
    """Cannot be built at any size."""
    raise ValueError(f"no {m}x{k}x{n} here")


def allocates_too_much(m, k, n, dtype, device):
    """The factory's own allocation fails (an exabyte), whatever the shape."""
    import numpy as np

    np.empty(2**60, dtype=np.uint8)
