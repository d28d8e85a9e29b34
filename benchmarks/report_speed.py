"""How long `flametool report` takes, and how large report.html is, for one run directory.

    python benchmarks/report_speed.py                 # the largest samples/ run, else a fresh CPU run
    python benchmarks/report_speed.py RUN_DIR         # a run directory of yours
    python benchmarks/report_speed.py --reference     # the H200 reference stacks (tests/data), rebuilt as a run
    python benchmarks/report_speed.py --samples       # every samples/ run (compare and sweep), against the target

Prints the in-process render time (median of --repeat renders: run.json, the .folded and .prof files read,
the view model built, the page rendered), the wall time of the whole `flametool report` command in a fresh
process (interpreter start and imports included: what a user waits for), and the size of the page.
Target on a 2-core machine: under 1-2 s for a real PyTorch-vs-CuPy run; with --samples, each samples/ run
(the compare samples and the sweep sample) under 1 s end to end (issue 21). The page is written to a
temporary folder; the run directory is only read.

The command's time includes its imports, which compile flametool's modules afresh where no bytecode of them
is cached: an installed flametool has it (pip writes it), and Python writes it on a first import, but not
under PYTHONDONTWRITEBYTECODE (set on this project's machines), which cost each command about 0.2 s. So the
bytecode is written first (`python -m compileall flametool`, into the ignored __pycache__ folders), and the
output says so; --no-bytecode measures without it.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from flametool.analyse import dispatch  # noqa: E402
from flametool import render  # noqa: E402

SAMPLES_TARGET = 1.0  # seconds, `flametool report` of each samples/ run in a fresh process
COMMANDS = 3  # fresh `flametool report` processes a run directory, their median: one is at the mercy of a noisy host


def largest_sample() -> Path | None:
    runs = [p.parent for p in (ROOT / "samples").glob("*/run.json")]
    return max(runs, key=lambda r: sum(f.stat().st_size for f in r.glob("*.folded")), default=None)


def fresh_cpu_run(where: Path) -> Path:
    out = where / "cpu-run"
    print("no samples/ run: recording one on the CPU (flametool compare --device cpu) ...", flush=True)
    subprocess.run([sys.executable, "-m", "flametool", "compare", "--device", "cpu", "--out", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def timed(run: Path, repeat: int, out: Path) -> tuple[list[float], float, str]:
    """(in-process render times, the fresh `flametool report` command's wall time, the page)."""
    times = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        html = render.show("html", dispatch.analyse_dir(run))
        times.append(time.perf_counter() - t0)
    walls = []
    for _ in range(COMMANDS):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "flametool", "report", str(run), "-o", str(out)],
                              capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"flametool report {run}: exit {done.returncode}: {done.stderr.strip()}")
        walls.append(time.perf_counter() - t0)
    return times, statistics.median(walls), html


def bytecode(write: bool) -> str:
    """Whether flametool's modules have cached bytecode (written first when `write`), in words."""
    package = ROOT / "flametool"
    if write:
        compileall.compile_dir(package, quiet=1)
    cached = all(Path(importlib.util.cache_from_source(str(f))).exists() for f in package.rglob("*.py"))
    return ("flametool's bytecode cached (as an installed copy has it)" if cached else
            "flametool's bytecode not cached: each command compiles its modules")


def every_sample(repeat: int, tmp: Path) -> int:
    """Each samples/ run's render time against SAMPLES_TARGET; 1 when one is over it."""
    over = 0
    for run in sorted(p.parent for p in (ROOT / "samples").glob("*/run.json")):
        times, wall, _ = timed(run, repeat, tmp / f"{run.name}.html")
        worst = max(wall, statistics.median(times))
        over += worst >= SAMPLES_TARGET
        print(f"{run.name}: render {statistics.median(times):.3f} s in process (median of {len(times)}), "
              f"flametool report {wall:.3f} s; {worst / SAMPLES_TARGET:.2f} of the {SAMPLES_TARGET:g} s target")
    return 1 if over else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", type=Path, help="run directory (default: the largest samples/ run)")
    parser.add_argument("--reference", action="store_true", help="use the H200 reference stacks from tests/data")
    parser.add_argument("--samples", action="store_true", help="every samples/ run, against the 1 s target")
    parser.add_argument("--repeat", type=int, default=5, help="in-process renders to take the median of (default 5)")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="do not write flametool's bytecode first (measure the commands as they compile it)")
    args = parser.parse_args()
    print(bytecode(not args.no_bytecode) + f"; the command's time the median of {COMMANDS} fresh processes")

    with tempfile.TemporaryDirectory(prefix="flametool-report-speed-") as tmp:
        tmp = Path(tmp)
        if args.samples:
            return every_sample(args.repeat, tmp)
        if args.reference:
            from h200run import make_h200_run

            run = make_h200_run(tmp / "h200-reference")
        else:
            run = args.run or largest_sample() or fresh_cpu_run(tmp)
        folded = sum(f.stat().st_size for f in run.glob("*.folded"))
        stacks = sum(1 for f in run.glob("*.folded") for line in f.open(encoding="utf-8") if line.strip())

        out = tmp / "report.html"
        times, wall, html = timed(run, args.repeat, out)

        print(f"run: {run} ({stacks} distinct stacks, {folded / 1e6:.2f} MB of .folded)")
        print(f"render (in process, median of {len(times)}): {statistics.median(times):.3f} s")
        print(f"flametool report (fresh process, end to end): {wall:.3f} s")
        print(f"report.html: {len(html.encode('utf-8')) / 1024:.1f} KiB ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
