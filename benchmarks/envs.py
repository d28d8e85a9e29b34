"""Issue 19's target for `compare --env`: environments B made from this interpreter plus a sitecustomize.py that
wraps the library's matmul with a busy-wait (3 us in b3, 1 us in b1), three `compare --env` runs in a row, and
`diff RUN_A RUN_B --fail-above 5` on runs of one build.

Every run also times, in every environment, the library's matmul unwrapped (its __wrapped__ in B; in main the
call itself): in B's processes it gives the yardstick, the plant's cost as those very processes paid it (paired
with the wrapped call round by round), and between environments a comparison of one call with itself, which
the anchored figure must not call a change. Prints, per run: the planted cost so measured, at the speed the run
states its difference at, what the run read for it relative to the anchor (torch) with its 95% interval, and
beside it what the absolute figures would have said; then the three runs' anchored ratios (max/min), and the
exit codes of the three diffs of the runs' main environment (runs of one build: none may exit 3).

On the H200 (--lib cupy, the default): 1024^3 float16, --no-sample. On the CPU, to measure the plan:
    python3 benchmarks/envs.py --lib numpy --shape 64,64,64 --processes 3
Given an --out that holds complete runs (run1, run2, ...) of an earlier call, it keeps them and measures only
the rest: three runs that do not fit one device call can be made in two.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flametool.run import rundir  # noqa: E402
from flametool.analyse import dispatch
from flametool.run import stats  # noqa: E402

PLANTED = {"b3": 3.0, "b1": 1.0}

SITECUSTOMIZE = '''
import time
import {lib} as _lib

_orig, _clock = _lib.matmul, time.perf_counter


def matmul(*args, **kwargs):
    end = _clock() + {us}e-6
    while _clock() < end:
        pass
    return _orig(*args, **kwargs)


matmul.__wrapped__ = _orig
_lib.matmul = matmul
'''

# The yardstick: the library's matmul as it was before B's sitecustomize.py wrapped it (its __wrapped__; in main
# the call itself), built by flametool's own factory, so with the same operands, and timed in every process of
# the run beside the wrapped call and the anchor: the plant as this run's processes of B paid it, round by round.
# Processes set apart to measure it (H200, 2026-12-01: a spin of 0.95 us plus 2% of the call, 1.26-1.29 us at
# the runs' speeds for b1) ran mostly at the host's fast speed, while the runs' processes also had rounds at a
# slower one, where the plant cost less (log(cupy / torch) 46.2-46.5% in two processes' slow rounds against
# 50.4-52.5% in their fast ones); those runs read b1 at +1.09, +1.01 and +1.24 us.
UNWRAPPED = '''
import importlib
from flametool import cases


def unwrapped(shape, dtype, device):
    lib = importlib.import_module("{lib}")
    wrapped = lib.matmul
    lib.matmul = getattr(wrapped, "__wrapped__", wrapped)
    try:
        return cases.{factory}(*shape, dtype, device)
    finally:
        lib.matmul = wrapped
'''


def make_env(root: Path, name: str, lib: str, us: float) -> Path:
    site = root / name / "site"
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(lib=lib, us=us))
    script = root / name / "python"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    script.chmod(0o755)
    return script


def ab_options(p: argparse.ArgumentParser) -> None:
    """The options of a script that runs a null A/B of this interpreter against itself (process_rate.py,
    ab_speed.py): --device, --libs, --shape, --dtype; ab_defaults fills in what is not given."""
    p.add_argument("--device", help="cpu, or cuda:N (default: flametool's: a GPU when there is one)")
    p.add_argument("--libs", help="the cases (default: cupy,torch; numpy,torch with --device cpu)")
    p.add_argument("--shape", help="default 1024,1024,1024; 64,64,64 with --device cpu")
    p.add_argument("--dtype", help="default float16; flametool's (float32) with --device cpu")


def ab_defaults(args: argparse.Namespace) -> None:
    cpu = args.device == "cpu"
    args.libs = args.libs or ("numpy,torch" if cpu else "cupy,torch")
    args.shape = args.shape or ("64,64,64" if cpu else "1024,1024,1024")
    args.dtype = args.dtype or (None if cpu else "float16")


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
    case = work / "unwrapped.py"
    case.write_text(UNWRAPPED.format(lib=args.lib, factory=f"{args.lib}_matmul"))
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
                         "--case", f"{case}:unwrapped", "--env", f"main={sys.executable}",
                         *[f"--env={n}={py}" for n, py in envs.items()],
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
        record = rundir.load(run)
        for pair in dispatch.analyse(run, record).pairs:
            case, _, env = pair.head.rpartition("@")
            f = pair.anchored
            lo, hi = f.diff_interval.low, f.diff_interval.high
            half = (hi - lo) / 2
            if case == "unwrapped":  # the same call on both sides: the comparison's own false alarm, if any
                print(f"run {i} {env}, the unwrapped call: anchored {f.diff_us:+.3f} us ({lo:+.3f} to {hi:+.3f}); "
                      f"holds 0: {lo <= 0 <= hi}; absolute {f.absolute.diff_us:+.3f} us", flush=True)
                continue
            # the plant as B's processes of this run paid it, the wrapped call against the unwrapped one round by
            # round, stated at the speed the anchored figure is (cupy@main at the pair's common speed)
            plant = stats.pair(f"unwrapped@{env}", record.results[f"unwrapped@{env}"].at_sample_shape, pair.head,
                               record.results[pair.head].at_sample_shape, True)
            want = f.at_us * (plant.ratio - 1)
            pl, ph = (f.at_us * (plant.ratio_interval.low - 1), f.at_us * (plant.ratio_interval.high - 1))
            ratios[env].append(f.ratio)
            b = f.absolute
            verdict = (f"within 10%: {abs(f.diff_us - want) <= 0.1 * want}" if env == "b3" else
                       f"inside the interval: {lo <= want <= hi}, half-width <= 0.5 us: {half <= 0.5}")
            print(f"run {i} {env}: anchored {f.diff_us:+.3f} us ({lo:+.3f} to {hi:+.3f}, half-width {half:.3f}), "
                  f"ratio {f.ratio:.4f}, against {want:.3f} measured in {env}'s processes ({pl:.3f} to {ph:.3f}, "
                  f"{plant.ratio:.4f} of the unwrapped call) ({verdict}); absolute {b.diff_us:+.3f} us "
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
