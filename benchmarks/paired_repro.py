"""Do the figures hold from one run to the next? Runs `flametool compare` several times in a row (default 3)
with the built-in cases at a host-bound shape and prints each run's paired ratio head/base with its 95%
interval, then max/min of the ratios (target: at most 1.03) and whether each run's interval holds the
other runs' ratios (target: yes), and each run's wall time.

    python benchmarks/paired_repro.py                          # CUDA: cupy vs torch, 1024^3 float16
    python benchmarks/paired_repro.py --device cpu --libs numpy,torch --shape 64,64,64 --dtype float32
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


def run_once(cmd: list[str], i: int):
    """One `flametool compare` (cmd), its analysis and its first pair's leading figures, and its wall seconds."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"run {i + 1} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    a = dispatch.analyse_dir(cmd[cmd.index("--out") + 1])
    return a, a.pairs[0].headline, wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--libs", default="cupy,torch")
    p.add_argument("--shape", default="1024,1024,1024")
    p.add_argument("--dtype", default="float16")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--extra", default="", help="more flametool compare options, space-separated (e.g. --no-sample)")
    args = p.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            out = Path(tmp) / f"run{i}"
            cmd = [sys.executable, "-m", "flametool", "compare", "--device", args.device, "--libs", args.libs,
                   "--shape", args.shape, "--dtype", args.dtype, "--out", str(out), *args.extra.split()]
            a, f, wall = run_once(cmd, i)
            iv = f.ratio_interval
            ratios.append((f.ratio, iv))
            times = ", ".join(f"{l} {a.timings[l].cpu_us:.2f} us" for l in a.run.results)
            print(f"run {i + 1}: {f.head}/{f.base} = {f.ratio:.4f} (95% {iv.low:.4f}-{iv.high:.4f}), "
                  f"diff {f.diff_us:+.2f} us, {f.units} processes; per process {[round(r, 3) for r in f.per_process_ratio]}; "
                  f"{times}; {wall:.0f} s")
    points = [r for r, _ in ratios]
    spread = max(points) / min(points)
    held = all(iv.low <= other <= iv.high for _, iv in ratios for other in points)
    print(f"max/min of the ratios {spread:.4f} ({'within' if spread <= 1.03 else 'OUTSIDE'} 1.03); "
          f"each interval holds every run's ratio: {'yes' if held else 'NO'}")


if __name__ == "__main__":
    main()
