"""The built-in workloads (``--workload mlp``, ``atlas --workloads mlp,softmax``), each a FUNC(xp, shape) -> (fn,
inputs) written once against the array API, as a user's workload is (workloads.py makes a case of it per
library), and its row in `WORKLOADS`: what it does, what its shape means, its default shape per device (one
where the host's launch cost, not the arithmetic, sets the pace) and its sweep's ladder.

The inputs are NumPy arrays of seeded values, so every library's case reads the same bytes (cast to the
case's --dtype); fn returns its result (JAX has no in-place update, so adam returns the new parameters and
moments rather than writing them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

# numpy is imported where the inputs are made: the command line reads WORKLOADS (for --help), which must not wait
# for numpy (issue 42)
if TYPE_CHECKING:
    import numpy as np


def _values(*shapes: tuple[int, ...]) -> list[np.ndarray]:
    import numpy as np

    rng = np.random.default_rng(0)
    return [rng.random(s, dtype=np.float32) for s in shapes]


def mlp(xp: Any, shape: tuple[int, ...] = (32, 64, 64)) -> tuple[Callable[..., Any], list[np.ndarray]]:
    """One linear layer with its bias and activation, reduced: sum(relu(x @ w + b)); shape B,I,O."""
    batch, width, out = shape

    def fn(x, w, b):
        h = xp.matmul(x, w)
        h = h + b
        h = xp.maximum(h, 0.0)
        return xp.sum(h)

    return fn, _values((batch, width), (width, out), (out,))


def softmax(xp: Any, shape: tuple[int, ...] = (64, 256)) -> tuple[Callable[..., Any], list[np.ndarray]]:
    """A softmax along the rows: exp(x - max) / sum; shape R,C."""

    def fn(x):
        m = xp.max(x, axis=-1, keepdims=True)
        e = xp.exp(x - m)
        s = xp.sum(e, axis=-1, keepdims=True)
        return e / s

    return fn, _values(tuple(shape))


def layernorm(xp: Any, shape: tuple[int, ...] = (64, 256)) -> tuple[Callable[..., Any], list[np.ndarray]]:
    """A layer norm along the rows: (x - mean) / sqrt(var + eps), scaled and shifted; shape R,C."""
    rows, cols = shape

    def fn(x, gamma, beta):
        mu = xp.mean(x, axis=-1, keepdims=True)
        var = xp.var(x, axis=-1, keepdims=True)
        xhat = (x - mu) / xp.sqrt(var + 1e-5)
        return xhat * gamma + beta

    return fn, _values((rows, cols), (cols,), (cols,))


def adam(xp: Any, shape: tuple[int, ...] = (8, 1024)) -> tuple[Callable[..., Any], list[np.ndarray]]:
    """One Adam update of N parameter tensors of mixed sizes (S, S/2, S/4, S/8 in turn), written functionally:
    the new parameters and moments are returned; shape N,S. The inputs are the parameters, gradients and both
    moments, N of each."""
    n, size = shape
    sizes = [(max(1, size >> (i % 4)),) for i in range(n)]
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8

    def fn(*arrays):
        params, grads, ms, vs = (arrays[i * n:(i + 1) * n] for i in range(4))
        new = []
        for p, g, m, v in zip(params, grads, ms, vs):
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * (g * g)
            p = p - lr * (m / (1 - b1)) / (xp.sqrt(v / (1 - b2)) + eps)
            new.append((p, m, v))
        return new

    return fn, _values(*sizes * 4)


@dataclass(frozen=True)
class BuiltinWorkload:
    name: str
    does: str  # in words, for --help and the atlas
    dims: str  # what the shape's figures are
    shape: dict[str, tuple[int, ...]]  # "cuda" / "cpu": the default shape
    ladder: dict[str, tuple[tuple[int, ...], ...]]  # "cuda" / "cpu": sweep's default sizes


def _rows(first: int, count: int, rest: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    return tuple((first * 2**i, *rest) for i in range(count))


# On the H200 an MLP step at 256x1024x1024 fp16 took 47-82 us of host time per step against a few of GPU work
# (issue 40); the others at sizes whose kernels are as short. On the CPU small enough that the calls dominate.
WORKLOADS: dict[str, BuiltinWorkload] = {w.name: w for w in (
    BuiltinWorkload("mlp", "sum(relu(x @ w + b)): matmul, bias add, relu, sum", "B,I,O (x is BxI, w IxO)",
                    {"cuda": (256, 1024, 1024), "cpu": (32, 64, 64)},
                    {"cuda": _rows(64, 9, (1024, 1024)), "cpu": _rows(8, 7, (64, 64))}),
    BuiltinWorkload("softmax", "softmax along rows: max, subtract, exp, sum, divide", "R,C",
                    {"cuda": (256, 1024), "cpu": (64, 256)},
                    {"cuda": _rows(64, 10, (1024,)), "cpu": _rows(8, 7, (256,))}),
    BuiltinWorkload("layernorm", "layer norm along rows: mean, variance, normalise, scale, shift", "R,C",
                    {"cuda": (256, 1024), "cpu": (64, 256)},
                    {"cuda": _rows(64, 10, (1024,)), "cpu": _rows(8, 7, (256,))}),
    BuiltinWorkload("adam", "one Adam update of N parameter tensors of mixed sizes (functional)", "N,S (N tensors, "
                    "the largest S elements)", {"cuda": (16, 65536), "cpu": (8, 1024)},
                    {"cuda": tuple((16, 2**k) for k in range(10, 23, 2)), "cpu": tuple((8, 2**k) for k in range(6, 15, 2))}),
)}
