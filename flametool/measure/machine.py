"""What machine and software a run was measured on. Read without importing torch or cupy (slow, and the
parent must not create a CUDA context): packages by metadata, the GPU through the driver's own libraries."""

from __future__ import annotations

import ctypes
import importlib.metadata
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__

if TYPE_CHECKING:
    from ..run.record import Host

PACKAGES = {
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"),
    "torch": ("torch",),
    "numpy": ("numpy",),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "jax-cuda-plugin": ("jax-cuda13-plugin", "jax-cuda12-plugin"),
    "py-spy": ("py-spy",),
    "jinja2": ("jinja2",),
    "snakeviz": ("snakeviz",),
}


def package_version(names: tuple[str, ...]) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load(name: str) -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def cuda_device_count() -> int:
    """Number of CUDA devices the driver sees (0 without a driver). cuInit creates no context."""
    cuda = _load("libcuda.so.1")
    if cuda is None or cuda.cuInit(0) != 0:
        return 0
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def cuda_driver_api_version() -> str | None:
    cuda = _load("libcuda.so.1")
    version = ctypes.c_int(0)
    if cuda is None or cuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return f"{version.value // 1000}.{(version.value % 1000) // 10}"


def nvml_gpus() -> tuple[str | None, list[str]]:
    """(driver version, GPU names in NVML order), or (None, []) without NVML."""
    nvml = _load("libnvidia-ml.so.1")
    if nvml is None or nvml.nvmlInit_v2() != 0:
        return None, []
    try:
        buf = ctypes.create_string_buffer(96)
        driver = buf.value.decode() if nvml.nvmlSystemGetDriverVersion(buf, 96) == 0 else None
        count = ctypes.c_uint(0)
        names: list[str] = []
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0:
            for i in range(count.value):
                handle = ctypes.c_void_p()
                if nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) == 0 and nvml.nvmlDeviceGetName(handle, buf, 96) == 0:
                    names.append(buf.value.decode())
        return driver, names
    finally:
        nvml.nvmlShutdown()


def collect(device: str) -> Host:
    # imported here: importcheck reads PACKAGES in another environment's interpreter, which may lack numpy (that
    # record's imports need); its own check says so in one line
    from ..run.record import Host, HostGpu

    driver, gpus = nvml_gpus() if device != "cpu" else (None, [])
    return Host(
        python=platform.python_version(),
        python_implementation=platform.python_implementation(),
        executable=sys.executable,
        os=platform.platform(),
        cpu=cpu_model(),
        cpu_count=_cpu_count(),
        # the name and CUDA runtime of the device actually used come from each case's child (CaseResult.device_info)
        gpu=HostGpu(device=device, driver=driver,
                    cuda_driver_api=cuda_driver_api_version() if device != "cpu" else None, visible=gpus),
        versions={key: package_version(names) for key, names in PACKAGES.items()} | {"flametool": __version__},
    )


def _cpu_count() -> int | None:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
