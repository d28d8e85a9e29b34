"""Where the seconds between one timing process's result and the next one's first loop go, step by step.

    python benchmarks/handoff_split.py                   # CUDA: cupy, torch at 1024^3, timing only
    python benchmarks/handoff_split.py --extra='--device cpu' --runs 3

compare_floor.py's "exit and hand-off between processes" read 0.26-0.33 s a process on the H200 and 0.02-0.03 s
on the CPU machine (with spares): this splits it. Each run is `flametool compare --progress all --no-sample
--no-count` (default `--shape 1024,1024,1024`: every process at the host-bound shape, as processes 2.. of the
default compare are) with a probe in its parent (parent_probe.py), stopped once its timing is over. A hand-off
runs from the parent's "result received" for process i to process i+1's first timed loop; each step in it is
given as seconds after its start, the median over every hand-off of every run:
  - the child's end: the parent reads the child's messages to their end (its process closing its pipe as it
    exits: on a GPU, after the driver has taken its CUDA context down), then waits until it has exited
    (procs.wait_exited);
  - the parent's own work: the process's loops recorded, run.json saved, whether the ratios have settled;
  - the next process: its job written (Spare.take) or, given ahead, its GO (Started.go), and its first loop.
"""

from __future__ import annotations

import re
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parent_probe import options, print_medians, probed  # noqa: E402

WRAP = {
    "flametool.procs": [["wait_exited", "exit waited for (procs.wait_exited)"]],
    "flametool.measure.spawn": [["Spare.take", "job written to the next one's spare"],
                                ["Started.go", "GO written to the next one, readied"]],
    "flametool.measure.measurement": [["Measurement.save", "run.json saved"]],
    "flametool.measure.paired": [["_record", "loops recorded"], ["settled", "settled?"],
                                 ["_prepare", "the next process prepared"]],
}
PROCESS = re.compile(r"^timing [^:]+: process (\d+)")


def one_run(extra: list[str], out: Path, limit: float) -> list[list[tuple[str, float]]]:
    """One compare's hand-offs: for each, [(step, seconds after the result that began it)]."""
    handoffs: list[list[tuple[str, float]]] = []
    current: list[tuple[str, float]] | None = None
    began = 0.0
    argv = ["compare", "--progress", "all", "--no-sample", "--no-count", "--out", str(out), *extra]
    for from_probe, at, line in probed(argv, WRAP, limit, lambda line: not line.startswith("timing ")
                                       and "setting up" in line):  # the profiling (none) or the headline: over
        if not from_probe:
            m = PROCESS.match(line)
            if m is None:
                continue
            if line.endswith("result received"):
                current, began = [("result received", 0.0)], at
                handoffs.append(current)
                continue
            if current is not None and "timed loop 1/" in line:
                current.append(("the next process's first timed loop", at - began))
                current = None
            elif current is not None and "ready (set up ahead)" in line:
                current.append(("the next process said it was ready (read at its turn)", at - began))
            continue
        if current is not None and not line.endswith("imported"):
            current.append((line, at - began))
    return [h for h in handoffs if h[-1][0].startswith("the next process's first")]


def main() -> int:
    args = options(__doc__.splitlines()[0], runs=2, extra="--shape 1024,1024,1024", limit=240.0)
    extra = shlex.split(args.extra)
    every: list[list[tuple[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="flametool-handoff-split-") as tmp:
        for k in range(args.runs):
            got = one_run(extra, Path(tmp) / f"run{k}", args.limit)
            every += got
            print(f"run {k + 1}: {len(got)} hand-offs, each "
                  + ", ".join(f"{h[-1][1]:.3f}" for h in got) + " s to the next first loop", flush=True)
    if not every:
        print("no hand-off seen")
        return 1
    print(f"\nflametool compare {args.extra}: a hand-off, step by step: seconds after the parent read a process's "
          f"result, median over {len(every)} hand-offs (min-max, how many had it)")
    print_medians(every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
