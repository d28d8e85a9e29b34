"""Two or more outputs of compare_floor.py side by side, phase by phase: where a change moved the wall time.

    python benchmarks/floor_diff.py BEFORE.txt AFTER.txt [MORE.txt ...]
    python benchmarks/floor_diff.py --before N BEFORE.txt ... AFTER.txt ...

Each file is what compare_floor.py printed (h200_check.sh's compare-floor-base.txt and compare-floor.txt, say). It
prints the wall time, the floor and wall / floor of each, then each phase's seconds, and the last file's change
from the first (a phase a run did not have reads 0). With --before N the first N files are the runs before a
change and the rest the runs after it (h200_check.sh's `ab`, the two alternated): the change is then the mean
after less the mean before, since one run each moved item 1's figure 1.207-1.238 on one commit (2026-12-04).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
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


def change(values: Sequence[float | None], before: int | None) -> float | None:
    """The last value less the first; with `before`, the mean of the values after the first `before` less the
    mean of those (a run without the figure left out of its mean)."""
    if before is None:
        return values[-1] - values[0] if values[0] is not None and values[-1] is not None else None
    early = [v for v in values[:before] if v is not None]
    late = [v for v in values[before:] if v is not None]
    return sum(late) / len(late) - sum(early) / len(early) if early and late else None


def main(argv: list[str]) -> int:
    before: int | None = None
    if argv[:1] == ["--before"] and len(argv) > 1 and argv[1].isdigit():
        before, argv = int(argv[1]), argv[2:]
    if len(argv) < 2 or (before is not None and not 0 < before < len(argv)):
        print("\n".join(line.strip() for line in __doc__.strip().splitlines()[2:4]))
        return 2
    runs = [read(Path(a)) for a in argv]
    width = max(12, *(len(Path(a).name) for a in argv))
    head = "".join(f"{Path(a).name:>{width + 2}}" for a in argv)
    title = "last - first" if before is None else f"mean {len(argv) - before} - mean {before}"
    print(f"{'':44s}{head}{title:>16s}")
    for name in FIGURES:
        values = [figures.get(name) for figures, _ in runs]
        cells = "".join(f"{v:>{width + 2}.3f}" if v is not None else f"{'-':>{width + 2}}" for v in values)
        moved = change(values, before)
        print(f"{name:44s}{cells}{'' if moved is None else f'{moved:>+16.3f}'}")
    order: list[str] = []
    for _, phases in runs:
        order += [p for p in phases if p not in order]
    for phase in order:
        values = [phases.get(phase, 0.0) for _, phases in runs]
        cells = "".join(f"{v:>{width + 2}.1f}" for v in values)
        moved = change(values, before)
        assert moved is not None  # a phase a run did not have reads 0
        print(f"{phase:44s}{cells}{moved:>+16.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
