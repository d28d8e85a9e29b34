"""What machine and software a run was measured on. Read without importing torch or cupy (slow, and the
parent must not create a CUDA context): packages by metadata, the GPU through the driver's own libraries."""

from __future__ import annotations

import ctypes
import importlib.metadata
import platform
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


# The driver's and NVML's answers, once asked ahead (ask_ahead), by the function that gives each
_answers: dict[str, object] = {}
_asking: threading.Thread | None = None


def ask_ahead() -> None:
    """Ask the driver and NVML now, in a thread, what cuda_device_count, cuda_driver_api_version and nvml_gpus
    say; each then waits for its answer there instead of asking again. A measuring command calls this before it
    imports its modules: cuInit took 0.18-0.22 s of a fresh process on the H200 host (2026-12-04), and ctypes lets
    go of the GIL while the driver answers, so those imports go on beside it. Asked once a process."""
    global _asking
    if _asking is None:
        _asking = threading.Thread(target=_ask_all, name="flametool-driver", daemon=True)
        _asking.start()


def _ask_all() -> None:
    for name, ask in _ASKED.items():
        try:
            _answers[name] = ask()
        except Exception:  # noqa: BLE001 -- asked again where it is needed, which raises it there
            pass


def _answer(name: str) -> Any:
    if _asking is not None:
        _asking.join()
    return _answers[name] if name in _answers else _ASKED[name]()


def cuda_device_count() -> int:
    """Number of CUDA devices the driver sees (0 without a driver). cuInit creates no context."""
    return _answer("cuda_device_count")


def _cuda_device_count() -> int:
    cuda = _load("libcuda.so.1")
    if cuda is None or cuda.cuInit(0) != 0:
        return 0
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def cuda_driver_api_version() -> str | None:
    return _answer("cuda_driver_api_version")


def _cuda_driver_api_version() -> str | None:
    cuda = _load("libcuda.so.1")
    version = ctypes.c_int(0)
    if cuda is None or cuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return f"{version.value // 1000}.{(version.value % 1000) // 10}"


def nvml_gpus() -> tuple[str | None, list[str]]:
    """(driver version, GPU names in NVML order), or (None, []) without NVML."""
    return _answer("nvml_gpus")


def _nvml_gpus() -> tuple[str | None, list[str]]:
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


_ASKED = {"cuda_device_count": _cuda_device_count, "cuda_driver_api_version": _cuda_driver_api_version,
          "nvml_gpus": _nvml_gpus}


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
