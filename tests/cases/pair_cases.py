"""Three user cases for the chosen-pairs test: p4 is p3 plus a busy-wait in a function nothing else has, p1
the first case (the run's default pair would be p1 and p3)."""

import time

import numpy as np


def _operands(m, k, n, dtype):
    rng = np.random.default_rng(0)
    return rng.random((m, k)).astype(dtype), rng.random((k, n)).astype(dtype), np.empty((m, n), dtype=dtype)


def pair_busy_wait_15us() -> None:
    end = time.perf_counter() + 15e-6
    while time.perf_counter() < end:
        pass


def p1(m, k, n, dtype, device):
    a, b, out = _operands(m, k, n, dtype)
    return (lambda: np.matmul(a, b, out=out)), (lambda: None)


def p3(m, k, n, dtype, device):
    a, b, out = _operands(m, k, n, dtype)

    def step():
        np.matmul(a, b, out=out)

    return step, lambda: None


def p4(m, k, n, dtype, device):
    a, b, out = _operands(m, k, n, dtype)

    def step():
        np.matmul(a, b, out=out)
        pair_busy_wait_15us()

    return step, lambda: None
