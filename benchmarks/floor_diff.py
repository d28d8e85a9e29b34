"""Two or more outputs of compare_floor.py side by side, phase by phase: where a change moved the wall time.

    python benchmarks/floor_diff.py BEFORE.txt AFTER.txt [MORE.txt ...]

Each file is what compare_floor.py printed (h200_check.sh's compare-floor-base.txt and compare-floor.txt, say). It
prints the wall time, the floor and wall / floor of each, then each phase's seconds, and the last file's change
from the first (a phase a run did not have reads 0).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROW = re.compile(r"^  (\S.*?)\s+(-?\d+\.\d)\s+(-?\d+\.\d)%")
FIGURES = {"wall time": re.compile(r"^wall time: (\d+\.\d+) s"),
           "floor": re.compile(r"^floor: .* = (\d+\.\d+) s"),
           "wall / floor": re.compile(r"^wall / floor: (\d+\.\d+)")}


def read(path: Path) -> tuple[dict[str, float], dict[str, float]]:
    """(its figures: wall time, floor, wall / floor; its phases' seconds) from one output of compare_floor.py."""
    figures: dict[str, float] = {}
    phases: dict[str, float] = {}
    in_table = False
    for line in path.read_text(errors="replace").splitlines():
        for name, pattern in FIGURES.items():
            m = pattern.match(line)
            if m:
                figures[name] = float(m.group(1))
        if line.startswith("where the wall time went"):
            in_table = True
            continue
        m = ROW.match(line) if in_table else None
        if m:
            phases[m.group(1).strip()] = float(m.group(2))
    return figures, phases


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    runs = [read(Path(a)) for a in argv]
    width = max(12, *(len(Path(a).name) for a in argv))
    head = "".join(f"{Path(a).name:>{width + 2}}" for a in argv)
    print(f"{'':44s}{head}{'last - first':>16s}")
    for name in FIGURES:
        values = [figures.get(name) for figures, _ in runs]
        cells = "".join(f"{v:>{width + 2}.3f}" if v is not None else f"{'-':>{width + 2}}" for v in values)
        change = (f"{values[-1] - values[0]:>+16.3f}" if values[0] is not None and values[-1] is not None else "")
        print(f"{name:44s}{cells}{change}")
    order: list[str] = []
    for _, phases in runs:
        order += [p for p in phases if p not in order]
    for phase in order:
        values = [phases.get(phase, 0.0) for _, phases in runs]
        cells = "".join(f"{v:>{width + 2}.1f}" for v in values)
        print(f"{phase:44s}{cells}{values[-1] - values[0]:>+16.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
