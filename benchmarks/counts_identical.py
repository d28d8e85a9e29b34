"""Whether the counted loop's counts were the same in every run: reads run directories named OP-N (or env-N)
under the folders given, groups them by OP, and prints per case "identical" or what differed, as flametool's
diff compares counted loops (host allocations left out: tracemalloc's counts follow the interpreter's own
caches). benchmarks/h200_counts.sh calls it on its runs; run it here on the runs of several device calls put
together:

    python3 benchmarks/counts_identical.py RUNS [RUNS ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's flametool

from flametool.analyse import countdiff  # noqa: E402
from flametool.run import rundir  # noqa: E402
from flametool.run.counts import Counts  # noqa: E402


def main(folders: list[str]) -> int:
    runs = sorted(r for d in folders for r in Path(d).iterdir() if (r / "run.json").is_file())
    by: dict[tuple[str, str], list[Counts]] = {}
    for r in runs:
        name = r.name.rsplit("-", 1)[0]
        for label, res in rundir.load(r).results.items():
            if res.profile is not None and res.profile.counts is not None:
                by.setdefault((name, label), []).append(res.profile.counts)
    differ = 0
    for (name, label), got in sorted(by.items()):
        # flametool's own comparison of two counted loops (what diff and summary list), each run against the first
        diffs = [countdiff.diff_counts(got[0], g, "first run", "this run") for g in got[1:]]
        changed = [d for d in diffs if d is not None and (d.changed or d.one_side)]
        differ += bool(changed)
        print(f"{name:8} {label:14} {len(got)} runs: {'DIFFER' if changed else 'identical'}")
        for d in changed:
            print("   ", "; ".join(countdiff.lines(d)))
    print(f"{len(runs)} runs, {len(by)} cases: {len(by) - differ} identical, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
