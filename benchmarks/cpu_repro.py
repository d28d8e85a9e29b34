"""Does the CPU default hold its verdict? Runs the default `flametool compare` (no options but --device cpu and
--out: numpy against torch at 64^3 float32, the default pool threads, processes and sampling) three times in a
row and prints each run's paired ratio with its 95% interval, the pool threads it ran with, and max/min of the
ratios (target: at most 1.05), with the machine's load average before and after (the machine is shared: a
run beside other work says so).

    python benchmarks/cpu_repro.py [--runs 3] [--extra "--no-sample"]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from paired_repro import run_once  # noqa: E402

TARGET = 1.05


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--extra", default="", help="more flametool compare options, space-separated")
    args = p.parse_args()
    print(f"before: {load()}")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            out = Path(tmp) / f"run{i}"
            cmd = [sys.executable, "-m", "flametool", "compare", "--device", "cpu", "--out", str(out),
                   *args.extra.split()]
            a, f, wall = run_once(cmd, i)
            iv = f.ratio_interval
            ratios.append(f.ratio)
            shown = f"(95% {iv.low:.3f}-{iv.high:.3f})" if iv else "(no interval)"
            print(f"run {i + 1}: {f.head}/{f.base} = {f.ratio:.3f} {shown} over {f.units} {f.unit_name}, "
                  f"pool threads {a.run.config.pool_threads}; {wall:.0f} s; {load()}", flush=True)
    spread = max(ratios) / min(ratios)
    print(f"max/min of the ratios {spread:.3f} ({'within' if spread <= TARGET else 'OUTSIDE'} {TARGET})")


if __name__ == "__main__":
    main()
