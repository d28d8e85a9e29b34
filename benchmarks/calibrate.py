"""Issue 31's calibration: are the intervals of `compare --env` honest, and how wide? K null A/Bs (one interpreter
given as both environments: the truth is 1) and K planted A/Bs (environment `pr` is this interpreter with a
sitecustomize.py that wraps the library's matmul with a busy-wait, benchmarks/envs.py's machinery), taking
turns, each a `compare --env ... --no-sample` at the defaults. Every planted run also times, in every process,
the matmul unwrapped (envs.UNWRAPPED): in pr's processes the wrapped call against it, round by round, is the
plant as those very processes paid it, the truth the run's estimate is held to (and between the environments,
the unwrapped call is one more null). A null run times the library and the anchor only, as a user's run does.
Prints, as each run finishes and again over all the runs kept:

- null: the share of intervals that exclude 1, the median half-width (relative to the ratio);
- plant: the share of intervals that hold the plant, the median error on it (relative to the plant);
- the unadjusted figure (speedfit's `unadjusted`) beside each, the same runs without the speed term;
- minutes per run, and what a minute buys (a null's half-width times sqrt(minutes): to choose --compare-args
  settings such as --timed-seconds, --no-spares or --fork-processes by, each in an --out of its own; forked
  timing processes failed it on the H200 on 2026-12-02 (two nulls of two excluded 1: docs/calibration.md), so
  fresh interpreters stay the default);
- `diff NULL_i NULL_j --case LIB@a --fail-above 5` for disjoint pairs of the null runs (two runs of one build):
  decided, and not exit 3?

Every finished run is kept under --out (null01, plant01, ...; its wall time in calibrate.json beside run.json),
and a call given the same --out measures only the runs still missing: a device call of at most 10 minutes takes
two or three runs, and the next call goes on. --reestimate measures nothing and reads every kept run with the
flametool it imports (a new estimator, no new measurement). The summary is also written to
--out/calibrate-summary.txt.

On the H200 (cupy against torch, 1024^3 float16, the defaults), one device call of at most 10 minutes at a time,
each taking in the runs earlier calls finished (a run took 1.2-2.0 min there on 2026-12-01; the first 7 are
committed, packed, as benchmarks/results/h200-2026-12-01g-cal.tar.xz: benchmarks/pack_results.py unpacks it):
    timeout 590 python3 benchmarks/calibrate.py --seed-from .cal-runs \
        --out "$OUT/cal" --nulls 10 --plants 5 --max-minutes 7
(`benchmarks/h200_check.sh calibrate` runs it with --seed-from .cal-runs: copy a call's returned cal/ there.)
On the CPU (numpy against torch; tests/test_calibrate.py anchors on numpy's np.dot instead, --anchor-case
tests/cases/env_cases.py:dot, which spares every process torch's 2 s import):
    python3 benchmarks/calibrate.py --lib numpy --shape 64,64,64 --nulls 1 --plants 1 --out /tmp/cal
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from envs import ROOT, SITECUSTOMIZE, UNWRAPPED, flametool, kept  # noqa: E402,F401 - ROOT: flametool on sys.path

from flametool.analyse import compare  # noqa: E402
from flametool.run import rundir, stats  # noqa: E402

DIFF_PCT = 5.0  # the --fail-above of the diffs of two runs of one build (issue 31's target)


def make_env(root: Path, name: str, lib: str, us: float) -> Path:
    """A PYTHON for --env: this interpreter, with a sitecustomize.py wrapping LIB.matmul with a `us` busy-wait."""
    site = root / name / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(lib=lib, us=us))
    script = root / name / "python"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    script.chmod(0o755)
    return script


def plan(nulls: int, plants: int) -> list[str]:
    """The runs, in the order measured: null and plant taking turns, so a call cut short has both kinds."""
    names = []
    for i in range(max(nulls, plants)):
        if i < nulls:
            names.append(f"null{i + 1:02d}")
        if i < plants:
            names.append(f"plant{i + 1:02d}")
    return names


def measure(name: str, run: Path, args, work: Path, case: Path) -> float:
    """One `compare --env` run into `run`; its wall time in seconds (also kept in calibrate.json)."""
    plant = name.startswith("plant")
    b = make_env(work, "pr", args.lib, args.plant_us) if plant else Path(sys.executable)
    envs = (["--env", f"main={sys.executable}", "--env", f"pr={b}"] if plant else
            ["--env", f"a={sys.executable}", "--env", f"b={sys.executable}"])
    device = ["--device", "cpu"] if args.lib == "numpy" else []
    t0 = time.monotonic()
    libs = ["--libs", args.lib, "--case", args.anchor_case] if args.anchor_case else ["--libs", f"{args.lib},{args.anchor}"]
    # a plant run also times the unwrapped call (the yardstick); a null run is the command a user runs, no more
    yardstick = ["--case", f"{case}:unwrapped"] if plant else []
    proc = flametool("compare", *device, *libs, "--anchor", args.anchor, "--shape", args.shape, "--dtype", args.dtype,
                     *yardstick, *envs, "--no-sample", *shlex.split(args.compare_args), "--out", str(run))
    seconds = time.monotonic() - t0
    if proc.returncode not in (0, 3, 4):
        raise SystemExit(f"{name}: compare exited {proc.returncode}\n{proc.stderr[-3000:]}")
    if not args.keep_all:  # run.json is all a re-estimate reads: the rest would only weigh on carrying --out
        for f in run.iterdir():
            if f.suffix in (".prof", ".log", ".folded", ".html"):
                f.unlink()
    (run / "calibrate.json").write_text(json.dumps({"seconds": seconds, "kind": "plant" if plant else "null",
                                                    "plant_us": args.plant_us if plant else None,
                                                    "compare_args": args.compare_args}))
    return seconds


def read(name: str, run: Path, lib: str) -> dict:
    """What a kept run says: the comparison of LIB across the environments (speed-adjusted, and unadjusted), and
    for a plant run the plant as pr's processes paid it (wrapped against unwrapped, paired round by round)."""
    record = rundir.load(run)
    meta = json.loads((run / "calibrate.json").read_text()) if (run / "calibrate.json").exists() else {}
    seconds = meta.get("seconds")
    out = {"name": name, "kind": "plant" if name.startswith("plant") else "null", "minutes": seconds / 60 if seconds else None,
           "stopped": record.timing_stop.reason if record.timing_stop else None}
    for pair in compare.analyse(run, record, attribute=False).pairs:
        case, _, env = pair.head.rpartition("@")
        f = pair.anchored
        if f is None or f.ratio_interval is None:
            continue
        row = {"ratio": f.ratio, "low": f.ratio_interval.low, "high": f.ratio_interval.high,
               "processes": f"{f.base_units} + {f.head_units}", "speed": f.speed}
        if f.speed is not None:
            s = f.speed
            row["unadjusted"] = (s.unadjusted, s.unadjusted_low, s.unadjusted_high)
        if case == "unwrapped":
            out["unwrapped"] = row
            continue
        out["case"] = row
        if out["kind"] == "plant":
            truth = stats.pair(f"unwrapped@{env}", record.results[f"unwrapped@{env}"].at_sample_shape, pair.head,
                               record.results[pair.head].at_sample_shape, True)
            out["truth"] = truth.ratio
            out["truth_interval"] = (truth.ratio_interval.low, truth.ratio_interval.high) if truth.ratio_interval else None
    return out


