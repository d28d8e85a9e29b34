"""Which line of the case's step() made what the counted loop counts (issue 39, counted per line).

The step frame is the one the counted loop calls (its caller's code is the loop's): a hook finds it from the
current frame by walking ``f_back`` and reads the line it is at.

- Python calls: a profile hook (``sys.setprofile``; on 3.12 it is served by sys.monitoring underneath, the same
  events cProfile's counts come from) counts each 'call' and 'c_call' inside a step at the step frame's current
  line; the call of step() itself counts at its ``def`` line.
- Everything else but host memory is placed by time: a trace hook on the step frame alone (``sys.settrace``, line events of that
  frame only) marks each line as it begins and step()'s return (line 0). With ``clock`` (``cupti.get_timestamp``,
  the clock CUPTI's activity records carry) the marks are a list of (time, line); an API call on the calling
  thread is placed at the line current at its start, and a kernel, copy, memset or memory record at its
  launching call's line by correlation id (the GPU runs it later, when another line may be current: the time of
  the launch, not of the work, says which line made it). Why time for the API calls and not a callback per call:
  the activity records already carry the host's start times, so the only extra cost in the traced loop is one
  timestamp per line run. With ``counters`` (a pool's allocation count) each mark reads them and the change
  since the last mark is the line's: right for counters that only rise, wrong for a count of what is alive (a
  step's temporaries are freed after its last line, outside it), so host memory is placed otherwise:
- Host memory by the line that allocated it, from each block's tracemalloc traceback (``alive_by_line``).
What falls between the marks (the window's synchronisation, another thread's calls) is ``OUTSIDE``; it cancels in
the difference of the two windows unless it grows with the steps, and it is kept so that the lines always sum to
the step's count.
"""

from __future__ import annotations

import bisect
import sys
import types
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence

from ..run.steptrace import ApiCall, GpuOp, LineSpan, StepTrace

OUTSIDE_LINE = 0  # the line of what no line of step() made
Key = tuple[int, str]  # (line, kind)


class StepLines:
    """A trace hook on step()'s frame only: marks each line as it begins. `clock`: keep (time, line) marks;
    `counters`: at each mark, credit what they rose by since the last mark to the line that was running.
    `step`: step()'s code, so that Python the interpreter runs between two steps (a finalizer, a garbage
    collector's callback, whose frame the loop's frame is under too) is not taken for a step."""

    def __init__(self, loop: types.CodeType, clock: Callable[[], int] | None = None,
                 counters: Callable[[], Sequence[int]] | None = None, step: types.CodeType | None = None) -> None:
        self.loop = loop
        self.step = step
        self.clock = clock
        self.counters = counters
        self.marks: list[tuple[int, int]] = []  # (time, line); a step begins at its def line, ends at line 0
        self.credit: dict[int, list[int]] = {}
        self.code: types.CodeType | None = None  # step()'s code, once seen
        self.current = OUTSIDE_LINE
        self.last: Sequence[int] = ()
        self._previous: Any = None
        # bound once: a bound method made per call would be a host allocation the line hook makes
        self._local_hook = self._local
        self._global_hook = self._global

    def _mark(self, line: int) -> None:
        if self.clock is not None:
            self.marks.append((self.clock(), line))
        if self.counters is not None:
            now = self.counters()
            got = self.credit.get(self.current)
            if got is None:
                got = self.credit[self.current] = [0] * len(now)
            for i, (a, b) in enumerate(zip(now, self.last)):
                got[i] += a - b
            self.last = now
        self.current = line

    def _global(self, frame: types.FrameType, event: str, arg: object) -> Any:
        back = frame.f_back
        if (event == "call" and back is not None and back.f_code is self.loop
                and (self.step is None or frame.f_code is self.step)):
            self.code = frame.f_code
            self._mark(frame.f_code.co_firstlineno)
            return self._local_hook
        return None

    def _local(self, frame: types.FrameType, event: str, arg: object) -> Any:
        if event == "line":
            self._mark(frame.f_lineno)
        elif event == "return":
            self._mark(OUTSIDE_LINE)
        return self._local_hook

    def start(self) -> None:
        self.current = OUTSIDE_LINE
        self.last = self.counters() if self.counters is not None else ()
        self._previous = sys.gettrace()
        sys.settrace(self._global_hook)

    def stop(self) -> None:
        sys.settrace(self._previous)
        if self.counters is not None:  # what came after the last mark is outside any line
            self._mark(OUTSIDE_LINE)


