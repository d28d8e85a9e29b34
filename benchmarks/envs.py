"""Issue 19's target for `compare --env`: environments B made from this interpreter plus a sitecustomize.py that
wraps the library's matmul with a busy-wait (3 us in b3, 1 us in b1), three `compare --env` runs in a row, and
`diff RUN_A RUN_B --fail-above 5` on runs of one build.

Prints, per run: the planted cost as measured in B itself at the speed the run states its difference at (in
each of a few processes of B, loops of the wrapped call, of its wrapper spinning for no time and of the
unwrapped call, interleaved: a fixed spin plus the wrapper's own call, which runs at the process's speed as
the library's call does, so counted as its share of that call), what the run read for it relative to the
anchor (torch) with its 95% interval, and beside it what the absolute figures would have said; then the three
runs' anchored ratios (max/min), and the exit codes of the three diffs of the runs' main environment (runs of
one build: none may exit 3).

On the H200 (--lib cupy, the default): 1024^3 float16, --no-sample. On the CPU, to measure the plan:
    python3 benchmarks/envs.py --lib numpy --shape 64,64,64 --processes 3
Given an --out that holds complete runs (run1, run2, ...) of an earlier call, it keeps them and measures only
the rest: three runs that do not fit one device call can be made in two.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flametool import rundir  # noqa: E402
from flametool.analyse import analysis  # noqa: E402

PLANTED = {"b3": 3.0, "b1": 1.0}

# The planted wrapper, around _orig: one text for B's sitecustomize.py and for MEASURE's wrapper spinning for
# 0 us, so that the two differ in the spin alone.
WRAPPER = '''
def {name}(*args, **kwargs):
    end = _clock() + {us}e-6
    while _clock() < end:
        pass
    return _orig(*args, **kwargs)
'''

SITECUSTOMIZE = '''
import time
import {lib} as _lib

_orig, _clock = _lib.matmul, time.perf_counter
{wrapper}

matmul.__wrapped__ = _orig
_lib.matmul = matmul
'''

# The wrapper's cost as B itself sees it, in two parts: loops of the wrapped call, of the same wrapper spinning
# for no time, and of the unwrapped call, interleaved. The spin (wrapped - zero) is a fixed time; the wrapper's
# own Python call (zero - unwrapped) runs at the process's speed, as the library's call does: 0.28-0.79 us over
# one environment's processes on the H200 (2026-12-01), as the process ran cupy at 16 or 26 us.
MEASURE = '''
import json, statistics, sys, time
import numpy as np
lib = __import__(sys.argv[1])
m, k, n = map(int, sys.argv[2].split(","))
dtype = sys.argv[3]
rng = np.random.default_rng(0)
a, b = (lib.asarray(rng.random(s, dtype=np.float32).astype(dtype)) for s in ((m, k), (k, n)))
out = lib.empty((m, n), dtype=dtype)
sync = lib.cuda.runtime.deviceSynchronize if hasattr(lib, "cuda") else (lambda: None)
w, o = lib.matmul, lib.matmul.__wrapped__
_orig, _clock = o, time.perf_counter
''' + WRAPPER.format(name="z", us=0) + '''

def loop(f):
    sync(); t0 = time.perf_counter()
    for _ in range(100): f(a, b, out=out)
    t1 = time.perf_counter(); sync()
    return (t1 - t0) / 100 * 1e6


for f in (w, z, o):
    for _ in range(200): f(a, b, out=out)
rounds = [(loop(w), loop(z), loop(o)) for _ in range(int(sys.argv[4]))]
print(json.dumps({"spin": statistics.median(x - y for x, y, _ in rounds),
                  "wrapper": statistics.median(y - u for _, y, u in rounds),
                  "call": statistics.median(u for _, _, u in rounds)}))
'''


@dataclass
class Plant:
    """The planted cost as B's processes measured it: a fixed spin, and the wrapper's own call as a share of
    the library's call in the same process (both run at the process's speed)."""

    spin_us: list[float]
    wrapper_us: list[float]
    call_us: list[float]

    @property
    def spin(self) -> float:
        return statistics.median(self.spin_us)

    @property
    def share(self) -> float:
        return statistics.median(w / c for w, c in zip(self.wrapper_us, self.call_us))

    def at(self, call_us: float) -> float:
        """The plant's cost in a process that runs the unwrapped call in `call_us`."""
        return self.spin + self.share * call_us

    def totals(self) -> list[float]:
        return [s + w for s, w in zip(self.spin_us, self.wrapper_us)]


