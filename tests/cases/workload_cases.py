"""Workloads for tests/test_workloads.py: FUNC(xp, shape) -> (fn, inputs), fn written once against the array API
(`scaled_exp_sum` runs on numpy and torch), and workloads that are wrong in one way each."""

import numpy as np


def scaled_exp_sum(xp, shape=(16, 32)):
    """exp(a * b) summed down the columns, plus one."""

    def fn(a, b):
        c = a * b
        d = xp.exp(c)
        e = xp.sum(d, axis=0)
        return e + 1.0

    rng = np.random.default_rng(1)
    return fn, [rng.random(shape), rng.random(shape)]


def numpy_only(xp, shape=(8,)):
    def fn(a):
        b = a * 2.0
        return xp.polyval(b, a)  # numpy has polyval; the array API (and torch's namespace) does not

    return fn, [np.ones(shape)]


def writes_in_place(xp, shape=(8,)):
    def fn(a):
        a[0] = 1.0  # JAX's arrays are immutable
        return a

    return fn, [np.ones(shape)]


def lists_not_arrays(xp, shape=(4,)):
    return (lambda a: a), [[1.0, 2.0, 3.0, 4.0]]


def no_shape(xp):
    return (lambda: None), []


def fn_wants_a_keyword(xp, shape=(4,)):
    import numpy as np

    def fn(a, *, scale):
        return a * scale

    return fn, [np.ones(shape, dtype=np.float32)]


def fn_takes_fewer(xp, shape=(4,)):
    import numpy as np

    def fn(a):
        return a + 1

    return fn, [np.ones(shape, dtype=np.float32), np.ones(shape, dtype=np.float32)]


def fn_alone(xp, shape=(4,)):
    return lambda a: a


def raises(xp, shape=(4,)):
    raise RuntimeError("cannot make the inputs")


def exits(xp, shape=(4,)):
    import sys

    sys.exit(3)  # flametool exited 3, silently


def needs_a_shape(xp, shape):
    return (lambda a: a + 1.0), [np.ones(shape)]


def fails_everywhere(xp, shape=(4,)):
    def fn(a):
        raise ValueError("no library runs this step")

    return fn, [np.ones(shape)]


def scalar_shape(xp, shape=16):
    return (lambda a: a + 1.0), [np.ones(shape)]


def zero_in_shape(xp, shape=(16, 0)):
    return (lambda a: a + 1.0), [np.ones(shape)]


def shape_keyword_only(xp, *, shape=(4,)):
    return (lambda a: a + 1.0), [np.ones(shape)]


def _polyval_of_twice(xp, a, scale):
    b = a * scale
    return xp.polyval(a, b)  # a helper fn calls through functools.partial


def partial_numpy_only(xp, shape=(8,)):
    import functools

    return functools.partial(_polyval_of_twice, xp, scale=2.0), [np.ones(shape)]
