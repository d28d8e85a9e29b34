"""The libraries' built-in cases: numpy, torch, cupy and jax, one row each (`Library`, in `LIBRARIES`): its
label (--libs), what it imports, whether it needs CUDA, the namespace an op's function is found in, where it
places the operands and how it waits for its device (`place`), how it spells an op where its namespace does not
have the op row's name (`calls`), its own matmul factory (numpy_matmul, torch_mm, cupy_matmul: the names
run.json records), and whether it jits the op (jax). A new library's built-in is its row here (and its place
function beside it where its arrays go somewhere no other row puts them): builtins.py makes the built-in case
of every row, and LIBRARY_OP of every op of ops.py for it.

The step of an op is the op row's function for this library called as the row's ``call`` says (kit_step); a
jitting library compiles the function with the op's operands instead (jit_step). The factories follow the case
protocol (cases.py) and are loaded by the child exactly as a user's are: by ``flametool.cases:NAME``
(builtins.py says which name is which). Nothing here imports a library until a case is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from . import ops
from .cases import Step, Sync, cuda_index
from .inputs import host_operands, keep_on_device, made_by, on_device, op_operands, op_operands_made

# place(host operands, dtype, device) -> (namespace, the operands where the library runs, sync; None: made by
# the step, as a jitting library's is)
Place = Callable[[tuple, str, str], "tuple[Any, tuple, Sync | None]"]


def _no_sync() -> None:
    return None


def numpy_matmul(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    import numpy as np

    _numpy_device(device, dtype)
    a, b = host_operands(m, k, n, dtype)
    out = np.empty((m, n), dtype=dtype)
    matmul = np.matmul

    def step() -> None:
        matmul(a, b, out=out)

    return made_by(step, dtype, a, b, out), _no_sync


def _numpy_device(device: str, dtype: str) -> None:
    import numpy as np

    if device != "cpu":
        raise ValueError("numpy runs on the CPU only; use --device cpu (or leave numpy out of --libs)")
    if not hasattr(np, dtype):
        raise ValueError(f"numpy has no {dtype}")


def _numpy_place(host: tuple, dtype: str, device: str) -> tuple[Any, tuple, Sync | None]:
    import numpy as np

    _numpy_device(device, dtype)
    return np, host, _no_sync


def torch_mm(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    import torch

    dev, sync = _torch_device(device)
    # its out (and the CUDA context, where torch is the process's first library) before the values are waited for
    out = torch.empty(m, n, dtype=getattr(torch, dtype), device=dev)
    a, b = _torch_arrays(host_operands(m, k, n, dtype), dtype, dev, share=True)
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


def _torch_arrays(host: tuple, dtype: str, dev, share: bool = False) -> tuple:
    """The host's bytes as they are where numpy has the dtype; bfloat16 rounded from float32 by torch; complex
    operands (fft) kept complex. With `share` (operands no step writes: matmul's a and b), copied on the device from
    another library's copy of them where this process has one, and this copy kept for the next (inputs.on_device)."""
    import torch

    dt = getattr(torch, dtype)
    out = []
    for x in host:
        same = share and dev.type == "cuda" and str(x.dtype) == dtype  # the host's bytes as they are
        shared = on_device(x, str(dev)) if same else None
        if shared is not None:
            copy = torch.empty(x.shape, dtype=dt, device=dev)
            torch.cuda.synchronize(dev)  # the other library's copy is done (its own stream)
            copy.copy_(torch.as_tensor(shared, device=dev))  # __cuda_array_interface__: a view until this copy
            torch.cuda.synchronize(dev)
        else:
            copy = torch.from_numpy(x).to(device=dev, copy=True, **({} if x.dtype.kind == "c" else {"dtype": dt}))
            if same:
                keep_on_device(x, str(dev), copy)
        out.append(copy)
    return tuple(out)


def _torch_place(host: tuple, dtype: str, device: str) -> tuple[Any, tuple, Sync | None]:
    import torch

    dev, sync = _torch_device(device)
    return torch, _torch_arrays(host, dtype, dev), sync


def cupy_matmul(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    import cupy as cp

    _cupy_device(device, dtype)
    # the device memory first, and the CUDA context with it, while the operand values are still being made
    # (inputs.prefetch_operands): at the seed's shape the factory waited 1.35 s for them on the H200 host
    out = cp.empty((m, n), dtype=dtype)
    a, b = cp.empty((m, k), dtype=dtype), cp.empty((k, n), dtype=dtype)
    for on, host in zip((a, b), host_operands(m, k, n, dtype)):
        fill_cupy(on, host, share=True)
    matmul = cp.matmul

    def step() -> None:
        matmul(a, b, out=out)

    return made_by(step, dtype, a, b, out), cp.cuda.runtime.deviceSynchronize


def to_cupy(host):
    """A numpy array's bytes on the current device (fill_cupy; a case may write them: not shared)."""
    import cupy as cp

    out = cp.empty(host.shape, dtype=host.dtype)
    fill_cupy(out, host)
    return out


def fill_cupy(out, host, share: bool = False) -> None:
    """host's bytes into `out` (a C-contiguous cupy array of its shape and dtype). With `share` (operands no step
    writes: matmul's a and b; a workload's arrays are written by its steps), from another library's copy of them on
    this device where this process has one, and `out` kept for the next (inputs.on_device). cupy.asarray stages
    them through page-locked memory it allocates for the call, which cost 4.3 s for the seed's 2.2 GB of operands
    on the H200 host (torch's copy of the same: 0.6 s, benchmarks/startup.py); set() copies from the array as
    it is."""
    import cupy as cp

    device = f"cuda:{out.device.id}"
    shared = on_device(host, device) if share else None
    if shared is not None:
        cp.cuda.runtime.deviceSynchronize()  # the other library's copy is done (its own stream)
        src = cp.asarray(shared)  # __cuda_array_interface__: a view, no copy
        out.data.copy_from_device(src.data, out.nbytes)
        cp.cuda.runtime.deviceSynchronize()
    else:
        out.set(host)
        if share:
            keep_on_device(host, device, out)


def _cupy_device(device: str, dtype: str) -> None:
    import cupy as cp

    index = cuda_index(device)
    if index is None:
        raise ValueError("cupy needs a CUDA device; use --device cuda:N")
    if dtype == "bfloat16":
        raise ValueError("cupy has no bfloat16; use --dtype cupy=float16")
    cp.cuda.Device(index).use()


def _cupy_place(host: tuple, dtype: str, device: str) -> tuple[Any, tuple, Sync | None]:
    import cupy as cp

    _cupy_device(device, dtype)
    return cp, tuple(to_cupy(x) for x in host), cp.cuda.runtime.deviceSynchronize


def wall_clock_on(step: Step, device: str) -> None:
    """A jax step's device time is the wall time to its sync on a CUDA device (cases.py: ``device_clock``). On
    the CPU there is no GPU to time: XLA's CPU backend runs the work on its own threads, which the run counts
    as the threads other than the caller, and the step has no device time (a CPU run has no GPU column, and
    a sweep no crossover, for jax as for numpy)."""
    if cuda_index(device) is not None:
        setattr(step, "device_clock", "wall")


def jax_device(device: str) -> Any:
    """The jax device `device` names: the N-th CUDA device jax sees for cuda:N, its CPU device for cpu (the
    built-in jax case and a workload's jax case alike)."""
    import jax

    index = cuda_index(device)
    found = [d for d in jax.devices() if d.platform in ("gpu", "cuda")] if index is not None else jax.devices("cpu")
    if len(found) <= (index or 0):
        raise RuntimeError(f"this jax ({jax.__version__}) has {len(found)} CUDA device(s) (backend "
                           f"{jax.default_backend()}); install jax[cuda12] or jax[cuda13]")
    return found[index or 0]


def _jax_place(host: tuple, dtype: str, device: str) -> tuple[Any, tuple, Sync | None]:
    """The operands on the device jax sees as `device` (a CUDA device, or its CPU backend): the host's bytes
    where numpy has the dtype, bfloat16 rounded from the float32 values on the device."""
    import jax
    import jax.numpy  # noqa: F401  (where the ops' jax functions are)

    dev = jax_device(device)
    return jax.numpy, tuple(jax_put(x, dev, dtype) for x in host), None


def jax_put(host: Any, dev: Any, dtype: str) -> Any:
    """A host array on jax device `dev` from its bytes: a floating one in `dtype` (bfloat16 rounded there from
    float32), any other (complex, integer, boolean) as it is. JAX without 64-bit types (jax_enable_x64, off by
    default) makes float64, int64 and complex128 arrays 32-bit with a warning no run shows, and its case then ran
    in float32 under a float64 label, on other bytes than the other libraries' (run.json's fingerprints differed):
    ValueError, saying how to turn them on. An integer array whose values all fit 32 bits (np.arange's and
    rng.integers' int64 indices) is the same values in int32: taken so (its bytes differ, as the fingerprints
    then say), not refused."""
    import jax
    import numpy as np

    on = jax.device_put(host, dev)
    if host.dtype.kind == "f" and str(on.dtype) != dtype:
        on = on.astype(dtype)
    narrowed = jax_narrowed(str(host.dtype), dtype, str(on.dtype), floating=host.dtype.kind == "f")
    if narrowed and host.dtype.kind in "iu" and on.dtype.kind in "iu":
        bounds = np.iinfo(on.dtype)
        if host.size == 0 or (bounds.min <= host.min() and host.max() <= bounds.max):
            narrowed = None
    if narrowed:
        raise ValueError(narrowed)
    return on


def jax_narrowed(host: str, dtype: str, got: str, floating: bool | None = None) -> str | None:
    """What is wrong where jax made a `got` array of a `host` one (a floating one asked for in `dtype`); None
    where it is what was asked. `floating`: whether the host's is a NumPy floating type (by its name where not
    given; an ml_dtypes bfloat16 is not one to NumPy, and is taken as it is)."""
    floating = host.startswith(("float", "bfloat")) if floating is None else floating
    want = dtype if floating else host
    if got == want:
        return None
    return (f"jax makes {want} arrays {got}: JAX has 64-bit types only with JAX_ENABLE_X64=1 in the environment "
            "(jax_enable_x64); set it, or use 32-bit types")


# --- the rows: one a library ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Library:
    label: str  # as --libs names it
    imports: str  # the library whose version and device events apply
    needs_cuda: bool
    namespace: str  # the module an op row's xp_name is looked up in ("jax.numpy")
    place: Place
    matmul: Callable[..., tuple[Step, Sync]] | None = None  # its own matmul factory; None: matmul is an op as any
    # how it spells an op otherwise than the op row's xp_name: a name in `namespace`, INFIX, the function jax.jit
    # compiles, or None where it has no such op
    calls: dict[str, str | Callable[..., Any] | None] = field(default_factory=dict)
    jit: bool = False  # the op's function jitted (jit_step), not called as the op row's `call` says (kit_step)

    def has(self, op: str) -> bool:
        return self.calls.get(op, "") is not None

    def function(self, op: ops.Op) -> Any:
        """What its step calls (``f``), looked up in its namespace now: the library's own function, the same
        object its namespace gives (``numpy.fft.fft`` is ``np.fft.fft``); None for INFIX."""
        found = self.calls.get(op.name, op.xp_name)
        if found == ops.INFIX:
            return None
        return found if callable(found) else ops.dotted(f"{self.namespace}.{found}")


LIBRARIES: dict[str, Library] = {l.label: l for l in (
    Library("cupy", "cupy", True, "cupy", _cupy_place, cupy_matmul),
    Library("torch", "torch", False, "torch", _torch_place, torch_mm, calls={"copy": "Tensor.contiguous"}),
    Library("numpy", "numpy", False, "numpy", _numpy_place, numpy_matmul),
    # JAX has no out= (every call returns a new array, which the fairness list says), and jits the op: scale's
    # operator and copy's transpose (which XLA makes as a copy into the transposed layout) as functions
    Library("jax", "jax", False, "jax.numpy", _jax_place, jit=True,
            calls={"scale": lambda x: x * 2.0, "copy": lambda x: x.T}),
)}


def op_case(library: Library, op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    """The built-in case of `op` in `library` (LIBRARY_OP(shape, dtype, device) of builtins.py): the op's
    operands placed where the library runs, and its step."""
    row = ops.OPS[op]
    xp, arrays, sync = library.place(op_operands(op, list(shape), dtype), dtype, device)
    if library.jit:
        return jit_step(row, library.function(row), arrays, dtype, device)
    assert sync is not None  # a library that does not jit waits on its device itself
    return kit_step(row, xp, arrays, dtype, library.function(row)), sync



# --- the step of an op (ops.py): one step per form of call; a jitting library's its own (jit, no out=) -------

def kit_step(op: ops.Op, xp: Any, arrays: tuple, dtype: str, f: Any) -> Step:
    """One step of `op` on arrays already where they run (xp: the library's namespace), calling `f` (the
    library's function for the op, Library.function, looked up once before, so the step holds the call alone)
    as the op row's ``call`` says, marked as made_by marks the matmul steps. It returns the op's result (which
    the loop drops at once, as a program that ignores it would; a test reads it)."""
    a = arrays[0]
    out = None
    if op.call == "f(a, b, out=out)":
        b = arrays[1]
        out = xp.empty_like(f(a, b))  # the output as the op makes it (a product's is MxN)

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


def jit_step(op: ops.Op, f: Any, arrays: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    """`f` (the library's function for the op: what jax.jit compiles; JAX has no out=, every call returns a new
    array) jitted and traced once here, called on device arrays. JAX queues work on streams of its own,
    which the CUDA events of cupy or torch do not see: on a CUDA device the step says ``device_clock = "wall"``
    (wall_clock_on), and its device time per call is read as the loop's time to block_until_ready (the GPU's
    time where the GPU sets the pace; at a host-bound size, the host's)."""
    import jax

    jitted = jax.jit(f)
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
    setattr(step, "operands_made", op_operands_made(op.name, dtype))
    wall_clock_on(step, device)
    setattr(step, "jitted", jitted)
    setattr(step, "last", last)
    return step, sync

