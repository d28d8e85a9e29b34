"""The counted loop's tracers (measure/counting.py runs them around its windows): CUPTI's activity records through
cupti-python (every library's CUDA work in the process), or torch.profiler where cupti-python is missing and the case
imported torch with CUDA. Each gives a Window: counts, bytes and nanoseconds by (kind, name), and with
``begin(raw=True)`` the records themselves, where the step's lines are placed (steplines.py)."""

from __future__ import annotations

import re
import sys
import threading
from collections import Counter
from typing import Any

from ..run import steptrace
from ..run.counts import ON_CPU

NOT_TRACED = ("counts of CUDA API calls and kernels are not available: {why}; "
              "install cupti-python (pip install 'flametool[cupti]') for them")


class Window:
    """What a tracer saw in one window: counts, bytes and nanoseconds by (kind, name)."""

    def __init__(self) -> None:
        self.count: Counter = Counter()
        self.bytes: Counter = Counter()
        self.ns: Counter = Counter()
        # the records themselves, where the step's lines are placed (CuptiTracer.begin(raw=True))
        self.api: list[steptrace.ApiCall] = []
        self.gpu: list[steptrace.GpuOp] = []
        self.allocations: list[tuple[int, int]] = []  # (correlation id, 1)
        self.raw = False

    def add(self, kind: str, name: str, ns: int = 0, nbytes: int | None = None) -> None:
        self.count[(kind, name)] += 1
        self.ns[(kind, name)] += ns
        if nbytes is not None:
            self.bytes[(kind, name)] += nbytes


class CuptiTracer:
    """CUPTI activity records (runtime and driver API, concurrent kernels, memcpy, memset, memory) through
    cupti-python. CUPTI sees every library's work in the process."""

    KINDS = ("RUNTIME", "DRIVER", "CONCURRENT_KERNEL", "MEMCPY", "MEMSET", "MEMORY2")

    def __init__(self) -> None:
        from cupti import cupti  # noqa: PLC0415 -- optional

        self.cupti = cupti
        self.lock = threading.Lock()
        self.window: Window | None = None
        self.names: dict[tuple[int, int], str] = {}
        self.enabled: list[Any] = []
        self.name = "cupti-python " + _version("cupti-python")
        # the callbacks are the process's: registered once, by the first tracer (a process may count several cases)
        global _REGISTERED
        if _REGISTERED is None:
            cupti.activity_register_callbacks(self._requested, _completed)
        _REGISTERED = self
        for kind in self.KINDS:
            try:
                cupti.activity_enable(getattr(cupti.ActivityKind, kind))
                self.enabled.append(getattr(cupti.ActivityKind, kind))
            except Exception:  # noqa: BLE001 -- MEMORY2 needs a newer CUPTI; the rest still counts
                pass

    @staticmethod
    def _requested():
        return 8 * 1024 * 1024, 0

    def _api_name(self, domain, cbid: int) -> str:
        key = (int(domain), int(cbid))
        if key not in self.names:
            try:
                self.names[key] = api_name(self.cupti.get_callback_name(domain, cbid))
            except Exception:  # noqa: BLE001
                self.names[key] = f"cbid {cbid}"
        return self.names[key]

    def _completed(self, activities) -> None:
        c = self.cupti
        K = c.ActivityKind
        with self.lock:
            w = self.window
            if w is None:
                return
            for a in activities:
                kind = a.kind
                if kind == K.RUNTIME or kind == K.DRIVER:
                    domain = c.CallbackDomain.RUNTIME_API if kind == K.RUNTIME else c.CallbackDomain.DRIVER_API
                    name = self._api_name(domain, a.cbid)
                    w.add("api", name, a.end - a.start)
                    if w.raw:
                        w.api.append(steptrace.ApiCall(name, int(a.start), int(a.end), int(a.correlation_id),
                                                       int(getattr(a, "thread_id", 0))))
                elif kind == K.CONCURRENT_KERNEL:
                    w.add("kernel", str(a.name), a.end - a.start)
                    if w.raw:
                        w.gpu.append(_gpu_op(a, "kernel", str(a.name)))
                elif kind == K.MEMCPY:
                    try:
                        direction = c.ActivityMemcpyKind(a.copy_kind).name
                    except Exception:  # noqa: BLE001
                        direction = str(a.copy_kind)
                    w.add("copy", direction, a.end - a.start, int(a.bytes))
                    if w.raw:
                        w.gpu.append(_gpu_op(a, "copy", direction, int(a.bytes)))
                elif kind == K.MEMSET:
                    w.add("memset", "memset", a.end - a.start, int(a.bytes))
                    if w.raw:
                        w.gpu.append(_gpu_op(a, "memset", "memset", int(a.bytes)))
                elif kind == getattr(K, "MEMORY2", None):
                    try:
                        op = c.ActivityMemoryOperationType(a.memory_operation_type).name.lower()
                        where = c.ActivityMemoryKind(a.memory_kind).name.lower()
                    except Exception:  # noqa: BLE001
                        op, where = str(a.memory_operation_type), str(a.memory_kind)
                    w.add("device-alloc", f"CUPTI {where} {op}", 0, int(a.bytes))
                    if w.raw:
                        w.allocations.append((int(getattr(a, "correlation_id", 0)), 1))

    def begin(self, raw: bool = False) -> None:
        self.cupti.activity_flush_all(1)
        with self.lock:
            self.window = Window()
            self.window.raw = raw

    def clock(self) -> int:
        """CUPTI's timestamp now, in ns: the clock its activity records carry."""
        return int(self.cupti.get_timestamp())

    def end(self) -> Window:
        self.cupti.activity_flush_all(1)
        with self.lock:
            w, self.window = self.window, None
        return w or Window()

    def close(self, detach: bool = False) -> str | None:
        """Tracing off; returns why CUPTI could not be detached (None: it was, or was not asked to be). CUPTI stays
        attached (finalizing and attaching again within a process is not relied on) unless `detach`: the process
        counts nothing after this, but times or samples the same calls, and CUPTI left attached with its activity
        kinds off is still in every API call's path (the H200, 2026-12-04: libcupti's frames in torch's stacks
        sampled after its counted loop). cuptiFinalize detaches it: called here after the caller's synchronisation
        and this flush, on the only thread that calls CUDA, as CUPTI asks of it."""
        for kind in self.enabled:
            try:
                self.cupti.activity_disable(kind)
            except Exception:  # noqa: BLE001
                pass
        try:
            self.cupti.activity_flush_all(1)
        except Exception:  # noqa: BLE001
            pass
        if not detach:
            return None
        global _REGISTERED
        with self.lock:
            self.window = None
        try:
            self.cupti.finalize()
        except Exception as exc:  # noqa: BLE001 -- the counts stand; the stacks after them may show CUPTI
            return f"{type(exc).__name__}: {str(exc)[:120]}"
        _REGISTERED = None  # a later tracer would register its callbacks again
        return None


