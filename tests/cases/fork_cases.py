"""Cases that say which process built them (tests/test_forkserver.py): each factory appends a line to the file
$FLAMETOOL_TEST_WHO names: its pid, its parent's pid, $FLAMETOOL_TEST_SIDE (an environment's interpreter sets it)
and its parent's command line; then builds numpy's add."""

import os

import numpy as np


def record() -> None:
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/cmdline", "rb") as fh:
            command = fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        command = ""
    with open(os.environ["FLAMETOOL_TEST_WHO"], "a") as fh:
        fh.write(f"{os.getpid()} {parent} {os.environ.get('FLAMETOOL_TEST_SIDE', '-')} {command}\n")


def add(m, k, n, dtype):
    a = np.ones((m, n), dtype=dtype)
    out = np.empty_like(a)

    def step():
        np.add(a, a, out=out)

    return step, lambda: None


def who(m, k, n, dtype, device):
    record()
    return add(m, k, n, dtype)


def who_then_segfault(m, k, n, dtype, device):
    """Says who it is, then dies of SIGSEGV while it sets up."""
    import ctypes

    record()
    ctypes.string_at(0)
