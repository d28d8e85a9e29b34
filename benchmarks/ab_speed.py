"""Issue 42 item 2: how soon a two-build A/B (`compare --env a=PY --env b=PY --no-sample`) reaches a half-width,
from one run: its phases and its anchored interval after each process a side, against the seconds since it began.

The run is `compare --env a=PY --env b=PY --libs LIBS --shape SHAPE --no-sample --progress all` plus --compare-args
(e.g. `--settle 1` to run until the interval reaches +-1%, `--processes-at-once 3`), both environments this
interpreter (a null A/B: the truth is 1). Each line compare prints is stamped with the seconds since compare was
started. Printed:

- the phases: start (the --env probe, the first process's interpreter and imports) until the first timing line;
  each environment's first process; the processes after the first; the tail (the profiled processes, the
  analysis) until compare exits;
- after k processes a side (k = 2, 3, ...; the k-th `result received` line of each environment), the anchored
  estimate (run.json's processes cut to the first k of each side, read with flametool's anchoring) and its
  half-width, at the seconds that k-th result came plus the tail the run ended with (what a run that stopped there
  would have taken);
- the first k whose half-width is at most --target (default 1%) and its seconds (issue 42: within 90 s at 1024^3
  cupy/torch on the H200).

On the H200 (cupy against torch at 1024,1024,1024 float16, the defaults):
    python3 benchmarks/ab_speed.py --compare-args "--settle 0.8 --budget 100" --out "$OUT/ab"
On the CPU (numpy against torch at 64^3):
    python3 benchmarks/ab_speed.py --device cpu --compare-args "--processes 4" --out /tmp/ab
"""

from __future__ import annotations

import argparse
import copy
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from envs import ROOT, ab_defaults, ab_options  # noqa: E402 - ROOT: flametool on sys.path
from flametool.run import anchoring, rundir  # noqa: E402
from flametool.run.record import Run  # noqa: E402


def run_compare(out: Path, args: argparse.Namespace) -> tuple[float, list[tuple[float, str]]]:
    """One compare into `out`: (its wall seconds, each stderr line with the seconds since it was started)."""
    py = sys.executable
    device = ["--device", args.device] if args.device else []
    cmd = [py, "-m", "flametool", "compare", *device, "--libs", args.libs, "--shape", args.shape,
           *(["--dtype", args.dtype] if args.dtype else []), "--env", f"a={py}", "--env", f"b={py}", "--no-sample",
           "--progress", "all", "--out", str(out), *shlex.split(args.compare_args)]
    print("$", " ".join(cmd[2:]), flush=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    stdout: list[str] = []
    reader = threading.Thread(target=lambda: stdout.extend(proc.stdout or []), daemon=True)
    reader.start()
    stamped: list[tuple[float, str]] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        stamped.append((time.monotonic() - t0, line.rstrip("\n")))
    code = proc.wait()
    wall = time.monotonic() - t0
    reader.join(timeout=5)
    if code not in (0, 3, 4):
        raise SystemExit(f"compare exited {code}\n" + "\n".join(l for _, l in stamped[-30:]))
    return wall, stamped


def results_at(stamped: list[tuple[float, str]], env: str) -> list[float]:
    """The seconds of each `result received` of environment `env`'s timing processes, in order."""
    return [t for t, l in stamped if l.startswith("timing ") and f"@{env}" in l.split(":")[0]
            and l.endswith("result received")]


def cut(run: Run, k: int) -> Run:
    """The run with each case's loops at the sample shape from its first k processes only."""
    short = copy.deepcopy(run)
    for r in short.results.values():
        t = r.at_sample_shape
        if t is not None:
            t.processes = t.processes[:k]
    return short


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ab_options(p)
    p.add_argument("--compare-args", default="", help="more options for compare (e.g. '--settle 1')")
    p.add_argument("--target", type=float, default=1.0, help="the half-width to reach, percent (default 1)")
    p.add_argument("--out", type=Path, help="the run's directory (default: in a temporary folder)")
    args = p.parse_args()
    ab_defaults(args)
    out = args.out or Path(tempfile.mkdtemp(prefix="flametool-ab-")) / "run"
    wall, stamped = run_compare(out, args)
    run = rundir.load(out)
    lib = args.libs.split(",")[0]
    base, head = f"{lib}@a", f"{lib}@b"
    timing = [t for t, l in stamped if l.startswith("timing ")]
    if not timing:
        raise SystemExit("no timing progress lines")
    done_a, done_b = results_at(stamped, "a"), results_at(stamped, "b")
    firsts_end = max(done_a[0], done_b[0]) if done_a and done_b else timing[0]
    tail = wall - timing[-1]
    print(f"wall {wall:.1f} s: start {timing[0]:.1f} s (probe, first imports), first processes until "
          f"{firsts_end:.1f} s, later processes until {timing[-1]:.1f} s ({len(done_a)} + {len(done_b)} processes), "
          f"tail {tail:.1f} s (profiled processes, analysis)")
    whole = anchoring.anchored_pair(run, base, head)
    if whole is None or whole.reach is None:
        raise SystemExit(f"{head} against {base}: no anchored figure in {out}")
    print(f"{head}/{base} anchored: {whole.ratio:.4f} (95% {whole.ratio_interval.low:.4f}-"  # type: ignore[union-attr]
          f"{whole.ratio_interval.high:.4f}), half-width {whole.reach * 100:.2f}%, {whole.base_units} + "  # type: ignore[union-attr]
          f"{whole.head_units} processes")
    print(f"  k   seconds (k-th result a side + the tail)   estimate   half-width")
    reached = None
    for k in range(2, min(len(done_a), len(done_b)) + 1):
        fig = anchoring.anchored_pair(cut(run, k), base, head)
        if fig is None or fig.reach is None:
            continue
        seconds = max(done_a[k - 1], done_b[k - 1]) + tail
        print(f"{k:3d}   {seconds:7.1f}                                   {fig.ratio:.4f}     {fig.reach * 100:.2f}%")
        if reached is None and fig.reach * 100 <= args.target:
            reached = (k, seconds)
    if reached:
        print(f"half-width <= {args.target:g}% at {reached[0]} processes a side, {reached[1]:.1f} s")
    else:
        print(f"half-width <= {args.target:g}%: not reached in this run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
