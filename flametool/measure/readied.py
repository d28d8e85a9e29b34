"""The next case's profiled process, given its job ahead of its turn (profiling.py): its messages read as they come
until it says it is ready and waits for GO, and py-spy attached to it then, so that py-spy's start-up (reading the
native libraries' symbols: 0.75-0.95 s for torch's on the H200, 2026-12-03) runs while the case before it is still
sampled instead of at the start of its own window.

Attached only once the process waits: a py-spy that attached while it set up, warmed up or ran its cProfile and
counted loops (the last case runs them before its turn: ProfileJob.count_first) would stop it at every sample and
slow the loops whose time per call the run reports. What it samples while the process waits (in loops.wait_go) is
not kept (sampler.record)."""

from __future__ import annotations

import os
import select
import threading

from . import sampler
from .protocol import Done, Failed, Phase, decode
from .spawn import Started


class Readied:
    """A child given its job ahead, watched until it is ready; `done()` hands it back for its turn, with the
    lines read meanwhile and the py-spy attached to it (spawn.Started's read_ahead, rest and spy)."""

    def __init__(self, child: Started, rate_hz: int | None, seconds: float) -> None:
        """`rate_hz`: py-spy's rate, None when the case is not sampled (its lines are read all the same)."""
        self.child, self.rate_hz, self.seconds = child, rate_hz, seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="flametool-readied", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        child = self.child
        while not self._stop.is_set():
            ready, _, _ = select.select([child.read_fd], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(child.read_fd, 1 << 16)
            except OSError:  # closed under it (discarded): run_child is not given it
                return
            if not data:  # it ended: run_child reads the end and says why
                return
            *lines, child.rest = (child.rest + data).split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace") + "\n"
                child.read_ahead.append(text)
                msg = decode(text)
                if isinstance(msg, Phase) and msg.phase == "ready":
                    if self.rate_hz is not None and not self._stop.is_set():
                        child.spy = sampler.Spy.attach(child.proc.pid, self.rate_hz, self.seconds)
                    return
                if isinstance(msg, (Done, Failed)):
                    return

    def done(self) -> Started:
        """Its turn: the watching stops, and the child, with what was read and attached, goes to run_child."""
        self._stop.set()
        self._thread.join()
        return self.child

    def discard(self) -> None:
        """Its turn never came: the child stopped, with the py-spy attached to it."""
        self.done().discard()
