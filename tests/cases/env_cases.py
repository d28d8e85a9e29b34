"""The anchor of tests/test_envs.py: numpy's own product through np.dot, which the planted wrapper (around
np.matmul) leaves alone. The same BLAS call as the numpy case, so a process's speed moves both alike."""

import numpy as np


def dot(shape, dtype, device):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a, b = rng.random((m, k), dtype=np.float32).astype(dtype), rng.random((k, n), dtype=np.float32).astype(dtype)
    out = np.empty((m, n), dtype=dtype)
    dot_ = np.dot

    def step():
        dot_(a, b, out=out)

    return step, lambda: None