def half(low: float, high: float, ratio: float) -> float:
    return (high - low) / 2 / ratio


def run_line(r: dict) -> str:
    c = r.get("case")
    if c is None:
        return f"{r['name']}: nothing to compare"
    s = c["speed"]
    text = (f"{r['name']}: {c['ratio']:.4f} ({c['low']:.4f} to {c['high']:.4f}, +-{half(c['low'], c['high'], c['ratio']):.2%})"
            f" over {c['processes']} processes")
    if "unadjusted" in c and c["unadjusted"][1] is not None:
        u = c["unadjusted"]
        text += f"; unadjusted {u[0]:.4f} ({u[1]:.4f} to {u[2]:.4f})"
    if s is not None:
        text += (f"; slope {s.slope:+.3f}" if s.slope is not None else "; no slope") + (
            "" if s.overlap else " (speeds do not overlap)")
    if r["kind"] == "null":
        text += f"; excludes 1: {not (c['low'] <= 1 <= c['high'])}"
    elif "truth" in r:
        t = r["truth"]
        text += (f"; plant {t:.4f} in pr's processes; holds it: {c['low'] <= t <= c['high']}; "
                 f"error {abs(c['ratio'] - t) / (t - 1):.0%} of the plant" if t > 1 else f"; plant {t:.4f} (not above 1)")
    u = r.get("unwrapped")
    if u is not None:
        text += f"; the unwrapped call across environments {u['ratio']:.4f} ({u['low']:.4f} to {u['high']:.4f})"
    if r.get("stopped"):
        text += f"; stopped before it settled ({r['stopped']}: run.json's timing_stop)"
    if r["minutes"] is not None:
        text += f"; {r['minutes']:.1f} min"
    return text


