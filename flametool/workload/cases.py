"""Cases: what gets measured.

Every case, built-in or the user's ``--case FILE.py:FACTORY``, follows one protocol:
``FACTORY(shape, dtype, device) -> (step, sync)``, `shape` the op's shape (``--op``, ops.py: M,K,N for matmul,
(N,) or (R, C) for the others), as a tuple.  ``step()`` launches one operation on operands made in set-up;
``sync()`` waits until the device is done.  The factory does all set-up (imports, random inputs, device
selection, jit tracing) so that ``step`` holds only the launch.  A factory of five parameters, the older
``FACTORY(m, k, n, dtype, device)``, is still accepted for matmul (``call_factory`` tells them apart by their
signature).  GPU time comes from CUDA events of the library the case imported (see ``child.device_events``);
a step that sets ``step.device_clock = "wall"`` (jax: its streams are its own) is timed to its sync instead.

A step may launch several operations (a CUDA graph of N products): it then says so with an ``ops``
attribute (``step.ops = N``) and every figure is reported per operation.

A step that sets ``step.operands`` (the arrays it reads) gets an operand fingerprint in run.json (a short hash
of their bytes, see ``child.fingerprint``), and the fairness list flags cases of one shape and dtype whose
operands differ: on the H200 the same GEMM runs at a speed that depends on the values (4096^3 float16:
uniform values 204-206 us, normal ones 215-217 us, whichever library). So the built-in cases all multiply the
same values, made once per process by ``host_operands`` from a fixed seed and copied to each library.

The built-in factories below are loaded by the child exactly as user files are: by ``module:function``.
The floors (``cublas``, ``torch-graph``, ``cupy-graph``) show how far a library is from the limit: cuBLAS
called with the least Python, and the host cost per product when a graph of products is replayed.
"""

from __future__ import annotations

import ast
import inspect
import math
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, cast

from . import ops, values
from ..errors import FlametoolError

# The module run.json names for the built-in factories (``flametool.cases:numpy_matmul``): the public name users
# import, an alias of this module (flametool/cases.py), so runs recorded before the cases moved here still load.
MODULE = "flametool.cases"

Step = Callable[[], object]
Sync = Callable[[], object]

DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class CaseSpec:
    """Where the child finds a case's factory: a module (built-in) or a file (user)."""

    label: str
    factory: str
    module: str | None = None
    file: str | None = None
    env: str | None = None  # `compare --env`: the environment whose interpreter runs it (None: flametool's own)

    @property
    def name(self) -> str:
        """The case as --libs or --case names it (cupy), without its environment (cupy@main)."""
        return self.label.removesuffix(f"@{self.env}") if self.env else self.label

    def to_json(self) -> dict:
        data = {"label": self.label, "factory": self.factory, "module": self.module, "file": self.file}
        return data | ({"env": self.env} if self.env is not None else {})


def cuda_index(device: str) -> int | None:
    """'cuda:1' -> 1, 'cuda' -> 0, 'cpu' -> None."""
    if device == "cpu":
        return None
    return int(device.partition(":")[2] or 0)


def _no_sync() -> None:
    return None


# The built-in cases' operands: uniform values in [0, 1) made from this seed (run.json's config.operand_seed) by
# values.uniform, a from stream 0 and b from stream 1, as float32, then rounded to the case's dtype.
OPERAND_SEED = 0


def operands_made(dtype: str) -> str:
    """How the built-in cases' operands are made, in words (run.json's operand record)."""
    return values.made(dtype, OPERAND_SEED) + ": a stream 0, b stream 1"


_made: dict[tuple, values.Ahead] = {}


def prefetch_operands(m: int, k: int, n: int, dtype: str) -> None:
    """Start making host_operands(m, k, n, dtype) in the background (a process that is about to import its
    libraries: at the seed's shape both take seconds, and the values' threads release the GIL)."""
    key = (m, k, n, dtype)
    if key not in _made:
        _made.clear()
        _made[key] = values.Ahead(lambda: _make(m, k, n, dtype))


