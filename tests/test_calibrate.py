"""benchmarks/calibrate.py, small, on the CPU: one null and one planted `compare --env` (numpy against a cheap
anchor), kept under --out and read back; a second call with the same --out measures nothing it has, and
--reestimate reads the kept runs again. What it prints is what flametool computes from the runs kept (the
host's own noise decides the figures, so none is asserted here, and the test runs beside the others)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


from flametool.analyse import compare
from flametool.run import rundir


ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "calibrate.py"
ANCHOR = Path(__file__).parent / "cases" / "env_cases.py"


def calibrate(out: Path, *more: str) -> subprocess.CompletedProcess:
    # --no-count: the counted loop (a process per case and environment) is nothing calibrate reads or keeps
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, str(SCRIPT), "--lib", "numpy", "--anchor-case", f"{ANCHOR}:dot",
                           "--out", str(out), "--compare-args", "--processes 2 --repeats 3 --iters 100 --no-count", *more],
                          capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)


def test_calibrate_keeps_its_runs_resumes_and_reestimates(tmp_path):
    out = tmp_path / "cal"
    first = calibrate(out, "--nulls", "1", "--plants", "1")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert any(l.startswith("[measured] null01: ") for l in lines) and any(l.startswith("[measured] plant01: ") for l in lines)
    for name in ("null01", "plant01"):
        assert rundir.load(out / name).complete and (out / name / "calibrate.json").exists()
    # the ratio it prints for a run is the anchored (speed-adjusted) ratio flametool's analysis gives that run
    run = out / "null01"
    pair = next(p for p in compare.analyse(run, rundir.load(run), attribute=False).pairs if p.head == "numpy@b")
    assert f"null01: {pair.anchored.ratio:.4f} " in first.stdout
    assert "== calibration summary" in first.stdout and "minutes per run: " in first.stdout
    assert "null intervals that exclude 1: " in first.stdout
    # --processes 2 alone: two exactly, as asked, so none stopped before settling (run.json has no timing_stop)
    assert "runs that stopped adding processes before their interval settled: 0 of 2" in first.stdout
    assert (out / "calibrate-summary.txt").read_text().count("null01") == 1
    # the same --out again, asking for one null more but no time to measure it: the two kept, the third named
    again = calibrate(out, "--nulls", "2", "--plants", "1", "--max-minutes", "0")
    assert again.returncode == 0, again.stderr
    assert "[kept] null01: " in again.stdout and "[kept] plant01: " in again.stdout and "[measured]" not in again.stdout
    assert "not yet measured: null02" in again.stdout and not (out / "null02").exists()
    # --reestimate: the kept runs read again, nothing measured
    re = calibrate(out, "--nulls", "2", "--plants", "1", "--reestimate")
    assert re.returncode == 0 and "[measured]" not in re.stdout and "[kept] plant01: " in re.stdout
    # a device call: the last call's runs carried in (--seed-from), this call's --out elsewhere
    moved = calibrate(tmp_path / "next", "--seed-from", str(out), "--nulls", "1", "--plants", "1", "--reestimate")
    assert moved.returncode == 0 and "[kept] null01: " in moved.stdout and "[kept] plant01: " in moved.stdout
    assert rundir.load(tmp_path / "next" / "plant01").complete
    # only what a re-estimate reads is kept of a run
    assert not list(out.glob("*/*.prof")) and not list(out.glob("*/report.html"))
