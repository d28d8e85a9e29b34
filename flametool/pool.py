"""A process pool of forked workers, in order, for the reading of large run directories (analyse/): fork_map
hands each worker one item at a time over a pipe of its own, and Ctrl-C or SIGTERM stops every worker at once.
A worker knows it is one (in_worker), so that it starts no workers of its own."""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
from typing import Callable, Iterator, cast

from . import procs

# set in a worker process: its files are read in it, not by workers of its own
in_worker = False


class WorkerDied(Exception):
    """A forked worker ended before it sent its result (killed for its memory perhaps). flametool's own, not
    concurrent.futures' BrokenProcessPool: that module's import (multiprocessing's) costs every report."""


def as_worker() -> None:
    """What a worker process does first: no workers of its own, and no garbage collector (it builds
    containers it keeps and then exits: the collector would only walk them)."""
    global in_worker
    in_worker = True
    gc.disable()


def _start_worker() -> None:
    """A forked worker leaves stopping to the parent: a Ctrl-C to the terminal's process group reaches it too,
    and would print its traceback; SIGTERM and SIGHUP kill it outright (the parent's handlers raise)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP", "SIGTSTP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    as_worker()


def fork_map(fn: Callable, items: list, workers: int) -> list | None:
    """[fn(item) for item in items] in `workers` forked processes, in order (None: no fork here). What the
    items share is best left in a module global set before this is called: a forked worker has it already,
    where an argument is pickled again for every item. Each worker is handed one item at a time over a pipe
    of its own, and sends back its result or its exception; the exception of the first item in order that
    raised is raised here, and a worker that died is WorkerDied. Interrupted (Ctrl-C, SIGTERM), the
    workers are killed and reaped and the work left is dropped at once: no threads or queues of a pool that
    would keep the process waiting at exit, and no worker tracebacks."""
    if not hasattr(os, "fork"):
        return None
    results: dict[int, tuple[bool, object]] = {}
    todo = iter(range(len(items)))
    pids: list[int] = []
    channels: dict[int, tuple[int, int, int]] = {}  # result fd -> (pid, item fd, item in hand)
    try:
        for _ in range(min(workers, len(items))):
            item_r, item_w = os.pipe()
            result_r, result_w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker: items in, results out, until the parent closes its pipe
                os.close(item_w)
                os.close(result_r)
                for fd in list(channels):  # the other workers' pipes are not its own
                    os.close(fd)
                    os.close(channels[fd][1])
                code = 0
                try:
                    _start_worker()
                    _serve(fn, items, item_r, result_w)
                except BaseException:  # noqa: BLE001 - the parent sees the pipe close: WorkerDied
                    code = 1
                finally:
                    os._exit(code)
            pids.append(pid)
            os.close(item_r)
            os.close(result_w)
            channels[result_r] = (pid, item_w, -1)
        for fd, (pid, item_w, _) in list(channels.items()):
            channels[fd] = (pid, item_w, _hand(item_w, todo))
        while any(i >= 0 for _, _, i in channels.values()):
            ready, _, _ = select.select([fd for fd, (_, _, i) in channels.items() if i >= 0], [], [])
            for fd in ready:
                pid, item_w, i = channels[fd]
                got = _receive(fd)
                if got is None:
                    raise WorkerDied(f"a worker process (pid {pid}) died")
                results[i] = got
                channels[fd] = (pid, item_w, _hand(item_w, todo))
    finally:
        with procs.signals_deferred():
            for fd, (pid, item_w, i) in channels.items():
                for f in (fd, item_w):
                    try:
                        os.close(f)
                    except OSError:
                        pass
                if i >= 0:  # still at work: interrupted, or a worker died
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            for pid in pids:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
    for i in range(len(items)):
        ok, value = results[i]
        if not ok:
            raise cast(BaseException, value)  # what a worker sends with ok False (_serve)
    return [results[i][1] for i in range(len(items))]


def _hand(item_w: int, todo: Iterator[int]) -> int:
    """The next item's index to a worker (-1 when there are no more: its pipe is closed, and it exits)."""
    i = next(todo, -1)
    if i < 0:
        os.close(item_w)
        return -1
    os.write(item_w, i.to_bytes(8, "little"))
    return i


def _serve(fn: Callable, items: list, item_r: int, result_w: int) -> None:
    with os.fdopen(item_r, "rb") as inbox, os.fdopen(result_w, "wb") as outbox:
        while (raw := inbox.read(8)) and len(raw) == 8:
            try:
                reply = (True, fn(items[int.from_bytes(raw, "little")]))
            except Exception as exc:  # noqa: BLE001 - handed back, raised in the parent in item order
                reply = (False, exc)
            try:
                data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001 - a result or exception that cannot be pickled
                data = pickle.dumps((False, RuntimeError(f"a worker's result could not be sent: {exc}")))
            outbox.write(len(data).to_bytes(8, "little") + data)
            outbox.flush()


def _receive(fd: int) -> tuple[bool, object] | None:
    """One (ok, value) from a worker's result pipe, or None when the worker died before sending it."""
    def exactly(n: int) -> bytes | None:
        parts, left = [], n
        while left:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                return None
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    head = exactly(8)
    body = head and exactly(int.from_bytes(head, "little"))
    return None if body is None else pickle.loads(body)


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