def _make(m: int, k: int, n: int, dtype: str):
    return values.uniform((m, k), dtype, OPERAND_SEED, stream=0), values.uniform((k, n), dtype, OPERAND_SEED, stream=1)


def prefetch_shape(shape: list[int], dtype: str) -> None:
    """prefetch_operands() of an op's shape: M,K,N; or N elements (or R,C), whose a and b op_operands takes as a
    1 x N and an N x 1 host_operands."""
    if len(shape) == 3:
        prefetch_operands(shape[0], shape[1], shape[2], dtype)
    else:
        prefetch_operands(1, math.prod(shape), 1, dtype)


def host_operands(m: int, k: int, n: int, dtype: str):
    """a (m x k) and b (k x n) as numpy arrays, the same values for every built-in case: in `dtype` where numpy
    has it, else float32 for the library to round (bfloat16). Kept for the last shape asked, so the cases built
    side by side in one process share one generation (at the seed's shape, 1.9 billion values)."""
    prefetch_operands(m, k, n, dtype)
    return _made[(m, k, n, dtype)].get()


def made_by(step: Step, dtype: str, a, b, out) -> Step:
    """Mark a built-in step's operands (the arrays it reads), how they were made, and the array it writes."""
    setattr(step, "operands", (a, b))
    setattr(step, "operands_made", operands_made(dtype))
    setattr(step, "out", out)
    return step


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


GRAPH_OPS = 100


