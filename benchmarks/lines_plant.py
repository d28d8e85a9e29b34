"""The planted line, read in 3 runs (issue 39's done-when on the CPU): `compare --device cpu` of numpy beside
tests/cases/line_cases.py:planted_lines, a step of four lines one of which busy-waits PLANTED_US (50 us) beside
three cheap numpy lines. For each run it prints what the lines view reads: the step's hottest line (by total
time per call, as the terminal's table, the report's listing and the JSON summary's `lines` give it, all from one
analysis), its total with one standard error, how far that is from the plant, and the case's time per call; then
whether every run read the planted line as the hottest within 15%.

    python3 benchmarks/lines_plant.py [--runs 3] [--sample-seconds 2] [--processes 2]

Run it from the repository root on an otherwise idle machine: a busy-wait on the clock takes the time the host
gives it, so a host whose cores are shared with other work reads every figure (the plant's too) slower.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases" / "line_cases.py"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(CASES.parent))
from line_cases import PLANTED_TEXT, PLANTED_US  # noqa: E402

WITHIN = 0.15


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sample-seconds", type=int, default=2)
    p.add_argument("--processes", type=int, default=2)
    args = p.parse_args()
    planted = 1 + CASES.read_text().splitlines().index(f"        {PLANTED_TEXT}")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    ok = 0
    print(f"plant: {CASES.name}:{planted} `{PLANTED_TEXT}` busy-waits {PLANTED_US:g} us per call; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            out = Path(tmp) / f"run{i}"
            subprocess.run([sys.executable, "-m", "flametool", "compare", "--device", "cpu", "--libs", "numpy",
                            "--case", f"{CASES}:planted_lines", "--processes", str(args.processes),
                            "--sample-seconds", str(args.sample_seconds), "--out", str(out)],
                           check=True, capture_output=True, text=True, env=env, cwd=ROOT)
            doc = json.loads(subprocess.run([sys.executable, "-m", "flametool", "summary", str(out), "--format", "json"],
                                            check=True, capture_output=True, text=True, env=env, cwd=ROOT).stdout)
            pair = next(p for p in doc["pairs"] if p["head"] == "planted_lines")
            case = next(c for c in doc["cases"] if c["label"] == "planted_lines")
            step = [d["head"] for d in pair["lines"] if d["head"] is not None and d["head"]["step"]]
            hot = max(step, key=lambda l: l["total_us"])
            off = hot["total_us"] / PLANTED_US - 1
            good = hot["line"] == planted and abs(off) <= WITHIN
            ok += good
            print(f"run {i + 1}: hottest step line {hot['file']}:{hot['line']} `{(hot['text'] or '').strip()}` "
                  f"total {hot['total_us']:.2f} ± {hot['total_se_us']:.2f} us per call ({off:+.1%} from the plant; "
                  f"{hot['total_samples']} samples), case {case['us_per_call']:.2f} us per call, the other step lines "
                  + ", ".join(f"{l['line']}: {l['total_us']:.2f}" for l in sorted(step, key=lambda l: l['line'])
                              if l is not hot) + ("" if good else "  <- outside"))
    print(f"{ok} of {args.runs} runs read the planted line as the step's hottest within {WITHIN:.0%} of "
          f"{PLANTED_US:g} us")
    return 0 if ok == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
