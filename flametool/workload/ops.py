"""The built-in operations (``--op``), one row each: what it does, the shape it takes, the sizes compare, sweep and
the atlas use by default, the operands it reads, and the function its step calls. A new op is its
row in `OPS` (and its test); the built-ins (builtins.py) make LIBRARY_OP of it for every library (libraries.py).

The step. ``call`` is how a library's step calls the op, written as the step's own line (libraries.kit_step
holds one step per form: ``f(a)``, ``f(a, b, out=out)``, ``f(a.T)``, ``a * 2.0``), and ``xp_name`` what ``f``
is: the function's name in an array library's namespace (``fft.fft``: numpy.fft.fft, torch.fft.fft,
cupy.fft.fft, jax.numpy.fft.fft), looked up there when a case is built (so nothing here imports a library).
`INFIX` marks a form that is Python's operator on the library's own array, with no function. A library that
spells an op otherwise says so in its own row (libraries.py: torch's copy is ``Tensor.contiguous``; jax, which
jits the op and has no ``out=``, gives the function jax.jit compiles where the name is not one). matmul's steps
for numpy, torch and cupy are factories of their own (numpy_matmul, torch_mm, cupy_matmul: the names run.json
records), so its ``xp_name`` is jax's.

A shape is a list of positive integers: M,K,N (three) for matmul, and N elements or R,C (one or two) for
every other op. So the number of figures alone tells a product from an array among the ops (sweep.edge reads it
so). A workload's shape is its FUNC's, of any number of figures, so a size is named by what the run measured
(record.size_name): N for matmul's cube N,N,N (`by_n`), every figure otherwise (a workload's 64x64x64 is three
dimensions, never 64).

Sizes. ``host_bound`` is the size compare samples at when the requested one is not host-bound, and the one
the atlas samples at: the largest size whose GPU work stays well under any library's launch cost on the H200
(a 1024^3 float16 GEMM takes a few microseconds there, a pass over 2^20 float16 elements about one, a 2^16
complex FFT a few, against 15-50 us of host time per call), so that what is timed and sampled is the launch
path and not a degenerate one-element kernel. On the CPU the sizes are small for the same reason: the call's
own overhead, not the arithmetic, is what is compared.
"""

from __future__ import annotations

import math
import importlib
from dataclasses import dataclass
from typing import Any

# the step's forms (libraries.kit_step): how a library's step calls `f`
CALLS = ("f(a)", "f(a, b, out=out)", "f(a.T)", "a * 2.0")
# what an op reads of the built-in operands (inputs.op_operands): matmul's a (MxK) and b (KxN); N values of a, or
# of a and b; a and b as one complex array a + ib
READS = ("a (MxK), b (KxN)", "a", "a, b", "a + ib")
INFIX = "the operator itself"  # an `xp_name` whose form (a * 2.0) calls no function


@dataclass(frozen=True)
class Op:
    name: str
    does: str  # what step() does, in words
    output: str  # where the result goes: the fairness list says it
    ranks: tuple[int, ...]  # how many figures a shape of this op has
    host_bound: dict[str, tuple[int, ...]]  # "cuda" / "cpu": the atlas's size (and the sample size on CUDA)
    ladder: dict[str, tuple[tuple[int, ...], ...]]  # "cuda" / "cpu": sweep's default sizes
    reads: str  # one of READS
    call: str  # one of CALLS
    xp_name: str  # f: its name in an array library's namespace ("fft.fft"), or INFIX; a library's row may differ
    matrix: bool = False  # N elements laid out as R x C (as_matrix) before the op reads them
    by_n: bool = False  # a cube N,N,N (an NxN by NxN product) is named N: in sweep's tables and its LABEL@N files

    def shape_help(self) -> str:
        return "M,K,N" if self.ranks == (3,) else "N elements or R,C"


def dotted(name: str) -> Any:
    """The object a dotted name names: its package imported, then attribute by attribute (a submodule not yet
    an attribute imported on the way)."""
    head, *rest = name.split(".")
    found: Any = importlib.import_module(head)
    for i, part in enumerate(rest, 1):
        found = getattr(found, part) if hasattr(found, part) else importlib.import_module(".".join([head, *rest[:i]]))
    return found


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
       {"cuda": _squares(64, 9) + (SEED_SHAPE,), "cpu": _squares(8, 7)},
       reads="a (MxK), b (KxN)", call="f(a, b, out=out)", xp_name="matmul", by_n=True),
    Op("add", "out = a + b, elementwise", "into a preallocated out (jax: a new array each call)", (1, 2),
       {"cuda": (2**20,), "cpu": (4096,)}, {"cuda": ELEMENTS_CUDA, "cpu": ELEMENTS_CPU},
       reads="a, b", call="f(a, b, out=out)", xp_name="add"),
    Op("scale", "a * 2.0, elementwise", "a new array each call, in every library (an allocation a call)", (1, 2),
       {"cuda": (2**20,), "cpu": (4096,)}, {"cuda": ELEMENTS_CUDA, "cpu": ELEMENTS_CPU},
       reads="a", call="a * 2.0", xp_name=INFIX),
    Op("sum", "the sum of every element of a (a full reduction to one value)", "a new 0-d array each call", (1, 2),
       {"cuda": (2**20,), "cpu": (4096,)}, {"cuda": ELEMENTS_CUDA, "cpu": ELEMENTS_CPU},
       reads="a", call="f(a)", xp_name="sum"),
    Op("copy", "a transposed array made contiguous (a.T copied to C order; N elements are laid out as R x C, "
               "R the largest divisor of N up to its square root)", "a new array each call", (1, 2),
       {"cuda": (1024, 1024), "cpu": (64, 64)}, {"cuda": ELEMENTS_CUDA, "cpu": ELEMENTS_CPU},
       reads="a", call="f(a.T)", xp_name="ascontiguousarray", matrix=True),
    Op("fft", "a 1-D complex FFT along the last axis (a + ib as complex64; complex128 for float64)",
       "a new array each call", (1, 2),
       {"cuda": (2**16,), "cpu": (1024,)}, {"cuda": _counts(2**10, 2**26), "cpu": ELEMENTS_CPU},
       reads="a + ib", call="f(a)", xp_name="fft.fft"),
)}
DEFAULT_OP = "matmul"


def get(name: str, option: str = "--op") -> Op:
    from ..errors import FlametoolError

    if name not in OPS:
        raise FlametoolError(f"{option} {name!r}: choose from {', '.join(OPS)}")
    return OPS[name]


def kind(device: str) -> str:
    return "cpu" if device == "cpu" else "cuda"


def by_n(op: str) -> bool:
    """A run of `op` (RunConfig.operation: an op, or a workload's name) names a cube N,N,N by N: matmul's
    square product; never a workload's shape, whose figures are its FUNC's own dimensions."""
    found = OPS.get(op)
    return found is not None and found.by_n


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
