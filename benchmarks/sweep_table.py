"""Is the sweep's table linear in its sizes? (issue 20 item 13: sweep_page.cells searched a pair's points for
every row, so 30,000 sizes took 158 s.) One run times the report's cells and the terminal's tables of a hand-built
sweep of N and of 2N sizes and prints the ratio: about 2 when linear, about 4 when quadratic.

    python benchmarks/sweep_table.py            # N = 5,000
    python benchmarks/sweep_table.py 15000
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402

from flametool.run import stats  # noqa: E402
from flametool.run.record import Run  # noqa: E402
from flametool.render import sweep_page, sweep_tables  # noqa: E402
from flametool.analyse.sweep import PairPoint, SizePoint, SweepAnalysis, SweepPair  # noqa: E402


def analysis(n: int) -> SweepAnalysis:
    shapes = [[s, s, s] for s in range(8, 8 + n)]
    run = Run(schema=2, complete=True, started=None, finished=None, command=[], config={"sizes": shapes}, env={})
    a = SweepAnalysis(Path("."), run)
    for label in ("numpy", "torch"):
        a.curves[label] = [SizePoint(s, float(s[0]), 1.0, None, 1.5, None, None, True, 1) for s in shapes]
    wall = stats.PairFigures("numpy", "torch", True, 1.1, None, 0.1, None, 1, "processes", [1.1], [0.1], "hand-built")
    a.pairs.append(SweepPair("numpy", "torch", True, [PairPoint(s, float(s[0]), wall, wall, "torch", 0.1, 0.05)
                                                      for s in shapes]))
    return a


def seconds(n: int, table) -> float:
    a = analysis(n)
    t0 = time.perf_counter()
    table(a)
    return time.perf_counter() - t0


TABLES = {"report (sweep_page.cells)": sweep_page.cells,
          "terminal (print_sweep)": lambda a: sweep_tables.print_sweep(a, Console(file=io.StringIO(), width=200))}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    for name, table in TABLES.items():
        small, large = seconds(n, table), seconds(2 * n, table)
        print(f"{name}: {n:,} sizes {small:.2f} s, {2 * n:,} sizes {large:.2f} s; ratio {large / small:.2f} "
              "(2 linear, 4 quadratic)")


if __name__ == "__main__":
    main()
