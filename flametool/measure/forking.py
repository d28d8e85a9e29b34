"""Fork servers, from the parent's side: per environment a child (child/forkserver.py) that has imported the
cases' libraries once and forks each timing process of compare, instead of a fresh interpreter that imports
them again (3.7-5.1 s a process on the H200 before its first timed loop; 0.36-0.51 s forked). What it forks is
a timing child as a fresh one is (entry.forked runs the same code from its job on), and the parent sees it
through Forked, the part of subprocess.Popen that spawn.run_child and procs.kill_tree use.

A server that dies (or cannot fork, or made a CUDA context) forks no more: each later process starts fresh and
its log says why; a process it had forked dies with it (its parent-death signal) and is run again fresh
(spawn.run_child). Only `compare --fork-processes` starts them (config.fork_server)."""

from __future__ import annotations

import collections
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable

from .. import procs
from ..workload.builtins import builtin_libraries
from ..workload.cases import CaseSpec
from .config import Config
from .protocol import FORKSERVER, AnyJob, encode_job
from .spawn import Started, child_command, child_env, cpus_for, drop_if_empty, open_log, step_timeout, stop

# Libraries a server does not import ahead: jax starts threads of its own at import, and a fork keeps only
# the thread that forked (the child imports it itself, after the fork, as a fresh process would).
NOT_BEFORE_FORK = {"jax"}
MAX_MESSAGE = 1 << 16
ORPHAN_WAIT = 5.0  # the most Forked.unreported waits for a process whose server was stopped to be gone


