"""How far the default `flametool compare` is from the time its own loops and sampling must take.

    python benchmarks/compare_floor.py                      # the default compare (CUDA: cupy,torch at the seed shape)
    python benchmarks/compare_floor.py --extra=--iters=250  # options for compare

Runs `flametool compare` once, each progress line printed with the seconds since the start (where the time
goes), then reads the run's own run.json and prints

    wall time / (GPU floor of the loops at the requested shape + sampling time)

The floor is what no implementation can avoid: every loop timed at the requested shape and the warm-up
before it, at the GPU time per call the run itself measured (events), plus the seconds py-spy sampled
(every attempt). Target (issue 21): at most 1.3 at the seed shape on an H200. The loops at
the host-bound sample shape (GPU time close to host time) are printed beside it, outside the floor.
On a CPU run there is no GPU time: the host's time per call stands in for it.

It runs compare with `--progress all` (unless --extra gives a --progress) and ends with a table of where the
wall time went: each progress line starts a phase that lasts until the next line (set-up, warm-up, the timed
loops at the requested shape, the loops at the sample shape, a process's exit and the parent's work until the
next process, each profiled process's set-up, cProfile, sampling and counting), beside what run.json says the
loops and the sampling took. Lines a child sent while the parent read another child's (a profiled process made
ready ahead) come in a burst and take no time of their own there: their work was hidden.

    python benchmarks/compare_floor.py --device cpu         # on the CPU (numpy, torch at 64^3)
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flametool.run import rundir  # noqa: E402
from flametool.run.record import Run  # noqa: E402
from flametool.run.timing import Timing  # noqa: E402

TARGET = 1.2  # issue 42 (issue 21: 1.3)


def loop_seconds(timing: Timing | None, metric: str) -> float:
    """The device seconds of every loop of `timing`: each loop's time per operation times its operations."""
    if timing is None:
        return 0.0
    return sum(v for v in timing.loops(metric)) * timing.calls / 1e6


def floor(run: Run) -> tuple[float, float, float, str]:
    """(requested-shape loops and warm-ups, sampling, sample-shape loops) in seconds, and the metric used."""
    metric = "gpu_us" if any(r.timing and r.timing.gpu_loops for r in run.results.values()) else "cpu_us"
    loops = sampled = at_sample = 0.0
    warmup = run.config.warmup or 0
    for r in run.results.values():
        t = r.timing
        if t is not None and t.loops(metric):
            loops += loop_seconds(t, metric) + warmup * t.median(metric) / 1e6
        at_sample += loop_seconds(r.sample_timing, metric)
        if r.profile is not None and r.profile.sampling is not None:
            s = r.profile.sampling  # run.json keeps each attempt's seconds (its window is not saved)
            sampled += s.seconds + sum(e.seconds for e in s.earlier)
    return loops, sampled, at_sample, metric


