"""Faults of the machine rather than of a case, told in one sentence with what to do: a library that is not
installed or was built for another CUDA, no CUDA device, out of memory at the chosen shape.

Used by the child when a case cannot be set up or run; what is not recognised here is reported as the
exception itself. Matching is on exception types and the libraries' own message texts, because the
exception classes (cupy's CUDARuntimeError, torch's OutOfMemoryError) cannot be imported where the library
is the thing that failed to load.
"""

from __future__ import annotations

import errno
import math
import os
import re
import sys
import traceback

CUPY_INSTALL = "pip install flametool[cuda12] or [cuda13]"
INSTALL_HINT = {
    "cupy": CUPY_INSTALL,
    "cupy_backends": CUPY_INSTALL,
    "cupyx": CUPY_INSTALL,
    "torch": "pip install torch",
    "numpy": "pip install numpy",
    # the built-in jax case (README: flametool does not require JAX): "module 'jax' is not installed" left a CPU
    # user to guess that the README's "jax[cuda13]" is for CUDA and plain jax is what the CPU needs
    "jax": 'pip install jax; on CUDA "jax[cuda13]" or "jax[cuda12]"',
    "jaxlib": 'pip install jax; on CUDA "jax[cuda13]" or "jax[cuda12]"',
}
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
NO_DEVICE = re.compile(r"cudaErrorNoDevice|no CUDA-capable device|No CUDA GPUs are available|"
                       r"Found no NVIDIA driver|cudaErrorInvalidDevice|invalid device ordinal", re.I)
OLD_DRIVER = re.compile(r"cudaErrorInsufficientDriver|driver version is insufficient|"
                        r"CUDA driver (?:version )?is too old|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", re.I)
MISSING_LIB = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")
OUT_OF_MEMORY = re.compile(r"out of memory|Unable to allocate|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED", re.I)


def known_fault(exc: BaseException, shape: list[int], dtype: str, device: str) -> str | None:
    """One sentence for a fault the user fixes outside the case, or None."""
    return disk_full(exc) or out_of_memory(exc, shape, dtype, device) or environment(exc, device)


DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def disk_full(exc: BaseException) -> str | None:
    """A write that found no room. Without a file name in the error it was most likely the case's own output
    (its stdout is <case>.log in the run directory) when that file's disk is full."""
    if not (isinstance(exc, OSError) and exc.errno in DISK_FULL):
        return None
    name = exc.filename
    if name is None:
        try:
            if os.fstatvfs(1).f_bavail == 0:
                name = os.readlink("/proc/self/fd/1")
        except OSError:
            pass
    return f"{name or 'a file'}: cannot be written ({exc.strerror or exc})"


# "Tried to allocate 20.00 GiB" (torch), "Unable to allocate 7.45 TiB for an array" (numpy), "allocating
# 6,442,450,944 bytes" (cupy): the size of the one allocation that failed
ALLOCATION = re.compile(r"allocat\w*\s+([\d,.]+)\s*(bytes|[KMGTPE]i?B)\b", re.I)
UNITS = {"bytes": 1, **{f"{p}{i}b": 1024 ** (n + 1) for n, p in enumerate("kmgtpe") for i in ("", "i")}}
# Operands this small cannot have used up the memory: an allocation that failed was something else's
SMALL_OPERANDS = 1 << 20


def failed_allocation(text: str) -> int | None:
    """The bytes the failed allocation asked for, when the message says (None when not)."""
    m = ALLOCATION.search(text)
    if not m:
        return None
    try:
        return int(float(m.group(1).replace(",", "")) * UNITS[m.group(2).lower()])
    except (ValueError, KeyError):
        return None


