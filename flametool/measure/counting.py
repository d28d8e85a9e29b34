"""The counted loop: what one step() call does, counted (records in counts.py).

Run in the profiled child after its other loops (tracing slows a call about 2x on the H200, so the counts come
from loops of their own, never from the timed ones):

- CUDA API calls, kernels, copies, memsets and device allocations: CUPTI's activity API through cupti-python
  (``pip install flametool[cupti]``), or torch.profiler where cupti-python is missing and the case imported
  torch (both in tracers.py); neither: one line in ``Counts.missing`` and the rest is still counted.
- The library's own pool: torch's allocator statistics, a counting allocator in front of CuPy's pool, JAX's
  device memory statistics (each counts allocations the pool serves, which CUPTI never sees).
- Host memory: tracemalloc, blocks and bytes kept per step and the peak a step reaches above its start.
- Python calls by function: the cProfile loop's table (``python_tallies``).
- Per line of step() (``Counts.by_line``): each of the above by the line that made it (steplines.py says how),
  from the same two windows; with cupti-python, one step's records are kept as its timeline (run/steptrace.py).

Each traced count is the difference of two windows, `n` and `2n` calls, each between two synchronisations:
whatever the synchronisation and the window's edges do (cudaDeviceSynchronize, a flush) is in both and cancels,
and what is left divided by n is exact (a Fraction): an integer where every call does the same, the fraction
where the work repeats every few calls.
"""

from __future__ import annotations

import gc
import linecache
import os
import sys
import threading
import time
import tracemalloc
import types
from collections import Counter, defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from ..run import steptrace
from ..run.counts import CLOCKS, Counts, LineCounts, OUTSIDE, Tally
from ..run.sources import clean_text
from . import steplines
from .protocol import ACTIVE_LOOP_FILE
from .tracers import NOT_TRACED, CuptiTracer, Window, make_tracer

Step = Callable[[], object]
Sync = Callable[[], object]

# the loop's own frames, left out of the Python calls (the loop is flametool's, not the case's)
OWN_LOOPS = {"active_loop", "_loop", "_profiler_tool"}
OWN_BUILTINS = {"<method 'disable' of '_lsprof.Profiler' objects>", "{method 'disable' of '_lsprof.Profiler' objects}",
                # the cProfile loop's own check that step() left its hooks in place (loops.cprofile_phase)
                "<built-in method sys.getprofile>", "<built-in method sys.gettrace>"}


def own_frame(key: tuple[str, int, str]) -> bool:
    file, _line, name = key
    # sys.monitoring.get_tool (3.12+: the same check) is named by cProfile as its build names a built-in
    return name in OWN_BUILTINS or (file == "~" and "get_tool" in name) or (name in OWN_LOOPS and file.replace(os.sep, "/").endswith(
        (ACTIVE_LOOP_FILE, "flametool/measure/counting.py")))
COUNT_STEPS_MIN, COUNT_STEPS_MAX = 16, 256
STEP = "step()"  # the case's step function, whatever its name


