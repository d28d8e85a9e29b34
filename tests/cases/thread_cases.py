"""A case with a worker thread busy beside the caller during its loop (tests/test_counts.py: the threads other
than the caller get their own time per call and stacks)."""

import threading

import numpy as np


def spin_beside(shape, dtype, device):
    a = np.ones((8, 8), dtype=dtype)
    out = np.empty_like(a)
    matmul = np.matmul

    def worker_spin():
        x = 0
        while True:
            for i in range(1000):
                x += i

    threading.Thread(target=worker_spin, name="spinner", daemon=True).start()

    def step():
        matmul(a, a, out=out)

    return step, lambda: None
