"""Is the GPU-time gap between the libraries the operand data? On a CUDA machine, times cupy.matmul and torch.mm
(GPU us per call, by CUDA events around each loop) at 4096^3 and 8192^3 float16 on the operands the built-in
cases multiply now (the same bytes in both, inputs.host_operands) and on the ones they multiplied before
2026-12-01 (cupy: cp.random.rand, uniform; torch: torch.randn, normal), in interleaved rounds, and prints per
size and operands each library's median with its range over the rounds, and torch / cupy.

    python benchmarks/operands.py [--sizes 4096,8192] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from flametool.workload import libraries  # noqa: E402
from flametool.measure.child import building  # noqa: E402

DTYPE = "float16"
# A GEMM's speed depends on its values through the power it draws, so it shows only once the GPU runs at its
# power limit: on 2026-12-01 loops of 30 ms after a 20-call warm-up (the GPU idle at 345 MHz before) read
# 167-211 us per call at 4096^3 from round to round and showed no gap between the old operands
# (benchmarks/results/h200-2026-12-01-operands.txt). So each loop holds the GPU for a second, and each
# case is first run for WARM_SECONDS.
LOOP_GPU_SECONDS = 1.0
WARM_SECONDS = 3.0


def old_cupy(n: int):
    """The cupy case as it was: uniform values from CuPy's generator."""
    import cupy as cp

    cp.random.seed(0)
    a = cp.random.rand(n, n, dtype=cp.float32).astype(DTYPE)
    b = cp.random.rand(n, n, dtype=cp.float32).astype(DTYPE)
    out = cp.empty((n, n), dtype=DTYPE)

    def step():
        cp.matmul(a, b, out=out)

    return step, cp.cuda.runtime.deviceSynchronize


def old_torch(n: int):
    """The torch case as it was: normal values from PyTorch's generator."""
    import torch

    gen = torch.Generator(device="cuda:0").manual_seed(0)
    a = torch.randn(n, n, dtype=torch.float16, device="cuda:0", generator=gen)
    b = torch.randn(n, n, dtype=torch.float16, device="cuda:0", generator=gen)
    out = torch.empty(n, n, dtype=torch.float16, device="cuda:0")

    def step():
        torch.mm(a, b, out=out)

    return step, torch.cuda.synchronize


def gpu_loop(step, sync, calls: int, library: str) -> float:
    """GPU us per call: the library's own CUDA events around `calls` launches."""
    import cupy as cp
    import torch

    sync()
    if library == "cupy":
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            step()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e3 / calls
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        step()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    import torch  # noqa: F401 -- both libraries in one process, as compare builds them

    for n in (int(x) for x in args.sizes.split(",")):
        made = {
            ("same", "cupy"): libraries.cupy_matmul(n, n, n, DTYPE, "cuda:0"),
            ("same", "torch"): libraries.torch_mm(n, n, n, DTYPE, "cuda:0"),
            ("old", "cupy"): old_cupy(n),
            ("old", "torch"): old_torch(n),
        }
        prints = {key: building.fingerprint(step)["fingerprint"] if key[0] == "same" else "-"
                  for key, (step, _) in made.items()}
        per_call = gpu_loop(*made[("same", "cupy")], 20, "cupy") * 1e-6
        calls = max(5, int(LOOP_GPU_SECONDS / per_call))
        for key, (step, sync) in made.items():  # warm-up: cuBLAS picks its kernel, the clocks and power settle
            gpu_loop(step, sync, max(5, int(WARM_SECONDS / per_call)), key[1])
        times: dict[tuple, list[float]] = {key: [] for key in made}
        keys = list(made)
        for r in range(args.rounds):
            order = keys[r % len(keys):] + keys[:r % len(keys)]
            for key in (order if r % 2 == 0 else order[::-1]):
                times[key].append(gpu_loop(*made[key], calls, key[1]))
        print(f"{n}^3 {DTYPE}, {calls} calls a loop (about {calls * per_call:.1f} s), {args.rounds} rounds "
              "interleaved:")
        for ops in ("same", "old"):
            c, t = times[(ops, "cupy")], times[(ops, "torch")]
            what = ("same operands (inputs.host_operands, fingerprints "
                    f"cupy {prints[(ops, 'cupy')]} torch {prints[(ops, 'torch')]})" if ops == "same"
                    else "old operands (cupy cp.random.rand uniform, torch torch.randn normal)")
            print(f"  {what}")
            print(f"    cupy  {statistics.median(c):8.1f} us per call (rounds {min(c):.1f}-{max(c):.1f})")
            print(f"    torch {statistics.median(t):8.1f} us per call (rounds {min(t):.1f}-{max(t):.1f})")
            print(f"    torch / cupy {statistics.median(t) / statistics.median(c):.4f}")
        del made
        import gc

        gc.collect()


if __name__ == "__main__":
    main()
