"""Cases of several source lines (issue 39), the same protocol as the built-in ones.

planted_lines: a step of four lines, one of them planted to cost PLANTED_US per call by busy-waiting (CPU
time on this thread, which py-spy samples and the timed loop measures), beside three cheap numpy lines: the
lines view must read that line as the step's hottest, at about PLANTED_US. cython_case: the step calls a
Cython module built by the test (tests/cythonbuild.py), this file copied beside it, its hot line a loop in the .pyx."""

import os
import sys
import time

import numpy as np

# 50 us, not 20: the figure is the line's share of the sampled run times the timed run's time per call, so cheap
# lines slowed in the sampled run alone (a busy neighbour while py-spy samples) take share from the plant. The CI
# machine once read 16.9 us for 20 (2026-12-05; the other three lines 5.5 us sampled against about 2.5 timed); the
# same slowing costs a 50 us plant about 7%, inside the tests' 15%
PLANTED_US = 50.0
PLANTED_TEXT = "spin(PLANTED_US)  # the planted line"


def spin(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def planted_lines(m, k, n, dtype, device):
    a = np.ones(16, dtype=dtype)

    def step():
        b = a + 1.0
        c = b * 2.0
        spin(PLANTED_US)  # the planted line
        return c.sum()

    return step, lambda: None


def _cython_step(module_name: str):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the test copies this file beside the modules
    module = __import__(module_name)

    def step():
        module.hot_busy(4000)
        module.cheap(1)

    return step, lambda: None


def cython_beside(m, k, n, dtype, device):
    """hot.pyx's module, its generated hot.c beside it (py-spy maps its frames to .pyx lines)."""
    return _cython_step("hot")


def cython_apart(m, k, n, dtype, device):
    """hot2.pyx's module, its generated hot2.c moved away (given to compare as --source)."""
    return _cython_step("hot2")