def count_steps(steps: int) -> int:
    """Steps in the counted loop's first window (the second holds twice as many): the profiled loop's, a multiple
    of 16 from 16 to 256. A window of whole periods of work that repeats every 2, 4, 8 or 16 calls (a cache
    refilled every fourth call) holds the same share of it whatever call it starts at, so the two windows'
    difference is exact; a window of 250 calls held 62 or 63 fourth calls (63/250, read as exact, where the step
    makes 1/4)."""
    return max(COUNT_STEPS_MIN, min(steps, COUNT_STEPS_MAX) // COUNT_STEPS_MIN * COUNT_STEPS_MIN)


# --- Python calls from the cProfile loop ---------------------------------------------------------------------

def module_of(file: str, paths: list[str] | None = None) -> str:
    """'/x/site-packages/numpy/_core/fromnumeric.py' -> 'numpy._core.fromnumeric', found under the longest entry
    of sys.path that holds the file, so that two environments name one module alike; a file outside sys.path
    keeps its base name."""
    paths = sys.path if paths is None else paths
    best = ""
    for p in paths:
        p = os.path.abspath(p or ".")
        if file.startswith(p.rstrip("/") + "/") and len(p) > len(best):
            best = p.rstrip("/")
    rel = file[len(best) + 1:] if best else os.path.basename(file)
    if rel.endswith(".py"):
        rel = rel[:-3]
    module = rel.replace("/", ".")
    return module[: -len(".__init__")] if module.endswith(".__init__") else module


def function_name(key: tuple[str, int, str], paths: list[str] | None = None) -> str:
    """A cProfile function key as diffs match it, without line numbers (they differ between versions):
    'numpy._core.fromnumeric.sum', 'numpy.empty' (a built-in), 'numpy.ndarray.reshape' (a method)."""
    file, _line, name = key
    if file == "~":
        inner = name.strip("<>{}")
        if inner.startswith("built-in method "):
            return inner[len("built-in method "):]
        if inner.startswith("method '") and " of '" in inner:
            meth, _, owner = inner[len("method '"):].partition("' of '")
            return f"{owner.split(chr(39))[0]}.{meth}"
        return inner
    return f"{module_of(file, paths)}.{name}"


def python_tallies(stats: dict, steps: int, paths: list[str] | None = None) -> list[Tally]:
    """Python-level calls per step from a cProfile table ({key: (cc, nc, tt, ct, callers)}) of `steps` calls:
    each function's calls (nc, recursive ones included) over the steps, exact; own time per step beside it."""
    calls: Counter = Counter()
    own: defaultdict = defaultdict(float)
    for key, (_cc, nc, tt, _ct, callers) in stats.items():
        if own_frame(key):
            continue
        # what the loop calls is the case's own step(), named alike in every case and layout (as treediff.STEP_ROOT)
        name = STEP if callers and all(own_frame(c) for c in callers) else function_name(key, paths)
        calls[name] += nc
        own[name] += tt
    return [Tally("python", name, Fraction(n, steps), us=own[name] * 1e6 / steps)
            for name, n in sorted(calls.items(), key=lambda kv: (-kv[1], kv[0])) if n]


# --- the libraries' pools -------------------------------------------------------------------------------------

class Pools:
    """Cumulative allocation counters of the pools of the libraries the case imported, read before and after a
    window: {name: (allocations, bytes or None)}."""

    def __init__(self) -> None:
        self.cupy_calls = [0, 0]
        self.cupy_restore: Callable | None = None
        cupy = sys.modules.get("cupy")
        if cupy is not None:
            try:
                pool = cupy.get_default_memory_pool()
                counter = self.cupy_calls

                def counting(size: int):
                    counter[0] += 1
                    counter[1] += size
                    return pool.malloc(size)

                previous = cupy.cuda.get_allocator()
                cupy.cuda.set_allocator(counting)
                self.cupy_restore = lambda: cupy.cuda.set_allocator(previous)
            except Exception:  # noqa: BLE001 -- a CuPy without these: its pool is not counted
                self.cupy_restore = None

    def read(self) -> dict[str, tuple[int, int | None]]:
        got: dict[str, tuple[int, int | None]] = {}
        if self.cupy_restore is not None:
            got["cupy memory pool malloc"] = (self.cupy_calls[0], self.cupy_calls[1])
        torch = sys.modules.get("torch")
        if torch is not None:
            try:
                if torch.cuda.is_initialized():
                    s = torch.cuda.memory_stats()
                    got["torch caching allocator"] = (int(s.get("allocation.all.allocated", 0)),
                                                      int(s.get("allocated_bytes.all.allocated", 0)))
            except Exception:  # noqa: BLE001
                pass
        jax = sys.modules.get("jax")
        if jax is not None:
            try:
                for d in jax.local_devices():
                    stats = d.memory_stats() or {}
                    if "num_allocs" in stats:
                        got[f"jax {d.platform}:{d.id} allocator"] = (int(stats["num_allocs"]), None)
            except Exception:  # noqa: BLE001
                pass
        return got

    def close(self) -> None:
        if self.cupy_restore is not None:
            self.cupy_restore()


# --- the counted loop -----------------------------------------------------------------------------------------

def _loop(step: Step, n: int) -> None:
    for _ in range(n):
        step()


def _per_step(a, b, n: int) -> Fraction:
    return Fraction(b - a, n)


def count(step: Step, sync: Sync, steps: int, device: str, ops_per_step: int = 1,
          python: tuple[dict, int] | None = None, use_tracer: bool = True, per_line: bool = True,
          label: str = "", timeline_to: str | None = None, detach: bool = False) -> Counts:
    """The counted loop of one case: two windows of `steps` and 2 x `steps` calls, traced, then the same two
    under tracemalloc; `python`: the cProfile loop's (table, steps), for the Python calls. `per_line`: the
    counts by line of step() as well (two more windows for the Python calls and the pools; steplines.py);
    `timeline_to`: where one step's CUPTI records go (run/steptrace.py), when cupti-python traced them; `detach`:
    the tracer detached at the end (CuptiTracer.close), where the process's sampled loop comes after."""
    n = steps
    tallies: list[Tally] = []
    missing: list[str] = []
    # lines are step()'s own: a step that is not Python code (step = a.sum) has none, whatever Python it calls
    code = getattr(step, "__code__", None)
    per_line = per_line and isinstance(code, type(_loop.__code__))
    tracer, why = make_tracer(device) if use_tracer else (None, NOT_TRACED.format(why="tracing was not asked for"))
    if why:
        missing.append(why)
    pools = Pools()
    windows = []
    us = None
    loop = _loop.__code__
    # placing by time needs CUPTI's clock from cupti-python (get_timestamp, in every release that has the activity API)
    traced_lines = per_line and isinstance(tracer, CuptiTracer) and hasattr(tracer.cupti, "get_timestamp")
    marks: list[steplines.StepLines] = []
    lined: LinesMade | None = None
    try:
        for calls in (n, 2 * n):
            sync()
            before = pools.read()
            m = (steplines.StepLines(loop, clock=tracer.clock, step=code)
                 if traced_lines and tracer is not None else None)
            if tracer is not None:
                tracer.begin(raw=m is not None)
            if m is not None:
                m.start()
            t0 = time.perf_counter()
            try:
                _loop(step, calls)
            finally:
                if m is not None:
                    m.stop()
            t1 = time.perf_counter()
            sync()
            w = tracer.end() if tracer is not None else None
            windows.append((w, before, pools.read()))
            if m is not None:
                marks.append(m)
            us = (t1 - t0) * 1e6 / (calls * ops_per_step)
        if per_line:
            lined = python_and_pools_by_line(step, sync, n, pools)
    finally:
        pools.close()
        if tracer is not None:
            kept = tracer.close(detach)
            if kept:
                missing.append(f"CUPTI could not be detached after the counted loop ({kept}): the stacks sampled after "
                               "it may show its library")
    (w1, b1, a1), (w2, b2, a2) = windows
    if w1 is not None and w2 is not None:
        for key in sorted(set(w1.count) | set(w2.count)):
            c = _per_step(w1.count[key], w2.count[key], n)
            if c == 0:
                continue
            nbytes = _per_step(w1.bytes[key], w2.bytes[key], n) if key in w2.bytes or key in w1.bytes else None
            mean_ns = w2.ns[key] / w2.count[key] if w2.count[key] else 0.0
            timed = key[0] in CLOCKS  # a kind the tracer times (device allocations: CUPTI gives no time)
            tallies.append(Tally(key[0], key[1], c, nbytes, float(c) * mean_ns / 1e3 if timed else None))
    for name in sorted(set(a1) & set(a2) & set(b1) & set(b2)):
        c = _per_step(a1[name][0] - b1[name][0], a2[name][0] - b2[name][0], n)
        bb = None
        x1, y1, x2, y2 = a1[name][1], b1[name][1], a2[name][1], b2[name][1]
        if x1 is not None and y1 is not None and x2 is not None and y2 is not None:
            bb = _per_step(x1 - y1, x2 - y2, n)
        tallies.append(Tally("device-alloc", name, c, bb))
    host_lines = steplines.Placed() if lined is not None else None
    tallies += host_allocations(step, sync, n, host_lines)
    if python is not None:
        stats, python_steps = python
        tallies = python_tallies(stats, python_steps) + tallies
    counts = Counts(steps=n, python_steps=python[1] if python else None, tallies=tallies, us_per_call=us,
                    tracer=tracer.name if tracer is not None else None, missing=missing, ops_per_step=ops_per_step)
    if per_line and tracer is not None and not traced_lines:
        missing.append("CUDA API calls and kernels per line of step() need cupti-python (not torch.profiler)")
    if lined is not None and lined.code is not None:
        placed = steplines.Placed()
        if python is not None:
            placed.add({(line, "python"): c for line, c in lined.python.items()}, ["python"])
        if lined.pools:
            placed.add(lined.pools, ["device-alloc"])
        if len(marks) == 2 and w1 is not None and w2 is not None:
            threads = {threading.get_native_id(), threading.get_ident() & 0xFFFFFFFF}
            got = [steplines.place(m.marks, w.api, w.gpu, w.allocations, threads) for m, w in zip(marks, (w1, w2))]
            placed.add(steplines.per_step(got[0], got[1], n), ["api", "kernel", "copy", "memset", "device-alloc"])
            if timeline_to:
                save_timeline(timeline_to, label, lined.code, marks[1], w2, threads)
        if host_lines is not None:
            placed.add(host_lines.counts, ["host-alloc"])
        by_line(counts, placed, lined.code)
    return counts


def step_file(path: str, paths: list[str] | None = None) -> str:
    """The step's file as the per-line counts name it: relative to the longest sys.path entry holding it (as
    py-spy names a frame's file), else as the code object has it."""
    best = ""
    for p in (sys.path if paths is None else paths):
        p = os.path.abspath(p or ".").rstrip("/")
        if path.startswith(p + "/") and len(p) > len(best):
            best = p
    return path[len(best) + 1:] if best else path


def line_text(code: Any, line: int) -> str | None:
    """A line of the case's own file (the step's), cleaned as sources.json's texts are; None where not read."""
    text = linecache.getline(code.co_filename, line)
    return clean_text(text.strip()) if text.strip() else None


def by_line(counts: Counts, placed: steplines.Placed, code: Any) -> None:
    """`placed` into `counts.by_line`, in source order (what no line made last), and a line in `missing` for
    any kind whose lines do not sum to the step's count (they do by construction but for Python calls, which
    come from the cProfile loop and the profile hook's windows: a step that does other work each time)."""
    from ..run import counts as table  # noqa: PLC0415 -- the kinds' order

    file = step_file(code.co_filename)
    order = [k.name for k in table.COUNTED]
    kinds = sorted((k for k in placed.kinds if counts.counted(k)), key=order.index)
    rows: dict[int, dict[str, Fraction]] = {}
    for (line, kind), c in placed.counts.items():
        if kind in kinds:
            rows.setdefault(line, {})[kind] = c
    counts.by_line = [LineCounts(file if line else OUTSIDE, line,
                                 {k: got[k] for k in kinds if k in got}, line_text(code, line) if line else None)
                      for line, got in sorted(rows.items(), key=lambda kv: (kv[0] == 0, kv[0]))]
    counts.by_line_kinds = kinds
    for kind in list(kinds):
        lines, step_total = counts.line_total(kind), counts.placed_total(kind)
        if lines != step_total:
            # per-line figures that do not sum to the step's are not shown as if they were exact: the kind leaves
            # the lines (the step's own count stays), and the line says why. Seen on the H200: cupy's Cython calls
            # Python functions that Python 3.12's cProfile (a sys.monitoring tool) and the profile hook count apart
            counts.by_line_kinds = [k for k in counts.by_line_kinds if k != kind]
            for row in counts.by_line:
                row.counts.pop(kind, None)
            counts.missing.append(f"{table.KINDS[kind].title} per line of step() sum to {lines} where the step's "
                                  f"count is {step_total} (two counters that see different calls, or a step that does "
                                  "other work each window): not listed per line")


@dataclass
class LinesMade:
    """The profile hook's Python calls and the pools' allocations by line of step(), per step (exact)."""

    code: Any
    python: dict[int, Fraction]
    pools: dict[tuple[int, str], Fraction]


def python_and_pools_by_line(step: Step, sync: Sync, n: int, pools: Pools) -> LinesMade | None:
    """Two windows (n, 2n) under the profile hook (Python calls by line) and the line hook reading the pools'
    allocation counters at each line; None where step() is not Python code (it has no lines)."""
    names = sorted(pools.read())

    def allocations() -> list[int]:
        got = pools.read()
        return [got[k][0] if k in got else 0 for k in names]

    made: list[tuple[Counter, Counter]] = []
    code = None
    collecting = gc.isenabled()
    for calls in (n, 2 * n):
        sync()
        # no cyclic collection inside the windows: a finalizer it runs (of garbage not the step's) calls Python
        # at whatever line is running, a call the step did not make, in one window and not the other
        gc.collect()
        gc.disable()
        hook = steplines.PythonLines(_loop.__code__, step.__code__)
        marks = steplines.StepLines(_loop.__code__, counters=allocations if names else None,
                                    step=step.__code__)
        marks.start()
        hook.start()
        try:
            _loop(step, calls)
        finally:
            hook.stop()
            marks.stop()
            if collecting:
                gc.enable()
        sync()
        code = code or hook.code
        made.append((Counter(hook.calls), steplines.credited(marks, ["device-alloc"] * len(names))))
    if code is None:
        return None
    (p1, c1), (p2, c2) = made
    python = {line: Fraction(p2[line] - p1[line], n) for line in sorted(set(p1) | set(p2)) if p2[line] != p1[line]}
    return LinesMade(code, python, steplines.per_step(c1, c2, n))


def save_timeline(file: str, label: str, code: Any, marks: steplines.StepLines, w: Window, threads: set[int]) -> None:
    """One step of the traced window (the middle one) as its timeline file; a step without marks writes none."""
    first = code.co_firstlineno
    # the calling thread as CUPTI names it; where none of its ids matches ours, the thread that made most calls
    thread = next((a.thread for a in w.api if a.thread in threads),
                  Counter(a.thread for a in w.api).most_common(1)[0][0] if w.api else 0)
    texts = {line: line_text(code, line) for line in {line for _t, line in marks.marks}}
    trace = steplines.one_step(label, step_file(code.co_filename), marks.marks, first, w.api, w.gpu, thread, texts)
    if trace is not None:
        steptrace.save(file, trace)


HOST_FRAMES = 64  # tracemalloc's frames per block: enough to reach the counted loop's frame from a step's callees


def _alive(step: types.CodeType | None) -> tuple[Counter[steplines.Key], int]:
    """The traced blocks alive now, by the line of step() that allocated them, and their bytes (steplines)."""
    # a full collection empties the interpreter's free lists: a tuple or float freed into one is still a traced
    # block under its old traceback (the snapshot's own, an earlier window's), and frees what is garbage
    gc.collect()
    snapshot = tracemalloc.take_snapshot()
    blocks = [(tuple((f.filename, f.lineno) for f in s.traceback), s.count, s.size)
              for s in snapshot.statistics("traceback")]
    del snapshot
    # the snapshots' own blocks (tracemalloc.py) and the tables made of them (steplines.py) are not the step's
    return steplines.alive_by_line(blocks, _loop.__code__, step, own=(tracemalloc.__file__, steplines.__file__))


def host_allocations(step: Step, sync: Sync, n: int, by_line: steplines.Placed | None = None) -> list[Tally]:
    """tracemalloc around two windows (n, 2n calls): blocks and bytes a step keeps (net, exact), and the peak
    one step reaches above what it started with (the most over `n` single steps). `by_line`: the blocks kept by
    line of step() go there: each block alive at a window's end is the line's whose run allocated it (from its
    traceback), so a block freed later, wherever, is taken back from the line that made it; what no line of
    step() made (the loop's, the interpreter's) is OUTSIDE."""
    code = getattr(step, "__code__", None)
    code = code if isinstance(code, types.CodeType) else None
    was = tracemalloc.is_tracing()
    if not was:
        tracemalloc.start(HOST_FRAMES)
    # tracing started elsewhere with fewer frames may cut a block's traceback short of the loop's frame
    placed = by_line is not None and code is not None and tracemalloc.get_traceback_limit() >= HOST_FRAMES
    windows = []
    try:
        for calls in (n, 2 * n):
            sync()
            before = _alive(code)
            gc.collect()  # the free lists emptied again of what reading `before` freed into them (as in _alive)
            _loop(step, calls)
            sync()
            after = _alive(code)
            kept = Counter(after[0])
            kept.subtract(before[0])  # subtract, not '-': a line's net may be below 0 in one window
            windows.append((kept, after[1] - before[1]))
        peak = 0
        for _ in range(n):
            tracemalloc.reset_peak()
            start, _ = tracemalloc.get_traced_memory()
            step()
            _, top = tracemalloc.get_traced_memory()
            peak = max(peak, top - start)
    finally:
        if not was:
            tracemalloc.stop()
    (c1, b1), (c2, b2) = windows
    k1, k2 = sum(c1.values()), sum(c2.values())
    if by_line is not None and placed:
        by_line.add(steplines.per_step(c1, c2, n), ["host-alloc"], outside={"host-alloc": _per_step(k1, k2, n)})
    return [Tally("host-alloc", "blocks kept (net)", _per_step(k1, k2, n), _per_step(b1, b2, n)),
            Tally("host-alloc", "peak above start, one step", Fraction(1), Fraction(peak))]