def out_of_memory(exc: BaseException, shape: list[int], dtype: str, device: str) -> str | None:
    name = type(exc).__name__
    if not (isinstance(exc, MemoryError) or "OutOfMemory" in name or OUT_OF_MEMORY.search(str(exc))):
        return None
    itemsize = ITEMSIZE.get(dtype, 4)
    at = ",".join(str(x) for x in shape)
    if len(shape) == 3:  # a product: a (MxK), b (KxN) and out (MxN)
        m, k, n = shape
        need, operands = (m * k + k * n + m * n) * itemsize, "a, b and out"
    else:  # an elementwise op, a reduction, a copy, an FFT: at most a, b and out of N elements each
        need, operands = 3 * math.prod(shape) * itemsize, "its arrays (at most a, b and out)"
    where = "GPU memory" if device != "cpu" else "memory"
    said = first_sentences(str(exc)) or name
    asked = failed_allocation(str(exc))
    # a, b and out are allocated one at a time, each no larger than the three together: an allocation larger
    # than that, or one that failed beside operands of kilobytes, is the factory's own (a buffer of its own, a
    # size it computed wrongly), and a smaller --shape would not help
    if (asked is not None and asked > need) or (asked is None and need < SMALL_OPERANDS):
        tried = f"an allocation of {size_text(asked)}" if asked is not None else "an allocation"
        return (f"out of {where}: {tried} failed in the case's own code ({said}); {operands} at shape "
                f"{at} {dtype} need only {size_text(need)}, so the shape is not what ran out")
    return (f"out of {where} at shape {at} {dtype}: {operands} need {size_text(need)} "
            f"({said}); try a smaller shape (--shape; a sweep's --sizes)"
            + (", or free the GPU (nvidia-smi lists what holds its memory)" if device != "cpu" else ""))


def size_text(n: int) -> str:
    """Bytes in the unit that reads best: 768 bytes, 6.0 KiB, 1.5 GiB."""
    for unit, scale in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def environment(exc: BaseException, device: str) -> str | None:
    text = str(exc)
    library = library_of(exc)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        if top in INSTALL_HINT:
            return f"{'cupy' if top.startswith('cupy') else top} is not installed ({INSTALL_HINT[top]})"
        return f"module {exc.name!r} is not installed (the case imports it)"
    if isinstance(exc, ImportError) and library:
        cause = import_cause(text)
        if library == "cupy":
            return (f"cupy cannot be loaded ({cause}): the installed CuPy is probably built for another CUDA; "
                    f"install the one for the CUDA version nvidia-smi shows ({CUPY_INSTALL})")
        return f"{library} cannot be loaded ({cause}); reinstall it for this machine's CUDA"
    if OLD_DRIVER.search(text):
        which = library or "the library"
        return (f"the NVIDIA driver is older than the CUDA that {which} was built for ({first_sentences(text)}): "
                f"install a {which} build for the CUDA version nvidia-smi shows"
                + (f" ({CUPY_INSTALL})" if which == "cupy" else "") + ", or update the driver")
    torch = sys.modules.get("torch")
    if library == "torch" and torch is not None and device != "cpu" and (
            "not compiled with CUDA" in text or "has no CUDA device" in text):
        if getattr(torch.version, "cuda", None) is None:
            return (f"torch {torch.__version__} is built without CUDA: install a CUDA build of torch "
                    "(https://pytorch.org/get-started/locally/), or use --device cpu")
        return f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device{visible_devices()}"
    if NO_DEVICE.search(text):
        return f"{library or 'the library'} sees no CUDA device {device}{visible_devices()} ({first_sentences(text)})"
    return None


def library_of(exc: BaseException) -> str | None:
    """Which array library the fault came from: the message, else the deepest frame in a library's files."""
    text = str(exc)
    if isinstance(exc, ImportError) and exc.name:
        return exc.name.split(".")[0]
    if re.search(r"\bcupy\b|\bCuPy\b|cupy_backends", text):
        return "cupy"
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        parts = frame.filename.replace("\\", "/").split("/")
        for lib in ("cupy", "cupy_backends", "cupyx", "torch"):
            if lib in parts[:-1]:
                return "cupy" if lib.startswith("cupy") else lib
    if re.search(r"\btorch\b|Torch", text):
        return "torch"
    return None


def import_cause(text: str) -> str:
    """CuPy wraps the real import error in a banner; the line after 'Original error:' is the cause."""
    lines = [l.strip() for l in text.splitlines() if l.strip() and not set(l.strip()) <= {"="}]
    for i, line in enumerate(lines):
        if line.startswith("Original error") and i + 1 < len(lines):
            return lines[i + 1][:200]
    missing = MISSING_LIB.search(text)
    if missing:
        return f"{missing.group(1)} not found"
    return lines[0][:200] if lines else "ImportError"


def first_sentences(text: str, limit: int = 160) -> str:
    """The start of a library's message: its first line, cut after the sentence that passes `limit`."""
    line = next((l.strip() for l in text.splitlines() if l.strip()), "")
    if len(line) <= limit:
        return line.rstrip(".")
    cut = line.find(". ", limit // 2)
    return (line[:cut] if 0 < cut <= limit * 2 else line[:limit] + "…").rstrip(".")


def visible_devices() -> str:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f" (CUDA_VISIBLE_DEVICES={value!r})" if value is not None else ""