def run_timed(argv: list[str]) -> tuple[int, float, list[tuple[float, str]]]:
    """`flametool ARGV` in a fresh process, each line it prints shown with the seconds since it started:
    (exit code, wall seconds, the lines with their seconds)."""
    cmd = [sys.executable, "-m", "flametool", *argv]
    print("$ flametool", " ".join(argv), flush=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        at = time.monotonic() - t0
        lines.append((at, line.rstrip()))
        print(f"{at:7.1f} {line.rstrip()}", flush=True)
    return proc.wait(), time.monotonic() - t0, lines


# The phases of the table, in its order; each progress line is one of them (phase_of).
PHASES = ["start (parent, first child)", "imports", "set-up at the requested shape", "warm-up at the requested shape",
          "timed loops at the requested shape", "set-up and warm-up at the sample shape", "loops at the sample shape",
          "exit and hand-off between processes", "profiled: set-up and warm-up",
          "profiled: the timing's unused processes ending", "profiled: waiting its turn",
          "profiled: own timed loops", "cProfile", "sampling", "counting", "end (analysis, report)"]
SHAPE = re.compile(r" at (\d+(?:,\d+)*)")


def phase_of(line: str, requested: str, last: str) -> str | None:
    """The phase a progress line starts (`last`: the phase before it); None for a line that is not progress
    (the headline, the tables)."""
    label, sep, what = line.partition(": ")
    if not sep or " " in label.strip() and not label.startswith("timing "):
        return None
    timing = label.startswith("timing ")
    if timing:
        what = what.partition(": ")[2]  # "process 2/5: ..."
    if what.endswith("result received"):
        return "exit and hand-off between processes"
    if what.startswith("importing"):
        return "imports"
    at = SHAPE.search(what)
    here = at.group(1) if at else None
    if not timing:
        if "setting up" in what or "warm-up" in what:
            return "profiled: set-up and warm-up"
        if what.startswith("ready"):
            return "profiled: waiting its turn"
        if what.startswith("waiting for the timing's"):  # profiling.ENDING
            return "profiled: the timing's unused processes ending"
        if "timed loop" in what:
            return "profiled: own timed loops"
        # the words spawn.describe_phase and run_child say (a table's title after the run, "counted per line", is none)
        for word, phase in (("cProfile loop", "cProfile"), ("sampling with py-spy", "sampling"),
                            ("py-spy fell", "sampling")):
            if what.startswith(word):
                return phase
        return "counting" if what == "count" else None
    if "setting up" in what:
        return "set-up at the requested shape" if here == requested else "set-up and warm-up at the sample shape"
    if "warm-up" in what:
        return ("warm-up at the requested shape" if last == "set-up at the requested shape" else
                "set-up and warm-up at the sample shape")
    if "timed loop" in what:
        return "timed loops at the requested shape" if here == requested else "loops at the sample shape"
    return None


def phases(lines: list[tuple[float, str]], wall: float, requested: str) -> dict[str, float]:
    """Seconds per phase: each progress line's phase runs until the next progress line; the time before the
    first is the start, after the last the end."""
    spent = dict.fromkeys(PHASES, 0.0)
    last, since = PHASES[0], 0.0
    for at, line in lines:
        phase = phase_of(line, requested, last)
        if phase is None:
            continue
        spent[last] += at - since
        last, since = phase, at
    # the last progress line's phase ends where compare's output begins (the headline): the rest is the end
    tail = next((at for at, line in lines if at >= since and phase_of(line, requested, last) is None), wall)
    spent[last] += tail - since
    spent["end (analysis, report)"] += wall - tail
    return spent


def measured(run: Run) -> dict[str, float]:
    """What run.json says some phases took: the host seconds of the loops at the sample shape (every process),
    of each profiled process's cProfile loop and the sampling (every attempt's seconds)."""
    got = dict.fromkeys(PHASES, 0.0)
    for r in run.results.values():
        if r.sample_timing is not None:
            got["loops at the sample shape"] += loop_seconds(r.sample_timing, "cpu_us")
        p = r.profile
        if p is None:
            continue
        if p.cprofile_us_per_call and p.cprofile_calls:
            got["cProfile"] += p.cprofile_us_per_call * p.cprofile_calls * max(1, r.ops_per_step or 1) / 1e6
        if p.sampling is not None:
            got["sampling"] += p.sampling.seconds + sum(e.seconds for e in p.sampling.earlier)
    return got


def print_phases(spent: dict[str, float], got: dict[str, float], floor_parts: dict[str, float], wall: float) -> None:
    print("where the wall time went (a phase runs from its progress line to the next; 'in run.json': the host "
          "seconds of those loops, or the seconds py-spy was asked to sample; 'floor': its part of the floor):")
    print(f"  {'phase':42s} {'seconds':>8s} {'share':>6s} {'in run.json':>12s} {'floor':>7s}")
    for phase in PHASES:
        s = spent[phase]
        if s < 0.05 and not got.get(phase) and not floor_parts.get(phase):
            continue
        inside = f"{got[phase]:.1f}" if got.get(phase) else ""
        fl = f"{floor_parts[phase]:.1f}" if floor_parts.get(phase) else ""
        print(f"  {phase:42s} {s:8.1f} {s / wall:6.1%} {inside:>12s} {fl:>7s}")
    outside = wall - sum(floor_parts.values())
    print(f"  {'outside the floor':42s} {outside:8.1f} {outside / wall:6.1%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extra", default="", help="options for flametool compare, e.g. --extra='--iters 250'")
    parser.add_argument("--out", type=Path, help="run directory to keep (default: a temporary one)")
    parser.add_argument("--device", help="compare's --device (cpu: numpy and torch at 64^3 on the CPU)")
    args = parser.parse_args()
    extra = shlex.split(args.extra)
    if args.device:
        extra = ["--device", args.device, *extra]
    if not any(x == "--progress" or x.startswith("--progress=") for x in extra):
        extra += ["--progress", "all"]  # a line for every phase of every process: the table below reads them

    with tempfile.TemporaryDirectory(prefix="flametool-compare-floor-") as tmp:
        out = args.out or Path(tmp) / "run"
        code, wall, lines = run_timed(["compare", *extra, "--out", str(out)])
        if code != 0:
            print(f"flametool compare exited with {code}")
            return 1
        run = rundir.load(out)
        loops, sampled, at_sample, metric = floor(run)
        what = "GPU" if metric == "gpu_us" else "host (no GPU time on this device)"
        print(f"wall time: {wall:.1f} s")
        print(f"floor: {loops:.1f} s of {what} loops and warm-ups at {','.join(map(str, run.config.shape))} "
              f"+ {sampled:.1f} s of sampling = {loops + sampled:.1f} s")
        print(f"(outside the floor: {at_sample:.1f} s of {what} time in the timed loops at the sample shape)")
        print(f"wall / floor: {wall / (loops + sampled):.3f} (target: at most {TARGET}); counting the sample "
              f"shape's loops in the floor too: {wall / (loops + sampled + at_sample):.3f}")
        requested = ",".join(map(str, run.config.shape))
        spent = phases(lines, wall, requested)
        warm = sum((run.config.warmup or 0) * r.timing.median(metric) / 1e6 for r in run.results.values()
                   if r.timing is not None and r.timing.loops(metric))
        floor_parts = {"warm-up at the requested shape": warm, "timed loops at the requested shape": loops - warm,
                       "sampling": sampled}
        print_phases(spent, measured(run), floor_parts, wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
