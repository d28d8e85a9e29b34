"""The floors: built-in cases that show how far a library is from the limit. ``cublas``: cuBLAS called with the
least Python; ``torch-graph`` and ``cupy-graph``: the host cost per product when a CUDA graph of products is
replayed; ``cuda-launch``: an empty kernel launched from cuda.bindings, the launch itself (the same for any op).
What each one's time means is its row's ``floor`` in builtins.py.
"""

from __future__ import annotations

from typing import Any, cast

from .cases import Step, Sync, cuda_index
from .inputs import host_operands, made_by
from .libraries import to_cupy, torch_mm

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

