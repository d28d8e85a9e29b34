"""The live progress line while cases run (`--progress`): a spinner in a terminal, a line per phase in a log."""

from __future__ import annotations

import time
from typing import Any, Callable

from rich.console import Console
from rich.status import Status

from .terminal import text


PROGRESS = ("auto", "bar", "lines", "all", "none")
EVERY_SECONDS = 10.0  # lines: the phase now, at least this often while it lasts
# A child's result is in (measure.spawn.RESULT_IN, its words; render does not import measure): a line for `all` only,
# where it marks the end of a process's work (the rest, to the next line, is its exit)
RESULT_IN = "result received"


class Progress:
    """What is running, as `--progress` asks: a spinner line in a terminal (bar), plain lines for a log (lines: a
    line per phase of each process, and the current one every EVERY_SECONDS while a phase lasts; all: a line for
    every update), or nothing
    (none); auto: bar in a terminal, else lines. `settled`: called once with the labels' first change from
    timing to profiling (the timing is done: compare prints its headline then, before the profiling)."""

    def __init__(self, console: Console, mode: str = "auto", settled: Callable[[], None] | None = None) -> None:
        self.console = console
        self.mode = ("bar" if console.is_terminal else "lines") if mode == "auto" else mode
        self.status: Status | None = None
        self.settled, self.timing = settled, False
        self.phase: tuple[str, str] | None = None
        self.said = 0.0  # when the last line was written (lines)

    def __enter__(self) -> "Progress":
        if self.mode == "bar":
            self.status = self.console.status("starting")
            self.status.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.status is not None:
            self.status.__exit__(*exc)

    def update(self, label: str, what: str) -> None:
        timing = label.startswith("timing ")
        if self.timing and not timing and self.settled is not None:
            settled, self.settled = self.settled, None
            if self.status is not None:
                self.status.stop()  # the headline is printed above the spinner, not through it
            settled()
            if self.status is not None:
                self.status.start()
        self.timing = self.timing or timing
        line = text(f"{label}: {what}")
        if self.mode == "none" or (self.mode != "all" and what.endswith(RESULT_IN)):
            return
        if self.status is not None:
            self.status.update(line)
            return
        now = time.monotonic()
        phase = (label, phase_of(what))
        if self.mode == "all" or phase != self.phase or now - self.said >= EVERY_SECONDS:
            self.phase, self.said = phase, now
            self.console.print(line, highlight=False)


def phase_of(what: str) -> str:
    """The phase an update belongs to, for a log's one line per phase: a timing process ('process 2/5: ...' ->
    'process 2/5'), or a case's profiling process: getting ready (import, set-up, warm-up, waiting its turn, its own timed loops),
    the cProfile loop, sampling, counting."""
    if what.startswith("process "):
        return what.partition(":")[0]
    for word in ("cProfile", "sampling", "count"):
        if what.startswith(word):
            return word
    return "getting ready"
