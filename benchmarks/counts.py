"""What one call does, counted, for each built-in case and op: CUDA API calls and kernels (CUPTI through
cupti-python), copies, memsets, device allocations (the library's pool and CUPTI), host allocations (tracemalloc)
and Python calls (cProfile), with the counted loop's host time per call beside the plain loop's.

    python3 benchmarks/counts.py --libs cupy,torch,jax,cuda-launch --ops matmul,add,sum --runs 3 [--device cuda:0]

Each (case, run) is a process of its own, which counts the ops one after the other (CUPTI sees every library's
work in a process: the others' steps are idle meanwhile); the op's host-bound shape (ops.py). After each case and
op, whether the counts were identical over the runs."""

from __future__ import annotations

import argparse
import cProfile
import json
import subprocess
import sys
import time

from flametool import cases
from flametool.workload import ops
from flametool.run.counts import Counts, count_words
from flametool.measure import counting

STEPS = 64


def one(label: str, op: str, device: str, dtype: str) -> dict:
    factory = getattr(cases, cases.factory_name(label, op))
    shape = ops.host_bound_shape(op, device)
    step, sync = cases.call_factory(factory, shape, dtype, device)
    for _ in range(200):
        step()
    sync()
    plain = []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        for _ in range(500):
            step()
        plain.append((time.perf_counter() - t0) * 1e6 / 500)
        sync()
    profiler = cProfile.Profile()
    sync()
    profiler.enable()
    counting._loop(step, 200)
    profiler.disable()
    sync()
    profiler.create_stats()
    c = counting.count(step, sync, STEPS, device, getattr(step, "ops", 1), python=(profiler.stats, 200))
    return {"label": label, "op": op, "shape": shape, "plain_us": sorted(plain)[len(plain) // 2],
            "counts": c.to_json()}


def show(got: dict) -> str:
    c = Counts.from_json(got["counts"])
    lines = [f"== {got['label']} {got['op']} {','.join(map(str, got['shape']))}: plain {got['plain_us']:.2f} us/call, "
             f"counted {c.us_per_call:.2f} us/call; tracer {c.tracer}"]
    lines += [f"   missing: {m}" for m in c.missing]
    for kind in ("api", "kernel", "copy", "memset", "device-alloc", "host-alloc"):
        for t in c.of(kind):
            extra = (f", {count_words(t.bytes)} B" if t.bytes is not None else "") + (f", {t.us:.2f} us" if t.us is not None else "")
            lines.append(f"   {kind:12} {count_words(t.count):>10} x {t.name[:90]}{extra}")
    py = c.of("python")
    lines.append(f"   python       {len(py)} functions, {count_words(c.total('python'))} calls/step; top: "
                 + "; ".join(f"{count_words(t.count)} {t.name}" for t in py[:8]))
    return "\n".join(lines)


def structural(counts: dict) -> dict:
    """The counts alone (no times): what must be identical over runs."""
    return {(t["kind"], t["name"]): (t["count"], t.get("bytes") if t["kind"] in ("copy", "memset") else None)
            for t in counts["tallies"] if t["kind"] not in ("host-alloc",)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--libs", default="cupy,torch,jax,cuda-launch")
    ap.add_argument("--ops", default="matmul,add,sum")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        label, _, todo = args.one.partition(":")
        for op in todo.split(","):
            try:
                print(json.dumps(one(label, op, args.device, args.dtype)), flush=True)
            except Exception as exc:  # noqa: BLE001 -- the next op still runs
                print(f"{label} {op}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 0
    results = []
    for label in args.libs.split(","):
        todo = args.ops.split(",")[:1] if label in cases.ANY_OP else args.ops.split(",")
        by_run = []
        for run in range(args.runs):
            p = subprocess.run([sys.executable, __file__, "--one", f"{label}:{','.join(todo)}", "--device",
                                args.device, "--dtype", args.dtype], capture_output=True, text=True)
            got = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
            if p.returncode != 0 or len(got) < len(todo):
                print(f"== {label} run {run}: failed\n{p.stderr[-2500:]}", flush=True)
            by_run.append({g["op"]: g for g in got})
        for op in todo:
            runs = [r[op] for r in by_run if op in r]
            for run, got in enumerate(runs):
                if run == 0:
                    print(show(got), flush=True)
                else:
                    print(f"   run {run}: plain {got['plain_us']:.2f} us, counted {got['counts']['us_per_call']:.2f} us",
                          flush=True)
            if runs:
                same = all(structural(r["counts"]) == structural(runs[0]["counts"]) for r in runs)
                print(f"   counts identical over {len(runs)} runs: {same}", flush=True)
                if not same:
                    for r in runs[1:]:
                        a, b = structural(runs[0]["counts"]), structural(r["counts"])
                        print("   differ:", {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)})
            results.append(runs)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