class PythonLines:
    """A profile hook counting Python calls inside a step by the step frame's line (see the module's note)."""

    def __init__(self, loop: types.CodeType, step: types.CodeType | None = None) -> None:
        self.loop = loop
        self.step = step  # as StepLines's
        self.calls: Counter[int] = Counter()
        self.code: types.CodeType | None = None
        self._previous: Any = None

    def _hook(self, frame: types.FrameType, event: str, arg: object) -> None:
        if event != "call" and event != "c_call":
            return
        f, back = frame, frame.f_back
        while back is not None and back.f_code is not self.loop:
            f, back = back, back.f_back
        if back is None or (self.step is not None and f.f_code is not self.step):
            return  # not inside a step: the loop's own calls, or a finalizer run between two steps
        if event == "call" and f is frame:  # the call of step() itself
            self.code = f.f_code
            self.calls[f.f_code.co_firstlineno] += 1
        else:
            self.calls[f.f_lineno] += 1

    def start(self) -> None:
        self._previous = sys.getprofile()
        sys.setprofile(self._hook)

    def stop(self) -> None:
        sys.setprofile(self._previous)


# --- placing CUPTI's records (pure: tested on hand-built records) ---------------------------------------------

def line_at(marks: Sequence[tuple[int, int]], when: int) -> int:
    """The line current at time `when`: the last mark at or before it (OUTSIDE before the first)."""
    i = bisect.bisect_right(marks, (when, sys.maxsize)) - 1
    return marks[i][1] if i >= 0 else OUTSIDE_LINE


def place(marks: Sequence[tuple[int, int]], api: Sequence[ApiCall], gpu: Sequence[GpuOp],
          allocations: Sequence[tuple[int, int]] = (), threads: set[int] | None = None) -> Counter[Key]:
    """Counts by (line, kind) of one window's records. API calls by the line current at their start, those of
    another thread than `threads` outside (when no call carries one of `threads`, the thread is not known and
    every call is placed by time); GPU work and `allocations` ((correlation, count)) at their launching call's
    line, by correlation id (outside where that call is not among the records)."""
    marks = sorted(marks)
    if threads is not None and not any(a.thread in threads for a in api):
        threads = None
    out: Counter[Key] = Counter()
    line_of: dict[int, int] = {}
    for a in api:
        line = line_at(marks, a.start) if threads is None or a.thread in threads else OUTSIDE_LINE
        line_of[a.correlation] = line
        out[(line, "api")] += 1
    for g in gpu:
        out[(line_of.get(g.correlation, OUTSIDE_LINE), g.kind)] += 1
    for correlation, n in allocations:
        out[(line_of.get(correlation, OUTSIDE_LINE), "device-alloc")] += n
    return out


def per_step(first: Counter[Key], second: Counter[Key], n: int) -> dict[Key, Fraction]:
    """(second - first) / n by (line, kind): the windows of n and 2n steps, their edges cancelled."""
    return {k: Fraction(second[k] - first[k], n) for k in sorted(set(first) | set(second))
            if second[k] != first[k]}


def credited(lines: StepLines, kinds: Sequence[str]) -> Counter[Key]:
    """A counters tracker's credit by (line, kind), `kinds` naming its counters in order."""
    out: Counter[Key] = Counter()
    for line, values in lines.credit.items():
        for kind, v in zip(kinds, values):
            out[(line, kind)] += v
    return out


# --- placing host memory by the line that allocated it (pure: tested on hand-built tracebacks) ------------------

Frames = Sequence[tuple[str, int]]  # a traceback as tracemalloc keeps it: (file, line), the oldest frame first


def code_lines(code: types.CodeType) -> set[int]:
    """The lines a code object's frame can be at (its def line, where the call itself is, included)."""
    return {code.co_firstlineno} | {line for _s, _e, line in code.co_lines() if line is not None}


