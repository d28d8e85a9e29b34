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
import sys
import threading
import time
from typing import IO, Any, Iterator, Protocol


class Process(Protocol):
    """What stopping a child needs of it: a subprocess.Popen, or a process forked by a fork server
    (measure/forking.Forked), which this process cannot wait for itself."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def stdin(self) -> IO[Any] | None: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...

PR_SET_PDEATHSIG = 1
PR_SET_PTRACER = 0x59616D61  # Yama's "this process may trace me"
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])}


def _prctl(option: int, arg: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def close_inherited(keep: int | None = None) -> None:
    """Every file descriptor past the standard three closed but `keep`: a forked helper (the group's guardian,
    values.Apart's process) holds none of its parent's pipes, which would keep a reader from its end-of-file."""
    last = max(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16)
    first = 3
    if keep is not None and keep >= first:  # one of the standard three (a process started without it) stays anyway
        os.closerange(first, keep)
        first = keep + 1
    os.closerange(first, last)


def die_with_parent() -> None:
    """If the parent dies without cleaning up (SIGKILL, a crash), the kernel sends this process SIGTERM.
    Safe as a Popen preexec_fn: it only calls prctl."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def tie_to_parent(parent_pid: int | None, via: int | None = None) -> None:
    """Called first thing in a child. If the parent dies without cleaning up (SIGKILL, a crash) the kernel
    sends the child SIGTERM, so a case never runs on alone. And the parent's descendants (py-spy) may
    attach to it under Yama's ptrace_scope=1, the default on Ubuntu, where only ancestors may otherwise:
    py-spy is the child's sibling, not its ancestor, so without this a non-root run could not sample.
    `via`: the process that forked this one for the parent (a fork server, itself tied to the parent): the
    child dies with it, and so with the parent."""
    die_with_parent()
    if parent_pid is not None:
        if os.getppid() != (via or parent_pid):  # the parent died before the line above took effect
            os._exit(1)
        _prctl(PR_SET_PTRACER, parent_pid)
    # Ctrl-C in a terminal reaches the whole process group; the parent decides when a case stops (it
    # terminates the child after saving what finished), so the child leaves SIGINT to it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    guard_group()


# Every process a case's child starts inherits this variable, with a value of that child's own: what leaves
# the child's process group (setsid, a double fork) is still found by it in /proc and stopped with the rest.
MARKER = "FLAMETOOL_CASE_PROCESS"


def marked(token: str) -> list[int]:
    """The live processes (not this one) whose environment carries MARKER=token. A process that replaced its
    environment is not found; a zombie shows an empty one (it is gone already)."""
    needle = f"{MARKER}={token}".encode()
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:  # no /proc (not Linux): the process group is all that is stopped
        return found
    me = os.getpid()
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def kill_marked(token: str | None, within: float = 5.0) -> None:
    """SIGKILL every process marked with `token` (see MARKER), again until none is left: one may fork while
    the others are killed."""
    if not token:
        return
    deadline = time.monotonic() + within
    while True:
        pids = marked(token)
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


# Job control: the process groups of the children and py-spys running now. They lead groups of their own, so
# a terminal's Ctrl-Z (SIGTSTP to its foreground group) stopped flametool and not them: the timed loop and
# py-spy ran on while the job showed as stopped. flametool stops them itself, then itself, and on SIGCONT
# resumes them (suspend).
_groups: set[int] = set()
_paused = 0.0  # seconds spent stopped so far: what a timeout waited through, not for


def track(pgid: int) -> None:
    _groups.add(pgid)


def untrack(pgid: int) -> None:
    _groups.discard(pgid)


def paused_seconds() -> float:
    """Seconds this process has spent stopped by Ctrl-Z so far: a wait that timed out after a pause waits on."""
    return _paused


def _signal_groups(sig: int) -> None:
    for pgid in list(_groups):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def suspend(signum=None, frame=None) -> None:
    """SIGTSTP's handler: stop every tracked group, stop this process as SIGTSTP would have, and once it is
    continued (fg, bg, SIGCONT), continue them."""
    global _paused
    started = time.monotonic()
    _signal_groups(signal.SIGSTOP)
    signal.signal(signal.SIGTSTP, signal.SIG_DFL)
    try:
        os.kill(os.getpid(), signal.SIGTSTP)  # stopped here until continued
    finally:
        signal.signal(signal.SIGTSTP, suspend)
        _signal_groups(signal.SIGCONT)
        _paused += time.monotonic() - started


def take_ctrl_z():
    """Install suspend() for SIGTSTP unless it is ignored (a shell without job control); returns what to
    restore, or None when nothing was changed."""
    if not hasattr(signal, "SIGTSTP") or threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTSTP)
    if previous is signal.SIG_IGN:
        return None
    signal.signal(signal.SIGTSTP, suspend)
    return previous


