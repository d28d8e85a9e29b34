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
"""

from __future__ import annotations

import argparse
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

TARGET = 1.3


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


def run_timed(argv: list[str]) -> tuple[int, float]:
    """`flametool ARGV` in a fresh process, each line it prints shown with the seconds since it started:
    (exit code, wall seconds)."""
    cmd = [sys.executable, "-m", "flametool", *argv]
    print("$ flametool", " ".join(argv), flush=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    for line in proc.stdout:
        print(f"{time.monotonic() - t0:7.1f} {line.rstrip()}", flush=True)
    return proc.wait(), time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extra", default="", help="options for flametool compare, e.g. --extra='--iters 250'")
    parser.add_argument("--out", type=Path, help="run directory to keep (default: a temporary one)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="flametool-compare-floor-") as tmp:
        out = args.out or Path(tmp) / "run"
        code, wall = run_timed(["compare", *shlex.split(args.extra), "--out", str(out)])
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
