"""Operand values made beside a process's imports, by its own threads (values.Ahead) or by a process forked for them
(values.Apart), in fresh processes: when the values are ready, and when the imports are done.

    python benchmarks/values_apart.py [--count 1912602624] [--libs cupy,torch] [--runs 3]

The default count is the seed's operands' (65536 x 24576 + 24576 x 12288 float16 values: a and b). A fresh timing process
makes them while it imports its libraries (child.entry.begin); made by its threads, they need the GIL between
chunks, which the imports hold. On the 2-core CPU machine (2026-12-04) one thread made 10^8 float16 values in
0.53-0.59 s alone and in 1.11-1.61 s beside a thread importing torch.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flametool.workload.ops import SEED_SHAPE  # noqa: E402

CHILD = r"""
import json, sys, threading, time
sys.path.insert(0, @ROOT@)
t0 = time.perf_counter()
from flametool.workload import values
mode, count, libs = @MODE@, @COUNT@, @LIBS@
if mode == "apart":
    made = values.Apart([((count,), "float16", 0, 0)])
else:
    made = values.Ahead(lambda: (values.uniform(count, "float16", 0, 0),))
ready = {}
def wait():
    made.get()
    ready["values"] = time.perf_counter() - t0
waiter = threading.Thread(target=wait)
waiter.start()
imports = []
def load(name):
    __import__(name)
    imports.append(name)
threads = [threading.Thread(target=load, args=(name,)) for name in libs[1:]]
for t in threads:
    t.start()
if libs:
    load(libs[0])  # as child.preload.preload_behind: the first in the caller's thread, the others in a thread
for t in threads:
    t.join()
ready["imports"] = time.perf_counter() - t0
waiter.join()
print(json.dumps(ready))
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    m, k, n = SEED_SHAPE
    p.add_argument("--count", type=int, default=m * k + k * n, help="values (default: the seed's a and b, M*K + K*N)")
    p.add_argument("--libs", default="cupy,torch", help="imported beside the values (default cupy,torch)")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    libs = [l for l in args.libs.split(",") if l]
    print(f"{args.count:,} float16 values beside importing {', '.join(libs) or 'nothing'}, {args.runs} fresh "
          "processes each, alternated: median seconds from the process's start")
    got: dict[str, list[dict[str, float]]] = {"threads": [], "apart": []}
    for _ in range(args.runs):
        for mode in got:
            code = (CHILD.replace("@ROOT@", repr(str(ROOT))).replace("@MODE@", repr(mode))
                    .replace("@COUNT@", repr(args.count)).replace("@LIBS@", repr(libs)))
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            got[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    for mode, runs in got.items():
        values = statistics.median(r["values"] for r in runs)
        imports = statistics.median(r["imports"] for r in runs)
        each = ", ".join(f"{r['values']:.2f}" for r in runs)
        print(f"  {mode:8s} values ready {values:6.2f} s, imports done {imports:6.2f} s (values: {each})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