class Forked:
    """A process forked by a fork server, as the parent handles a subprocess.Popen: its pid, the write end of
    its stdin, poll(), wait() and signals. Its fork server reaps it and says how it ended (returncode: -N
    when signal N killed it, as Popen says)."""

    def __init__(self, server: "ForkServer", pid: int, stdin: IO[bytes]) -> None:
        self.server, self.pid, self.stdin = server, pid, stdin
        self.returncode: int | None = None
        self.orphaned = False  # its server died before it ended: no one can say how it ended

    def poll(self) -> int | None:
        if self.returncode is None:
            self.server.pump(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if self.server.gone is not None:
                self._wait_orphan(left)
            else:
                self.server.pump(left if left is not None else 1.0)
            if self.returncode is None and deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"forked process {self.pid}", timeout or 0)
        return self.returncode

    def unreported(self) -> None:
        """procs.kill_tree's last resort: SIGKILLed, yet its server did not say it ended in time. The server is
        stopped (it forks no more: every later process starts fresh), which takes this process along (its
        parent-death signal), and it counts as killed."""
        self.server.lost(f"the fork server did not say how process {self.pid} ended")
        self._wait_orphan(ORPHAN_WAIT)
        if self.returncode is None:
            self.orphaned, self.returncode = True, -signal.SIGKILL

    def _wait_orphan(self, timeout: float | None) -> None:
        """Its server is gone, and with it the parent-death signal took it (SIGTERM): wait until it is."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not gone(self.pid):
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(0.01)
        self.orphaned = True
        self.returncode = -signal.SIGTERM

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def gone(pid: int) -> bool:
    """No such process, or only its zombie (a server's child, reparented when the server died)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rpartition(b")")[2].split()[:1]
        return state in ([b"Z"], [b"X"])
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


class ForkServer:
    """One environment's fork server: started with the run, importing while nothing waits on it."""

    def __init__(self, env: str | None, libraries: list[str], config: Config, log_path: Path) -> None:
        self.libraries = libraries
        self.log_path = log_path
        self.ready = False
        self.forks = 0  # children forked so far
        self.gone: str | None = None  # why it forks no more
        self.children: dict[int, Forked] = {}
        self.news = threading.Condition()  # guards what pump takes in; notified as it takes something in
        self.reading = False  # a thread is in pump's select and recv (one at a time: see pump)
        self.answers: collections.deque[dict] = collections.deque()  # forks' answers, in order, for fork()
        self.exits: dict[int, int] = {}  # how children ended that pump read of before fork() took them in
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        environ = child_env(config.pool_threads)
        environ.pop(procs.MARKER, None)  # see below
        log = open_log(log_path)
        with log, theirs:
            self.proc = subprocess.Popen(
                child_command(str(theirs.fileno()), FORKSERVER, str(os.getpid()), ",".join(self.libraries),
                              python=config.python(env)),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, pass_fds=(theirs.fileno(),),
                # no MARKER of its own: its children's processes would all carry it (a fork keeps the environment
                # the server was started with), and stopping what carries it would take their guardians too
                env=environ, **procs.own_group())
        procs.track(self.proc.pid)  # Ctrl-Z stops it with flametool

    def pump(self, timeout: float | None) -> None:
        """Read what the server says for at most `timeout` seconds (None: until it says something), and take it in:
        the ends of its children (their returncode), its readiness, and a fork's answer (`answers`, for fork()).

        Several threads may pump at once: a run_child thread waits for its child's "exited" while the main thread,
        on Ctrl-C, stops that child (kill_tree waits for the same message). One reads at a time (`reading`) and
        takes in every message for all of them; the others wait on `news` until it has read something or is
        done, then look again for what they wait on. Two readers would lose messages: the one that did not get
        the "exited" slept out its whole select (5 s), or, both woken by one message, blocked for ever in a recv
        that the other had emptied (Ctrl-C hung)."""
        with self.news:
            if self.gone is not None:
                return
            if self.reading:  # another thread reads: it takes in what comes, for this one too
                self.news.wait(timeout)
                return
            self.reading = True
        try:
            self._read(timeout)
        finally:
            with self.news:
                self.reading = False
                self.news.notify_all()  # what it read, or that it no longer reads: a waiter may read next

    def _read(self, timeout: float | None) -> None:
        """pump's reading, by the one thread that reads: messages until none is waiting, after a first wait of at
        most `timeout`."""
        wait: float | None = timeout
        while True:
            try:
                ready, _, _ = select.select([self.sock], [], [], wait)
            except (OSError, ValueError):  # the socket was closed meanwhile (stop() on another thread)
                return
            if not ready:
                return
            try:  # MSG_DONTWAIT: a socket that said it is ready never blocks this thread after all
                data = self.sock.recv(MAX_MESSAGE, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError as exc:
                self.lost(f"the fork server's socket failed ({exc})")
                return
            if not data:
                self.lost(f"the fork server ended ({describe_end(self.proc)})")
                return
            try:
                message = json.loads(data)
            except ValueError:
                message = {}
            with self.news:
                if "exited" in message:
                    pid, code = int(message["exited"]), int(message["code"])
                    child = self.children.pop(pid, None)
                    if child is not None:
                        child.returncode = code
                    else:  # read with its "forked" answer, before fork() made its Forked: kept for it
                        self.exits[pid] = code
                elif message.get("ready"):
                    self.ready = True
                elif "forked" in message or "failed" in message:
                    self.answers.append(message)
                self.news.notify_all()
            wait = 0

    def fork(self, job: AnyJob, config: Config, log_path: Path, say: Callable[[str], None]) -> Started | None:
        """A timing child for `job`, forked, its output to `log_path`; None when this server forks no more (gone
        says why: the job then runs in a fresh process)."""
        self.pump(0)
        if self.gone is not None:
            return None
        if not self.ready and self.libraries:
            say(f"importing {', '.join(self.libraries)} (the fork server, once for every timing process)")
        log = open_log(log_path)
        read_fd, write_fd = os.pipe()
        stdin_r, stdin_w = os.pipe()
        token = uuid.uuid4().hex
        request = {"job": encode_job(job), "token": token,
                   "cpus": cpus_for(config)}
        try:
            with log:
                socket.send_fds(self.sock, [json.dumps(request).encode()], [write_fd, log.fileno(), stdin_r])
        except OSError as exc:
            self.lost(f"the fork server could not be sent a job ({exc})")
        finally:
            os.close(write_fd)
            os.close(stdin_r)
        answer = None
        limit = step_timeout()
        deadline = time.monotonic() + limit
        try:
            while answer is None and self.gone is None:
                paused = procs.paused_seconds()
                self.pump(max(0.0, deadline - time.monotonic()))
                answer = self.answer_for(token)
                if procs.paused_seconds() > paused:  # stopped by Ctrl-Z meanwhile: the wait starts again
                    deadline = time.monotonic() + limit
                elif answer is None and time.monotonic() >= deadline:
                    self.lost(f"the fork server said nothing for {limit:g} s")
        except BaseException:  # Ctrl-C before the answer: no Started holds the pipes' ends
            os.close(read_fd)
            os.close(stdin_w)
            raise
        if answer is None or "forked" not in answer:
            if answer is not None:
                self.lost(f"the fork server could not fork ({answer.get('failed')})")
            os.close(read_fd)
            os.close(stdin_w)
            return None
        self.forks += 1
        proc = Forked(self, int(answer["forked"]), os.fdopen(stdin_w, "wb"))
        with self.news:
            proc.returncode = self.exits.pop(proc.pid, None)
            if proc.returncode is None:
                self.children[proc.pid] = proc
        procs.track(proc.pid)  # Ctrl-Z stops it with flametool
        return Started(proc, read_fd, token)

    def answer_for(self, token: str) -> dict | None:
        """The server's answer to the job sent with `token`, once it has come. One to another job is dropped: a
        fork() cut short (Ctrl-C) before its answer came (what was forked for it is stopped with the server)."""
        with self.news:
            while self.answers:
                answer = self.answers.popleft()
                if answer.get("token") in (token, None):  # None: what the server says before any job
                    return answer
        return None

    def lost(self, why: str) -> None:
        """It forks no more: stopped (with whatever it still runs), and every later process starts fresh."""
        if self.gone is None:
            self.gone = why
            self.stop()

    def stop(self) -> None:
        with procs.signals_deferred():
            stop(self.proc)
            procs.untrack(self.proc.pid)  # what it forked dies with it (tie_to_parent(via)), each stopped by its own end()
            self.sock.close()
        if self.gone is None:
            self.gone = "the fork server was stopped"


def describe_end(proc: subprocess.Popen) -> str:
    code = proc.poll()
    if code is None:
        return "its socket closed"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def preloaded(cases: list[CaseSpec]) -> list[str]:
    """The libraries a server for these cases imports ahead: their own, and no other (a case timed alone because
    it could not be built beside another library must not find that library imported)."""
    return [m for m in builtin_libraries(cases) if m not in NOT_BEFORE_FORK]


@dataclass
class ForkServers:
    """The run's fork servers (config.fork_server: compare --fork-processes; else none): one per environment and the
    libraries its processes import, those of each group started with the run, another (a case timed alone) when
    a job first needs it."""

    config: Config
    out: Path
    started: dict[tuple[str | None, frozenset[str]], ForkServer] = field(default_factory=dict)
    # --forks-per-server: the successor of a server that has forked its last child, started with that child
    # where the spares are (it imports while that child's loops run), else when the next child is due
    following: dict[tuple[str | None, frozenset[str]], ForkServer] = field(default_factory=dict)
    retired: list[ForkServer] = field(default_factory=list)
    names: dict[str | None, int] = field(default_factory=dict)  # servers started so far, per environment

    def start(self, groups: list[list[CaseSpec]]) -> None:
        """Each group's server started now, importing beside whatever runs first (another environment's first
        process): where the spares are (config.spares, a GPU host, where the imports take no GPU from the loops).
        On the CPU each is started when its first process is due, so no import shares the cores with a timed
        loop (2 on the CI machine)."""
        if self.config.spares and not self.config.isolate:
            for cases in groups:
                self.get(cases)

    def get(self, cases: list[CaseSpec]) -> ForkServer | None:
        """The server that forks a process for `cases` (one environment's): it has imported their libraries."""
        if not self.config.fork_server or not cases:
            return None
        env, libraries = cases[0].env, preloaded(cases)
        key = (env, frozenset(libraries))
        most = self.config.forks_per_server
        server = self.started.get(key)
        if server is not None and most is not None and server.forks >= most:  # its children share one layout
            server.stop()
            self.retired.append(server)
            server = self.started[key] = self.following.pop(key) if key in self.following else self.new(env, libraries)
        if server is None:
            server = self.started[key] = self.new(env, libraries)
        if (most is not None and server.forks + 1 >= most and self.config.spares and key not in self.following):
            self.following[key] = self.new(env, libraries)  # importing while this server's last child runs
        return server

    def new(self, env: str | None, libraries: list[str]) -> ForkServer:
        before = self.names.get(env, 0)
        self.names[env] = before + 1
        return ForkServer(env, libraries, self.config, self.out / log_name(env, before))

    def stop(self) -> None:
        """Every server stopped, and its log removed when it says nothing."""
        servers = [*self.started.values(), *self.following.values(), *self.retired]
        self.started, self.following, self.retired = {}, {}, []
        for server in servers:
            if server.sock.fileno() != -1:
                server.stop()
            drop_if_empty(server.log_path)


def log_name(env: str | None, before: int) -> str:
    """fork-server.log, fork-server@ENV.log; an environment's second server and after: fork-server-2.log, ..."""
    return f"fork-server{'' if env is None else '@' + env}{'' if not before else f'-{before + 1}'}.log"
