"""A case with a worker thread busy beside the caller during its loop (tests/test_counts.py: the threads other
than the caller get their own time per call and stacks)."""

import threading
import time

import numpy as np


def spin_beside(shape, dtype, device):
    a = np.ones((8, 8), dtype=dtype)
    out = np.empty_like(a)
    matmul = np.matmul

    def worker_spin():  # busy a fraction of the time, so that the caller's loop still gets the GIL and a CPU
        x = 0
        while True:
            for i in range(2000):
                x += i
            time.sleep(0.0002)

    threading.Thread(target=worker_spin, name="spinner", daemon=True).start()

    def step():
        matmul(a, a, out=out)

    return step, lambda: None
