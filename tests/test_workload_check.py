"""A workload's FUNC is called once before anything runs, to check what it returns (measure/workcheck.py): in a
process of its own, so that what FUNC does to the process it runs in (os._exit, a thread or a fork left running,
SIGINT ignored, a sleep for ever) is not done to flametool. Real processes, each run stopped at
the check or a few seconds in."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

import faultkit as fk

CASES = fk.CASES / "workload_fault_cases.py"
TINY = ["--device", "cpu", "--libs", "numpy,torch", "--iters", "100", "--warmup", "10", "--repeats", "2",
        "--processes", "2", "--no-sample"]


@pytest.mark.parametrize("func, words", [
    ("hard_exit", "hard_exit(xp, (4,)): its process exited with code 3 before FUNC returned"),
    ("leaves_a_thread", "leaves_a_thread(xp, (4,)) returned int; a workload returns (fn, inputs)"),
    ("forks", "forks(xp, (4,)) returned int; a workload returns (fn, inputs)"),
    ("replaces_stdout", "replaces_stdout(xp, (4,)) returned int; a workload returns (fn, inputs)"),
])
def test_what_func_does_to_its_process_is_one_line_and_leaves_nothing(tmp_path, func, words):
    environ = fk.env()
    try:
        proc = fk.run(["compare", *TINY, "--workload", f"{CASES}:{func}", "--out", str(tmp_path / "run")], environ,
                      timeout=60)
    except subprocess.TimeoutExpired:  # the thread FUNC started kept flametool from exiting
        pytest.fail("flametool did not exit")
    finally:
        left = fk.none_left(environ[fk.TAG], within=2)
        fk.kill_tagged(environ[fk.TAG])
    assert proc.returncode == 2, proc.stderr
    assert words in fk.error_line(proc)
    assert left == [], f"processes left behind: {left}"


def test_a_func_that_never_returns_is_stopped_with_a_line(tmp_path):
    environ = fk.env(FLAMETOOL_STEP_TIMEOUT="3")
    start = time.monotonic()
    proc = fk.run(["compare", *TINY, "--workload", f"{CASES}:sleeps_for_ever", "--out", str(tmp_path / "run")],
                  environ, timeout=60)
    assert time.monotonic() - start < 30
    assert proc.returncode == 2
    assert fk.error_line(proc).endswith("sleeps_for_ever(xp, (4,)) did not return within 3 s (a set-up that waits "
                                        "for ever?); stopped it (FLAMETOOL_STEP_TIMEOUT=SECONDS allows longer)")
    assert fk.none_left(environ[fk.TAG], within=2) == []


def test_ctrl_c_reaches_flametool_when_func_ignores_it(tmp_path):
    out = tmp_path / "run"
    bg = fk.Background(["compare", *TINY, "--iters", "100000", "--workload", f"{CASES}:ignores_ctrl_c", "--out",
                        str(out)], fk.env())
    try:
        bg.wait_for("timed loop 1/2")
        bg.signal(signal.SIGINT, group=True)
        code = bg.finish(timeout=30)
    finally:
        left = fk.none_left(bg.tag, within=5)
        bg.kill()
    assert code == 130, bg.err
    assert bg.err[-1] == f"flametool: interrupted; what finished is kept in {out / 'run.json'} (complete: false)"
    assert left == []
