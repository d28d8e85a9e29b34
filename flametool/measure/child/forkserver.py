"""The fork server: a child started with FORKSERVER (spawn.child_command's boot, in an environment's own
interpreter) that imports flametool's child and the cases' libraries once, then forks a timing child for each
job the parent sends (measure/forking.py is the parent's side). A fresh process that imports cupy and torch
took 3.7-5.1 s on the H200 before its first timed loop, a forked one 0.36-0.51 s.

Nothing here touches CUDA: a CUDA context does not survive a fork, so each forked child makes its own, as a
fresh one does; torch says whether one was made, and a server that finds one forks nothing (the parent then
starts fresh processes). Nor does it start a thread: only the thread that forks goes on in the child.

On the socket (AF_UNIX, SOCK_SEQPACKET: one message a JSON object), parent -> server: {"job": LINE, "token":
MARKER's value, "cpus": "0,1" or null} with three file descriptors: the write end of the child's message pipe,
its log (its stdout and stderr) and the read end of its stdin. Server -> parent: {"ready": true} once imported;
{"forked": PID, "token": ITS} or {"failed": WHY, "token": ITS} for each job, in order (the token the job came with:
the parent takes no other job's answer for its own); {"exited": PID, "code": CODE} when a child has ended
(CODE as Popen.returncode says it: -N for signal N), its process group killed before it is reaped."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import traceback
from typing import Callable

from ... import procs
from ..protocol import CPUS_ENV
from .preload import preload

# the most a request holds: a job's line (its cases' paths and labels) is a few kilobytes
MAX_REQUEST = 1 << 20

Forked = Callable[[int, str, int], int]  # (message fd, job line, this server's pid) -> exit code


def serve(sock_fd: int, parent_pid: int, modules: list[str], run_forked: Forked) -> int:
    procs.tie_to_parent(parent_pid)  # it ends when the parent does, and its children with it (tie_to_parent(via))
    sock = socket.socket(fileno=sock_fd)
    preload(modules)
    made = cuda_made()
    if made:
        send(sock, {"failed": f"{made}: a forked child could not make its own CUDA context"})
        return 1
    threads = native_threads()
    if threads > 1:  # said in its log (kept when not empty): what a library started as it was imported
        print(f"flametool: the fork server has {threads} threads after importing {', '.join(modules)}; a forked "
              "child keeps only the one that forks (OpenBLAS and OpenMP pools start again in it)", file=sys.stderr)
    send(sock, {"ready": True})
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)  # a child's end wakes the loop below at once
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    while True:
        try:
            ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            os.read(wake_r, 1 << 12)
        reap(sock, children)
        if sock.fileno() in ready:
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 3)
            except OSError:
                data, fds = b"", []
            if not data:  # the parent closed its end: the run is over (what is still running is stopped by it)
                return 0
            pid = fork_one(data, fds, sock, (wake_r, wake_w), run_forked)
            for fd in fds:
                os.close(fd)
            if pid is not None:
                children.add(pid)


def fork_one(data: bytes, fds: list[int], sock: socket.socket, wake: tuple[int, int], run_forked: Forked) -> int | None:
    """Fork the child for one request and tell the parent its pid (or why there is none)."""
    try:
        request = json.loads(data)
        msg_fd, log_fd, stdin_fd = fds
    except (ValueError, TypeError):
        send(sock, {"failed": "a request that is not a job and three file descriptors"})
        return None
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice
        stream.flush()
    server = os.getpid()
    try:
        pid = os.fork()
    except OSError as exc:
        send(sock, {"failed": f"fork: {exc}", "token": request.get("token")})
        return None
    if pid == 0:
        code = 1
        try:
            child(request, msg_fd, log_fd, stdin_fd, sock, wake)
            code = run_forked(msg_fd, str(request["job"]), server)
        except SystemExit as exc:  # as the interpreter would end with it
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except BaseException:  # noqa: BLE001 - what a fresh child would print before it ends
            try:
                traceback.print_exc()
            except OSError:
                pass
        finally:
            procs.exit_now(code)
    try:  # its group made here too (as the child does first thing): the parent, told the pid, may signal the group at once
        os.setpgid(pid, pid)
    except OSError:  # the child made it already and went on, or has ended
        pass
    send(sock, {"forked": pid, "token": request.get("token")})
    return pid


def child(request: dict, msg_fd: int, log_fd: int, stdin_fd: int, sock: socket.socket, wake: tuple[int, int]) -> None:
    """In the forked child, before its job: what a fresh child is given by Popen (spawn.start_child): a process
    group of its own, its log on stdout and stderr, its stdin, MARKER and its CPUs; and nothing of the server's."""
    os.setpgid(0, 0)  # stop() kills its group, and so whatever the case starts
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sock.close()
    for fd in wake:
        os.close(fd)
    os.dup2(stdin_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(stdin_fd)
    os.close(log_fd)
    os.environ[procs.MARKER] = str(request["token"])  # what the case starts carries it
    sys.argv[1:] = [str(msg_fd), str(request["job"])]  # as a fresh child's command line has them
    cpus = request.get("cpus")
    if cpus:
        os.environ[CPUS_ENV] = str(cpus)
    else:
        os.environ.pop(CPUS_ENV, None)


def reap(sock: socket.socket, children: set[int]) -> None:
    """Every child that has ended: its group killed (what its case started), reaped, and its code sent."""
    for pid in list(children):
        try:
            got = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            children.discard(pid)
            continue
        if got is None:
            continue
        try:  # before it is reaped its pid still names its group (procs.wait_exited)
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _, status = os.waitpid(pid, 0)
        children.discard(pid)
        send(sock, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def send(sock: socket.socket, message: dict) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:  # the parent is gone: it stops this process too
        pass


def native_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def cuda_made() -> str | None:
    """Whether the imports made a CUDA context (torch can say without making one)."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_initialized():
            return "importing torch made a CUDA context"
    except Exception:  # noqa: BLE001 - a torch that cannot say: none was asked for
        pass
    return None
