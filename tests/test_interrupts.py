"""Ctrl-C and SIGTERM at any phase: exit 130, run.json kept with what finished and "complete": false, and
no child process or py-spy left. Each test runs flametool as a user does, in a session of its own, and
finds every process the run started by a tag they all inherit in their environment."""

from __future__ import annotations

import json
import signal
import time

import pytest

import faultkit as fk

SLOW = fk.CASES / "fault_cases.py"


def finished(bg: fk.Background, out) -> dict:
    code = bg.finish()
    left = fk.none_left(bg.tag)
    assert left == [], f"processes left behind: {left}"
    assert code == 130, (code, bg.err)
    assert "Traceback" not in "\n".join(bg.err)
    data = json.loads((out / "run.json").read_text())
    assert data["complete"] is False and data["finished"]
    assert bg.err[-1] == f"flametool: interrupted; what finished is kept in {out / 'run.json'} (complete: false)"
    return data


@pytest.mark.parametrize("sig, group", [(signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c", "sigterm"])
def test_stop_during_a_later_case_keeps_the_finished_one(tmp_path, sig, group):
    out = tmp_path / "run"
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--no-sample",
                        "--case", f"{SLOW}:slow_setup_case", "--out", str(out)], fk.env())
    bg.wait_for("slow_setup_case: setting up")
    bg.wait_until(lambda: any("flametool.child" in cmd and "slow_setup_case" in cmd for _, cmd in fk.tagged(bg.tag)),
                  "the second case's child")
    time.sleep(0.5)  # inside the factory's sleep
    bg.signal(sig, group)
    data = finished(bg, out)
    assert list(data["results"]) == ["numpy"] and data["results"]["numpy"]["cpu_us_per_call"] > 0
    assert (out / "numpy.prof").is_file()


@pytest.mark.parametrize("sig, group", [(signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c", "sigterm"])
def test_stop_while_py_spy_samples(tmp_path, sig, group):
    out = tmp_path / "run"
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--sample-seconds", "60",
                        "--out", str(out)], fk.env())
    bg.wait_for("sampling with py-spy")
    bg.wait_until(lambda: any("py-spy" in cmd and "record" in cmd for _, cmd in fk.tagged(bg.tag)), "py-spy running")
    time.sleep(0.5)
    bg.signal(sig, group)
    data = finished(bg, out)
    assert data["results"] == {}  # the case being sampled had not finished


def test_parent_killed_outright_takes_its_child_along(tmp_path):
    """SIGKILL leaves the parent no chance to clean up: the kernel stops the child (PR_SET_PDEATHSIG)."""
    out = tmp_path / "run"
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "", "--no-sample", "--case",
                        f"{SLOW}:slow_setup_case", "--out", str(out)], fk.env())
    bg.wait_until(lambda: any("flametool.child" in cmd and "slow_setup_case" in cmd for _, cmd in fk.tagged(bg.tag)),
                  "the child")
    time.sleep(0.5)  # inside the factory's sleep
    bg.signal(signal.SIGKILL, group=False)
    assert bg.finish() == -signal.SIGKILL
    assert fk.none_left(bg.tag) == []
    assert json.loads((out / "run.json").read_text())["complete"] is False
