"""Faults 5 (issue 41): verdicts that must not be given (a spent budget, one process a side, nothing compared),
one dead timing process, a case that moves flametool's clock or removes its counting hook, damaged run.json
values, the --env probe's own answer, words that misled, huge messages, host allocations shown. Hand-damaged
run.json files where they do; real CPU runs with tiny settings where only a run shows it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import faultkit as fk
from checks import error_of, one_line_error
from flametool.analyse import diff
from flametool.commands import main
from flametool.run import rundir
from runbuild import make_run
from shared import flametool_once

STACK = "case.<locals>.step (tests/a.py:1);shared (lib/s.py:1) 6\n"
# the settings
O = ["--device", "cpu", "--pool-threads", "1", "--shape", "16,16,16", "--iters", "200", "--warmup", "20",
     "--repeats", "1", "--processes", "1"]


def one_process_run(path: Path, processes: int = 1) -> Path:
    return make_run(path, {"numpy": (STACK, 6.0, 0), "torch": (STACK, 9.0, 0)}, processes=processes)


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main.main([str(a) for a in argv])
    got = capsys.readouterr()
    return code, got.out, got.err


# --- 1: a spent budget, or one process a side, decides nothing ------------------------------------------------

def test_one_process_a_side_is_inconclusive_in_diff_and_summary(capsys, tmp_path):
    run = one_process_run(tmp_path / "r")
    code, _, err = cli(capsys, "diff", run, run, "--case", "numpy", "--fail-above", "0")
    assert code == diff.INCONCLUSIVE_EXIT
    line = error_of(err)
    assert "inconclusive, one process a side" in line and "two or more processes a side" in line
    code, _, err = cli(capsys, "summary", run, "--fail-above", "2")
    assert code == diff.INCONCLUSIVE_EXIT and "inconclusive, one process a side" in error_of(err)
    code, out, _ = cli(capsys, "summary", run, "--fail-above", "2", "--format", "json")
    assert code == diff.INCONCLUSIVE_EXIT and json.loads(out)["pairs"][0]["verdict"]["outcome"] == "inconclusive"


def test_two_processes_a_side_decide_and_a_passing_diff_says_so(capsys, tmp_path):
    run = one_process_run(tmp_path / "r", processes=2)
    code, _, err = cli(capsys, "diff", run, run, "--case", "numpy", "--fail-above", "0")
    assert code == 0 and "within --fail-above 0%" in error_of(err)  # item 11: the passing verdict is printed
    code, _, err = cli(capsys, "diff", run, "--base", "numpy", "--head", "torch", "--fail-above", "10")
    assert code == diff.SLOWER_EXIT and "+50.0%" in error_of(err)


def test_an_anchor_that_is_the_case_under_test_is_refused(capsys):
    line = one_line_error(capsys, ["compare", *O, "--no-sample", "--libs", "numpy,torch", "--env", f"a={sys.executable}",
                                   "--env", f"b={sys.executable}", "--anchor", "numpy", "--pair", "numpy@a:numpy@b"])
    assert line.startswith("flametool: --anchor numpy: the anchor is the case under test in --pair numpy@a:numpy@b")


@pytest.fixture(scope="module")
def spent(tmp_path_factory):
    """compare --budget 0.001 --fail-above 2: one process, the budget spent at once (a real run, made once)."""
    return flametool_once(tmp_path_factory, "faults5-spent", "compare", *O, "--no-sample", "--no-count", "--libs",
                          "numpy,torch", "--budget", "0.001", "--fail-above", "2")


def test_a_spent_budget_is_inconclusive(spent):
    out, proc = spent
    assert proc.returncode == diff.INCONCLUSIVE_EXIT, proc.stderr
    verdict = [l for l in proc.stdout.splitlines() if l.startswith("--fail-above 2%")]
    assert len(verdict) == 1 and "inconclusive (not decided within the budget of 0.001 s)" in verdict[0]
    assert "inconclusive, one process a side" in " ".join(proc.stdout.split())  # the line as rich wrapped it


# --- 2: summary --fail-above never passes a run that compared nothing -----------------------------------------

def edit_run(run: Path, change) -> Path:
    data = json.loads((run / "run.json").read_text())
    change(data)
    (run / "run.json").write_text(json.dumps(data))
    return run


NOTHING = {
    "results {}": (lambda d: d.update(results={}), "nothing compared (the run has no cases)"),
    "error set": (lambda d: d["results"]["torch"].update(error="boom"), "torch vs numpy not compared: torch failed (boom)"),
    "no timing": (lambda d: d["results"]["torch"].update(timing=None), "torch vs numpy not compared: torch has no timings"),
    "lost processes": (lambda d: (d["results"]["torch"].update(error="process 2 of 5: the child process exited with "
                                                                    "code 1 before reporting"), d.update(complete=False)),
                       "torch failed (process 2 of 5"),
}


@pytest.mark.parametrize("fault", list(NOTHING))
def test_summary_fail_above_never_passes_a_run_that_compared_nothing(capsys, tmp_path, fault):
    change, words = NOTHING[fault]
    run = edit_run(one_process_run(tmp_path / "r", processes=2), change)
    code, _, err = cli(capsys, "summary", run, "--fail-above", "5")
    assert code == diff.INCONCLUSIVE_EXIT
    line = error_of(err)
    assert words in line and line.endswith("inconclusive: no verdict on --fail-above 5%")
    code, out, _ = cli(capsys, "summary", run, "--fail-above", "5", "--format", "json")
    verdict = json.loads(out)["verdict"]
    assert code == diff.INCONCLUSIVE_EXIT and verdict["outcome"] == "inconclusive" and words in verdict["sentence"]
    assert cli(capsys, "summary", run)[0] == 0  # without --fail-above: a summary, no verdict asked for
