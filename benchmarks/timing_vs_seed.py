"""flametool's timed phase against the seed's own plain loop, in one run: prints their ratio.

The plain loop is the seed issue's code, written out with no flametool in it (cupy/linalg issue 8191):
warm-up, synchronize, host clock and CUDA events around `iters` calls. flametool's side is its own
timed phase (flametool.measure.child.work.time_cases, the code a timing process of `flametool compare` runs, here with
one case). Each side runs in a fresh process, alternating, `--rounds` times. Target: ratio within 5%.

Each side's fastest process is compared, as timeit compares its fastest repeat: on the H200 a fresh process
lands in one of a few speeds for the same code (a cupy loop read 15 us in some processes and 22-24 us in
others, plain and flametool alike, pinned to one CPU or not, with the hash seed fixed or not), so the
median of a few rounds jumps between them. The medians and every process's figure are printed beside it.

    python benchmarks/timing_vs_seed.py                # CUDA: cupy and torch, host-bound 1024^3, 2000 calls
    python benchmarks/timing_vs_seed.py --seed --rounds 1  # CUDA: the seed workload itself (14 s of GPU a loop)
    python benchmarks/timing_vs_seed.py --device cpu   # CPU: numpy and torch at 64,64,64

At the seed's shape each 250-call loop keeps the GPU busy for 14 s while the host figure is a few ms of
launches, so few rounds fit and one loop's reading varies by tens of percent; the host-bound default
runs many short loops, which is what the 5% target needs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from flametool.measure import spawn  # noqa: E402
from flametool.measure.config import defaults  # noqa: E402

PLAIN = {
    "cupy": """
import cupy as cp
cp.cuda.Device({index}).use()
a = cp.random.rand({m}, {k}, dtype=cp.float32).astype(cp.{dtype})
b = cp.random.rand({k}, {n}, dtype=cp.float32).astype(cp.{dtype})
out = cp.zeros(({m}, {n}), dtype=cp.{dtype})
sync = cp.cuda.Device().synchronize
events = lambda: (cp.cuda.Event(), cp.cuda.Event())
elapsed = cp.cuda.get_elapsed_time
LOOP = "cp.matmul(a, b, out=out)"
""",
    "torch": """
import torch
dev = torch.device("{device}")
a = torch.randn({m}, {k}, dtype=torch.{dtype}, device=dev)
b = torch.randn({k}, {n}, dtype=torch.{dtype}, device=dev)
out = torch.zeros({m}, {n}, dtype=torch.{dtype}, device=dev)
sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
events = (lambda: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))) if dev.type == "cuda" else None
elapsed = lambda s, e: s.elapsed_time(e)
LOOP = "torch.mm(a, b, out=out)"
""",
    "numpy": """
import numpy as np
a = np.random.rand({m}, {k}).astype(np.{dtype})
b = np.random.rand({k}, {n}).astype(np.{dtype})
out = np.zeros(({m}, {n}), dtype=np.{dtype})
sync = lambda: None
events = None
LOOP = "np.matmul(a, b, out=out)"
""",
}

# The seed's loop, inlined (no step() function), as its reporter ran it.
SEED_LOOP = """
import time, json, statistics
exec(compile("for _ in range({warmup}):\\n    " + LOOP, "warm", "exec"))
sync()
timed = compile("for _ in range({iters}):\\n    " + LOOP, "loop", "exec")
cpu, gpu = [], []
for _ in range({repeats}):
    sync()
    if events:
        start, end = events()
        start.record()
    t = time.time()
    exec(timed)
    cpu.append((time.time() - t) * 1e6 / {iters})
    if events:
        end.record()
    sync()
    if events:
        gpu.append(elapsed(start, end) * 1e3 / {iters})
print(json.dumps({{"cpu": statistics.median(cpu), "gpu": statistics.median(gpu) if gpu else None}}))
"""

# flametool's timed phase for one case, through the function a timing process of `flametool compare` runs
# (set-up, warm-up, the timed loops with host clock and device events), with no parent to report to.
FLAMETOOL = """
import json, statistics
from flametool.workload import builtins
from flametool.measure.child import work
from flametool.measure.protocol import JobCase, PlanItem, TimeJob
class Quiet:
    def phase(self, *args, **kwargs):
        pass
job = TimeJob(device="{device}", iters={iters}, warmup={warmup}, repeats={repeats},
              cases=[JobCase("{lib}", builtins.builtin("{lib}"), "{dtype}")], plan=[PlanItem([{m}, {k}, {n}], None, "timing")])
got = work.time_cases(job, Quiet())
if got.errors:
    raise SystemExit(got.errors)
