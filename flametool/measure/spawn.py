"""One child process, from the parent's side: its environment and command line, starting it (or a spare
started ahead of its job), reading its messages under a watchdog, and stopping it with everything it started.
The runner decides which jobs to run; this module runs each one (run_child)."""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Protocol, TextIO, overload

from . import bootpath, sampler
from .. import procs
from ..run import rundir
from ..workload.builtins import builtin_libraries
from ..workload.cases import CaseSpec
from .config import Config
from .protocol import (ACTIVE_LOOP, CPUS_ENV, OPEN, RESULT_OF, SPARE, STOP, capped, AnyJob, AnyResult, CaseProfiled, Done, Failed, Phase, Point,
    ProfileJob, SampleReady, Swept, SweepJob, Timed, TimeJob, decode, encode_job)
from ..run.profiled import Sampling

# Spares kept started ahead of the processes run until the ratios settle (Spares.ahead).
SPARES_AHEAD = 3


# The watchdog: a child that says nothing for this long (no phase, no result) is stopped. The longest silence
# a run means to have is one round of timed loops at the seed's shape (250 products of 57 ms a case on the
# H200, 14 s each) or a first set-up (imports, CUDA and cuBLAS start-up: seconds); a step() that never returns
# (a deadlock, a `time.sleep(1e9)`) is silent for ever. FLAMETOOL_STEP_TIMEOUT (seconds) changes it.
STEP_TIMEOUT = 300.0
STEP_TIMEOUT_ENV = "FLAMETOOL_STEP_TIMEOUT"


def step_timeout() -> float:
    return sampler.seconds_setting(STEP_TIMEOUT_ENV, STEP_TIMEOUT)


class Silent(Exception):
    """The child said nothing for step_timeout() seconds."""


def message_lines(fd: int, timeout: float, rest: bytes = b"") -> Iterator[str]:
    """The child's message pipe, line by line, as they come (`rest`: the start of a line read from it before);
    Silent when no byte came for `timeout` seconds (the time the caller spends between lines, sampling say, is
    not counted)."""
    while True:
        paused = procs.paused_seconds()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            if procs.paused_seconds() > paused:  # stopped by Ctrl-Z meanwhile: the child was too; wait on
                continue
            raise Silent
        data = os.read(fd, 1 << 16)
        if not data:
            if rest:
                yield rest.decode("utf-8", "replace")
            return
        *lines, rest = (rest + data).split(b"\n")
        for line in lines:
            yield line.decode("utf-8", "replace") + "\n"


def child_sample_grace() -> float:
    """The sampled phase needs no more than this beyond --sample-seconds; past it the child stops by itself."""
    return sampler.attach_seconds() + sampler.FLUSH_SECONDS + 30


Progress = Callable[[str, str], None]  # (label, what is happening)
During = Callable[[str, "Sampling | None"], None]  # run_child's `during`: (what, the sampling once it is done)
# The update a child's result gives (a line with --progress all only, render.progress): the time from it to the next
# process's first line is the child's exit and the parent's work between processes (benchmarks/compare_floor.py).
RESULT_IN = "result received"