def own_group() -> dict[str, Any]:
    """Popen arguments that start a child as the leader of a process group of its own, so that it and
    everything it starts can be stopped together (kill_tree(group=True)). The parent stays in the
    terminal's group: Ctrl-C reaches the parent, which stops the child's group."""
    return {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}


def guard_group() -> None:
    """In a child that leads its own process group: fork a small guardian that kills the whole group, and
    so whatever the case started (a `subprocess.Popen(["sleep", ...])` in a factory), as soon as the child
    is gone, however it ends: a normal exit, a crash, SIGKILL, or the kernel's SIGTERM when the parent was
    killed outright (PR_SET_PDEATHSIG). The child keeps the default SIGTERM, which stops it even inside a
    long C call, where a Python handler would not run. A process that left the group (setsid, a double fork)
    is found by the MARKER it inherited (kill_marked)."""
    if os.getpgrp() != os.getpid() or not hasattr(signal, "sigwait") or not hasattr(os, "fork"):
        return
    leader = os.getpid()
    # blocked before the fork, so that the guardian cannot miss a SIGTERM that comes at once
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        pid = os.fork()
    except OSError:  # no guardian: the parent still stops the group whenever it is alive to
        pid = None
    if pid != 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return
    code = 0
    try:  # the guardian: hold nothing of the child's (a pipe held open here would keep the parent waiting)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        close_inherited()
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == leader:  # else the child is gone already
            signal.sigwait({signal.SIGTERM})
        kill_marked(os.environ.get(MARKER))  # what left the group (setsid, a double fork)
        os.killpg(leader, signal.SIGKILL)  # the guardian too
    except BaseException:  # noqa: BLE001 - a fault of the guardian itself never stops the case
        code = 1
    finally:
        os._exit(code)


def wait_exited(proc: Process, timeout: float | None = None) -> bool:
    """Wait until `proc` has exited, without reaping it: until it is reaped, its pid still names its process
    group, so the group (what it started) can be signalled without hitting a stranger that got the pid.
    True when it has exited. A forked one (not this process's child) is reaped by its fork server, which
    kills its group first."""
    if not hasattr(os, "waitid") or not isinstance(proc, subprocess.Popen):
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = None if timeout is None else time.monotonic() + timeout
    while proc.returncode is None:
        try:
            flags = os.WEXITED | os.WNOWAIT | (0 if deadline is None else os.WNOHANG)
            if os.waitid(os.P_PID, proc.pid, flags) is not None:
                return True
        except ChildProcessError:
            return True
        if deadline is not None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
    return True


def kill_tree(proc: Process, grace: float = 5.0, first: int = signal.SIGTERM, group: bool = False) -> None:
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

    if group:
        # the leader is reaped only after the group's last signal: see wait_exited
        if proc.returncode is None:
            send(first)
            wait_exited(proc, grace)
        send(signal.SIGKILL)
        _reap_killed(proc)
        return
    if proc.poll() is None:
        send(first)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    send(signal.SIGKILL)
    if proc.poll() is None:
        _reap_killed(proc)


# How long a SIGKILLed process may take to be reaped (a forked one: until its fork server says it ended). Past it
# a stop goes on without it: a clean-up that waited for ever hung Ctrl-C (tests/test_forkserver.py).
REAP_SECONDS = 5.0


def _reap_killed(proc: Process) -> None:
    """Wait (at most REAP_SECONDS) for `proc`, SIGKILLed, to be reaped. Past it: a forked one whose server said
    nothing is given up (Forked.unreported stops that server, which takes the process along); a Popen (in an
    uninterruptible sleep, the only thing SIGKILL waits on) is left to subprocess, which reaps it later."""
    try:
        proc.wait(REAP_SECONDS)
    except subprocess.TimeoutExpired:
        unreported = getattr(proc, "unreported", None)
        if unreported is not None:
            unreported()


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


def exit_now(code: int) -> None:
    """End a child once its result is sent (a fresh one, or one a fork server forked), without the interpreter's
    teardown: unloading the libraries took 0.8 s a process for torch on the CPU (more with CUDA contexts), and
    the parent waits for the message pipe to close. Nothing after the result is needed; what the case started is stopped by the
    group's guardian (procs.guard_group)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
