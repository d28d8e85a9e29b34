"""A planted cost: numpy's matmul plus a known busy-wait in a function with a name nothing else has.

The analysis must find `planted_busy_wait_20us` in the diff against plain numpy at about PLANTED_US
microseconds per call. It spins on the clock rather than sleeping so that the time is CPU time on this
thread, which is what py-spy samples and the timed loop measures."""

import time

import numpy as np

PLANTED_US = 20.0


def planted_busy_wait_20us() -> None:
    end = time.perf_counter() + PLANTED_US * 1e-6
    while time.perf_counter() < end:
        pass


def numpy_plus_planted(m, k, n, dtype, device):
    rng = np.random.default_rng(0)
    a = rng.random((m, k), dtype=np.float32).astype(dtype)
    b = rng.random((k, n), dtype=np.float32).astype(dtype)
    out = np.empty((m, n), dtype=dtype)
    matmul = np.matmul

    def step():
        matmul(a, b, out=out)
        planted_busy_wait_20us()

    return step, lambda: None
