"""Process hygiene: whatever stops a run (Ctrl-C, SIGTERM, a crash, the parent killed outright), no child
process or sampler may outlive it.

Linux-only pieces (prctl) are best effort: elsewhere they do nothing and the parent's own clean-up is what
stops its children.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from typing import Iterator

PR_SET_PDEATHSIG = 1
PR_SET_PTRACER = 0x59616D61  # Yama's "this process may trace me"
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _prctl(option: int, arg: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent() -> None:
    """If the parent dies without cleaning up (SIGKILL, a crash), the kernel sends this process SIGTERM.
    Safe as a Popen preexec_fn: it only calls prctl."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def tie_to_parent(parent_pid: int | None) -> None:
    """Called first thing in a child. If the parent dies without cleaning up (SIGKILL, a crash) the kernel
    sends the child SIGTERM, so a case never runs on alone. And the parent's descendants (py-spy) may
    attach to it under Yama's ptrace_scope=1, the default on Ubuntu, where only ancestors may otherwise:
    py-spy is the child's sibling, not its ancestor, so without this a non-root run could not sample."""
    die_with_parent()
    if parent_pid is not None:
        if os.getppid() != parent_pid:  # the parent died before the line above took effect
            os._exit(1)
        _prctl(PR_SET_PTRACER, parent_pid)
    # Ctrl-C in a terminal reaches the whole process group; the parent decides when a case stops (it
    # terminates the child after saving what finished), so the child leaves SIGINT to it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def kill_tree(proc: subprocess.Popen, grace: float = 5.0, first: int = signal.SIGTERM, group: bool = False) -> None:
    """Stop `proc`: `first`, then SIGKILL after `grace` seconds; returns once it is reaped. With `group`
    (it was started with start_new_session=True) its whole process group is signalled, so anything it
    started goes too, even after it is gone itself."""

    def send(sig: int) -> None:
        try:
            if group:
                os.killpg(proc.pid, sig)
            elif proc.poll() is None:
                proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    if proc.poll() is None:
        send(first)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    send(signal.SIGKILL)
    if proc.poll() is None:
        proc.wait()


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while cleaning up, so a second Ctrl-C cannot cut the clean-up short and
    leave a child behind; a signal that arrives meanwhile is delivered (and acted on) afterwards."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
