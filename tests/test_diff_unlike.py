"""`flametool diff` of two runs that did not measure the same work (op, shape, dtype, device) or that did not
finish: every format says so, and --fail-above gives no verdict on unlike work unless --allow-unlike."""

from __future__ import annotations

import json

import pytest

from checks import error_of
from flametool.commands import main
from flametool.run import rundir
from runbuild import make_run

STACK = "case.<locals>.step (tests/a.py:1);shared (lib/s.py:1) 6\n"


def two_runs(tmp_path, head_us: float = 120.0, **change):
    """A (base) and B (head): numpy beside torch, B's numpy 20x A's; `change` sets fields of B's numpy (and
    'op': B's --op, 'complete': whether B finished, 'versions': B's library versions)."""
    # two processes a side: enough for a --fail-above verdict
    a = make_run(tmp_path / "a", {"numpy": (STACK, 6.0, 0), "torch": (STACK, 6.0, 0)}, processes=2)
    b = make_run(tmp_path / "b", {"numpy": (STACK, head_us, 0), "torch": (STACK, 6.0, 0)}, processes=2)
    for path, op in ((a, "matmul"), (b, change.pop("op", "matmul"))):
        run = rundir.load(path)
        run.config.recorded["op"] = op
        run.config.op = op
        run.env.versions = {"numpy": "2.4.6", "torch": "2.13.0"}
        for label, r in run.results.items():
            r.library = label
        if path == b:
            run.complete = change.pop("complete", True)
            run.env.versions.update(change.pop("versions", {}))
            for key, value in change.items():
                setattr(run.results["numpy"], key, value)
                if key == "shape":
                    run.results["numpy"].sample_shape = value
                    run.results["numpy"].timing.shape = value
        rundir.save(path, run)
    return a, b


def diff(capsys, *args):
    code = main.main(["diff", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("change, words", [
    ({"op": "add", "shape": [4096]}, ["op matmul in A, add in B", "shape 64,64,64 in A, 4096 in B"]),
    ({"dtype": "float64"}, ["dtype float32 in A, float64 in B"]),
    ({"device": "cuda:0"}, ["device cpu in A, cuda:0 in B"]),
])
def test_a_diff_of_unlike_work_says_what_differs_and_gives_no_verdict(capsys, tmp_path, change, words):
    a, b = two_runs(tmp_path, **change)
    for fmt in ("text", "markdown", "json"):
        code, out, err = diff(capsys, a, b, "--fail-above", "5", "--format", fmt)
        assert code == 2, (fmt, err)
        line = error_of(err)
        assert "no verdict" in line and "--allow-unlike" in line and all(w in line for w in words)
        if fmt == "json":
            doc = json.loads(out)
            assert doc["verdict"] is None and doc["pairs"][0]["verdict"] is None and "no verdict" in doc["no_verdict"]
            assert all(d["unlike"] for d in doc["differences"])
            assert {d["what"] for d in doc["differences"]} >= {w.split(" ")[0] for w in words}
        else:
            assert all(w in out.replace("\\", "") for w in words), (fmt, out)
            assert "slower" not in out


def test_allow_unlike_gives_the_verdict(capsys, tmp_path):
    a, b = two_runs(tmp_path, op="add", shape=[4096])
    code, out, err = diff(capsys, a, b, "--fail-above", "5", "--allow-unlike")
    assert code == 3
    assert "op matmul in A, add in B" in out
    assert "+1900.0%" in error_of(err)


def test_unlike_work_without_fail_above_is_compared(capsys, tmp_path):
    a, b = two_runs(tmp_path, dtype="float64")
    code, out, err = diff(capsys, a, b)
    assert code == 0 and err == ""
    assert "dtype float32 in A, float64 in B" in out


def test_a_library_version_is_stated_and_still_gets_a_verdict(capsys, tmp_path):
    a, b = two_runs(tmp_path, versions={"numpy": "2.5.0", "torch": "2.14.0"})
    code, out, err = diff(capsys, a, b, "--fail-above", "5", "--format", "json")
    assert code == 3
    doc = json.loads(out)
    assert doc["verdict"]["outcome"] == "slower" and doc["no_verdict"] is None
    differs = {d["what"]: (d["base"], d["head"], d["unlike"]) for d in doc["differences"]}
    assert differs == {"numpy version": ("2.4.6", "2.5.0", False),
                       "torch version (the anchor's)": ("2.13.0", "2.14.0", False)}


def test_like_runs_say_nothing_differs(capsys, tmp_path):
    a, b = two_runs(tmp_path, head_us=6.0)
    code, out, err = diff(capsys, a, b, "--fail-above", "5")
    assert code == 0, err
    assert "A and B differ" not in out and "did not finish" not in out


def test_a_run_that_did_not_finish_is_said_in_every_format(capsys, tmp_path):
    a, b = two_runs(tmp_path, head_us=6.0, complete=False)
    for fmt in ("text", "markdown", "json"):
        code, out, err = diff(capsys, a, b, "--format", fmt)
        assert code == 0, err
        if fmt == "json":
            doc = json.loads(out)
            assert doc["complete"] is False and doc["incomplete"] == ["B"]
        else:
            assert "B did not finish" in out, (fmt, out)
    code, out, err = diff(capsys, b, "--base", "numpy", "--head", "torch", "--format", "json")
    assert json.loads(out)["complete"] is False


def test_requested_shapes_that_differ_but_are_sampled_alike_are_said_and_still_judged(capsys, tmp_path):
    a, b = two_runs(tmp_path)
    run = rundir.load(b)
    run.results["numpy"].shape = [4096, 4096, 4096]  # too slow a loop: sampled at 64,64,64 as A's
    rundir.save(b, run)
    code, out, err = diff(capsys, a, b, "--fail-above", "5", "--format", "json")
    assert code == 3
    doc = json.loads(out)
    assert doc["differences"] == [{"what": "requested shape", "base": "64,64,64", "head": "4096,4096,4096",
                                   "unlike": False, "note": "both compared at 64,64,64"}]
    assert doc["verdict"]["outcome"] == "slower"
