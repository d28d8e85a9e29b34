"""A size's name (record.size_name): N for matmul's cube N,N,N (its sizes are named by N), every figure for
anything else, a workload's cube 64,64,64 above all (three dimensions, which "64" would not tell from a 1-D
size 64); the same name in every view and in the files a sweep's --sample writes (LABEL@SIZE.folded). A run
directory's files are found by the names its run.json records, so one written before (a workload's cube in
LABEL@64.folded) is read as it was written."""

from __future__ import annotations

import json

import pytest

from flametool import render
from flametool.analyse import dispatch, summary, sweep
from flametool.errors import RunDirError
from flametool.render import format as fmt, sweep_page
from flametool.run import record, rundir
from flametool.run.profiled import ProfileProcess, Sampling
from flametool.run.record import CaseResult, Group, Run, SweepPoint
from flametool.run.timing import Loops
from flametool.workload import ops

CUBE = [64, 64, 64]
FOLDED = ("step (case.py:1);outer (lib/m.py:5);inner (lib/m.py:9) 6\n"
          "step (case.py:1);outer (lib/m.py:5);malloc (libc.so.6) 2\n")


def test_a_cube_is_named_n_only_for_matmul():
    assert record.size_name(CUBE, "matmul") == "64" and record.size_name([64, 32, 64], "matmul") == "64x32x64"
    # a workload's shape is its FUNC's dimensions: a built-in's name, or a user's FILE.py:FUNC
    for workload in ("mlp", "w.py:attention"):
        assert record.size_name(CUBE, workload) == "64x64x64"
        assert record.size_name([64], workload) == "64" and record.size_name([8, 64, 64], workload) == "8x64x64"
    assert record.size_name([4096], "add") == "4096" and record.size_name([64, 64], "copy") == "64x64"
    assert [o for o in ops.OPS if ops.by_n(o)] == ["matmul"] and not ops.by_n("mlp")
    # a run from before --op recorded none: a matmul run, named as it always was
    assert record.size_name(CUBE, record.RunConfig().operation) == "64"


def point(shape: list[int], us: float, profile: ProfileProcess | None = None) -> SweepPoint:
    """Two processes of two loops on the CPU (no GPU times), paired slots."""
    return SweepPoint(list(shape), 100, [Loops([us, us], [], [0, 2], [us, us]) for _ in range(2)], profile=profile)


def sampled(name: str) -> ProfileProcess:
    return ProfileProcess(own=Loops([10.0]), calls=100, files={"folded": f"{name}.folded"},
                          sampling=Sampling(command=[], rate_hz=100, seconds=1, complete=True, kept_samples=8))


def sweep_run(op: str | None, sizes: list[list[int]], files: dict[str, str] | None = None) -> Run:
    """A sweep as record.py holds it: numpy and torch paired at each size; `files`: label -> the stem of its
    sampled files at the first size (as the flametool that wrote the run named them)."""
    config: dict = {"sizes": sizes, "device": "cpu"} | ({"op": op} if op else {})
    run = Run(schema=record.SCHEMA, complete=True, started="2026-12-01T00:00:00+00:00", finished=None,
              command=["flametool", "sweep"], config=config, env={}, kind="sweep")
    run.groups.append(Group(["numpy", "torch"], True, "hand-built", 2))
    for label, us in (("numpy", 10.0), ("torch", 30.0)):
        stem = (files or {}).get(label)
        run.results[label] = CaseResult(
            label=label, factory=f"test:{label}", library=label, device="cpu", dtype="float32", shape=sizes[0],
            group=0, points=[point(s, us * (i + 1), sampled(stem) if stem and i == 0 else None)
                             for i, s in enumerate(sizes)])
    return run


def views(a: sweep.SweepAnalysis) -> dict[str, str]:
    """Every place a sweep names its sizes: the terminal's tables, the report's cells and words, the summary."""
    run = a.run
    _, rows = sweep_page.cells(a)
    return {"terminal": render.show("terminal", a),
            "cells": " | ".join(r[0].text for r in rows),
            "pair": "\n".join(line for sp in a.pairs for line in fmt.sweep_pair_lines(sp, 2, run.config.operation)),
            "summary": " | ".join(r.at for r in summary.of_sweep(a).rows)}