loops = got.cases["{lib}"].timing.loops
gpu = statistics.median(loops.gpu_us) if loops.gpu_us else None
print(json.dumps({{"cpu": statistics.median(loops.cpu_us), "gpu": gpu}}))
"""


def parse_cpus(text: str) -> set[int]:
    """'2,3' or '0-3' -> CPU numbers for os.sched_setaffinity."""
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def run(code: str, env: dict[str, str] | None = None, cpus: set[int] | None = None) -> dict:
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          preexec_fn=pin)
    if proc.returncode != 0:
        sys.exit(f"benchmark child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--libs")
    parser.add_argument("--shape")
    parser.add_argument("--dtype")
    parser.add_argument("--seed", action="store_true", help="the seed's shape and 250 calls")
    parser.add_argument("--iters", type=int)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpus", type=parse_cpus, help="pin both sides to these CPUs, e.g. 0-3 (default: not pinned)")
    return parser


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    """Fill the per-device defaults in place."""
    on_cpu = args.device == "cpu"
    args.libs = args.libs or ("numpy,torch" if on_cpu else "cupy,torch")
    args.shape = args.shape or ("64,64,64" if on_cpu else ("65536,24576,12288" if args.seed else "1024,1024,1024"))
    args.iters = args.iters or (250 if on_cpu or args.seed else 2000)
    args.dtype = args.dtype or ("float32" if on_cpu else "float16")
    return args


def timing_ratios(args: argparse.Namespace) -> float:
    """Prints plain vs flametool per library; returns the ratio farthest from 1."""
    on_cpu = args.device == "cpu"
    libs = args.libs.split(",")
    m, k, n = map(int, args.shape.split(","))
    dtype = args.dtype
    index = 0 if on_cpu else int(args.device.partition(":")[2] or 0)
    fields = dict(m=m, k=k, n=n, dtype=dtype, device=args.device, index=index, iters=args.iters,
                  warmup=args.warmup, repeats=args.repeats)

    print(f"shape {m},{k},{n} {dtype} on {args.device}; {args.iters} calls x {args.repeats} repeats, "
          f"{args.rounds} alternating rounds; host (CPU) and device (GPU) microseconds per call")
    # flametool's side runs in the environment `flametool compare` gives a case's child (its thread pools);
    # the plain loop in the caller's, as the seed's reporter ran it
    ours_env = spawn.child_env(defaults(args.device).pool_threads)
    ratios = []
    for lib in libs:
        plain_code = PLAIN[lib].format(**fields) + SEED_LOOP.format(**fields)
        ours_code = FLAMETOOL.format(lib=lib, **fields)
        plain, ours = [], []
        for r in range(args.rounds):
            # alternate which side goes first, so that whatever the previous process leaves behind
            # (GPU clocks, a context being torn down) falls on both sides alike
            if r % 2:
                ours.append(run(ours_code, ours_env, args.cpus))
                plain.append(run(plain_code, None, args.cpus))
            else:
                plain.append(run(plain_code, None, args.cpus))
                ours.append(run(ours_code, ours_env, args.cpus))
        p_cpu = min(r["cpu"] for r in plain)
        o_cpu = min(r["cpu"] for r in ours)
        p_gpu = [r["gpu"] for r in plain if r["gpu"] is not None]
        o_gpu = [r["gpu"] for r in ours if r["gpu"] is not None]
        ratio = o_cpu / p_cpu
        ratios.append(ratio)
        gpu = (f"; GPU plain {min(p_gpu):,.1f} us, flametool {min(o_gpu):,.1f} us" if p_gpu and o_gpu else "")
        p_med, o_med = statistics.median(r["cpu"] for r in plain), statistics.median(r["cpu"] for r in ours)
        print(f"{lib:6s} CPU plain seed loop {p_cpu:8.2f} us, flametool timed phase {o_cpu:8.2f} us, "
              f"ratio {ratio:.3f}{gpu} (fastest process of each side; medians {p_med:.2f} and {o_med:.2f} us, "
              f"ratio {o_med / p_med:.3f})")
        rounds = lambda side: " ".join(f"{r['cpu']:.2f}" for r in side)  # noqa: E731
        print(f"       every process, CPU us: plain {rounds(plain)}; flametool {rounds(ours)}")
    worst = max(ratios, key=lambda r: abs(r - 1))
    print(f"worst ratio flametool/plain: {worst:.3f} ({'within' if abs(worst - 1) <= 0.05 else 'OUTSIDE'} 5%)")
    return worst


def main() -> None:
    timing_ratios(resolve(build_parser().parse_args()))


if __name__ == "__main__":
    main()
