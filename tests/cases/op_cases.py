"""User cases of the generalised protocol: FACTORY(shape, dtype, device) for a non-matmul op, and the older
FACTORY(m, k, n, dtype, device) beside it (README's worked example is add_one)."""

import numpy as np


def add_one(shape, dtype, device):
    """a + 1 into a preallocated out, on numpy: shape is (N,) or (R, C) with --op add (or any non-matmul op)."""
    a = np.random.default_rng(1).random(shape).astype(dtype)
    out = np.empty_like(a)

    def step():
        np.add(a, 1, out=out)

    step.operands = (a,)
    step.out = out
    return step, lambda: None


def old_matmul(m, k, n, dtype, device):
    """The protocol before --op: only a matmul shape can be given to it."""
    a = np.ones((m, k), dtype)
    b = np.ones((k, n), dtype)
    out = np.empty((m, n), dtype)

    def step():
        np.matmul(a, b, out=out)

    step.out = out
    return step, lambda: None


def four_params(a, b, c, d):
    return None
