"""Does a known cost read at its length? One `flametool compare` with three user cases in shared processes:
the library's plain matmul and the same plus a busy-wait of 5 us and of 20 us (benchmarks/cases/planted.py),
paired against the plain one. Prints, for each planted wait, the paired difference (head - plain, with its
95% interval) and the frame table's total for the planted function, each against the known length
(target: within 10%).

    python benchmarks/planted.py                    # CUDA: cupy at 1024^3 float16
    python benchmarks/planted.py --device cpu       # numpy at 64^3 float32
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from flametool.analyse import dispatch  # noqa: E402

CASES = ROOT / "benchmarks" / "cases" / "planted.py"
PLANTED = {"planted_5us": ("planted_wait_5us", 5.0), "planted_20us": ("planted_wait_20us", 20.0)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--processes", type=int, help="timing processes (default: flametool's)")
    p.add_argument("--extra", default="", help="more flametool compare options, space-separated")
    args = p.parse_args()
    cpu = args.device == "cpu"
    shape, dtype = ("64,64,64", "float32") if cpu else ("1024,1024,1024", "float16")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "flametool", "compare", "--device", args.device, "--libs", "",
               "--shape", shape, "--dtype", dtype, "--iters", "2000", "--out", str(out)]
        for label in ("plain", *PLANTED):
            cmd += ["--case", f"{CASES}:{label}"]
        for label in PLANTED:
            cmd += ["--pair", f"plain:{label}"]
        if args.processes:
            cmd += ["--processes", str(args.processes)]
        cmd += args.extra.split()
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            sys.exit(f"flametool compare failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        a = dispatch.analyse_dir(out)
    print(f"planted busy-waits, {args.device}, {shape} {dtype}; flametool compare took {wall:.0f} s")
    worst = 0.0
    for pair in a.pairs:
        func, length = PLANTED[pair.head]
        f = pair.headline
        rows = [r for r in (pair.diff.frames if pair.diff else []) if r.frame.endswith(func)]
        frame = rows[0].delta_total_us_per_call if rows else None
        diff_err = abs(f.diff_us / length - 1)
        frame_err = abs(frame / length - 1) if frame is not None else float("inf")
        worst = max(worst, diff_err, frame_err)
        iv = f.diff_interval
        print(f"{pair.head}: paired difference {f.diff_us:+.2f} us"
              + (f" (95% {iv.low:+.2f} to {iv.high:+.2f})" if iv else "")
              + f" over {f.units} {'processes' if f.paired else 'units'} -> {f.diff_us / length:.3f} of {length:g} us; "
              + (f"frame total {func} {frame:.2f} us -> {frame / length:.3f}" if frame is not None else "frame not found"))
        own = a.run.results[pair.head].profile.own_us_per_call
        print(f"    {pair.head}: paired {a.sample_timings[pair.head].cpu_us:.2f} us per call, its sampled process alone "
              f"{own:.2f} us; plain paired {a.sample_timings[pair.base].cpu_us:.2f} us")
    print(f"worst relative error {worst:.1%} ({'within' if worst <= 0.10 else 'OUTSIDE'} 10%)")


if __name__ == "__main__":
    main()