def make_env(root: Path, name: str, lib: str, us: float) -> Path:
    site = root / name / "site"
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(lib=lib, wrapper=WRAPPER.format(name="matmul", us=us)))
    script = root / name / "python"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    script.chmod(0o755)
    return script


def flametool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flametool", *args], capture_output=True, text=True, cwd=ROOT)


def diff_line(runs: list[Path], x: int, y: int, lib: str, codes: list[int]) -> None:
    """`diff RUN_X RUN_Y --case LIB@main --fail-above 5` (runs of one build: it must not exit 3), in one line."""
    d = flametool("diff", str(runs[x]), str(runs[y]), "--case", f"{lib}@main", "--fail-above", "5", "--format", "json")
    codes.append(d.returncode)
    doc = json.loads(d.stdout) if d.stdout.strip().startswith("{") else {}
    pair = (doc.get("pairs") or [{}])[0]
    nan = float("nan")
    r, ab = pair.get("ratio") or {}, (pair.get("absolute") or {}).get("ratio") or {}
    print(f"diff run{x + 1} run{y + 1} --case {lib}@main --fail-above 5: exit {d.returncode} "
          f"({(pair.get('verdict') or {}).get('outcome')}); relative to {pair.get('anchor')}: {r.get('value', nan):.4f} "
          f"(95%: {r.get('low') or nan:.4f} to {r.get('high') or nan:.4f}); absolute {ab.get('value', nan):.4f} "
          f"(95%: {ab.get('low') or nan:.4f} to {ab.get('high') or nan:.4f}); the anchor's own change "
          f"{pair.get('anchor_change') or nan:.4f}" + (f"; {d.stderr.strip()}" if d.stderr.strip() else ""), flush=True)