def cublas_gemm(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    """cublasGemmEx through CuPy's Cython binding, every argument computed once: cuBLAS plus one call."""
    import cupy as cp
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    index = cuda_index(device)
    if index is None:
        raise ValueError("cublas needs a CUDA device; use --device cuda:N")
    # (cuda data type, compute type, scalar dtype) per input dtype; fp16 accumulates in fp32 as CuPy does
    types = {
        "float16": (cp.cuda.runtime.CUDA_R_16F, cublas.CUBLAS_COMPUTE_32F, np.float32),
        "float32": (cp.cuda.runtime.CUDA_R_32F, cublas.CUBLAS_COMPUTE_32F, np.float32),
        "float64": (cp.cuda.runtime.CUDA_R_64F, cublas.CUBLAS_COMPUTE_64F, np.float64),
    }
    if dtype not in types:
        raise ValueError(f"the cublas floor supports {', '.join(types)}, not {dtype}")
    data_type, compute, scalar = types[dtype]
    cp.cuda.Device(index).use()
    a, b = (to_cupy(x) for x in host_operands(m, k, n, dtype))
    out = cp.empty((m, n), dtype=dtype)
    alpha, beta = np.ones(1, scalar), np.zeros(1, scalar)
    handle = cp.cuda.device.get_cublas_handle()
    # row-major out = a @ b is column-major out^T = b^T a^T: swap the operands, no transposes
    args = (handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k, alpha.ctypes.data, b.data.ptr, data_type, n,
            a.data.ptr, data_type, k, beta.ctypes.data, out.data.ptr, data_type, n, compute, cublas.CUBLAS_GEMM_DEFAULT)
    gemm = cublas.gemmEx

    def step() -> None:
        gemm(*args)

    setattr(step, "args", args)
    # the raw pointers in args stay valid only while these arrays live
    made_by(step, dtype, a, b, out)  # also what keeps them alive
    setattr(step, "scalars", (alpha, beta))
    return step, cp.cuda.runtime.deviceSynchronize


def torch_graph(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    """GRAPH_OPS torch.mm calls captured once in a CUDA graph; each step replays them all."""
    import torch

    index = cuda_index(device)
    if index is None:
        raise ValueError("torch-graph needs a CUDA device; use --device cuda:N")
    step0, sync = torch_mm(m, k, n, dtype, device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # cuBLAS sets up its workspace outside the capture
        for _ in range(3):
            step0()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(GRAPH_OPS):
            step0()
    replay = graph.replay

    def step() -> None:
        replay()

    setattr(step, "ops", GRAPH_OPS)
    made_by(step, dtype, *cast("tuple[Any, Any]", getattr(step0, "operands")), getattr(step0, "out"))  # made_by set (a, b)
    setattr(step, "graph", graph)
    return step, sync


def cupy_graph(m: int, k: int, n: int, dtype: str, device: str) -> tuple[Step, Sync]:
    """GRAPH_OPS products captured once in a CUDA graph, launched from CuPy on the null stream.

    CuPy 14 refuses cuBLAS calls while a stream captures ("calling cuBLAS API during stream capture is
    currently unsupported"), so the products are captured by calling the libcublas CuPy loaded directly,
    with the cublas floor's arguments: the same GPU work, and a replay's host cost is CuPy's graph launch."""
    import ctypes

    import cupy as cp

    gemm0, sync = cublas_gemm(m, k, n, dtype, device)
    gemm0()
    sync()
    lib = _loaded_library("libcublas.so")
    handle = getattr(gemm0, "args")[0]
    lib.cublasSetStream_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.cublasGemmEx.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                 ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                 ctypes.c_int, ctypes.c_int, ctypes.c_int]
    capture = cp.cuda.Stream(non_blocking=True)
    if lib.cublasSetStream_v2(handle, capture.ptr) != 0:
        raise RuntimeError("cublasSetStream failed")
    try:
        capture.begin_capture()
        try:
            for _ in range(GRAPH_OPS):
                status = lib.cublasGemmEx(*getattr(gemm0, "args"))
                if status != 0:
                    raise RuntimeError(f"cublasGemmEx returned status {status} during capture")
        finally:
            graph = capture.end_capture()
    finally:
        lib.cublasSetStream_v2(handle, None)  # CuPy sets the stream before each of its own calls anyway
    null = cp.cuda.Stream.null  # the stream the events record on, so they bracket the replay
    launch = graph.launch

    def step() -> None:
        launch(null)

    setattr(step, "ops", GRAPH_OPS)
    made_by(step, dtype, *cast("tuple[Any, Any]", getattr(gemm0, "operands")), getattr(gemm0, "out"))  # made_by set (a, b)
    setattr(step, "graph", (graph, capture, gemm0))
    return step, sync


def _loaded_library(stem: str):
    """The shared library of that name already mapped into this process (the one CuPy uses)."""
    import ctypes

    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/" in path and path.rsplit("/", 1)[-1].startswith(stem):
                return ctypes.CDLL(path)
    raise RuntimeError(f"{stem} is not loaded in this process")


EMPTY_KERNEL_PTX = b"""
.version 7.0
.target sm_75
.address_size 64
.visible .entry flametool_empty()
{
	ret;
}
"""


def _check(result, what: str):
    """cuda.bindings returns (CUresult, values...): the values, or RuntimeError naming the call."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err!r}")
    return rest[0] if len(rest) == 1 else tuple(rest)


def _empty_function(driver, index: int):
    """The empty kernel, loaded into the device's primary context (the one CuPy and PyTorch use): its PTX
    JIT-compiled by the driver, or, where the driver refuses that PTX, compiled by NVRTC for the device."""
    _check(driver.cuInit(0), "cuInit")
    dev = _check(driver.cuDeviceGet(index), "cuDeviceGet")
    ctx = _check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    _check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    err, module = driver.cuModuleLoadData(EMPTY_KERNEL_PTX)
    if int(err) != 0:
        from cuda.bindings import nvrtc

        major = _check(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
        minor = _check(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
        src = b'extern "C" __global__ void flametool_empty() {}'
        prog = _check(nvrtc.nvrtcCreateProgram(src, b"empty.cu", 0, [], []), "nvrtcCreateProgram")
        _check(nvrtc.nvrtcCompileProgram(prog, 1, [f"--gpu-architecture=sm_{major}{minor}".encode()]),
               "nvrtcCompileProgram")
        size = _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        module = _check(driver.cuModuleLoadData(cubin), "cuModuleLoadData")
    return _check(driver.cuModuleGetFunction(module, b"flametool_empty"), "cuModuleGetFunction"), (ctx, module)


def cuda_launch(shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    """The driver floor: an empty kernel (one block of one thread) launched with cuLaunchKernel through
    cuda-python's bindings (cuda.bindings.driver, installed beside CuPy 14), on the legacy default stream of the
    device's primary context. What any library's launch costs at the least: one driver call from Python. The
    op's shape and dtype are not used (the kernel reads nothing)."""
    index = cuda_index(device)
    if index is None:
        raise ValueError("cuda-launch needs a CUDA device; use --device cuda:N")
    from cuda.bindings import driver

    function, keep = _empty_function(driver, index)
    launch = driver.cuLaunchKernel
    stream = driver.CUstream(0)
    _check(launch(function, 1, 1, 1, 1, 1, 1, 0, stream, 0, 0), "cuLaunchKernel")
    _check(driver.cuCtxSynchronize(), "cuCtxSynchronize")

    def step() -> None:
        launch(function, 1, 1, 1, 1, 1, 1, 0, stream, 0, 0)

    def sync() -> None:
        _check(driver.cuCtxSynchronize(), "cuCtxSynchronize")

    setattr(step, "keep", keep)  # the context and module the function lives in
    return step, sync


# --- the other ops (ops.py): numpy, torch and cupy share one step per op; jax has its own (jit, no out=) -------

def op_operands(op: str, shape: list[int], dtype: str) -> tuple:
    """The host arrays an op reads, made by host_operands from the same values every library gets (values.uniform,
    a from stream 0 and b from stream 1; kept for the cases built beside it): matmul's a (MxK) and b (KxN); for
    the other ops N values of each, in the op's shape (copy: as a matrix, ops.as_matrix); fft reads one complex
    array, a + ib."""
    if op == "matmul":
        return host_operands(shape[0], shape[1], shape[2], dtype)
    import numpy as np

    a, b = host_operands(1, math.prod(shape), 1, dtype)
    dims = ops.as_matrix(shape) if op == "copy" else tuple(shape)
    a, b = a.reshape(dims), b.reshape(dims)
    if op == "fft":
        z = np.empty(dims, np.complex128 if dtype == "float64" else np.complex64)
        z.real, z.imag = a, b
        return (z,)
    return (a, b) if op == "add" else (a,)


def op_operands_made(op: str, dtype: str) -> str:
    """operands_made() of `op`: which of host_operands' values it reads (op_operands), and how."""
    if op == "matmul":
        return operands_made(dtype)
    used = {"add": "a and b, N values each",
            "fft": f"a and b, N values each, as one {'complex128' if dtype == 'float64' else 'complex64'} array a + ib"}
    return f"{operands_made(dtype)}; read: {used.get(op, 'a, N values')}"


@dataclass(frozen=True)
class Kit:
    """The functions an op's step calls, one library's: numpy, cupy and torch take the same arguments."""

    add: Callable  # add(a, b, out=out)
    empty_like: Callable
    total: Callable  # the full sum
    contiguous: Callable  # contiguous(a.T): a C-ordered copy
    fft: Callable


def kit_step(op: str, kit: Kit, arrays: tuple, dtype: str) -> Step:
    """One step of `op` on arrays already where they run, marked as made_by marks the matmul steps. Each
    function is looked up once here, so the step holds the call alone; it returns the op's result (which the
    loop drops at once, as a program that ignores it would; a test reads it)."""
    a = arrays[0]
    out = None
    if op == "add":
        b, out, add = arrays[1], kit.empty_like(a), kit.add

        def step():
            return add(a, b, out=out)
    elif op == "scale":
        def step():
            return a * 2.0
    elif op == "sum":
        total = kit.total

        def step():
            return total(a)
    elif op == "copy":
        at, contiguous = a.T, kit.contiguous

        def step():
            return contiguous(at)
    elif op == "fft":
        fft = kit.fft

        def step():
            return fft(a)
    else:
        raise ValueError(f"no step for op {op!r}")
    setattr(step, "operands", tuple(arrays))
    setattr(step, "operands_made", op_operands_made(op, dtype))
    setattr(step, "out", out)
    return step


def _numpy_op(op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    import numpy as np

    if device != "cpu":
        raise ValueError("numpy runs on the CPU only; use --device cpu (or leave numpy out of --libs)")
    if not hasattr(np, dtype):
        raise ValueError(f"numpy has no {dtype}")
    kit = Kit(np.add, np.empty_like, np.sum, np.ascontiguousarray, np.fft.fft)
    return kit_step(op, kit, op_operands(op, list(shape), dtype), dtype), _no_sync


def _torch_op(op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    import torch

    dev, sync = _torch_device(device)
    kit = Kit(torch.add, torch.empty_like, torch.sum, torch.Tensor.contiguous, torch.fft.fft)
    return kit_step(op, kit, _torch_arrays(op_operands(op, list(shape), dtype), dtype, dev), dtype), sync


def _cupy_op(op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    import cupy as cp

    _cupy_device(device, dtype)
    kit = Kit(cp.add, cp.empty_like, cp.sum, cp.ascontiguousarray, cp.fft.fft)
    arrays = tuple(to_cupy(x) for x in op_operands(op, list(shape), dtype))
    return kit_step(op, kit, arrays, dtype), cp.cuda.runtime.deviceSynchronize


def jax_function(op: str):
    """What jax.jit compiles for `op`. JAX has no out=: every call returns a new array (the fairness list says
    so), and copy is a transpose, which XLA makes as a copy into the transposed layout."""
    import jax.numpy as jnp

    return {"matmul": jnp.matmul, "add": jnp.add, "scale": lambda x: x * 2.0, "sum": jnp.sum,
            "copy": lambda x: x.T, "fft": jnp.fft.fft}[op]


def _jax_op(op: str, shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
    """The op jitted and traced once here, called on device arrays. JAX queues work on streams of its own,
    which the CUDA events of cupy or torch do not see: the step says ``device_clock = "wall"``, and its device
    time per call is read as the loop's time to block_until_ready (the GPU's time where the GPU sets the pace;
    at a host-bound size, the host's)."""
    index = cuda_index(device)
    if index is None:
        raise ValueError("jax is built in for a CUDA device only; use --device cuda:N (or leave jax out of --libs)")
    import jax
    import jax.numpy as jnp

    gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda")]
    if len(gpus) <= index:
        raise RuntimeError(f"this jax ({jax.__version__}) has {len(gpus)} CUDA device(s) "
                           f"(backend {jax.default_backend()}); install jax[cuda12] or jax[cuda13]")
    dev = gpus[index]
    # the host's bytes where numpy has the dtype; bfloat16 rounded from the float32 values on the device
    arrays = tuple(jax.device_put(x, dev) for x in op_operands(op, list(shape), dtype))
    arrays = tuple(x if x.dtype.kind == "c" or str(x.dtype) == dtype else x.astype(dtype) for x in arrays)
    jitted = jax.jit(jax_function(op))
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


OP_LIBRARIES: dict[str, Callable] = {"numpy": _numpy_op, "torch": _torch_op, "cupy": _cupy_op, "jax": _jax_op}


def _op_factory(library: str, op: str) -> Callable[..., tuple[Step, Sync]]:
    """The built-in factory LIBRARY_OP(shape, dtype, device), found by name as every factory is."""
    build = OP_LIBRARIES[library]

    def factory(shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
        return build(op, shape, dtype, device)

    factory.__name__ = factory.__qualname__ = f"{library}_{op}"
    return factory


for _library in OP_LIBRARIES:
    for _op in ops.OPS:
        if f"{_library}_{_op}" not in globals() and (_op != "matmul" or _library == "jax"):
            globals()[f"{_library}_{_op}"] = _op_factory(_library, _op)
del _library, _op


def factory_name(label: str, op: str) -> str:
    """The built-in factory of case `label` for `op`: the matmul factories by their own names (run.json's
    factory strings of older runs), LIBRARY_OP for the others."""
    if op == ops.DEFAULT_OP or label in ANY_OP:
        return BUILTIN[label].factory
    if label not in OP_LIBRARIES:
        raise FlametoolError(f"case {label!r} is a matmul floor: it has no --op {op} (leave it out of --libs)")
    return f"{label}_{op}"


def factory_style(factory: Callable) -> str:
    """'shape' for FACTORY(shape, dtype, device), 'mnk' for the older FACTORY(m, k, n, dtype, device) (or one
    that takes *args, as such factories were called); otherwise why it fits neither."""
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: called as factories always were
        return "mnk"
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return "mnk"
    positional = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(positional) == 3:
        return "shape"
    if len(positional) == 5:
        return "mnk"
    return (f"takes {len(positional)} positional parameters; a factory is FACTORY(shape, dtype, device) "
            "or FACTORY(m, k, n, dtype, device)")


def call_factory(factory: Callable, shape: list[int], dtype: str, device: str):
    """The factory called as its signature asks: (shape, dtype, device), the shape a tuple; or (m, k, n, dtype,
    device), which only a matmul shape has. Raises ValueError (FactoryMisfit) when it fits neither."""
    style = factory_style(factory)
    if style == "shape":
        return factory(tuple(shape), dtype, device)
    if style != "mnk":
        raise FactoryMisfit(style)
    if len(shape) != 3:
        raise FactoryMisfit(f"is FACTORY(m, k, n, dtype, device), a matmul factory, and this op's shape is "
                            f"{','.join(map(str, shape))}; write it as FACTORY(shape, dtype, device)")
    return factory(*shape, dtype, device)


class FactoryMisfit(ValueError):
    """A factory whose signature is not the case protocol's (the child names it so, before calling it)."""


@dataclass(frozen=True)
class Builtin:
    factory: str  # the factory function in this module
    library: str  # whose version and device events apply
    needs_cuda: bool


BUILTIN: dict[str, Builtin] = {
    "cupy": Builtin("cupy_matmul", "cupy", True),
    "torch": Builtin("torch_mm", "torch", False),
    "numpy": Builtin("numpy_matmul", "numpy", False),
    "cublas": Builtin("cublas_gemm", "cupy", True),
    "torch-graph": Builtin("torch_graph", "torch", True),
    "cupy-graph": Builtin("cupy_graph", "cupy", True),
    "jax": Builtin("jax_matmul", "jax", True),
    "cuda-launch": Builtin("cuda_launch", "cuda.bindings", True),
}
# floors that launch the same thing whatever the op (--op): built for every op by the same factory
ANY_OP = {"cuda-launch"}
# what each floor's time per call means, for the report's comparison against them
FLOORS = {
    "cublas": "cublasGemmEx called with the least Python",
    "torch-graph": "host cost per product of replaying a CUDA graph from PyTorch",
    "cupy-graph": "host cost per product of launching a CUDA graph from CuPy",
    "cuda-launch": "an empty kernel launched with cuLaunchKernel from cuda.bindings: the launch itself",
}


def builtin_libraries(specs: list[CaseSpec]) -> list[str]:
    """The libraries the built-in cases among `specs` import (what a process can import ahead of building them),
    in the order of the cases."""
    return list(dict.fromkeys(BUILTIN[c.name].library for c in specs if c.module == MODULE and c.name in BUILTIN))


def is_floor(label: str, factory: str) -> bool:
    """A built-in floor (not a user case that happens to share its label)."""
    return label in FLOORS and factory.startswith(f"{MODULE}:")


def default_pairs(factories: dict[str, str]) -> list[tuple[str, str]]:
    """(base, head) pairs a run compares unless told: the first two library cases, each case of the user's own
    (--case) against the first built-in library case (a case added beside the built-ins is compared with the
    built-in of its op), and each library case against the cublas floor when the run has it (what the library
    adds to one bare cuBLAS call)."""
    libraries = [l for l, f in factories.items() if not is_floor(l, f)]
    pairs = [(libraries[0], libraries[1])] if len(libraries) >= 2 else []
    builtin = [l for l in libraries if factories[l].startswith(f"{MODULE}:")]
    for label in libraries:
        if builtin and not factories[label].startswith(f"{MODULE}:") and (builtin[0], label) not in pairs \
                and (label, builtin[0]) not in pairs:
            pairs.append((builtin[0], label))
    if "cublas" in factories and is_floor("cublas", factories["cublas"]):
        pairs += [("cublas", l) for l in libraries]
    if not pairs and len(factories) >= 2:  # floors only: the first two, whatever they are
        first, second = list(factories)[:2]
        pairs = [(first, second)]
    return pairs


def builtin(label: str, op: str = ops.DEFAULT_OP) -> CaseSpec:
    if label not in BUILTIN:
        raise FlametoolError(f"unknown case {label!r}; built-in cases are {', '.join(BUILTIN)} (or use --case FILE.py:FACTORY)")
    return CaseSpec(label=label, factory=factory_name(label, op), module=MODULE)


def user_case(text: str) -> CaseSpec:
    """Check ``FILE.py:FACTORY`` without running the file: a .py file that exists, parses (read as Python
    reads it: a PEP 263 coding cookie or a BOM decides the encoding), and binds FACTORY at module level."""
    path_text, sep, factory = text.rpartition(":")
    if not sep or not path_text or not factory:
        raise FlametoolError(f"--case {text!r}: expected FILE.py:FACTORY")
    path = Path(path_text)
    if not path.is_file():
        raise FlametoolError(f"--case {text!r}: no such file {path}")
    if path.suffix != ".py":  # the child imports it as Python source, which only a .py file is found as
        raise FlametoolError(f"--case {text!r}: {path} is not a Python file (expected FILE.py:FACTORY)")
    if not factory.isidentifier():
        raise FlametoolError(f"--case {text!r}: {factory!r} is not a Python name")
    try:
        with tokenize.open(path) as fh:
            source = fh.read()
        tree = ast.parse(source, filename=str(path))
    except OSError as exc:
        raise FlametoolError(f"--case {text!r}: {path} cannot be read ({exc.strerror or exc})") from None
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL byte (Python 3.11)
        raise FlametoolError(f"--case {text!r}: {path} does not parse ({exc})") from None
    names, star = module_names(tree)
    if factory not in names and not star:  # after 'from x import *' any name may be bound: the child checks
        raise FlametoolError(f"--case {text!r}: {path} defines no {factory}")
    return CaseSpec(label=factory, factory=factory, file=str(path.resolve()))


def module_names(tree: ast.Module) -> tuple[set[str], bool]:
    """The names a module binds at module level, wherever the statement is (under if, try, with, for,
    while, match), and whether it has a 'from ... import *'. Function and class bodies (and lambdas,
    comprehensions) have scopes of their own and are not entered; their names are bound there."""
    names: set[str] = set()
    star = False
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            # decorators and default values run at module level; a walrus there binds a module name
            todo.extend(node.decorator_list)
            if not isinstance(node, ast.ClassDef):
                todo.extend(node.args.defaults + [d for d in node.args.kw_defaults if d is not None])
            else:
                todo.extend(node.bases + [k.value for k in node.keywords])
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    star = True
                else:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        todo.extend(ast.iter_child_nodes(node))
    return names, star
