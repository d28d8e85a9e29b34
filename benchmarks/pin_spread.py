"""Does where a timing process runs set its ratio? The spread of torch/cupy between fresh processes, by condition.

    python benchmarks/pin_spread.py                       # CUDA: cupy and torch at 1024^3 float16, 8 processes a condition
    python benchmarks/pin_spread.py --device cpu --per 4  # CPU: numpy and torch at 64^3

The settling rule of the default compare runs processes at the sample shape until the paired ratio's interval
reaches no further than 2%, and the spread of the ratio between processes is what decides how many it runs
(benchmarks/noise.py: between-process sd 0.7-3.2% on the H200, against 0.3-0.6% within a process). This asks
whether part of that spread is where a process lands. Each process is fresh and runs exactly what a timing
process of `flametool compare` runs at a host-bound shape (`work.time_cases`: set-up, warm-up, rounds of the
two cases' loops interleaved until each had `--timed-seconds`, in compare's child environment, one thread per
pool), under one of these conditions, taken in turn so that the host's drift falls on all alike:

    free     as compare starts it: every CPU allowed
    cpu      pinned to one CPU, the same for every process (--cpu; default: the last allowed)
    hash0    every CPU, PYTHONHASHSEED=0 (the same dict and set layouts in every process)
    cpuhash  both

Per condition it prints each process's ratio (the median loop of one case over the other's, as compare pools
it) with its base case's time per call (the host's speed), the mean ratio, and the standard deviation of the
log ratios between processes: where a condition's is clearly smaller, the rule would settle with fewer
processes under it. The F ratio of two conditions' variances has (n-1, n-1) degrees of freedom: at 8 a side a
variance ratio above 4.99 is significant at 5% (two-sided), about 2.2x in sd.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from flametool.measure import spawn  # noqa: E402
from flametool.measure.config import defaults  # noqa: E402

CHILD = """
import json, statistics
from flametool.workload import builtins
from flametool.measure.child import work
from flametool.measure.protocol import JobCase, PlanItem, TimeJob
class Quiet:
    def phase(self, *args, **kwargs):
        pass
libs = {libs!r}
job = TimeJob(device={device!r}, iters={iters}, warmup={warmup}, repeats=3, timed_seconds={seconds},
              cases=[JobCase(lib, builtins.builtin(lib), {dtype!r}) for lib in libs],
              plan=[PlanItem({shape!r}, None, "timing")])
got = work.time_cases(job, Quiet())
if got.errors:
    raise SystemExit(got.errors)
print(json.dumps({{lib: got.cases[lib].timing.loops.cpu_us for lib in libs}}))
"""

CONDITIONS = ("free", "cpu", "hash0", "cpuhash")


def one(code: str, env: dict[str, str], cpu: int | None) -> dict[str, list[float]]:
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          preexec_fn=pin)
    if proc.returncode != 0:
        sys.exit(f"pin_spread: a process failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--per", type=int, default=8, help="processes per condition (default 8)")
    parser.add_argument("--cpu", type=int, help="the CPU of 'cpu' and 'cpuhash' (default: the last allowed)")
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    parser.add_argument("--timed-seconds", type=float, default=1.0)
    args = parser.parse_args()
    on_cpu = args.device == "cpu"
    libs = ["numpy", "torch"] if on_cpu else ["cupy", "torch"]
    shape = [64, 64, 64] if on_cpu else [1024, 1024, 1024]
    dtype = "float32" if on_cpu else "float16"
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    conditions = [c for c in args.conditions.split(",") if c]
    code = CHILD.format(libs=libs, device=args.device, iters=250, warmup=50, seconds=args.timed_seconds,
                        dtype=dtype, shape=shape)
    base_env = spawn.child_env(defaults(args.device).pool_threads)
    print(f"{libs[1]} / {libs[0]} at {','.join(map(str, shape))} {dtype}, {args.per} fresh processes a condition, "
          f"taken in turn; pinned CPU {cpu} of {len(os.sched_getaffinity(0))}", flush=True)
    got: dict[str, list[tuple[float, float]]] = {c: [] for c in conditions}
    t0 = time.monotonic()
    for i in range(args.per):
        order = conditions[i % len(conditions):] + conditions[:i % len(conditions)]
        for c in order:
            env = dict(base_env)
            if "hash" in c:
                env["PYTHONHASHSEED"] = "0"
            loops = one(code, env, cpu if c.startswith("cpu") else None)
            base, head = (statistics.median(loops[lib]) for lib in libs)
            got[c].append((head / base, base))
            print(f"  {time.monotonic() - t0:6.1f} s  {c:8s} ratio {head / base:.4f}  {libs[0]} {base:.2f} us a call",
                  flush=True)
    for c in conditions:
        logs = [math.log(r) for r, _ in got[c]]
        sd = statistics.stdev(logs) * 100 if len(logs) > 1 else float("nan")
        mean = math.exp(statistics.fmean(logs))
        speeds = " ".join(f"{b:.1f}" for _, b in got[c])
        print(f"{c:8s} mean ratio {mean:.4f}, between processes sd {sd:.2f}% (n {len(logs)}); {libs[0]} us: {speeds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
