"""A timeline of every thread of a process tree, from a py-spy speedscope file: per bin of time, the two stacks
seen most, each as its innermost flametool frame and its leaf. Where the seconds of a compare go, down to the
function, without instrumenting anything:

    py-spy record --subprocesses --threads --idle --rate 50 --format speedscope -o tl.json -- \\
        python3 -m flametool compare --iters 20 --processes 3
    python benchmarks/thread_timeline.py tl.json [BIN_SECONDS]

A thread's times count from its own first sample (speedscope keeps no common origin): read each against the
progress lines of the same run. What it showed on the H200 is in docs/benchmarks.md (2026-12-03).
"""

from __future__ import annotations

import collections
import json
import sys


def frame_name(frame: dict) -> str:
    return f"{frame['name']}:{frame.get('line', '')} {frame.get('file', '').split('site-packages/')[-1][-40:]}"


def main(argv: list[str]) -> int:
    if not argv:
        sys.exit(__doc__)
    data = json.load(open(argv[0]))
    width = float(argv[1]) if len(argv) > 1 else 0.25
    frames = data["shared"]["frames"]
    for profile in data["profiles"]:
        if len(profile["samples"]) < 20:
            continue
        print(f"== {profile['name']}: {len(profile['samples'])} samples")
        bins: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
        t = 0.0
        for sample, weight in zip(profile["samples"], profile["weights"]):
            names = [frame_name(frames[i]) for i in sample]
            ours = [n for n in names if "flametool" in n]
            bins[int(t // width)][(ours[-1] if ours else "") + " | " + (names[-1] if names else "idle")] += 1
            t += weight
        for b in sorted(bins):
            print(f"  {b * width:6.2f} " + " || ".join(f"{k[:150]} x{c}" for k, c in bins[b].most_common(2)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