def diff_line(a: Path, b: Path, lib: str) -> tuple[str, int, str | None]:
    d = flametool("diff", str(a), str(b), "--case", f"{lib}@a", "--fail-above", f"{DIFF_PCT:g}", "--format", "json")
    doc = json.loads(d.stdout) if d.stdout.strip().startswith("{") else {}
    pair = (doc.get("pairs") or [{}])[0]
    r = pair.get("ratio") or {}
    outcome = (pair.get("verdict") or {}).get("outcome")
    nan = float("nan")
    return (f"diff {a.name} {b.name} --case {lib}@a --fail-above {DIFF_PCT:g}: exit {d.returncode} ({outcome}); "
            f"{r.get('value', nan):.4f} ({r.get('low') or nan:.4f} to {r.get('high') or nan:.4f})"
            + (f"; {d.stderr.strip()[:300]}" if d.returncode not in (0, 3, 4) else ""), d.returncode, outcome)


def summary(rows: list[dict], diffs: list[tuple[str, int, str | None]]) -> list[str]:
    nulls = [r for r in rows if r["kind"] == "null" and "case" in r]
    plants = [r for r in rows if r["kind"] == "plant" and "case" in r and r.get("truth", 0) > 1]
    lines = ["== calibration summary"]
    for label, key in (("speed-adjusted", None), ("unadjusted", "unadjusted")):
        def fig(r):
            c = r["case"]
            if key is None:
                return c["ratio"], c["low"], c["high"]
            u = c.get("unadjusted")
            return u if u and u[1] is not None else (None, None, None)
        n = [fig(r) for r in nulls if fig(r)[1] is not None]
        p = [(fig(r), r["truth"]) for r in plants if fig(r)[1] is not None]
        if n:
            out = sum(not (lo <= 1 <= hi) for _, lo, hi in n)
            lines.append(f"{label}: null intervals that exclude 1: {out} of {len(n)}; median half-width "
                         f"{statistics.median(half(lo, hi, x) for x, lo, hi in n):.2%}")
        if p:
            held = sum(lo <= t <= hi for (_, lo, hi), t in p)
            err = statistics.median(abs(x - t) / (t - 1) for (x, _, _), t in p)
            lines.append(f"{label}: plant intervals that hold the plant: {held} of {len(p)}; median error "
                         f"{err:.0%} of the plant; median half-width {statistics.median(half(lo, hi, x) for (x, lo, hi), _ in p):.2%}")
    un = [r["unwrapped"] for r in rows if r["kind"] == "plant" and r.get("unwrapped")]
    if un:
        lines.append(f"the unwrapped call across environments (plant runs, truth 1): intervals that exclude 1: "
                     f"{sum(not (u['low'] <= 1 <= u['high']) for u in un)} of {len(un)}")
    # where compare stopped adding processes with the interval wider than --settle (run.json's timing_stop; runs
    # before 2026-12-04 do not record it): "spread", the projection gave up, is the stopping rule's early stop
    stops = [r["stopped"] for r in rows if r.get("stopped")]
    lines.append(f"runs that stopped adding processes before their interval settled: {len(stops)} of {len(rows)}"
                 + (f" ({', '.join(f'{k} {stops.count(k)}' for k in sorted(set(stops)))})" if stops else ""))
    minutes = [r["minutes"] for r in rows if r["minutes"] is not None]
    if minutes:
        lines.append(f"minutes per run: median {statistics.median(minutes):.1f}, longest {max(minutes):.1f} "
                     f"({len(minutes)} runs)")
    timed = [(half(r["case"]["low"], r["case"]["high"], r["case"]["ratio"]), r["minutes"]) for r in nulls
             if r["minutes"]]
    if timed:
        # a half-width shrinks as 1 / sqrt(time): this is what a minute buys, to choose settings by (lower is better)
        lines.append(f"information per minute: median over the null runs of half-width x sqrt(minutes) "
                     f"{statistics.median(h * m ** 0.5 for h, m in timed):.2%} (the half-width one minute would give)")
    if diffs:
        good = sum(outcome in ("passed", "slower") and code != 3 for _, code, outcome in diffs)
        lines.append(f"diffs of two null runs (one build), --fail-above {DIFF_PCT:g}: decided and not exit 3 in "
                     f"{good} of {len(diffs)}; exit codes {[c for _, c, _ in diffs]}")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default="cupy", choices=("cupy", "numpy"))
    p.add_argument("--anchor", default="torch", help="the anchor, a library of --libs (default torch)")
    p.add_argument("--anchor-case", metavar="FILE.py:FACTORY",
                   help="a user case as the anchor instead (its FACTORY the anchor's name): a test's cheap one")
    p.add_argument("--shape", default=None, help="default 1024,1024,1024 (cupy) or 64,64,64 (numpy)")
    p.add_argument("--dtype", default=None, help="default float16 (cupy) or float32 (numpy)")
    p.add_argument("--nulls", type=int, default=10)
    p.add_argument("--plants", type=int, default=5)
    p.add_argument("--plant-us", type=float, default=None,
                   help="the busy-wait planted in pr's matmul, us (default 1.0 for cupy, 5.0 for numpy)")
    p.add_argument("--compare-args", default="", help="more options for every compare (e.g. '--timed-seconds 0.5 "
                                                      "--no-spares', or '--fork-processes': timing processes forked "
                                                      "from a fork server instead of fresh interpreters): what the defaults are chosen against")
    p.add_argument("--out", type=Path, required=True, help="where the runs are kept (and resumed from)")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="start no run after this many minutes of this call (a device call is at most 10)")
    p.add_argument("--reestimate", action="store_true", help="measure nothing: read the kept runs again")
    p.add_argument("--seed-from", type=Path, default=None,
                   help="copy the complete runs of an earlier call from here into --out first (a device call: "
                        "carry the last call's runs in, and --out under $OUT so that what this call finishes returns)")
    p.add_argument("--keep-all", action="store_true", help="keep each run's logs, .prof files and report.html")
    args = p.parse_args()
    if args.anchor_case:
        args.anchor = args.anchor_case.rpartition(":")[2]
    args.shape = args.shape or ("1024,1024,1024" if args.lib == "cupy" else "64,64,64")
    args.dtype = args.dtype or ("float16" if args.lib == "cupy" else "float32")
    args.plant_us = args.plant_us if args.plant_us is not None else (1.0 if args.lib == "cupy" else 5.0)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.seed_from is not None and args.seed_from.is_dir():
        for run in sorted(args.seed_from.iterdir()):
            if run.is_dir() and kept(run) and not kept(args.out / run.name):
                shutil.rmtree(args.out / run.name, ignore_errors=True)
                shutil.copytree(run, args.out / run.name)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="flametool-calibrate-"))
    case = work / "unwrapped.py"
    case.write_text(UNWRAPPED.format(lib=args.lib, factory=f"{args.lib}_matmul"))
    print(f"{args.lib} against {args.anchor}, {args.shape} {args.dtype}, {args.nulls} null and {args.plants} planted "
          f"A/Bs ({args.plant_us:g} us busy-wait) in {args.out}" + (f", compare {args.compare_args}" if args.compare_args else ""),
          flush=True)
    rows: list[dict] = []
    stopped = False
    for name in plan(args.nulls, args.plants):
        run = args.out / name
        if not kept(run):
            if args.reestimate:
                continue
            if stopped or (args.max_minutes is not None and time.monotonic() - started > args.max_minutes * 60):
                stopped = True
                continue
            shutil.rmtree(run, ignore_errors=True)  # one an earlier call left unfinished
            measure(name, run, args, work, case)
            how = "measured"
        else:
            how = "kept"
        row = read(name, run, args.lib)
        rows.append(row)
        print(f"[{how}] {run_line(row)}", flush=True)
    nulls = [args.out / r["name"] for r in rows if r["kind"] == "null"]
    diffs = []
    for a, b in zip(nulls[0::2], nulls[1::2]):
        diffs.append(diff_line(a, b, args.lib))
        print(diffs[-1][0], flush=True)
    lines = summary(rows, diffs)
    missing = [n for n in plan(args.nulls, args.plants) if not kept(args.out / n)]
    if missing:
        lines.append(f"not yet measured: {', '.join(missing)} (call again with the same --out to go on)")
    print("\n".join(lines), flush=True)
    (args.out / "calibrate-summary.txt").write_text("\n".join([run_line(r) for r in rows] + [d[0] for d in diffs]
                                                              + lines) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    print(f"this call: {(time.monotonic() - started) / 60:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
