"""Is matching two cases' lines (analyse/lines.diff_lines) linear in their number? Two hand-built cases of N lines
each across 40 library files, almost none matched (each side's lines at other numbers, the texts of every 40th line
kept), so every line goes through on_both_sides; then 2N. Prints each time and the ratio: about 2 when linear,
about 4 when quadratic (2026-12-05: 0.28, 1.24 and 5.73 s at 1,000, 2,000 and 4,000 lines before its lookups were
made once per call).

    python benchmarks/line_diff_speed.py          # N = 2,000
    python benchmarks/line_diff_speed.py 8000
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flametool.analyse import attribution, lines  # noqa: E402
from flametool.run import folded, sources  # noqa: E402


def side(n: int, offset: int, word: str) -> lines.CaseLines:
    text = "".join(f"s (case.py:5);f{i % 50} (liba/m{i % 40}.py:{i + offset}) 1\n" for i in range(n))
    record = sources.Sources({f"liba/m{k}.py": sources.SourceFile("library", f"/a/m{k}.py",
                                                                   {i + offset: f"{word}{i}" for i in range(k, n, 40)})
                              for k in range(40)})
    return lines.case_lines(attribution.make_profile(word, folded.parse(text), 0, 100.0, by_line=True), record)


def seconds(n: int) -> float:
    base, head = side(n, 0, "x"), side(n, n, "y")
    t0 = time.perf_counter()
    lines.diff_lines(base, head)
    return time.perf_counter() - t0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    small, large = seconds(n), seconds(2 * n)
    print(f"diff_lines: {n:,} lines a side {small:.2f} s, {2 * n:,} {large:.2f} s; ratio {large / small:.2f} "
          "(2 linear, 4 quadratic)")


if __name__ == "__main__":
    main()
