"""How long `flametool --help` and each `flametool COMMAND --help` take (issue 42 item 3: under 0.15 s each), as
the median wall time of a few fresh processes, beside a bare interpreter's start (`python -c pass`: what no
change to flametool can take off; site hooks of the machine included) and whether numpy or jinja2 was imported.

    python3 benchmarks/help_speed.py [--runs 5]

Run it from the repository root: `python -m flametool` there runs this checkout's code. flametool's bytecode is
written first (`compileall`, into the ignored __pycache__ folders; a machine that sets PYTHONDONTWRITEBYTECODE
would otherwise compile every module in every run, which an installed copy does not); --no-bytecode measures
without it. A rate from one run on a machine as it is (the tests never time anything); run it when the machine is
otherwise idle.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TARGET_S = 0.15
CHECK = "import sys, runpy; sys.argv = ['flametool', *sys.argv[1:]]\ntry:\n    runpy.run_module('flametool', run_name='__main__')\n" \
        "except SystemExit:\n    pass\nprint(' '.join(m for m in ('numpy', 'jinja2') if m in sys.modules) or 'neither', file=sys.stderr)"


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per command line (default 5)")
    parser.add_argument("--no-bytecode", action="store_true", help="do not write flametool's bytecode first")
    args = parser.parse_args()
    from flametool.commands.main import COMMANDS

    package = ROOT / "flametool"
    if not args.no_bytecode:
        compileall.compile_dir(package, quiet=1)
    cached = all(Path(importlib.util.cache_from_source(str(f))).exists() for f in package.rglob("*.py"))
    print("flametool's bytecode " + ("cached (as an installed copy has it)" if cached else
                                     "not cached: each run compiles the modules it imports"))

    bare = statistics.median(wall([sys.executable, "-c", "pass"]) for _ in range(args.runs))
    print(f"python -c pass: {bare:.3f} s (median of {args.runs})")
    worst = 0.0
    for command in ["", *COMMANDS]:
        argv = [command, "--help"] if command else ["--help"]
        median = statistics.median(wall([sys.executable, "-m", "flametool", *argv]) for _ in range(args.runs))
        heavy = subprocess.run([sys.executable, "-c", CHECK, *argv], cwd=ROOT, capture_output=True, text=True,
                               check=False).stderr.strip().splitlines()[-1:]
        worst = max(worst, median)
        print(f"flametool {' '.join(argv):<18} {median:.3f} s  (less the bare start {median - bare:.3f} s)  "
              f"imports: {heavy[0] if heavy else '?'}")
    print(f"slowest {worst:.3f} s, target {TARGET_S} s: {'met' if worst < TARGET_S else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