# The CPU thread pools the array libraries start at import (numpy's OpenBLAS, torch's OpenMP, MKL): one
# thread per core, idle while a GPU does the work, yet each native sample stops and resumes every one of them.
POOL_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def child_env(pool_threads: int | None = None, token: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if token:  # what the case starts carries it, even out of the child's process group (procs.MARKER)
        env[procs.MARKER] = token
    if pool_threads is not None:
        env.update(dict.fromkeys(POOL_THREAD_VARS, str(pool_threads)))
    # jax takes 75% of the GPU's memory at its first array unless told not to: the cases share the device
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    # the child imports flametool from the same place as the parent, installed or not
    root = str(Path(__file__).resolve().parents[2])
    given = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not any(os.path.abspath(p) == root for p in given):  # added here: the child puts it back (bootpath)
        env[bootpath.ADDED] = root
    else:  # the user's own entry: theirs to order (a mark inherited from elsewhere does not move it)
        env.pop(bootpath.ADDED, None)
    env["PYTHONPATH"] = os.pathsep.join([root, *given])
    env["PYTHONUNBUFFERED"] = "1"
    return env


# `python -m flametool.measure.child` (and `-c`) would put the current directory first on sys.path, ahead of the
# PYTHONPATH that child_env gives the child, so a `flametool/` there (a checkout beside an installed flametool)
# would run in the child instead of the parent's: the child moves the current directory to the end, then imports.
# The folder child_env puts first is the one flametool was imported from: once flametool is imported it goes
# back where the interpreter would have it (measure/bootpath.py), so that no package beside flametool comes before
# the interpreter's own.
BOOT = ("import sys; sys.path.append(sys.path.pop(0)); from flametool.measure import bootpath; bootpath.settle(); ")
CHILD_BOOT = BOOT + "from flametool.measure.child.entry import main; sys.exit(main(sys.argv[1:]))"


def framed_answer(stdout: str, frame: str) -> dict | None:
    """The JSON object on the last line of a helper process's output that starts with `frame` (its answer's name
    and the nonce the parent gave it): a line a sitecustomize, a wrapper or the user's code printed is not the
    answer, however JSON it looks. None where there is none, or it is not an object (importcheck, workcheck)."""
    line = next((l for l in reversed(stdout.splitlines()) if l.startswith(frame)), None)
    try:
        got = json.loads(line[len(frame):]) if line else None
    except ValueError:
        return None
    return got if isinstance(got, dict) else None


def child_command(*args: str, python: str | None = None) -> list[str]:
    """The command line that runs flametool.measure.child (entry.main) with `args`, importing this process's
    flametool (with child_env's PYTHONPATH), in this interpreter or in `python` (an environment of `compare --env`)."""
    return [python or sys.executable, "-c", CHILD_BOOT, *args]


@dataclass
class Started:
    """A child process, the read end of its message pipe, and the token what it starts inherits
    (procs.MARKER: found and killed with it, even out of its process group)."""

    proc: procs.Process  # a subprocess.Popen, or forking.Forked for one a fork server forked
    read_fd: int
    token: str
    # given its job ahead of its turn (profiling.Readied): the message lines read from its pipe so far and the start
    # of the next, and the py-spy attached to it as it began to wait (run_child hands it to the sampler)
    read_ahead: list[str] = field(default_factory=list)
    rest: bytes = b""
    spy: sampler.Spy | None = None

    def end(self) -> None:
        """Stop it and whatever it started (a py-spy attached to it ahead included)."""
        with procs.signals_deferred():
            if self.spy is not None:
                self.spy.discard()
                self.spy = None
            stop(self.proc)
            procs.untrack(self.proc.pid)
            procs.kill_marked(self.token)

    def discard(self) -> None:
        """A child that gets no (more) work: stopped with whatever it started, its message pipe closed."""
        self.end()
        try:
            os.close(self.read_fd)
        except OSError:
            pass


_cpu_turn = 0


def next_cpus(count: int) -> list[int]:
    """The next `count` CPUs of this process's own, in turn: the children alive at once (a timed process and
    the spares importing beside it) get CPUs of their own while there are enough."""
    global _cpu_turn
    allowed = sorted(os.sched_getaffinity(0))
    count = min(count, len(allowed))
    start = (_cpu_turn * count) % len(allowed)
    _cpu_turn += 1
    return [allowed[(start + i) % len(allowed)] for i in range(count)]


def open_log(log_path: Path, note: str | None = None) -> TextIO:
    """A child's (or a fork server's) log, opened for it to write to, `note` (a line of flametool's own) first;
    one line when the run directory cannot be written."""
    try:
        log = open(log_path, "w", encoding="utf-8")
        if note:
            log.write(f"flametool: {note}\n")
            log.flush()
    except OSError as exc:
        raise rundir.cannot_write(log_path, exc) from None
    return log


def cpus_for(config: Config) -> str | None:
    """The CPUs the next child runs on, as CPUS_ENV gives them (None: config.cpus not set, every CPU)."""
    return ",".join(map(str, next_cpus(config.cpus))) if config.cpus else None


def start_child(args: list[str], config: Config, log_path: Path, environment: str | None = None,
                note: str | None = None) -> Started:
    """A child process (`child_command(MSG_FD, *ARGS)`) in the interpreter of `environment` (`compare --env`;
    None: this one's), its output to `log_path` (after `note`, a line of flametool's own)."""
    log = open_log(log_path, note)
    read_fd, write_fd = os.pipe()
    token = uuid.uuid4().hex
    env = child_env(config.pool_threads, token)
    cpus = cpus_for(config)
    if cpus:
        env[CPUS_ENV] = cpus
    with log:
        proc = subprocess.Popen(
            child_command(str(write_fd), *args, python=config.python(environment)),
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
            env=env, **procs.own_group(),
        )
    os.close(write_fd)
    procs.track(proc.pid)  # Ctrl-Z stops it with flametool
    return Started(proc, read_fd, token)


@dataclass
class Spare:
    """A child started ahead of its job, for `labels`, importing their libraries while it waits: on a GPU
    host the cases' imports (torch took 4-5 s a process on the H200's) then run while the first process's
    loops hold the GPU, instead of between one timed process and the next."""

    child: Started
    labels: list[str]
    opened: bool = False  # told to make its CUDA context (open)

    @classmethod
    def start(cls, cases: list[CaseSpec], config: Config, log_path: Path) -> "Spare":
        return cls(start_child([SPARE, str(os.getpid()), ",".join(builtin_libraries(cases)), config.device], config,
                               log_path, cases[0].env),
                   [c.label for c in cases])

    @property
    def proc(self) -> procs.Process:
        return self.child.proc

    def take(self, job: AnyJob) -> Started | None:
        """Give it its job; None when it is gone (it is stopped, and a fresh child does the job)."""
        if self._write((encode_job(job) + "\n").encode()):
            return self.child
        self.stop()
        return None

    def open(self) -> None:
        """Tell it to make its CUDA context now, before its job (protocol.OPEN); once. Best effort: one that is gone
        is found so when it is given its job."""
        if not self.opened:
            self.opened = True
            self._write(OPEN)

    def _write(self, line: bytes) -> bool:
        """A line on its stdin; False when it is gone."""
        if self.proc.poll() is not None:
            return False
        try:
            assert self.proc.stdin is not None  # start_child gives every child a pipe on its stdin
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
            return True
        except OSError:
            return False

    def stop(self) -> None:
        self.child.discard()


class Forker(Protocol):
    """A fork server (forking.ForkServer): a timing child forked for a job, or None when it forks no more (`gone`
    says why)."""

    gone: str | None

    def fork(self, job: AnyJob, config: Config, log_path: Path, say: Callable[[str], None]) -> Started | None: ...


def first_child(job: AnyJob, config: Config, label: str, log_path: Path, progress: Progress, spare: Spare | None,
                forks: Forker | None) -> Started:
    """The process for `job`: the spare started for it, forked by the fork server, or else started fresh (its log
    says why it was not forked, when it would have been)."""
    taken = spare.take(job) if spare is not None else None
    if taken is not None:
        return taken
    if forks is not None:
        forked = forks.fork(job, config, log_path, lambda text: progress(label, text))
        if forked is not None:
            return forked
    note = f"{forks.gone}; this process was started fresh instead" if forks is not None and forks.gone else None
    return start_child([encode_job(job)], config, log_path, job_env(job), note)


# run_child's overloads: the result it returns is the one its job's kind returns (RESULT_OF), checked as it is read
@overload
def run_child(job: TimeJob, config: Config, label: str, log_path: Path, progress: Progress,
              folded: Path | None = None, on_point: Callable[[Point], None] | None = None,
              spare: Spare | None = None, started: Started | None = None,
              during: During | None = None, forks: Forker | None = None,
              on_phase: Callable[[Phase], None] | None = None) -> tuple[Timed | None, str | None, Sampling | None]: ...
@overload
def run_child(job: SweepJob, config: Config, label: str, log_path: Path, progress: Progress,
              folded: Path | None = None, on_point: Callable[[Point], None] | None = None,
              spare: Spare | None = None, started: Started | None = None,
              during: During | None = None, forks: Forker | None = None,
              on_phase: Callable[[Phase], None] | None = None) -> tuple[Swept | None, str | None, Sampling | None]: ...
@overload
def run_child(job: ProfileJob, config: Config, label: str, log_path: Path, progress: Progress,
              folded: Path | None = None, on_point: Callable[[Point], None] | None = None,
              spare: Spare | None = None, started: Started | None = None,
              during: During | None = None, forks: Forker | None = None,
              on_phase: Callable[[Phase], None] | None = None) -> tuple[CaseProfiled | None, str | None, Sampling | None]: ...
def run_child(job: AnyJob, config: Config, label: str, log_path: Path, progress: Progress,
              folded: Path | None = None, on_point: Callable[[Point], None] | None = None,
              spare: Spare | None = None, started: Started | None = None,
              during: During | None = None, forks: Forker | None = None,
              on_phase: Callable[[Phase], None] | None = None) -> tuple[AnyResult | None, str | None, Sampling | None]:
    """One child process for `job` (`started`: a child given the job already; else `spare`, when one was
    started for it; else forked by `forks`, a fork server, when it can), sampled into `folded` when it says it
    is ready: (result or None, error, sampling). `on_point` takes a sweep's sizes as they come, each kept as soon
    as it is measured. `during` is told when py-spy is about to sample ("sampling"), has sampled ("sampled", the
    loop still running unsampled) and the loop was told to stop ("stopped"), with the sampling from "sampled" on
    (profiling.py readies the next case's process then). `on_phase` is given each Phase message as it comes. A
    forked child whose server died under it (it dies with it) is run again in a fresh process."""
    child = started or first_child(job, config, label, log_path, progress, spare, forks)
    proc, read_fd = child.proc, child.read_fd
    result: AnyResult | None = None
    error: str | None = None
    sampling: Sampling | None = None
    ignored = 0
    doing = "starting"
    timeout = step_timeout()
    silent = False
    try:
        try:
            for line in itertools.chain(child.read_ahead, message_lines(read_fd, timeout, child.rest)):
                msg = decode(line)
                if isinstance(msg, Phase):
                    if on_phase is not None:
                        on_phase(msg)
                    try:
                        doing = describe_phase(msg)
                        progress(label, doing)
                    except (KeyError, TypeError, ValueError):
                        ignored += 1
                elif isinstance(msg, SampleReady) and msg.pid == proc.pid:
                    began = time.monotonic()  # its loop began: the earliest a py-spy attached ahead samples it from
                    if during is not None:  # before the line below: what it waits for is a phase of its own
                        during("sampling", None)
                    progress(label, f"sampling with py-spy --native at {config.rate_hz} Hz for {config.sample_seconds} s")
                    assert folded is not None  # a job that samples is given the file its stacks go to
                    spy, child.spy = child.spy, None
                    sampling = sampler.record_keeping_up(msg.pid, config.rate_hz, config.sample_seconds, ACTIVE_LOOP,
                                                         folded, lambda t: progress(label, t), spy=spy,
                                                         since=began)
                    if during is not None:
                        during("sampled", sampling)
                    try:
                        assert proc.stdin is not None  # start_child gives every child a pipe on its stdin
                        proc.stdin.write(STOP)
                        proc.stdin.flush()
                    except BrokenPipeError:
                        pass  # the child is gone; it sends no result, and that is reported below
                    if during is not None:
                        during("stopped", sampling)
                elif isinstance(msg, Done) and isinstance(msg.result, RESULT_OF[type(job)]):
                    result, error = msg.result, None  # the child's last word is the one that counts
                    progress(label, RESULT_IN)  # what follows until the next process is its exit (--progress all)
                elif isinstance(msg, Failed):
                    result, error = None, capped(msg.message)
                elif isinstance(msg, Point) and on_point is not None:
                    on_point(msg)
                else:
                    ignored += 1
                if isinstance(msg, SampleReady):
                    doing = "the sampled loop"
        except Silent:
            silent = True
            result, error = None, (f"no word from its process for {timeout:g} s in {doing} (a step() that never "
                                   f"returns?); stopped it ({STEP_TIMEOUT_ENV}=SECONDS allows longer)")
        finally:
            os.close(read_fd)
        if not silent:
            procs.wait_exited(proc)  # not reaped yet: stop() then takes along whatever the case started
    finally:
        child.end()
    if result is None and getattr(proc, "orphaned", False) and forks is not None:
        return run_child(job, config, label, log_path, progress, folded, on_point, during=during, forks=forks,
                         on_phase=on_phase)  # fresh: it is gone
    if result is None:
        stray = f"; {ignored} line(s) on its message pipe were not messages" if ignored else ""
        code = proc.returncode if proc.returncode is not None else proc.wait()  # child.end() waited for it
        return None, error or f"{exit_story(code, log_path)}{stray}", None
    drop_if_empty(log_path)
    return result, None, sampling


def has_output(log_path: Path) -> bool:
    """Whether a child's log holds anything (one gone already, say a case that cleans the run directory up: no)."""
    try:
        return log_path.stat().st_size > 0
    except OSError:
        return False


def drop_if_empty(log_path: Path) -> None:
    """A child's (or fork server's) log that holds nothing is not kept (a log is for a case that printed, or failed)."""
    if not has_output(log_path):
        try:
            log_path.unlink(missing_ok=True)
        except OSError:  # not ours to remove (a folder made read-only meanwhile): left as it is
            pass


def exit_story(code: int, log_path: Path) -> str:
    """Why a child ended before reporting: the signal that killed it (a segfault, the OOM killer's SIGKILL)
    or its exit code, and its log when there is something in it."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        how = f"the child process was killed by {name} (exit code {code}) before reporting"
    else:
        how = f"the child process exited with code {code} before reporting"
    logged = has_output(log_path)
    last = last_exception(log_path) if logged else None
    return how + (f" ({last}; see {log_path})" if last else f" (see {log_path})" if logged else
                  " (it wrote nothing to its log)")


# the last line of a Python traceback: 'OverflowError: cannot fit 'int' into an index-sized integer'
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b(: .*)?$")


def last_exception(log_path: Path, most: int = 200) -> str | None:
    """The exception a child's log ends with, cut to `most` characters: the cause, in the one line that says it
    ended (a shape too large for memory ended in an OverflowError only its log showed)."""
    try:
        with open(log_path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 4096))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [l.strip() for l in tail.splitlines() if l.strip()]
    if not lines or not EXCEPTION_LINE.match(lines[-1]):
        return None
    return lines[-1] if len(lines[-1]) <= most else lines[-1][:most - 1] + "…"


def describe_phase(msg: Phase) -> str:
    phase, shape = msg.phase, msg.shape
    at = f" at {','.join(map(str, shape))}" if shape else ""
    if phase == "point":
        return f"size {msg.index}/{msg.of}{at}"
    if phase == "timed":
        if msg.repeat is None or msg.of is None:  # what comparing None would raise: run_child ignores the message
            raise TypeError("a timed phase without its round")
        if msg.repeat > msg.of:
            return f"more rounds of timed loops{at} (host-bound: each case timed for {msg.seconds or 0:g} s)"
        return f"timed loop {msg.repeat}/{msg.of}{at}"
    who = f"{msg.label}: " if msg.label else ""
    if phase == "warmup":
        return f"{who}warm-up ({msg.calls} calls)"
    if phase == "setup":
        return f"{who}setting up{at}"
    if phase == "import":
        return f"importing {msg.label}"
    if phase == "ready":
        return "ready (set up ahead), waiting for its turn"
    return {"cprofile": "cProfile loop"}.get(phase, phase)


def stop(proc: procs.Process) -> None:
    """Never leave a child behind, nor anything it started (its process group): terminate, then kill."""
    procs.kill_tree(proc, grace=5, group=True)
    if proc.stdin:
        try:
            proc.stdin.close()
        except OSError:
            pass


def job_env(job: AnyJob) -> str | None:
    """The environment whose interpreter runs the job (every case of one job is of one environment)."""
    first = job.case if isinstance(job, ProfileJob) else (job.cases[0] if job.cases else None)
    return first.case.env if first is not None else None


@dataclass
class Spares:
    """The children started ahead of their jobs, by the log of the job each is for. Only with config.spares
    (a GPU host; not on the CPU, where their imports would take cores from the timed loops) and not with
    --isolate."""

    config: Config
    out: Path
    started: dict[Path, Spare] = field(default_factory=dict)
    deferred: list[tuple[list[CaseSpec], Path]] = field(default_factory=list)  # to start later (start_for_compare)
    _lock: threading.Lock = field(default_factory=threading.Lock)  # the environments' first processes run side by side
    stopping: list[threading.Thread] = field(default_factory=list)  # stop(wait=False)'s threads, until settle()

    @property
    def wanted(self) -> bool:
        return self.config.spares and not self.config.isolate

    @property
    def timing(self) -> bool:
        """Spares for the timing processes too: not when a fork server forks them (forking.py)."""
        return self.wanted and not self.config.fork_server

    def start_for_compare(self, groups: list[list[CaseSpec]], firsts: bool = False, defer: bool = False) -> None:
        """Every process compare will run after the first, started now, each importing its cases' libraries
        beside the first process's own imports and its GPU-bound loops: the timing processes 2..N of each
        group and each case's profiled process; with `firsts`, the first processes of the groups after the first
        too (compare --env: the second environment's first process imported for 6 s on the H200 while nothing
        else ran). With `defer`, only the next ones (process 2 of each group, those firsts) start now, the others
        when start_deferred() is called: as the first process's set-up ends (paired.py). Six spares importing
        beside the first process slowed its own imports by 0.2-0.75 s (cupy's ended at 0.88 s against 0.65 s alone,
        torch's at 4.31 s against 3.56 s, on the H200's 16 cores, 2026-12-04: benchmarks/startup.py), and at a shape
        of many values its GPU-bound loops leave the later spares time enough to import."""
        if not self.wanted:
            return
        config = self.config
        jobs, later = [], []
        for k, cases in enumerate(groups if self.timing else []):
            name = rundir.group_stem([c.label for c in cases])
            if firsts and k > 0:
                jobs.append((cases, self.out / f"{name}-timing.log"))
            if config.processes >= 2:
                jobs.append((cases, self.out / f"{name}-timing-2.log"))
            later += [(cases, self.out / f"{name}-timing-{i}.log") for i in range(3, config.processes + 1)]
        later += [([c], self.out / f"{c.label}.log") for c in config.cases]
        self.deferred = later
        for cases, log in jobs:
            self.started[log] = Spare.start(cases, config, log)
        # the ones that run first open their CUDA context now, beside the first process (each later one when the
        # process before it starts: paired._prepare): an idle context holds device memory (open_device), so not all
        for cases in groups if self.timing else []:
            self.open(self.out / f"{rundir.group_stem([c.label for c in cases])}-timing-2.log")
        if not defer:
            self.start_deferred()

    def start_deferred(self) -> None:
        """The spares start_for_compare left for later, started now (once); the first case's profiled one opens."""
        with self._lock:
            later, self.deferred = self.deferred, []
        for cases, log in later:
            self.started[log] = Spare.start(cases, self.config, log)
        if later and self.config.cases:
            self.open(self.out / f"{self.config.cases[0].label}.log")

    def open(self, log_path: Path) -> None:
        """The spare started for this job (if any) makes its CUDA context now (Spare.open): it is the next to run."""
        spare = self.started.get(log_path)
        if spare is not None:
            spare.open()

    def ahead(self, cases: list[CaseSpec], name: str, i: int) -> None:
        """Spares for the processes past config.processes that may follow process i ("until the ratios
        settle"), SPARES_AHEAD of them: each imports while the processes before it run (4-5 s on the H200
        host, where a process's loops at the sample shape take about 2.5 s), so no process waits for its
        interpreter and imports. Those not taken are stopped with the others."""
        if not self.timing:
            return
        config = self.config
        assert config.max_processes is not None  # Config.__post_init__ sets it
        for j in range(max(i + 1, config.processes + 1), min(i + SPARES_AHEAD, config.max_processes) + 1):
            log = self.out / f"{name}-timing-{j}.log"
            if log not in self.started:
                self.started[log] = Spare.start(cases, config, log)

    def take(self, log_path: Path, labels: list[str]) -> Spare | None:
        """The spare started for this job, when its cases are still these (else it is stopped)."""
        spare = self.started.pop(log_path, None)
        if spare is not None and spare.labels != labels:
            spare.stop()
            return None
        return spare

    def stop(self, prefix: str = "", wait: bool = True) -> None:
        """The spares no job took (a ratio settled early, a case failed, the run was stopped): no trace left.
        With `prefix`, those whose log's name starts with it. Those left for later are not started. With `wait`
        False each is stopped in a thread of its own (later), and settle() waits for them: on a GPU a spare that made
        its CUDA context ends in tenths of a second (the driver takes the context down), which the run need not wait
        for between its timing and its profiling. Without a prefix every spare is stopped, and those stopping waited
        for."""
        with self._lock:
            self.deferred = [(cases, log) for cases, log in self.deferred if not log.name.startswith(prefix)]
        going = [(log, self.started.pop(log)) for log in list(self.started) if log.name.startswith(prefix)]
        for log, spare in going:
            if wait:
                _stop_spare(log, spare)
            else:
                self.later(functools.partial(_stop_spare, log, spare))
        if not prefix:
            self.settle()

    def later(self, stop: Callable[[], None]) -> None:
        """`stop` (a process stopped) run in a thread of its own, which settle() waits for: one a process, so that
        their ends (a CUDA context taken down each) overlap."""
        thread = threading.Thread(target=stop, name="flametool-stop-spares", daemon=True)
        thread.start()
        self.stopping.append(thread)

    def ending(self) -> bool:
        """Whether a process stopped in a thread (later) is still ending."""
        return any(thread.is_alive() for thread in self.stopping)

    def settle(self) -> None:
        """The spares stopped in a thread (stop(wait=False)) are gone, their logs with them, once this returns:
        before anything is measured beside them (profiling.py, before a window), and at the end of the run."""
        while self.stopping:
            self.stopping.pop(0).join()


def _stop_spare(log: Path, spare: Spare) -> None:
    spare.stop()
    log.unlink(missing_ok=True)
