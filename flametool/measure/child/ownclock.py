"""flametool's own clocks in the child: the time module's functions bound when the child starts, before any case's
code runs, so that a case that replaces time.perf_counter (a factory making it read 1000x, a step freezing it)
moves its own readings, not flametool's. A case that did is told apart (Watch), and said in run.json."""

from __future__ import annotations

import time
import types

# bound once, at import: the child imports this before it loads any case's file
perf_counter = time.perf_counter
process_time = time.process_time
thread_time = time.thread_time
monotonic = time.monotonic
OWN = {"perf_counter": perf_counter, "perf_counter_ns": time.perf_counter_ns, "process_time": process_time,
       "process_time_ns": time.process_time_ns, "thread_time": thread_time, "thread_time_ns": time.thread_time_ns,
       "monotonic": monotonic, "monotonic_ns": time.monotonic_ns, "time": time.time}


def not_builtin() -> list[str]:
    """The clocks that were not the time module's own when bound (something that ran before the child, a
    sitecustomize, replaced them): flametool's readings are then that code's."""
    return [f"time.{n}" for n, f in OWN.items() if not isinstance(f, types.BuiltinFunctionType)]


def changed() -> list[str]:
    """The time module's clocks that are no longer the ones bound at start."""
    return [f"time.{n}" for n, f in OWN.items() if getattr(time, n, None) is not f]


class Watch:
    """Which case changed the time module's clocks: asked after each case's code ran (its factory and warm-up,
    its loops), each change is charged to the first case it is seen after."""

    def __init__(self) -> None:
        self.seen = set(changed())
        self.warnings: dict[str, list[str]] = {}

    def check(self, label: str) -> None:
        new = [n for n in changed() if n not in self.seen]
        if new:
            self.seen.update(new)
            self.warnings.setdefault(label, []).append(
                f"it replaced {', '.join(new)}; flametool's clocks are its own (bound before any case ran), so its "
                "timings are not moved, but what the case reads of the time is its own")
