"""A probe in a compare's parent, for the benchmarks that split its seconds (start_split.py, handoff_split.py).

    PROBE_WRAP='{"flametool.measure.machine": [["collect", "machine.collect"]]}' python benchmarks/parent_probe.py compare ...

runs `flametool ARGS` with each function named in PROBE_WRAP (a JSON object: module -> [[attribute, label], ...])
wrapped, as its module's import ends, to say when it begins and ends, and every process the parent starts said as
it starts. An attribute is a function of the module, `Class.method`, or `name[*]` for every function in the
module's dict `name` (the label's {} is the key); one this version of flametool lacks is left out. Each line is "@probe SECONDS WHAT" on standard error, SECONDS on
CLOCK_MONOTONIC (one clock for every process of the machine). The probe imports nothing of flametool's before the
command does, so its imports take the time they take. `probed()` runs it and yields what it says with the
command's own lines, each with its seconds since the start.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
WRAP_ENV = "PROBE_WRAP"


def stamp(what: str) -> None:
    sys.stderr.write(f"@probe {time.monotonic():.6f} {what}\n")
    sys.stderr.flush()


def timed(f: Callable, what: str) -> Callable:
    def wrapped(*args, **kwargs):
        stamp(f"{what}: begins")
        try:
            return f(*args, **kwargs)
        finally:
            stamp(f"{what}: ends")
    return wrapped


def wrap(module, attribute: str, label: str) -> None:
    if attribute.endswith("[*]"):
        table = getattr(module, attribute[:-3])
        for key in list(table):
            table[key] = timed(table[key], label.format(key))
        return
    owner, _, name = attribute.rpartition(".")
    target = getattr(module, owner, None) if owner else module
    if target is not None and hasattr(target, name):  # not in this version of flametool: nothing to say
        setattr(target, name, timed(getattr(target, name), label))


class Patching(importlib.abc.MetaPathFinder):
    """Each module of the table wrapped as its import ends, where the command imports it."""

    def __init__(self, table: dict[str, list[list[str]]]) -> None:
        self.table = table

    def find_spec(self, name, path, target=None):
        if name not in self.table:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            for attribute, label in self.table[name]:
                wrap(module, attribute, label)
            stamp(f"{name} imported")

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def popen_said() -> None:
    """Every process the parent starts, said as it starts it."""
    start = subprocess.Popen.__init__

    def popen(self, args, *rest, **kwargs):
        words = " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
        kind = ("py-spy" if "py-spy" in words else "a spare" if "--spare" in words else
                "a fork server" if "forkserver" in words.lower() else "a child" if "flametool" in words else words[:40])
        stamp(f"starts {kind}")
        return start(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = popen  # type: ignore[method-assign]


def probed(argv: list[str], table: dict[str, list[list[str]]], limit: float,
           stop: Callable[[str], bool]) -> Iterator[tuple[bool, float, str]]:
    """`flametool ARGV` with the probe: (from the probe?, seconds since the start, what) for each line on its
    standard error, until `stop(line)` says so or `limit` seconds pass; then it is stopped as Ctrl-C stops it."""
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *argv], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=os.environ | {"PYTHONUNBUFFERED": "1", WRAP_ENV: json.dumps(table)})
    assert proc.stderr is not None
    deadline = t0 + limit
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            line = proc.stderr.readline()
            if not line:
                break
            now = time.monotonic()
            if line.startswith("@probe "):
                _, at, what = line.rstrip("\n").split(" ", 2)
                yield True, float(at) - t0, what
                continue
            yield False, now - t0, line.rstrip("\n")
            if stop(line):
                break
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # as Ctrl-C: the run's children end with it
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def options(description: str, runs: int, extra: str, limit: float) -> argparse.Namespace:
    """The options start_split.py and handoff_split.py share: --runs, --extra (compare's, as one string), --limit."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--runs", type=int, default=runs)
    p.add_argument("--extra", default=extra, help="options for compare, as one string")
    p.add_argument("--limit", type=float, default=limit, help="seconds a run may take")
    return p.parse_args()


def print_medians(groups: list[list[tuple[str, float]]]) -> None:
    """Each step of `groups` (a run's steps, or a hand-off's) with the median of its seconds over the groups that
    have it, the range and how many, in the order of their medians."""
    order: list[str] = []
    for steps in groups:
        for what, _ in steps:
            if what not in order:
                order.append(what)
    seconds = {what: [at for steps in groups for x, at in steps if x == what] for what in order}
    for what in sorted(order, key=lambda w: statistics.median(seconds[w])):
        seen = seconds[what]
        print(f"  {statistics.median(seen):7.3f}  ({min(seen):.3f}-{max(seen):.3f}, {len(seen)} of {len(groups)})  "
              f"{what}")


if __name__ == "__main__":
    stamp("interpreter up")
    popen_said()
    sys.meta_path.insert(0, Patching(json.loads(os.environ.get(WRAP_ENV, "{}"))))
    sys.path[0] = str(ROOT)  # flametool from this checkout, as `python -m flametool` there finds it
    from flametool.commands import entry, main  # noqa: F401 - main: imported here, as stamped

    stamp("flametool's command line imported")
    sys.argv = ["flametool", *sys.argv[1:]]
    entry.main_entry()
