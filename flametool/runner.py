"""The parent: one child process per case, the sampler attached to it, the run directory written after
every case so that nothing measured is lost when a later case (or the user) stops the run."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from . import envinfo, procs, rundir, sampler
from .cases import BUILTIN, CaseSpec
from .child import ACTIVE_LOOP
from .errors import CaseError, FlametoolError


def child_sample_grace() -> float:
    """The sampled phase needs no more than this beyond --sample-seconds; past it the child stops by itself."""
    return sampler.attach_seconds() + sampler.FLUSH_SECONDS + 30


@dataclass
class Config:
    cases: list[CaseSpec]
    device: str
    shape: list[int]
    dtypes: dict[str, str]  # label -> dtype
    iters: int = 250
    warmup: int = 50
    repeats: int = 3
    rate_hz: int = 100
    sample_seconds: int = 5
    processes: int = 1  # fresh processes per case that run the timed loops; the first also profiles and samples
    pool_threads: int | None = None  # CPU thread pools in the child (POOL_THREAD_VARS); None: as the environment says
    sample_shape: list[int] | None = None
    sample: bool = True
    keep_going: bool = False
    out: Path = field(default_factory=lambda: default_out())
    out_is_default: bool = False  # out is default_out(): a name already taken gets a suffix (rundir.create)
    cpu_fallback: bool = False  # True when no CUDA device was found and the CPU defaults were taken

    def to_json(self) -> dict:
        data = asdict(self)
        data["cases"] = [c.to_json() for c in self.cases]
        data["out"] = str(self.out)
        return data


def default_out() -> Path:
    return Path("flametool-runs") / datetime.now().strftime("%Y%m%d-%H%M%S")


Progress = Callable[[str, str], None]  # (label, what is happening)


# The CPU thread pools the array libraries start at import (numpy's OpenBLAS, torch's OpenMP, MKL): one
# thread per core, idle while a GPU does the work, yet each native sample stops and resumes every one of them.
POOL_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def child_env(pool_threads: int | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if pool_threads is not None:
        env.update(dict.fromkeys(POOL_THREAD_VARS, str(pool_threads)))
    # the child imports flametool from the same place as the parent, installed or not
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_case(case: CaseSpec, config: Config, out: Path, progress: Progress) -> dict:
    """Run one case in its own child, then its timed loops again in config.processes - 1 fresh children;
    returns its result (with "error" set when it failed)."""
    label = case.label
    spec = {
        "case": case.to_json(),
        "shape": config.shape,
        "dtype": config.dtypes[label],
        "device": config.device,
        "iters": config.iters,
        "warmup": config.warmup,
        "repeats": config.repeats,
        "sample_shape": config.sample_shape,
        "sample": config.sample,
        "prof_path": str(rundir.prof_path(out, label).resolve()),
        "max_sample_seconds": config.sample_seconds + child_sample_grace(),
        "parent_pid": os.getpid(),
    }
    base = rundir.blank_result() | {
        "library": BUILTIN[label][1] if case.module and label in BUILTIN else None,
        "factory": f"{case.module or case.file}:{case.factory}",
        "dtype": spec["dtype"],
        "shape": config.shape,
        "device": config.device,
    }
    result, error, sampling = run_child(spec, config, out, label, out / f"{label}.log", progress)
    if result is None:
        return base | {"error": error}
    result = base | finish(result, sampling, config, out, label)
    # the timed loops only, at the shapes the first process chose: a fresh process can run the same loop
    # at a different speed (on the H200, 15 us in some and 22-24 us in others), so one process is one reading
    timed_only = spec | {"profile": False, "sample": False, "sample_shape": result["sample_shape"]}
    extras: list[dict] = []
    for i in range(2, config.processes + 1):
        def numbered(label: str, text: str, i: int = i) -> None:
            progress(label, f"process {i}/{config.processes}: {text}")
        extra, error, _ = run_child(timed_only, config, out, label, out / f"{label}-{i}.log", numbered)
        if extra is None:  # what the first process measured stays in run.json
            return result | {"error": f"process {i} of {config.processes}: {error}"}
        extras.append(extra)
    return pool_timings(result, extras)


def run_child(spec: dict, config: Config, out: Path, label: str, log_path: Path,
              progress: Progress) -> tuple[dict | None, str | None, sampler.Sampling | None]:
    """One child process for `spec`, sampled when it says it is ready: (result or None, error, sampling)."""
    try:
        log = open(log_path, "w", encoding="utf-8")
    except OSError as exc:
        raise rundir.cannot_write(log_path, exc) from None
    read_fd, write_fd = os.pipe()
    with log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flametool.child", str(write_fd), json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
            env=child_env(config.pool_threads), **procs.own_group(),
        )
    os.close(write_fd)
    result: dict | None = None
    error: str | None = None
    sampling: sampler.Sampling | None = None
    ignored = 0
    try:
        with os.fdopen(read_fd, "r", encoding="utf-8", errors="replace") as messages:
            for line in messages:
                msg = parse_message(line)
                kind = msg and msg["event"]
                if kind == "phase":
                    try:
                        progress(label, describe_phase(msg))
                    except (KeyError, TypeError, ValueError):
                        ignored += 1
                elif kind == "sample_ready" and msg.get("pid") == proc.pid:
                    progress(label, f"sampling with py-spy --native at {config.rate_hz} Hz for {config.sample_seconds} s")
                    sampling = sampler.record_keeping_up(msg["pid"], config.rate_hz, config.sample_seconds, ACTIVE_LOOP,
                                                         rundir.folded_path(out, label), lambda t: progress(label, t))
                    try:
                        proc.stdin.write(b"stop\n")
                        proc.stdin.flush()
                    except BrokenPipeError:
                        pass  # the child is gone; it sends no result, and that is reported below
                elif kind == "result" and isinstance(msg.get("result"), dict):
                    result, error = msg["result"], None  # the child's last word is the one that counts
                elif kind == "error":
                    result, error = None, str(msg.get("message"))
                else:
                    ignored += 1
        procs.wait_exited(proc)  # not reaped yet: stop() then takes along whatever the case started
    finally:
        with procs.signals_deferred():
            stop(proc)
    if result is None:
        stray = f"; {ignored} line(s) on its message pipe were not messages" if ignored else ""
        return None, error or f"the child process exited with code {proc.returncode} before reporting (see {log_path}){stray}", None
    if log_path.stat().st_size == 0:
        log_path.unlink()
    return result, None, sampling


MESSAGE_START = '{"event": '


def parse_message(line: str) -> dict | None:
    """One message from the child, or None for a line that is not one. The case's code runs in the child and
    can write to the message pipe too (it is the child's): what is not a message is ignored, and a message
    that follows stray bytes on the same line is still found."""
    for start in (0, line.rfind(MESSAGE_START)):
        if start < 0:
            continue
        try:
            msg = json.loads(line[start:])
        except ValueError:
            continue
        if isinstance(msg, dict) and isinstance(msg.get("event"), str):
            return msg
    return None


def pool_timings(result: dict, extras: list[dict]) -> dict:
    """The timed loops of every process pooled: each loop is one reading, the figure their median. The
    cProfile and sampled figures stay the first process's, and so do their ratios (cprofile_inflation,
    slowdown): each compares loops of one process."""
    result["processes"] = 1 + len(extras)
    result["cpu_us_per_call_processes"] = [result["cpu_us_per_call"]] + [e["cpu_us_per_call"] for e in extras]
    for target, sources in ((result, extras), (result["sample_timing"], [e["sample_timing"] for e in extras])):
        for key in ("cpu_us_per_call", "gpu_us_per_call"):
            loops = target[f"{key}_repeats"] + [v for source in sources for v in source[f"{key}_repeats"]]
            target[f"{key}_repeats"] = loops
            target[key] = statistics.median(loops) if loops else None
    return result


def finish(result: dict, sampling: sampler.Sampling | None, config: Config, out: Path, label: str) -> dict:
    chunks = result.pop("chunks", None)
    calls = result.pop("calls_per_chunk", None)
    unsampled = result["sample_timing"]["cpu_us_per_call"]
    result["cprofile_inflation"] = result["cprofile_us_per_call"] / unsampled if unsampled else None
    result["files"] = {"prof": rundir.prof_path(out, label).name}
    if sampling is None:
        result.update(samples=None, rate_hz=None, sampled_us_per_call=None, sampling=None)
        return result
    sampled = sampler.sampled_us_per_call(chunks or [], calls or 1, sampling.window)
    result["files"]["folded"] = rundir.folded_path(out, label).name
    result["samples"] = sampling.kept_samples
    result["rate_hz"] = sampling.rate_hz
    result["sampled_us_per_call"] = sampled
    slowdown = sampled / unsampled if sampled and unsampled else None
    result["sampling"] = sampling.to_json() | {
        "slowdown": slowdown,
        "coverage": sampler.coverage(sampling),
        "suggested_rate_hz": sampler.suggest_rate(sampling.rate_hz, slowdown, sampling.behind_seconds > 0,
                                                  sampler.loop_share(sampling)),
        "calls_per_chunk": calls,
        "chunks": len(chunks or []),
    }
    return result


def describe_phase(msg: dict) -> str:
    phase = msg["phase"]
    shape = msg.get("shape")
    at = f" at {','.join(map(str, shape))}" if shape else ""
    if phase == "timed":
        return f"timed loop {msg['repeat']}/{msg['of']}{at}"
    if phase == "warmup":
        return f"warm-up ({msg['calls']} calls)"
    if phase == "setup":
        return f"setting up{at}"
    return {"cprofile": "cProfile loop"}.get(phase, phase)


def stop(proc: subprocess.Popen) -> None:
    """Never leave a child behind, nor anything it started (its process group): terminate, then kill."""
    procs.kill_tree(proc, grace=5, group=True)
    if proc.stdin:
        try:
            proc.stdin.close()
        except OSError:
            pass


def compare(config: Config, argv: list[str], progress: Progress) -> tuple[Path, dict]:
    """Measure every case; run.json is saved after each one and marked complete at the end."""
    out = config.out
    if not config.out_is_default:
        rundir.ensure_new(out)
    if config.sample:  # before anything starts: a run that cannot sample says so now, not after the timings
        sampler.check_available()
    sampler.attach_seconds()  # a bad FLAMETOOL_PYSPY_TIMEOUT, too
    out = config.out = rundir.create(out, unique=config.out_is_default)
    data = rundir.new_run(config.to_json(), envinfo.collect(config.device), argv, _now())
    rundir.save(out, data)
    try:
        for case in config.cases:
            progress(case.label, "starting")
            result = run_case(case, config, out, progress)
            data["results"][case.label] = result
            rundir.save(out, data)
            if (result.get("sampling") or {}).get("refused"):
                # the kernel will refuse every case alike: stop here, with what to change
                raise FlametoolError(f"case {case.label!r}: {result['sampling']['error']} "
                                     f"(its timings and cProfile are kept in {out})")
            if result.get("error") and not config.keep_going:
                raise CaseError(f"case {case.label!r}: {result['error']} (finished cases kept in {out})")
        data["complete"] = True
    finally:
        with procs.signals_deferred():  # a second Ctrl-C must not lose run.json
            data["finished"] = _now()
            rundir.save(out, data)
    return out, data


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