def kept(run: Path) -> bool:
    """A complete run of an earlier call in the same --out."""
    try:
        return rundir.load(run).complete
    except Exception:  # noqa: BLE001 - none there, or unreadable: measure it again
        return False


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--lib", default="cupy", choices=("cupy", "numpy"))
    p.add_argument("--shape", default="1024,1024,1024")
    p.add_argument("--dtype", default=None)
    # 7 processes a side and --repeats 40 (2026-12-01) left half-widths of 0.65-1.09 us for the 1 us plant; 10 a
    # side with compare's rounds 0.41, 0.73, 0.46 (the processes' cupy/torch spread 0.85-3.10%). By default the
    # runs take as many as compare --env chooses (more while the anchored ratio is wider than +-2%, up to
    # Defaults.env_max_processes a side): what a user of --env gets.
    p.add_argument("--processes", type=int, default=None,
                   help="processes per environment and run (default: as compare --env chooses them)")
    p.add_argument("--repeats", type=int, default=None,
                   help="rounds of timed loops per process (default: compare's, rounds until each case had 1 s)")
    p.add_argument("--runs", type=int, default=3)
    # one process's figure carries that process's speed in the wrapper's own Python call: the whole cost read
    # 1.28-1.79 us for the 1 us plant over three processes of b1 on the H200 (2026-12-01)
    p.add_argument("--measure-processes", type=int, default=5,
                   help="processes of B that measure the planted cost (the medians of its parts are taken)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    dtype = args.dtype or ("float16" if args.lib == "cupy" else "float32")
    device = [] if args.lib == "cupy" else ["--device", "cpu"]
    work = Path(tempfile.mkdtemp(prefix="flametool-envs-"))
    out = args.out or work / "runs"
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    envs = {name: make_env(work, name, args.lib, us) for name, us in PLANTED.items()}
    print(f"{args.lib} {args.shape} {dtype}, {args.processes or 'as compare chooses'} processes per environment, "
          f"{f'--repeats {args.repeats}' if args.repeats else 'rounds as compare chooses them'}, {args.runs} runs; "
          "anchor: torch", flush=True)
    measured: dict[str, Plant] = {}
    for name, python in envs.items():
        plant = measured[name] = Plant([], [], [])
        for _ in range(args.measure_processes):
            got = subprocess.run([str(python), "-c", MEASURE, args.lib, args.shape, dtype, "300"], capture_output=True,
                                 text=True)
            if got.returncode:
                print(f"measuring {name} failed: {got.stderr.strip()[-500:]}")
                return 1
            doc = json.loads(got.stdout)
            for part, figure in ((plant.spin_us, "spin"), (plant.wrapper_us, "wrapper"), (plant.call_us, "call")):
                part.append(doc[figure])
        print(f"planted in {name}: {PLANTED[name]:g} us busy-wait; in {len(plant.spin_us)} processes of {name} the "
              f"wrapped call cost " + ", ".join(f"{v:.3f}" for v in plant.totals()) + " us more: a spin of "
              f"{plant.spin:.3f} us (median) and the wrapper's own call, {plant.share:.2%} of the unwrapped call's time "
              "in the same process (" + ", ".join(f"{w:.3f} us of {c:.2f}" for w, c in zip(plant.wrapper_us, plant.call_us))
              + ")", flush=True)
    runs: list[Path] = []
    codes: list[int] = []
    for i in range(1, args.runs + 1):
        run = out / f"run{i}"
        if kept(run):  # a run a cut-off call finished: --out given again continues after it
            print(f"\n== run {i}: kept from an earlier call ({run})", flush=True)
            runs.append(run)
            continue
        shutil.rmtree(run, ignore_errors=True)  # one an earlier call left unfinished
        t0 = time.monotonic()
        proc = flametool("compare", *device, "--libs", f"{args.lib},torch", "--shape", args.shape, "--dtype", dtype,
                         "--env", f"main={sys.executable}", *[f"--env={n}={py}" for n, py in envs.items()],
                         "--no-sample", *(["--processes", str(args.processes)] if args.processes else []),
                         *(["--repeats", str(args.repeats)] if args.repeats else []), "--out", str(run))
        print(f"\n== run {i}: exit {proc.returncode}, {time.monotonic() - t0:.0f} s", flush=True)
        if proc.returncode:
            print(proc.stderr[-3000:])
            return 1
        lines = proc.stdout.splitlines()
        print("\n".join(lines[:next((j for j, l in enumerate(lines) if l.startswith("host (CPU)")), len(lines))]))
        runs.append(run)
        if len(runs) >= 2:  # each diff as soon as its runs are there: a run cut off at the limit keeps them
            diff_line(runs, len(runs) - 2, len(runs) - 1, args.lib, codes)
    if len(runs) >= 3:
        diff_line(runs, 0, 2, args.lib, codes)
    print(f"diffs exiting 3: {sum(c == 3 for c in codes)} of {len(codes)}")
    print("\n== per run: the planted cost against what the run read (relative to torch), and the absolute figures")
    ratios: dict[str, list[float]] = {n: [] for n in PLANTED}
    for i, run in enumerate(runs, 1):
        a = analysis.analyse_dir(run)
        for pair in a.pairs:
            env = pair.head.rpartition("@")[2]
            f = pair.anchored
            # what the plant costs at the speed the figure is stated at: its spin plus its wrapper's share of the
            # unwrapped call there (cupy@main at the pair's common speed)
            want = measured[env].at(f.at_us)
            lo, hi = f.diff_interval.low, f.diff_interval.high
            half = (hi - lo) / 2
            ratios[env].append(f.ratio)
            b = f.absolute
            verdict = (f"within 10%: {abs(f.diff_us - want) <= 0.1 * want}" if env == "b3" else
                       f"inside the interval: {lo <= want <= hi}, half-width <= 0.5 us: {half <= 0.5}")
            print(f"run {i} {env}: anchored {f.diff_us:+.3f} us ({lo:+.3f} to {hi:+.3f}, half-width {half:.3f}), "
                  f"ratio {f.ratio:.4f}, against {want:.3f} measured in {env} at that speed ({verdict}); absolute {b.diff_us:+.3f} us "
                  + (f"({b.diff_interval.low:+.3f} to {b.diff_interval.high:+.3f})" if b.diff_interval else ""), flush=True)
            print(f"      absolute would say: within 10%: {abs(b.diff_us - want) <= 0.1 * want}" if env == "b3" else
                  f"      absolute would say: inside its interval: "
                  f"{b.diff_interval is not None and b.diff_interval.low <= want <= b.diff_interval.high}; "
                  f"torch's own change {f.anchor_change:.3f} (main {f.absolute.base_us:.2f} us in its own processes, "
                  f"{f.at_us:.2f} at the common speed of {f.base_units} + {f.head_units} processes)")
            print(f"      log({args.lib} / torch) per process: sd {statistics.stdev(f.base_logs):.2%} in main, "
                  f"{statistics.stdev(f.head_logs):.2%} in {env}", flush=True)
    for env, rs in ratios.items():
        if rs:
            print(f"anchored ratio {args.lib}@{env} / {args.lib}@main over the runs: " + ", ".join(f"{r:.4f}" for r in rs)
                  + f"; max/min {max(rs) / min(rs):.4f} (within 2%: {max(rs) / min(rs) <= 1.02})")
    print(f"\ntotal {time.monotonic() - started:.0f} s; runs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
