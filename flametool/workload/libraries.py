"""The libraries' built-in cases: numpy, torch, cupy and jax. Each library's matmul factory (numpy_matmul,
torch_mm, cupy_matmul: the names run.json records), how it places the operands on its device and waits for it,
and its op factory: the step of any op (ops.py) from that op's row, the row's function for this library called
as the row's ``call`` says (kit_step). jax jits the row's function instead, and its matmul is that op's row.

The factories follow the case protocol (cases.py) and are loaded by the child exactly as a user's are: by
``flametool.cases:NAME`` (builtins.py says which name is which). Nothing here imports a library until a case
is built.
"""

from __future__ import annotations

from typing import Any

from . import ops
from .cases import Step, Sync, cuda_index
from .inputs import host_operands, made_by, op_operands, op_operands_made


def _no_sync() -> None:
    return None


def numpy_matmul(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    import numpy as np

    if device != "cpu":
        raise ValueError("numpy runs on the CPU only; use --device cpu (or leave numpy out of --libs)")
    if not hasattr(np, dtype):
        raise ValueError(f"numpy has no {dtype}")
    a, b = host_operands(m, k, n, dtype)
    out = np.empty((m, n), dtype=dtype)
    matmul = np.matmul

    def step() -> None:
        matmul(a, b, out=out)

    return made_by(step, dtype, a, b, out), _no_sync


def torch_mm(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    import torch

    dev, sync = _torch_device(device)
    a, b = _torch_arrays(host_operands(m, k, n, dtype), dtype, dev)
    out = torch.empty(m, n, dtype=getattr(torch, dtype), device=dev)
    mm = torch.mm

    def step() -> None:
        mm(a, b, out=out)

    return made_by(step, dtype, a, b, out), sync


def _torch_device(device: str):
    """(torch.device, sync) for `device`, the CUDA device made current."""
    import torch

    index = cuda_index(device)
    if index is not None:
        if not torch.cuda.is_available():
            raise RuntimeError(f"this torch ({torch.__version__}) has no CUDA device; use --device cpu")
        torch.cuda.set_device(index)
    return torch.device(device if index is None else f"cuda:{index}"), (torch.cuda.synchronize if index is not None
                                                                        else _no_sync)


def _torch_arrays(host: tuple, dtype: str, dev) -> tuple:
    """The host's bytes as they are where numpy has the dtype; bfloat16 rounded from float32 by torch; complex
    operands (fft) kept complex."""
    import torch

    dt = getattr(torch, dtype)
    return tuple(torch.from_numpy(x).to(device=dev, copy=True, **({} if x.dtype.kind == "c" else {"dtype": dt}))
                 for x in host)


def cupy_matmul(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    import cupy as cp

    _cupy_device(device, dtype)
    a, b = (to_cupy(x) for x in host_operands(m, k, n, dtype))
    out = cp.empty((m, n), dtype=dtype)
    matmul = cp.matmul

    def step() -> None:
        matmul(a, b, out=out)

    return made_by(step, dtype, a, b, out), cp.cuda.runtime.deviceSynchronize


def to_cupy(host):
    """A numpy array's bytes on the current device. cupy.asarray stages them through page-locked memory it
    allocates for the call, which cost 4.3 s for the seed's 2.2 GB of operands on the H200 host (torch's
    copy of the same: 0.6 s, benchmarks/startup.py); set() copies from the array as it is."""
    import cupy as cp

    out = cp.empty(host.shape, dtype=host.dtype)
    out.set(host)
    return out


def _cupy_device(device: str, dtype: str) -> None:
    import cupy as cp

    index = cuda_index(device)
    if index is None:
        raise ValueError("cupy needs a CUDA device; use --device cuda:N")
    if dtype == "bfloat16":
        raise ValueError("cupy has no bfloat16; use --dtype cupy=float16")
    cp.cuda.Device(index).use()


# --- the other ops (ops.py): numpy, torch and cupy share one step per form; jax has its own (jit, no out=) -------

def kit_step(op: ops.Op, xp: Any, arrays: tuple, dtype: str, library: str) -> Step:
    """One step of `op` on arrays already where they run (xp: the library's namespace), calling the op row's
    function for `library` as the row's ``call`` says, marked as made_by marks the matmul steps. The function is
    looked up once here, so the step holds the call alone; it returns the op's result (which the loop drops at
    once, as a program that ignores it would; a test reads it)."""
    f = op.function(library)
    a = arrays[0]
    out = None
    if op.call == "f(a, b, out=out)":
        b, out = arrays[1], xp.empty_like(a)

        def step():
            return f(a, b, out=out)
    elif op.call == "a * 2.0":
        def step():
            return a * 2.0
    elif op.call == "f(a)":
        def step():
            return f(a)
    elif op.call == "f(a.T)":
        at = a.T

        def step():
            return f(at)
    else:
        raise ValueError(f"no step for op {op.name!r}")
    setattr(step, "operands", tuple(arrays))
    setattr(step, "operands_made", op_operands_made(op.name, dtype))
    setattr(step, "out", out)
    return step


def _numpy_op(op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    import numpy as np

    if device != "cpu":
        raise ValueError("numpy runs on the CPU only; use --device cpu (or leave numpy out of --libs)")
    if not hasattr(np, dtype):
        raise ValueError(f"numpy has no {dtype}")
    return kit_step(ops.OPS[op], np, op_operands(op, list(shape), dtype), dtype, "numpy"), _no_sync


def _torch_op(op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    import torch

    dev, sync = _torch_device(device)
    arrays = _torch_arrays(op_operands(op, list(shape), dtype), dtype, dev)
    return kit_step(ops.OPS[op], torch, arrays, dtype, "torch"), sync


def _cupy_op(op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    import cupy as cp

    _cupy_device(device, dtype)
    arrays = tuple(to_cupy(x) for x in op_operands(op, list(shape), dtype))
    return kit_step(ops.OPS[op], cp, arrays, dtype, "cupy"), cp.cuda.runtime.deviceSynchronize


def _jax_op(op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    """The op row's jax function (what jax.jit compiles; JAX has no out=, every call returns a new array)
    jitted and traced once here, called on device arrays. JAX queues work on streams of its own,
    which the CUDA events of cupy or torch do not see: the step says ``device_clock = "wall"``, and its device
    time per call is read as the loop's time to block_until_ready (the GPU's time where the GPU sets the pace;
    at a host-bound size, the host's)."""
    index = cuda_index(device)
    if index is None:
        raise ValueError("jax is built in for a CUDA device only; use --device cuda:N (or leave jax out of --libs)")
    import jax
    import jax.numpy  # noqa: F401  (where the rows' jax functions are)

    gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda")]
    if len(gpus) <= index:
        raise RuntimeError(f"this jax ({jax.__version__}) has {len(gpus)} CUDA device(s) "
                           f"(backend {jax.default_backend()}); install jax[cuda12] or jax[cuda13]")
    dev = gpus[index]
    # the host's bytes where numpy has the dtype; bfloat16 rounded from the float32 values on the device
    arrays = tuple(jax.device_put(x, dev) for x in op_operands(op, list(shape), dtype))
    arrays = tuple(x if x.dtype.kind == "c" or str(x.dtype) == dtype else x.astype(dtype) for x in arrays)
    jitted = jax.jit(ops.OPS[op].function("jax"))
    last: list = [jitted(*arrays)]  # traced and compiled here, not in the first timed call
    last[0].block_until_ready()
    if len(arrays) == 2:
        a, b = arrays

        def step() -> None:
            last[0] = jitted(a, b)
    else:
        (a,) = arrays

        def step() -> None:
            last[0] = jitted(a)

    def sync() -> None:
        # one device runs its computations in the order they were dispatched: the last done means all are
        last[0].block_until_ready()

    setattr(step, "operands", arrays)
    setattr(step, "operands_made", op_operands_made(op, dtype))
    setattr(step, "device_clock", "wall")
    setattr(step, "jitted", jitted)  # the last result: what sync waits for, and what a test reads
    setattr(step, "last", last)
    return step, sync

