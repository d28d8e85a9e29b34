"""The libraries a child's cases import, imported ahead of them: a spare imports them while it waits for its job
(preload), and on a GPU makes its CUDA context there once it is next to run (open_device); a child started with its
job imports the first now and the others in a thread while the first case is built (preload_behind; imported()
waits for them before a case that needs them); and the built-in cases' operands for the first shape are started in
the background (start_operands)."""

from __future__ import annotations

import importlib
import threading
from typing import cast

from ...workload import builtins, cases, inputs
from ..protocol import JobCase, ProfileJob, SweepJob, TimeJob


def preload(modules: list[str]) -> None:
    """A spare imports its cases' libraries while it waits (torch took 4-5 s a process on the H200 host).
    Best effort: a library that does not import is imported again by its factory, which says what is wrong."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass



def open_device(modules: list[str], device: str) -> None:
    """A spare, its libraries imported, makes its CUDA context and cuBLAS handle while it waits for its job, when
    the parent asks (protocol.OPEN: the spare runs next, spawn.Spares.open): on the H200 they were 0.32 of the 0.45 s
    a timing process at 1024^3 spent setting up and warming up (benchmarks/setup_split.py, 2026-12-04), paid between
    one timed process and the next. Only when asked, because an idle context holds device memory (682 MiB with cupy's
    and torch's handles there): every spare of a run opened at its start would hold gigabytes a big shape may need.
    Best effort, as preload: what fails here fails again in the case's factory, which says what is wrong. Not in a
    fork server (a context does not survive a fork): its children have no spares."""
    index = cases.cuda_index(device)
    if index is None:
        return
    try:
        if "cupy" in modules:
            import cupy

            cupy.cuda.Device(index).use()
            cupy.cuda.runtime.free(0)  # the context
            cupy.cuda.device.get_cublas_handle()
        if "torch" in modules:
            import torch

            torch.cuda.set_device(index)
            torch.cuda.current_blas_handle()  # the context too, where cupy did not make it
    except Exception:  # noqa: BLE001
        pass


_behind: tuple[threading.Thread, set[str]] | None = None  # preload_behind's thread and what it imports



def preload_behind(modules: list[str]) -> None:
    """preload() the first library now and the others in a thread, while the first case is built and warmed
    up (ready): at the seed's shape cupy's 50 warm-up products hold the GPU for 2.9 s, the thread waiting in
    cudaDeviceSynchronize without the GIL, and `import torch` took 6 s on the H200 host (benchmarks/startup.py)."""
    global _behind
    preload(modules[:1])
    if modules[1:]:
        thread = threading.Thread(target=preload, args=(modules[1:],), name="flametool-imports", daemon=True)
        _behind = (thread, set(modules[1:]))
        thread.start()



def imported(libraries: list[str]) -> None:
    """Before a case that imports `libraries` is built: preload_behind's import of them waited for, so that its
    factory finds them whole and never imports them beside that thread (two threads importing one package can
    meet in each other's import locks, and Python then fails one of the imports)."""
    if _behind is not None and _behind[1].intersection(libraries):
        _behind[0].join()



def start_operands(job: TimeJob | SweepJob | ProfileJob, apart: bool = False) -> list[str]:
    """Start making the built-in cases' operands for the job's first shape in the background, and return the
    libraries those cases import: at the seed's shape the values (1.9 billion) and `import torch` take seconds
    each, so a process does both at once; with `apart` (a fresh process, its libraries not imported yet) many
    values are made in a process of their own, whose threads share no GIL with the imports (values.Apart)."""
    todo = [cast(JobCase, job.case)] if isinstance(job, ProfileJob) else job.cases  # a ProfileJob has its case
    shape = (job.shape if isinstance(job, ProfileJob) else (job.plan[0].shape if job.plan else [])
             if isinstance(job, TimeJob) else job.points[0].shape if job.points else [])
    builtin = [c for c in todo if c.case.module == cases.MODULE and c.label in builtins.BUILTIN]
    if builtin and shape:
        inputs.prefetch_shape(shape, builtin[0].dtype, apart)
    return builtins.builtin_libraries([c.case for c in builtin])
