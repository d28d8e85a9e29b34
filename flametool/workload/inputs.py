"""The built-in cases' operands: the same values for every library, made once per process from a fixed seed
(values.uniform) and kept for the cases built beside each other; which of them an op reads (its row's
``reads``, ops.py); and the marks a built-in step carries (made_by: its operands, how they were made, its out).

On the H200 the same GEMM runs at a speed that depends on the values (4096^3 float16: uniform values 204-206 us,
normal ones 215-217 us, whichever library), so every built-in case multiplies the same ones and run.json can
tell (child.fingerprint)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

from . import ops
from .cases import Step

if TYPE_CHECKING:
    from . import values

# The built-in cases' operands: uniform values in [0, 1) made from this seed (run.json's config.operand_seed) by
# values.uniform, a from stream 0 and b from stream 1, as float32, then rounded to the case's dtype.
OPERAND_SEED = 0


def operands_made(dtype: str) -> str:
    """How the built-in cases' operands are made, in words (run.json's operand record)."""
    from . import values  # numpy: imported when a case is built, not with the command line

    return values.made(dtype, OPERAND_SEED) + ": a stream 0, b stream 1"


_made: dict[tuple, values.Ahead | values.Apart] = {}
# Device copies of those values that a library made in this process, by where the host array's bytes are and where
# the copy went (on_device): the next library of the process copies them device to device instead of from the host
# again. At the seed's shape torch's copy of the 3.8 GB from the host took 0.75 s on the H200 host, a copy on the
# device a few milliseconds; the bytes are the same (the run's fingerprints of each case's operands say so).
_on_device: dict[tuple, Any] = {}


# At least this many values (the seed's product has 1.9 billion) are made in a process of their own when the caller
# asks (apart): a fresh timing process, about to import its libraries beside them (values.Apart says why).
APART_VALUES = 10**8


def prefetch_operands(m: int, k: int, n: int, dtype: str, apart: bool = False) -> None:
    """Start making host_operands(m, k, n, dtype) in the background (a process that is about to import its
    libraries: at the seed's shape both take seconds); with `apart`, at APART_VALUES or more, in a process of
    their own (values.Apart), where this one can fork."""
    from . import values

    key = (m, k, n, dtype)
    if key not in _made:
        for old in _made.values():
            if isinstance(old, values.Apart):
                old.discard()
        _made.clear()
        _on_device.clear()
        if apart and m * k + k * n >= APART_VALUES and values.Apart.can_fork():
            try:
                _made[key] = values.Apart([((m, k), dtype, OPERAND_SEED, 0), ((k, n), dtype, OPERAND_SEED, 1)])
                return
            except OSError:  # no fork here (a process limit): its own threads make them
                pass
        _made[key] = values.Ahead(lambda: _make(m, k, n, dtype), background=m * k + k * n >= values.CHUNK)


def _make(m: int, k: int, n: int, dtype: str) -> tuple[Any, Any]:
    from . import values

    return values.uniform((m, k), dtype, OPERAND_SEED, stream=0), values.uniform((k, n), dtype, OPERAND_SEED, stream=1)


def prefetch_shape(shape: list[int], dtype: str, apart: bool = False) -> None:
    """prefetch_operands() of an op's shape: M,K,N; or N elements (or R,C), whose a and b op_operands takes as a
    1 x N and an N x 1 host_operands."""
    if len(shape) == 3:
        prefetch_operands(shape[0], shape[1], shape[2], dtype, apart)
    else:
        prefetch_operands(1, math.prod(shape), 1, dtype, apart)


def host_operands(m: int, k: int, n: int, dtype: str) -> tuple[Any, Any]:
    """a (m x k) and b (k x n) as numpy arrays, the same values for every built-in case: in `dtype` where numpy
    has it, else float32 for the library to round (bfloat16). Kept for the last shape asked, so the cases built
    side by side in one process share one generation (at the seed's shape, 1.9 billion values)."""
    prefetch_operands(m, k, n, dtype)
    return cast("tuple[Any, Any]", _made[(m, k, n, dtype)].get())


def _where(host: Any, device: str) -> tuple:
    """A host array's bytes (its address, shape, strides and dtype) and the device a copy of them is on."""
    face = host.__array_interface__
    return face["data"][0], tuple(face["shape"]), face.get("strides"), face["typestr"], device


def keep_on_device(host: Any, device: str, array: Any) -> None:
    """Say that `array` (a CUDA array of any library, C-contiguous) holds host's bytes on `device` (cuda:N), for the
    next library's case of this process (on_device). Kept while the host values are (the last shape asked)."""
    _on_device[_where(host, device)] = array


def on_device(host: Any, device: str) -> Any | None:
    """A CUDA array another library of this process made of host's bytes on `device` (keep_on_device), or None."""
    return _on_device.get(_where(host, device))


def made_by(step: Step, dtype: str, a: Any, b: Any, out: Any) -> Step:
    """Mark a built-in step's operands (the arrays it reads), how they were made, and the array it writes."""
    setattr(step, "operands", (a, b))
    setattr(step, "operands_made", operands_made(dtype))
    setattr(step, "out", out)
    return step


def op_operands(op: str, shape: list[int], dtype: str) -> tuple:
    """The host arrays an op reads (its row's ``reads``), made by host_operands from the same values every library
    gets (values.uniform, a from stream 0 and b from stream 1; kept for the cases built beside it): matmul's a
    (MxK) and b (KxN); for the other ops N values of each, in the op's shape (as a matrix where the row says so,
    ops.as_matrix); a + ib as one complex array."""
    row = ops.OPS[op]
    if row.reads == "a (MxK), b (KxN)":
        return host_operands(shape[0], shape[1], shape[2], dtype)
    import numpy as np

    a, b = host_operands(1, math.prod(shape), 1, dtype)
    dims = ops.as_matrix(shape) if row.matrix else tuple(shape)
    a, b = a.reshape(dims), b.reshape(dims)
    if row.reads == "a + ib":
        z = np.empty(dims, _complex(dtype))
        z.real, z.imag = a, b
        return (z,)
    return (a, b) if row.reads == "a, b" else (a,)


def _complex(dtype: str) -> str:
    return "complex128" if dtype == "float64" else "complex64"


def op_operands_made(op: str, dtype: str) -> str:
    """operands_made() of `op`: which of host_operands' values it reads (op_operands), and how."""
    reads = ops.OPS[op].reads
    if reads == "a (MxK), b (KxN)":
        return operands_made(dtype)
    used = {"a, b": "a and b, N values each",
            "a + ib": f"a and b, N values each, as one {_complex(dtype)} array a + ib"}
    return f"{operands_made(dtype)}; read: {used.get(reads, 'a, N values')}"
