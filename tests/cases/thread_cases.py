"""A case with a worker thread busy beside the caller during its loop (tests/test_counts.py: the threads other
than the caller get their own time per call and stacks)."""

import threading
import time

import numpy as np


def spin_beside(shape, dtype, device):
    a = np.ones((8, 8), dtype=dtype)
    out = np.empty_like(a)
    matmul = np.matmul

    big = np.ones((192, 192))

    def worker_spin():
        # busy in BLAS, which lets go of the GIL: the worker's CPU time does not wait on the caller's loop (a pure
        # Python spin got the GIL a few times a switch interval, on a loaded host none at all in some loops), and
        # the caller keeps the GIL it needs; a short sleep leaves it a CPU too
        while True:
            np.dot(big, big)
            time.sleep(0.0002)

    threading.Thread(target=worker_spin, name="spinner", daemon=True).start()

    def step():
        matmul(a, a, out=out)

    return step, lambda: None
