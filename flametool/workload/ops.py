"""The built-in operations (``--op``): what each does, the shape it takes, and the sizes compare, sweep and the
atlas use by default, as data.

A shape is a list of positive integers: M,K,N (three) for matmul, and N elements or R,C (one or two) for
every other op. So the number of figures alone tells a product from an array (record.size_name and
sweep.edge read it so).

Sizes. ``host_bound`` is the size compare samples at when the requested one is not host-bound, and the one
the atlas samples at: the largest size whose GPU work stays well under any library's launch cost on the H200
(a 1024^3 float16 GEMM takes a few microseconds there, a pass over 2^20 float16 elements about one, a 2^16
complex FFT a few, against 15-50 us of host time per call), so that what is timed and sampled is the launch
path and not a degenerate one-element kernel. On the CPU the sizes are small for the same reason: the call's
own overhead, not the arithmetic, is what is compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Op:
    name: str
    does: str  # what step() does, in words
    output: str  # where the result goes: the fairness list says it
    ranks: tuple[int, ...]  # how many figures a shape of this op has
    host_bound: dict[str, tuple[int, ...]]  # "cuda" / "cpu": the atlas's size (and the sample size on CUDA)
    ladder: dict[str, tuple[tuple[int, ...], ...]]  # "cuda" / "cpu": sweep's default sizes

    def shape_help(self) -> str:
        return "M,K,N" if self.ranks == (3,) else "N elements or R,C"


def _squares(first: int, count: int, factor: int = 2) -> tuple[tuple[int, ...], ...]:
    return tuple((n, n, n) for n in (first * factor**i for i in range(count)))


def _counts(first: int, last: int, factor: int = 4) -> tuple[tuple[int, ...], ...]:
    return tuple((first * factor**i,) for i in range(int(round(math.log(last / first, factor))) + 1))


SEED_SHAPE = (65536, 24576, 12288)  # the seed issue's product
ELEMENTS_CUDA = _counts(2**10, 2**28)  # 1 Ki to 256 Mi elements (512 MiB of float16 an operand)
ELEMENTS_CPU = _counts(2**6, 2**18)

OPS: dict[str, Op] = {o.name: o for o in (
    Op("matmul", "out = a @ b (a is MxK, b is KxN)", "into a preallocated out (jax: a new array each call)", (3,),
       {"cuda": (1024, 1024, 1024), "cpu": (64, 64, 64)},
       # from a product the launch dwarfs to one the GPU needs milliseconds for (on the H200, fp16: 64^3 is
       # host-bound for every library, 16384^3 takes about 13 ms), then the seed's own; on the CPU from 8 to a
       # size that already takes milliseconds of BLAS
       {"cuda": _squares(64, 9) + (SEED_SHAPE,), "cpu": _squares(8, 7)}),
    Op("add", "out = a + b, elementwise", "into a preallocated out (jax: a new array each call)", (1, 2),
       {"cuda": (2**20,), "cpu": (4096,)}, {"cuda": ELEMENTS_CUDA, "cpu": ELEMENTS_CPU}),
    Op("scale", "a * 2.0, elementwise", "a new array each call, in every library (an allocation a call)", (1, 2),
       {"cuda": (2**20,), "cpu": (4096,)}, {"cuda": ELEMENTS_CUDA, "cpu": ELEMENTS_CPU}),
    Op("sum", "the sum of every element of a (a full reduction to one value)", "a new 0-d array each call", (1, 2),
       {"cuda": (2**20,), "cpu": (4096,)}, {"cuda": ELEMENTS_CUDA, "cpu": ELEMENTS_CPU}),
    Op("copy", "a transposed array made contiguous (a.T copied to C order; N elements are laid out as R x C, "
               "R the largest divisor of N up to its square root)", "a new array each call", (1, 2),
       {"cuda": (1024, 1024), "cpu": (64, 64)}, {"cuda": ELEMENTS_CUDA, "cpu": ELEMENTS_CPU}),
    Op("fft", "a 1-D complex FFT along the last axis (a + ib as complex64; complex128 for float64)",
       "a new array each call", (1, 2),
       {"cuda": (2**16,), "cpu": (1024,)}, {"cuda": _counts(2**10, 2**26), "cpu": ELEMENTS_CPU}),
)}
DEFAULT_OP = "matmul"


def get(name: str, option: str = "--op") -> Op:
    from ..errors import FlametoolError

    if name not in OPS:
        raise FlametoolError(f"{option} {name!r}: choose from {', '.join(OPS)}")
    return OPS[name]


def kind(device: str) -> str:
    return "cpu" if device == "cpu" else "cuda"


def host_bound_shape(op: str, device: str) -> list[int]:
    return list(OPS[op].host_bound[kind(device)])


def ladder(op: str, device: str) -> list[list[int]]:
    return [list(s) for s in OPS[op].ladder[kind(device)]]


def elements(shape: list[int]) -> int:
    return math.prod(shape)


def as_matrix(shape: list[int]) -> tuple[int, int]:
    """A shape as rows x columns: R,C as given; N as R x N/R, R the largest divisor of N up to its square root
    (2^20 -> 1024 x 1024; a prime N -> 1 x N)."""
    if len(shape) == 2:
        return shape[0], shape[1]
    n = shape[0]
    r = next(d for d in range(math.isqrt(n), 0, -1) if n % d == 0)
    return r, n // r
