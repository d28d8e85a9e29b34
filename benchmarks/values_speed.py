"""How fast the built-in cases' operands can be made on this host (issue 21): seconds per billion values.

    python benchmarks/values_speed.py              # 2e8 float16 values, each way
    python benchmarks/values_speed.py --count 1e9 --dtype float32

Each way makes `count` values uniform in [0, 1) as float32, rounded to --dtype:
  one stream    numpy default_rng(0).random(float32), then astype (how inputs.host_operands made them before)
  chunks        flametool.values.uniform with a given bit generator and thread count
and prints its time, per billion values, and for the seed's 1.9e9 (65536x24576 + 24576x12288).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from flametool.workload import values  # noqa: E402

SEED_VALUES = 65536 * 24576 + 24576 * 12288


def one_stream(count: int, dtype: str) -> np.ndarray:
    x = np.random.default_rng(0).random(count, dtype=np.float32)
    return x if dtype == "float32" else x.astype(dtype)


def chunks(bits: type, threads: int):
    def make(count: int, dtype: str) -> np.ndarray:
        keep = values._generator
        values._generator = lambda seed, s, i: np.random.Generator(bits(np.random.SeedSequence(seed, spawn_key=(s, i))))
        try:
            return values.uniform(count, dtype, 0, threads=threads)
        finally:
            values._generator = keep
    return make


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=float, default=2e8)
    parser.add_argument("--dtype", default="float16")
    args = parser.parse_args()
    count = int(args.count)
    cores = len(os.sched_getaffinity(0))
    ways = [("one stream PCG64 (before)", one_stream),
            ("chunks PCG64, 1 thread", chunks(np.random.PCG64, 1)),
            (f"chunks PCG64, {cores} threads", chunks(np.random.PCG64, cores)),
            ("chunks SFC64, 1 thread", chunks(np.random.SFC64, 1)),
            (f"chunks SFC64, {cores} threads", chunks(np.random.SFC64, cores)),
            (f"chunks Philox, {cores} threads", chunks(np.random.Philox, cores))]
    print(f"{count:.3g} values, {args.dtype}, {cores} cores")
    for name, make in ways:
        t0 = time.perf_counter()
        x = make(count, args.dtype)
        took = time.perf_counter() - t0
        assert x.size == count and 0 <= float(x.min()) and float(x.max()) <= 1
        del x
        print(f"{name:32s} {took:7.2f} s = {took / count * 1e9:6.2f} s per 1e9 values; "
              f"the seed's 1.9e9: {took / count * SEED_VALUES:6.1f} s")
    a = values.uniform(count, args.dtype, 0, threads=1)
    b = values.uniform(count, args.dtype, 0, threads=max(2, cores))
    print("same bytes with 1 and", max(2, cores), "threads:", bool(np.array_equal(a.view(np.uint8), b.view(np.uint8))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