def test_a_workloads_cube_is_named_in_full_in_every_view(tmp_path):
    a = sweep.analyse(tmp_path, sweep_run("mlp", [CUBE, [128, 64, 64]]))
    assert a.size_name(CUBE) == "64x64x64"
    shown = views(a)
    assert shown["cells"] == "64x64x64 | 128x64x64"
    assert shown["summary"] == "64x64x64 | 128x64x64"
    assert "│ 64x64x64 " in shown["terminal"] and "│ 64 " not in shown["terminal"]
    assert "64x64x64" in shown["pair"] and "at 64 " not in shown["pair"] and "at 64," not in shown["pair"]


def test_a_matmul_cube_is_still_named_n(tmp_path):
    for op in ("matmul", None):  # None: a run from before --op, read as matmul
        a = sweep.analyse(tmp_path, sweep_run(op, [CUBE, [128, 128, 128]]))
        shown = views(a)
        assert shown["cells"] == "64 | 128" and shown["summary"] == "64 | 128"
        assert "│ 64 " in shown["terminal"] and "64x64x64" not in shown["terminal"]


@pytest.mark.parametrize("op, stem, layer", [
    ("mlp", "{label}@64", "64x64x64"),  # a workload's run written before its cube was named in full
    ("mlp", "{label}@64x64x64", "64x64x64"),  # one written now
    (None, "{label}@64", "64"),  # the committed matmul sweeps' names
])
def test_sampled_files_are_found_by_the_name_run_json_records(tmp_path, op, stem, layer):
    files = {label: stem.format(label=label) for label in ("numpy", "torch")}
    for name in files.values():
        (tmp_path / f"{name}.folded").write_text(FOLDED, encoding="utf-8")
    run = sweep_run(op, [CUBE, [128, 64, 64]] if op else [CUBE, [128, 128, 128]], files)
    rundir.save(tmp_path, run)
    a = dispatch.analyse_dir(tmp_path)
    assert list(a.layers) == [layer] and set(a.layers[layer]) == {"numpy", "torch"}
    assert a.layers[layer]["numpy"].us_per_call == pytest.approx(10.0)
    (tmp_path / f"{files['numpy']}.folded").unlink()  # a missing file is named as run.json names it
    with pytest.raises(RunDirError, match=f"{files['numpy']}.folded"):
        dispatch.analyse_dir(tmp_path)


# --- a real sweep of a workload with a cubic size ----------------------------------------------------------

def test_a_real_workload_sweep_names_its_cube_in_full(cli, tmp_path):
    """The built-in mlp (B,I,O) on the CPU at 8x64x64 and 64x64x64, sampled: its files, tables and layers name
    the cube 64x64x64; renamed as an earlier flametool named them (numpy@64.*, run.json's files to match), the
    run reads as before."""
    out = tmp_path / "run"
    proc = cli("sweep", "--device", "cpu", "--workload", "mlp", "--libs", "numpy", "--sizes", "8x64x64,64x64x64",
               "--processes", "1", "--repeats", "2", "--iters", "200", "--sample", "--sample-seconds", "0.5",
               "--rate", "200", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "run.json").read_text())
    assert data["config"]["op"] == "mlp"
    names = [p["profile"]["files"] for p in data["results"]["numpy"]["points"]]
    assert names == [{"prof": f"numpy@{s}.prof", "folded": f"numpy@{s}.folded"} for s in ("8x64x64", "64x64x64")]
    assert all((out / name).is_file() for files in names for name in files.values())
    assert "│ 64x64x64 " in proc.stdout and "│ 64 " not in proc.stdout
    assert "numpy@64x64x64: setting up at 64,64,64" in proc.stderr
    a = dispatch.analyse_dir(out)
    assert list(a.layers) == ["8x64x64", "64x64x64"]
    before = a.layers["64x64x64"]["numpy"].us_per_call

    # as a flametool before this one wrote it: the cube's files numpy@64.*, and run.json naming them
    for kind in ("prof", "folded"):
        (out / f"numpy@64x64x64.{kind}").rename(out / f"numpy@64.{kind}")
    data["results"]["numpy"]["points"][1]["profile"]["files"] = {"prof": "numpy@64.prof", "folded": "numpy@64.folded"}
    (out / "run.json").write_text(json.dumps(data))
    a = dispatch.analyse_dir(out)
    assert list(a.layers) == ["8x64x64", "64x64x64"] and a.layers["64x64x64"]["numpy"].us_per_call == before
    again = cli("report", str(out))
    assert again.returncode == 0, again.stderr
    assert "numpy 64x64x64" in (out / "report.html").read_text()