def _allocating_line(frames: Frames, loop_file: str, loop_lines: set[int], step_file: str,
                     step_lines: set[int]) -> int:
    """The line of step() that was running when a block was allocated, from the block's traceback: the frame the
    counted loop called, where it is step()'s (a callee's line counts as its caller's line in step). OUTSIDE
    where the block was made outside any step (the loop's own, another thread's, the interpreter's between two
    steps) or its traceback was cut short of the loop's frame."""
    for i in range(len(frames) - 1, 0, -1):  # the newest call of the loop: a step may run another's loop
        file, line = frames[i - 1]
        if file == loop_file and line in loop_lines:
            at_file, at = frames[i]
            return at if at_file == step_file and at in step_lines else OUTSIDE_LINE
    return OUTSIDE_LINE


def alive_by_line(blocks: Iterable[tuple[Frames, int, int]], loop: types.CodeType, step: types.CodeType | None,
                  own: Sequence[str] = ()) -> tuple[Counter[Key], int]:
    """Blocks alive now by the line of step() that allocated them, (line, "host-alloc"): count, and their bytes
    in all, from tracemalloc's (traceback, count, size) of every traced block. A block that any frame of `own`'s
    files made (the measurement's snapshots and tables) is left out; a step with no code (step = a.sum) has no
    lines, and all it keeps is OUTSIDE. Two of these around a window differ by
    what each line allocated and kept, net: a block freed anywhere later is taken back from the line that made it,
    so in a steady loop no line reads below 0 (a line hook reading a counter charges a free to whichever line
    was running, and a step's locals are freed after its last line)."""
    loop_lines, step_lines = code_lines(loop), code_lines(step) if step is not None else set()
    step_file = step.co_filename if step is not None else ""
    counts: Counter[Key] = Counter()
    size = 0
    for frames, n, nbytes in blocks:
        if any(file in own for file, _line in frames):
            continue
        counts[(_allocating_line(frames, loop.co_filename, loop_lines, step_file, step_lines),
                "host-alloc")] += n
        size += nbytes
    return counts, size


@dataclass
class Placed:
    """Per-line counts being made: by (line, kind), exact, and the kinds placed."""

    counts: dict[Key, Fraction] = field(default_factory=dict)
    kinds: list[str] = field(default_factory=list)

    def add(self, got: dict[Key, Fraction], kinds: Sequence[str], outside: dict[str, Fraction] | None = None) -> None:
        """`got` for `kinds`; `outside`: each kind's step total, so that what the lines do not hold is OUTSIDE."""
        for k, v in got.items():
            if k[1] in kinds:
                self.counts[k] = self.counts.get(k, Fraction(0)) + v
        for kind in kinds:
            if kind not in self.kinds:
                self.kinds.append(kind)
            if outside is not None:
                rest = outside.get(kind, Fraction(0)) - sum((v for (l, k), v in got.items() if k == kind), Fraction(0))
                key = (OUTSIDE_LINE, kind)
                self.counts[key] = self.counts.get(key, Fraction(0)) + rest
        self.counts = {k: v for k, v in self.counts.items() if v != 0}


# --- one step's timeline ---------------------------------------------------------------------------------------

def steps_of(marks: Sequence[tuple[int, int]], first_line: int) -> list[tuple[int, int]]:
    """The (start index, end index) in `marks` of each step: from its def-line mark to its line-0 mark."""
    out = []
    begin = None
    for i, (_t, line) in enumerate(marks):
        if line == first_line and begin is None:
            begin = i
        elif line == OUTSIDE_LINE and begin is not None:
            out.append((begin, i))
            begin = None
    return out


def one_step(label: str, file: str, marks: Sequence[tuple[int, int]], first_line: int, api: Sequence[ApiCall],
             gpu: Sequence[GpuOp], thread: int, texts: dict[int, str | None] | None = None,
             which: int | None = None) -> StepTrace | None:
    """The timeline of one step of a window (the middle one unless `which`): its lines' spans, the API calls that
    began while it ran (every thread's: a worker's launches are the step's too) and the GPU work they launched."""
    steps = steps_of(marks, first_line)
    if not steps:
        return None
    b, e = steps[len(steps) // 2 if which is None else which]
    start, end = marks[b][0], marks[e][0]
    spans = [LineSpan(line, t, marks[i + 1][0], (texts or {}).get(line))
             for i, (t, line) in enumerate(marks[b:e], start=b)]
    calls = [a for a in api if start <= a.start < end]
    launched = {a.correlation for a in calls}
    work = [g for g in gpu if g.correlation in launched]
    return StepTrace(label, file, start, end, thread, spans, sorted(calls, key=lambda a: a.start),
                     sorted(work, key=lambda g: g.start))
