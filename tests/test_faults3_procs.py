"""Issue 20 (faults 3), processes and signals: what a case starts out of its child's process group, SIGHUP,
py-spy's temporary file, a step() that never returns, Ctrl-Z. flametool runs as from a terminal, in a
session of its own, and every process of the run is found by the tag they all inherit."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import faultkit as fk
from flametool import rundir

CASES3 = fk.CASES / "faults3_cases.py"
# the settings, "O"
O = ["--device", "cpu", "--shape", "16,16,16", "--iters", "200", "--warmup", "20", "--repeats", "1", "--processes", "1",
     "--sample-seconds", "2"]


def sleeping(tag: str) -> list:
    return [(pid, cmd) for pid, cmd in fk.tagged(tag) if cmd.startswith("sleep 60")]


def test_processes_that_leave_the_group_end_with_the_run(tmp_path):
    """Item 5: a factory's `Popen(["setsid", "sleep", "600"])`, or a double fork with os.setsid, ran on after
    the run ended (rc 0)."""
    environ = fk.env()
    out = tmp_path / "run"
    proc = fk.run(["compare", *O, "--no-sample", "--libs", "", "--case", f"{CASES3}:setsid_case", "--case",
                   f"{CASES3}:double_fork_case", "--out", str(out)], environ)
    assert proc.returncode == 0, proc.stderr
    assert all(r.timing.cpu_us_per_call > 0 for r in rundir.load(out).results.values())
    assert fk.none_left(environ[fk.TAG], within=5) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_processes_that_leave_the_group_end_when_the_run_is_stopped(tmp_path, sig):
    """Item 5, stopped: by Ctrl-C (to the terminal's process group), or flametool killed outright (its child
    is sent SIGTERM by the kernel, and its guardian stops what is marked as the case's)."""
    out = tmp_path / "run"
    bg = fk.Background(["compare", *O, "--no-sample", "--libs", "", "--case", f"{CASES3}:escaping_slow_case",
                        "--out", str(out)], fk.env())
    bg.wait_for("escaping_slow_case: setting up")
    bg.wait_until(lambda: sleeping(bg.tag), "the case's sleep 602")
    bg.signal(sig, group=sig == signal.SIGINT)
    code = bg.finish()
    assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL), bg.err
    assert fk.none_left(bg.tag, within=5) == []
