"""A case with a worker thread busy beside the caller during its loop (tests/test_counts.py: the threads other
than the caller get their own time per call and stacks)."""

import threading
import time

import numpy as np


def spin_beside(shape, dtype, device):
    a = np.ones((8, 8), dtype=dtype)
    out = np.empty_like(a)
    matmul = np.matmul

    big = np.ones((128, 128))

    def worker_spin():
        # busy in BLAS, which lets go of the GIL: the worker's CPU time does not wait on the caller's loop (a pure
        # Python spin got the GIL a few times a switch interval, on a loaded host none at all in some loops), and
        # the caller keeps the GIL it needs; the sleep, about twice the product, leaves the caller a CPU
        while True:
            np.dot(big, big)
            time.sleep(0.001)

    threading.Thread(target=worker_spin, name="spinner", daemon=True).start()

    def step():
        matmul(a, a, out=out)

    return step, lambda: None
