"""Where a timing process's set-up goes (issue 42, item 1): in fresh processes, the libraries imported first (as a
spare has them), then each step of the built-in cases' set-up timed on its own: the CUDA context, cupy's
factory (its device memory, the operand values, their copy), its first product and the other warm-up calls, then
torch's factory and warm-up. `--context-first` makes the CUDA context (and cuBLAS's handle) before the clock
starts, as a spare that made them while it waited for its job would have them; `--warm-shape M,K,N` then also runs
one cupy.matmul and one torch.mm of uninitialised float16 operands at that shape before the clock (whether a spare
could take a first product's 0.12 s off the set-up, and whether it needs the case's own shape to: a first call's
cost in the library's Python and cuBLAS's start-up would go with any shape, a kernel's first load only with one
that picks the same kernel).

    python benchmarks/setup_split.py [--shape 1024,1024,1024] [--runs 5] [--context-first [--warm-shape M,K,N]]

Prints each step's median seconds over the runs, and the whole set-up's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
sys.path.insert(0, @ROOT@)
import cupy, torch
from flametool.workload import libraries, inputs
shape, context_first, warm = @SHAPE@, @FIRST@, @WARM@
m, k, n = shape
steps = {}
if context_first:
    cupy.cuda.runtime.free(0)
    cupy.cuda.device.get_cublas_handle()
    torch.cuda.set_device(0)
    if warm:
        wm, wk, wn = warm
        a, b, o = (cupy.empty(s, cupy.float16) for s in ((wm, wk), (wk, wn), (wm, wn)))
        cupy.matmul(a, b, out=o)
        x, y, z = (torch.empty(s, dtype=torch.float16, device="cuda:0") for s in ((wm, wk), (wk, wn), (wm, wn)))
        torch.mm(x, y, out=z)
        torch.cuda.synchronize()
        del a, b, o, x, y, z
t = time.perf_counter()
def mark(name):
    global t
    now = time.perf_counter()
    steps[name] = now - t
    t = now
inputs.prefetch_shape(shape, "float16")
mark("values started")
cupy.cuda.runtime.free(0)
mark("CUDA context (cupy)")
for lib, factory, what in (("cupy", libraries.cupy_matmul, "memory, values, copy"),
                           ("torch", libraries.torch_mm, "memory, copy on the device")):
    step, sync = factory(m, k, n, "float16", "cuda:0")
    mark(f"{lib} factory ({what})")
    step(); sync()
    mark(f"{lib} first product")
    for _ in range(49):
        step()
    sync()
    mark(f"{lib} 49 more warm-up calls")
print(json.dumps(steps))
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="1024,1024,1024")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--context-first", action="store_true")
    p.add_argument("--warm-shape", default=None, help="with --context-first: one product at M,K,N before the clock")
    args = p.parse_args(argv)
    if args.warm_shape and not args.context_first:
        p.error("--warm-shape needs --context-first")
    shape = [int(x) for x in args.shape.split(",")]
    warm = [int(x) for x in args.warm_shape.split(",")] if args.warm_shape else None
    code = (CHILD.replace("@ROOT@", repr(str(ROOT))).replace("@SHAPE@", repr(shape))
            .replace("@FIRST@", repr(args.context_first)).replace("@WARM@", repr(warm)))
    runs: list[dict[str, float]] = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"set-up at {args.shape}, {args.runs} fresh processes"
          + (" (CUDA context and cuBLAS handle made before the clock)" if args.context_first else "")
          + (f" (and one product at {args.warm_shape} before it)" if warm else "")
          + ": median seconds a step")
    for name in runs[0]:
        print(f"  {statistics.median(r[name] for r in runs):7.3f}  {name}")
    print(f"  {statistics.median(sum(r.values()) for r in runs):7.3f}  in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