_REGISTERED: CuptiTracer | None = None


def _gpu_op(a: Any, kind: str, name: str, nbytes: int | None = None) -> steptrace.GpuOp:
    """A kernel, copy or memset record as the timeline keeps it."""
    return steptrace.GpuOp(kind, name, int(a.start), int(a.end), int(a.correlation_id),
                           int(getattr(a, "device_id", 0)), int(getattr(a, "stream_id", 0)), nbytes)


def _completed(activities) -> None:
    """CUPTI's buffer-completed callback: to the tracer counting now."""
    if _REGISTERED is not None:
        _REGISTERED._completed(activities)


class TorchTracer:
    """The fallback: torch.profiler's CUDA activity (kineto, CUPTI inside torch), used only where cupti-python is
    missing and the case imported torch with CUDA. It names kernels, copies, memsets and the runtime calls
    kineto records (not every driver call CUPTI's own activity records would)."""

    def __init__(self) -> None:
        import torch  # noqa: PLC0415

        self.torch = torch
        self.prof: Any = None
        self.name = "torch.profiler (torch " + torch.__version__ + ")"

    def begin(self, raw: bool = False) -> None:
        from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415

        self.prof = profile(activities=[ProfilerActivity.CUDA])
        self.prof.__enter__()

    def end(self) -> Window:
        prof, self.prof = self.prof, None
        prof.__exit__(None, None, None)
        w = Window()
        for e in prof.events():
            name = e.name
            device = str(getattr(e, "device_type", "")).endswith("CUDA")
            us = getattr(e, "device_time", None) if device else getattr(e, "cpu_time", None)
            ns = int((us or 0) * 1e3)
            if device:
                if name.startswith("Memcpy"):
                    w.add("copy", name.split()[1] if " " in name else name, ns)
                elif name.startswith("Memset"):
                    w.add("memset", "memset", ns)
                else:
                    w.add("kernel", name, ns)
            elif name.startswith("cuda") or name.startswith("cu"):
                w.add("api", name, ns)
        return w

    def close(self, detach: bool = False) -> str | None:
        return None  # torch.profiler's CUPTI is kineto's to tear down


def api_name(name: str) -> str:
    """CUPTI's name of a runtime call without the CUDA version its callback id was added in: 'cudaGetDevice_v3020'
    -> 'cudaGetDevice'. The driver's names are its symbols ('cuMemAlloc_v2' stays); '_ptsz' and '_ptds', the
    per-thread default stream variants, are kept."""
    return re.sub(r"^(cuda\w+?)_v\d{4,5}$", r"\1", name)


def _version(dist: str) -> str:
    try:
        from importlib.metadata import version  # noqa: PLC0415

        return version(dist)
    except Exception:  # noqa: BLE001
        return "?"


def make_tracer(device: str) -> tuple[Any | None, str | None]:
    """(tracer, None), or (None, why API calls and kernels are not counted)."""
    if device == "cpu":
        return None, ON_CPU
    try:
        return CuptiTracer(), None
    except ImportError:
        why = "cupti-python is not installed"
    except Exception as exc:  # noqa: BLE001 -- a CUPTI that does not start (another profiler holds it)
        why = f"CUPTI did not start ({type(exc).__name__}: {str(exc)[:120]})"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        try:
            return TorchTracer(), None
        except Exception as exc:  # noqa: BLE001
            why += f"; torch.profiler did not start ({type(exc).__name__})"
    return None, NOT_TRACED.format(why=why)
