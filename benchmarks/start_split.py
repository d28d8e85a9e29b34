"""Where a compare's first seconds go, before its first timing process sets up: the parent's own steps and its first
child's start, each as seconds since the command was started.

    python benchmarks/start_split.py                  # the default compare (CUDA: cupy, torch at the seed shape)
    python benchmarks/start_split.py --runs 5 --extra='--device cpu'

compare_floor.py's "start (parent, first child)" phase read 0.8-1.8 s on the H200 and 0.35-0.4 s on the CPU machine:
this says which step is which. Each run starts `flametool compare --progress all` with a probe in its parent (the
functions below wrapped to print when they begin and end, and every process the parent starts), reads the
progress lines as they come, and stops the run (SIGINT, as Ctrl-C) once the first timing process has begun its
warm-up. Every time is CLOCK_MONOTONIC, one clock for every process of the machine; the table gives each step's
median over the runs (a step a run did not reach is left out of its median).
"""

from __future__ import annotations

import argparse
import os
import re
import select
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in the parent before flametool's command line: each step it stamps is a line "@probe SECONDS WHAT" on its
# standard error (the monotonic clock, absolute), read by the driver below beside the progress lines.
PROBE = r"""
import subprocess, sys, time
def stamp(what):
    sys.stderr.write(f"@probe {time.monotonic():.6f} {what}\n"); sys.stderr.flush()
stamp("interpreter up")
_popen = subprocess.Popen.__init__
def popen(self, args, *a, **k):
    words = " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
    kind = ("py-spy" if "py-spy" in words else "a spare" if "--spare" in words else
            "a fork server" if "forkserver" in words.lower() else "a child" if "flametool" in words else words[:40])
    stamp(f"starts {kind}")
    return _popen(self, args, *a, **k)
subprocess.Popen.__init__ = popen
def timed(f, what):
    def wrapped(*a, **k):
        stamp(f"{what}: begins")
        try:
            return f(*a, **k)
        finally:
            stamp(f"{what}: ends")
    return wrapped
def patch_machine(machine):
    machine.cuda_device_count = timed(machine.cuda_device_count, "the device count asked, or its answer waited for")
    for name, ask in getattr(machine, "_ASKED", {}).items():  # asked ahead in a thread (machine.ask_ahead)
        machine._ASKED[name] = timed(ask, f"the driver asked ahead: {name}")
    machine.collect = timed(machine.collect, "machine.collect")
def patch_sampler(sampler):
    sampler.check_available = timed(sampler.check_available, "py-spy --version")
def patch_runner(runner):
    runner.start = timed(runner.start, "runner.start (the run directory, run.json)")
PATCHES = {"flametool.measure.machine": patch_machine, "flametool.measure.sampler": patch_sampler,
           "flametool.measure.runner": patch_runner}
# each module patched as its import ends, where the command imports it: the probe imports nothing of flametool's
# itself, so the parent's imports take the time they take
import importlib.abc, importlib.machinery
class Patching(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            PATCHES[name](module)
            stamp(f"{name} imported")
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Patching())
from flametool.commands import main as cli
stamp("flametool's command line imported")
sys.argv = ["flametool", *sys.argv[1:]]
cli.main_entry()
"""

PROGRESS = re.compile(r"^timing [^:]+: process 1/\d+: (.*)$")


def one_run(extra: list[str], out: Path, limit: float) -> list[tuple[str, float]]:
    """One compare, stopped once its first timing process warms up: [(step, seconds since the start)]."""
    argv = [sys.executable, "-c", PROBE, "compare", "--progress", "all", "--out", str(out), *extra]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=os.environ | {"PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    steps: list[tuple[str, float]] = []
    seen: set[str] = set()
    stop = t0 + limit
    try:
        while time.monotonic() < stop:
            ready, _, _ = select.select([proc.stderr], [], [], max(0.0, stop - time.monotonic()))
            if not ready:
                break
            line = proc.stderr.readline()
            if not line:
                break
            now = time.monotonic()
            if line.startswith("@probe "):
                _, at, what = line.rstrip("\n").split(" ", 2)
                steps.append((what, float(at) - t0))
                continue
            m = PROGRESS.match(line.strip())
            if not m:
                continue
            what = re.sub(r" at [\d,]+$", "", m.group(1))  # the shape: one step whatever the size
            what = "first child: " + re.sub(r"\(\d+ calls\)", "", what).strip()
            if what not in seen:
                seen.add(what)
                steps.append((what, now - t0))
            if "warm-up" in what:
                break
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # as Ctrl-C: the run's children end with it
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return steps


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--extra", default="", help="options for compare, as one string")
    p.add_argument("--limit", type=float, default=60.0, help="seconds a run may take to reach the warm-up")
    args = p.parse_args()
    extra = shlex.split(args.extra)
    runs = []
    with tempfile.TemporaryDirectory(prefix="flametool-start-split-") as tmp:
        for k in range(args.runs):
            runs.append(one_run(extra, Path(tmp) / f"run{k}", args.limit))
            print(f"run {k + 1}: " + ", ".join(f"{what} {at:.3f}" for what, at in runs[-1]), flush=True)
    order: list[str] = []
    for steps in runs:
        for what, _ in steps:
            if what not in order:
                order.append(what)
    print(f"\nflametool compare {args.extra}: seconds since the command started, median of {args.runs} runs "
          "(min-max)")
    for what in sorted(order, key=lambda w: statistics.median(at for s in runs for x, at in s if x == w)):
        seen = [at for steps in runs for x, at in steps if x == what]
        print(f"  {statistics.median(seen):7.3f}  ({min(seen):.3f}-{max(seen):.3f}, {len(seen)} of {args.runs})  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
