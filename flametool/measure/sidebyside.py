"""Children run at once (compare --processes-at-once): each one's messages read on a thread of the parent, the
parent's main thread waiting for them in slices so that a Ctrl-C reaches it, and every child stopped with what it
started when the parent is interrupted. What each thread returns comes back in the children's order, for the parent
to record in that order; a thread's exception is raised once all have ended."""

from __future__ import annotations

import threading
from typing import Callable, Protocol, Sequence, TypeVar

from .. import procs
from .spawn import Progress

T = TypeVar("T")


class Ends(Protocol):
    """What run_all stops when the parent is interrupted: a child (spawn.Started), or what holds the one it runs."""

    def end(self) -> None: ...


def locked(progress: Progress) -> Progress:
    """`progress`, called from one thread at a time (its lines are not torn across each other)."""
    lock = threading.Lock()

    def say(label: str, what: str) -> None:
        with lock:
            progress(label, what)

    return say


def run_all(children: Sequence[Ends], work: list[Callable[[], T]]) -> list[T]:
    """Each of `work` (reading children[k]'s messages to its end) on a thread of its own, all at once: what each
    returned, in order."""
    got: list[T | None] = [None] * len(work)
    failed: list[BaseException] = []

    def run(k: int) -> None:
        try:
            got[k] = work[k]()
        except BaseException as exc:  # raised below, once every thread is done
            failed.append(exc)

    threads = [threading.Thread(target=run, args=(k,), name=f"flametool-child-{k}", daemon=True)
               for k in range(len(work))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)  # in slices: a Ctrl-C reaches this (the main) thread meanwhile
    except BaseException:
        with procs.signals_deferred():  # stopped: every child with what it started, then their readers end
            for child in children:
                child.end()
        for t in threads:
            t.join(10)
        raise
    if failed:
        raise failed[0]
    return got  # type: ignore[return-value]  # every thread ended without an exception, so each set its result


def started_all(start: list[Callable[[], T | None]], discard: Callable[[T], None]) -> list[T]:
    """Each of a round's children started (or taken from the spares) in turn, those there was nothing to start for
    (None) left out; one that fails to start stops (`discard`) those started before it."""
    children: list[T] = []
    try:
        for make in start:
            child = make()
            if child is not None:
                children.append(child)
    except BaseException:
        for child in children:
            discard(child)
        raise
    return children
