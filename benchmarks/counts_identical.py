"""Whether the counted loop's counts were the same in every run: reads run directories named OP-N (or env-N)
under the folders given, groups them by OP, and prints per case "identical" or what differed (host allocations
left out: tracemalloc's counts follow the interpreter's own caches). benchmarks/h200_counts.sh calls it on its
runs; run it here on the runs of several device calls put together:

    python3 benchmarks/counts_identical.py RUNS [RUNS ...]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(folders: list[str]) -> int:
    runs = sorted(r for d in folders for r in Path(d).iterdir() if (r / "run.json").is_file())
    by: dict[tuple[str, str], list[dict[tuple[str, str], object]]] = {}
    for r in runs:
        name = r.name.rsplit("-", 1)[0]
        data = json.loads((r / "run.json").read_text())
        for label, res in data["results"].items():
            c = (res.get("profile") or {}).get("counts")
            if c:
                key = {(t["kind"], t["name"]): t["count"] for t in c["tallies"] if t["kind"] != "host-alloc"}
                by.setdefault((name, label), []).append(key)
    differ = 0
    for (name, label), got in sorted(by.items()):
        same = all(g == got[0] for g in got)
        differ += not same
        print(f"{name:8} {label:14} {len(got)} runs: {'identical' if same else 'DIFFER'}")
        if not same:
            for g in got[1:]:
                print("   ", {k: (got[0].get(k), g.get(k)) for k in set(g) | set(got[0]) if g.get(k) != got[0].get(k)})
    print(f"{len(runs)} runs, {len(by)} cases: {len(by) - differ} identical, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
