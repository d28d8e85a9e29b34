"""Where a compare's first seconds go, before its first timing process sets up: the parent's own steps and its first
child's start, each as seconds since the command was started.

    python benchmarks/start_split.py                  # the default compare (CUDA: cupy, torch at the seed shape)
    python benchmarks/start_split.py --runs 5 --extra='--device cpu'

compare_floor.py's "start (parent, first child)" phase read 0.8-1.8 s on the H200 and 0.35-0.4 s on the CPU machine:
this says which step is which. Each run starts `flametool compare --progress all` with a probe in its parent
(parent_probe.py: the functions in WRAP said as they begin and end, and every process the parent starts), reads
the progress lines as they come, and stops the run (SIGINT, as Ctrl-C) once the first timing process has begun its
warm-up. The table gives each step's median over the runs (a step a run did not reach is left out of its median).
"""

from __future__ import annotations

import re
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parent_probe import options, print_medians, probed  # noqa: E402

# what the probe wraps in the parent (parent_probe.py): module -> [attribute, label]
WRAP = {
    "flametool.measure.machine": [["cuda_device_count", "the device count asked, or its answer waited for"],
                                  ["_ASKED[*]", "the driver asked ahead: {}"], ["collect", "machine.collect"]],
    "flametool.measure.sampler": [["check_available", "py-spy --version"]],
    "flametool.measure.runner": [["start", "runner.start (the run directory, run.json)"]],
}
PROGRESS = re.compile(r"^timing [^:]+: process 1/\d+: (.*)$")


def one_run(extra: list[str], out: Path, limit: float) -> list[tuple[str, float]]:
    """One compare, stopped once its first timing process warms up: [(step, seconds since the start)]."""
    steps: list[tuple[str, float]] = []
    seen: set[str] = set()
    for from_probe, at, line in probed(["compare", "--progress", "all", "--out", str(out), *extra], WRAP, limit,
                                       lambda line: "process 1/" in line and "warm-up" in line):
        if from_probe:
            steps.append((line, at))
            continue
        m = PROGRESS.match(line.strip())
        if not m:
            continue
        what = re.sub(r" at [\d,]+$", "", m.group(1))  # the shape: one step whatever the size
        what = "first child: " + re.sub(r"\(\d+ calls\)", "", what).strip()
        if what not in seen:
            seen.add(what)
            steps.append((what, at))
    return steps


def main() -> int:
    args = options(__doc__.splitlines()[0], runs=3, extra="", limit=60.0)
    extra = shlex.split(args.extra)
    runs = []
    with tempfile.TemporaryDirectory(prefix="flametool-start-split-") as tmp:
        for k in range(args.runs):
            runs.append(one_run(extra, Path(tmp) / f"run{k}", args.limit))
            print(f"run {k + 1}: " + ", ".join(f"{what} {at:.3f}" for what, at in runs[-1]), flush=True)
    print(f"\nflametool compare {args.extra}: seconds since the command started, median of {args.runs} runs "
          "(min-max, how many runs reached it)")
    print_medians(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
