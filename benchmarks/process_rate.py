"""Issue 42 item 2: timing processes per minute of `compare --env a=PY --env b=PY --no-sample`, forked from a fork
server per environment (`--fork-processes`) against fresh interpreters (the default), from one run of each.

Each run is `compare --env a=PY --env b=PY --libs LIBS --shape SHAPE --no-sample --no-count --processes N` (N
exactly, a side) and its progress lines (`--progress all`), each stamped as it arrives: the timing phase runs
from the first `timing ...` line to the first line after them (the profiled processes' first). Printed per run:

- processes per minute: the timing processes (run.json's groups: those that finished and those lost) over the
  timing phase's minutes;
- seconds per process outside the timed loops: the timing phase less every timed loop's wall time (run.json:
  `wall_us` x calls, every case, every process), per process: start, imports, CUDA context, set-up, warm-up;
- and forked / fresh: the ratio of the rates (issue 42's target: 2 or more with cupy and torch on the H200).

The phase's first line comes when the first process says something: a fresh one's interpreter start before it is
not counted, a fork server's imports are (it says so as it starts), so the ratio leans, if at all, against forking.

On the H200 (the defaults there: cupy against torch at 1024,1024,1024 float16):
    python3 benchmarks/process_rate.py --out "$OUT/rate"
On the CPU (numpy against torch at a small shape, or with numpy's np.dot as the anchor, as tests/test_calibrate.py):
    python3 benchmarks/process_rate.py --device cpu --out /tmp/rate
    python3 benchmarks/process_rate.py --device cpu --libs numpy --compare-args "--case tests/cases/env_cases.py:dot --anchor dot"
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from envs import ROOT, ab_defaults, ab_options  # noqa: E402


def run_compare(out: Path, args: argparse.Namespace, fresh: bool) -> tuple[float, list[str]]:
    """One compare into `out`: (seconds of its timing phase, its stderr lines)."""
    py = sys.executable
    device = ["--device", args.device] if args.device else []
    cmd = [py, "-m", "flametool", "compare", *device, "--libs", args.libs, "--shape", args.shape,
           *(["--dtype", args.dtype] if args.dtype else []), "--env", f"a={py}", "--env", f"b={py}", "--no-sample",
           "--no-count", "--processes", str(args.processes), "--progress", "all", "--out", str(out),
           *(["--fresh-processes"] if fresh else ["--fork-processes"]), *shlex.split(args.compare_args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    stamped: list[tuple[float, str]] = []
    stdout: list[str] = []
    reader = threading.Thread(target=lambda: stdout.extend(proc.stdout or []), daemon=True)
    reader.start()
    assert proc.stderr is not None
    for line in proc.stderr:
        stamped.append((time.monotonic(), line.rstrip("\n")))
    code = proc.wait()
    reader.join(timeout=5)
    lines = [l for _, l in stamped]
    if code not in (0, 3, 4):
        raise SystemExit(f"compare exited {code}: {' '.join(cmd)}\n" + "\n".join(lines[-30:]))
    timing = [i for i, (_, l) in enumerate(stamped) if l.startswith("timing ")]
    if not timing:
        raise SystemExit("no timing progress lines: " + "\n".join(lines[-30:]))
    after = next((t for t, l in stamped[timing[0]:] if not l.startswith("timing ")), stamped[-1][0])
    return after - stamped[timing[0]][0], lines


def figures(out: Path, seconds: float) -> dict:
    """The run's timing processes, their timed loops' seconds, and how they were started (run.json)."""
    doc = json.loads((out / "run.json").read_text())
    processes = sum(g.get("processes", 0) + len(g.get("lost", [])) for g in doc["groups"])
    timed = 0.0
    started: dict[str, int] = {}
    for r in doc["results"].values():
        for key in ("timing", "sample_timing"):
            t = r.get(key)
            if not t:
                continue
            for p in t["processes"]:
                timed += sum(p.get("wall_us") or p["cpu_us"]) * t["calls"] / 1e6
                how = p.get("started", "not said")
                started[how] = started.get(how, 0) + 1
    return {"processes": processes, "seconds": seconds, "timed": timed,
            "per_minute": processes / (seconds / 60) if seconds > 0 else float("nan"),
            "outside": (seconds - timed) / processes if processes else float("nan"), "started": started}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ab_options(p)
    p.add_argument("--processes", type=int, default=8, help="timing processes a side, exactly (default 8)")
    p.add_argument("--compare-args", default="", help="more options for both compares (e.g. '--timed-seconds 0.5')")
    p.add_argument("--out", type=Path, help="where the two runs are kept (default: a temporary folder)")
    args = p.parse_args()
    ab_defaults(args)
    out = args.out or Path(tempfile.mkdtemp(prefix="flametool-rate-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"compare --env a --env b --libs {args.libs} --shape {args.shape} --processes {args.processes} --no-sample "
          f"--no-count {args.compare_args} (in {out})".replace("  ", " "), flush=True)
    got = {}
    for name, fresh in (("forked", False), ("fresh", True)):
        run = out / name
        if run.exists():
            raise SystemExit(f"{run}: exists; give another --out")
        seconds, _ = run_compare(run, args, fresh)
        f = got[name] = figures(run, seconds)
        started = ", ".join(f"{n} {how}" for how, n in sorted(f["started"].items()))
        print(f"{name:>6}: {f['processes']} timing processes in {f['seconds']:.1f} s: {f['per_minute']:.1f} per minute; "
              f"{f['timed']:.1f} s of timed loops, {f['outside']:.2f} s a process outside them (loops by process "
              f"start: {started})", flush=True)
    ratio = got["forked"]["per_minute"] / got["fresh"]["per_minute"]
    outside = got["fresh"]["outside"] / got["forked"]["outside"] if got["forked"]["outside"] > 0 else float("nan")
    print(f"forked / fresh: {ratio:.2f}x the processes per minute; {outside:.2f}x less time a process outside the "
          "timed loops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
