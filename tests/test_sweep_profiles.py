"""A `sweep --sample` run's profiles, LABEL@SIZE.prof and .folded, reached by export, diff and snakeviz as the
cases CASE@SIZE (flametool/run/casenames.py): they said "a sweep run: it holds timings only" of a run directory
full of them. Hand-built sweeps here; the real CPU `sweep --sample` is test_sweep.py's."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from checks import one_line_error
from flametool.commands import drilldown, main
from flametool.errors import FlametoolError
from flametool.run import casenames, folded, rundir
from reportruns import write_prof
from runbuild import make_run, make_sweep, snapshot


def stacks(step: str, lib: str, n: int) -> str:
    return f"{step} (case.py:1);{lib} (lib{lib}.so) {n}\n{step} (case.py:1) {n // 4 or 1}\n"


def sweep_dir(path: Path, slower: float = 1.0) -> Path:
    """numpy and torch at 8 and 64, both profiled there; at 512 timed only (GPU-bound: not profiled)."""
    return make_sweep(path, {
        "numpy": {8: (stacks("np_step", "numpy", 40), 4.0 * slower, None),
                  64: (stacks("np_step", "blas", 80), 9.0 * slower, None), 512: (None, 30.0, 300.0)},
        "torch": {8: (stacks("torch_step", "aten", 60), 6.0, None),
                  64: (stacks("torch_step", "aten", 90), 11.0, None), 512: (None, 35.0, 300.0)},
    }, prof=write_prof)


@pytest.fixture
def sweep(tmp_path):
    return sweep_dir(tmp_path / "sweep")


# --- the sizes as cases ------------------------------------------------------------------------------------

def test_a_sweeps_sizes_read_as_cases_grouped_by_size(sweep):
    run = rundir.load_profiled(sweep, "export")
    assert isinstance(run, casenames.SweepCases) and run.sweep is not None and run.sweep.kind == "sweep"
    assert list(run.results) == ["numpy@8", "torch@8", "numpy@64", "torch@64", "numpy@512", "torch@512"]
    r = run.results["torch@64"]
    assert r.sample_shape == r.shape == [64] * 3 and r.timing is not None and r.timing.cpu_us_per_call == pytest.approx(11.055)
    assert r.file("folded") == "torch@64.folded" and r.file("prof") == "torch@64.prof" and not r.points
    assert run.results["torch@512"].profile is None  # timed there, not profiled: a diff's anchor, its timings
    # timed together at a size (paired), and apart from the same case at another size
    assert run.paired("numpy@64", "torch@64") and not run.paired("numpy@8", "numpy@64")
    assert run.pairs == [("numpy@8", "torch@8"), ("numpy@64", "torch@64")]


@pytest.mark.parametrize("name, found", [("numpy@64", "numpy@64"), ("numpy@64x64x64", "numpy@64"),
                                         ("numpy@64,64,64", "numpy@64")])
def test_a_size_is_named_as_its_files_are_or_as_a_shape(sweep, name, found):
    assert casenames.case_named(sweep, rundir.load_profiled(sweep, "export"), name, "--case") == found


@pytest.mark.parametrize("name, words", [
    ("numpy", "numpy is one of its cases: add @SIZE"),
    ("numpy@16", "numpy was not timed at 16"),
    ("numpy@512", "numpy was timed at 512, not profiled (it was not host-bound there"),
    ("jax@8", "numpy@8, torch@8, numpy@64, torch@64"),
    ("numpy@" + "9" * 5000, "numpy@8, torch@8, numpy@64, torch@64"),  # no int() of 5000 digits (Python refuses it)
    ("numpy@8x8x8x8", "numpy@8, torch@8"),
])
def test_a_name_that_is_no_profile_says_what_the_sweep_has(sweep, capsys, name, words):
    for argv in (["export", str(sweep), "--format", "folded", "--case", name], ["snakeviz", str(sweep), "--case", name]):
        line = one_line_error(capsys, argv)
        assert f"--case {name!r}: no " in line and words in line, line
        assert "its profiles are CASE@SIZE" in line and "numpy@512" not in line.split("(", 1)[1].split(";")[0]


# --- export ------------------------------------------------------------------------------------------------

def test_export_of_a_sweep_has_every_profiled_size(sweep, capsys):
    before = snapshot(sweep)
    assert main.main(["export", str(sweep), "--format", "folded"]) == 0
    got = folded.parse(capsys.readouterr().out)
    assert list(dict.fromkeys(s.frames[0] for s in got)) == ["numpy@8", "torch@8", "numpy@64", "torch@64"]
    assert snapshot(sweep) == before


def test_export_of_one_size(sweep, capsys, tmp_path):
    assert main.main(["export", str(sweep), "--format", "folded", "--case", "torch@64x64x64"]) == 0
    got = folded.parse(capsys.readouterr().out)
    assert {s.frames for s in got} == {("case.torch_step", "aten (libaten.so)"), ("case.torch_step",)}
    assert sum(s.count for s in got) == 90 + 22
    out = tmp_path / "t.speedscope.json"
    assert main.main(["export", str(sweep), "--format", "speedscope", "--case", "numpy@8", "-o", str(out)]) == 0
    (profile,) = json.loads(out.read_text())["profiles"]
    # weights in us per call: the case's paired time at that size (4.0 and 4.04 us in its loops)
    assert profile["name"] == "numpy@8 (us per call)" and sum(profile["weights"]) == pytest.approx(4.02, rel=0.01)


def test_perfetto_of_a_sweep_size_is_read_as_a_compare_cases(sweep, capsys):
    line = one_line_error(capsys, ["export", str(sweep), "--format", "perfetto", "--case", "numpy@8"])
    assert "(numpy@8): no timeline to export" in line  # a CPU run: no CUPTI records, as of a compare run


# --- snakeviz ----------------------------------------------------------------------------------------------

def test_snakeviz_serves_a_sweeps_size(sweep):
    assert drilldown.target(sweep, "torch@64") == drilldown.Target("torch@64", sweep / "torch@64.prof")
    assert drilldown.target(sweep, "torch@64x64x64").label == "torch@64"
    assert drilldown.target(sweep, None) == drilldown.Target("numpy@8", sweep / "numpy@8.prof")
    folder, copy = drilldown.private_copy(drilldown.target(sweep, "numpy@64"))
    try:
        assert copy.name == "numpy@64.prof" and copy.read_bytes() == (sweep / "numpy@64.prof").read_bytes()
    finally:
        import shutil

        shutil.rmtree(folder)
    with pytest.raises(FlametoolError, match="no profile of it"):
        drilldown.target(sweep, "torch@512")


# --- diff --------------------------------------------------------------------------------------------------

def test_diff_of_two_sizes_of_one_sweep(sweep, capsys):
    assert main.main(["diff", str(sweep), "--base", "numpy@64", "--head", "torch@64"]) == 0
    out = capsys.readouterr().out
    assert "torch@64 / numpy@64 = " in out and "paired in the same processes" in out and "layer" in out
    # one case at two sizes: timed in the same processes, but not side by side
    assert main.main(["diff", str(sweep), "--base", "numpy@8", "--head", "numpy@64x64x64"]) == 0
    assert "numpy@64 / numpy@8 = " in capsys.readouterr().out
    line = one_line_error(capsys, ["diff", str(sweep), "--base", "numpy@64", "--head", "numpy@64x64x64"])
    assert "one case against itself" in line
    line = one_line_error(capsys, ["diff", str(sweep), "--base", "numpy", "--head", "torch@64"])
    assert "--base 'numpy': no such case" in line and "add @SIZE" in line


def test_diff_of_two_sweeps_is_a_case_at_a_size_anchored_beside_it(sweep, tmp_path, capsys):
    slower = sweep_dir(tmp_path / "slower", slower=1.5)
    assert main.main(["diff", str(sweep), str(slower), "--case", "numpy@64"]) == 0
    out = capsys.readouterr().out
    assert "numpy@64: B / A relative to torch@64 = " in out and "host time per call by layer" in out
    # the first profiled case both have, by default
    assert main.main(["diff", str(sweep), str(slower)]) == 0
    assert "numpy@8: B / A relative to torch@8" in capsys.readouterr().out
    # a size timed but not profiled: its timings, anchored, and no layers
    assert main.main(["diff", str(sweep), str(slower), "--case", "torch@512"]) == 0
    out = capsys.readouterr().out
    assert "torch@512: B / A relative to numpy@512" in out and "was not sampled in both runs" in out
    line = one_line_error(capsys, ["diff", str(sweep), str(slower), "--case", "numpy@16"])
    assert "numpy was not timed at 16" in line and "timed only: numpy@512, torch@512" in line


def test_diff_of_a_sweep_and_a_compare_run_is_refused(sweep, tmp_path, capsys):
    compare = make_run(tmp_path / "compare", {"numpy": (stacks("np_step", "numpy", 40), 4.0, 0)})
    for argv in ([str(sweep), str(compare)], [str(compare), str(sweep), "--case", "numpy@8"]):
        line = one_line_error(capsys, ["diff", *argv])
        assert f"{sweep} is a sweep (its profiles are CASE@SIZE) and {compare} a compare run" in line, line


# --- a sweep without profiles ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["export", "--format", "speedscope"], ["export", "--format", "perfetto"],
                                  ["snakeviz"], ["diff", "--base", "numpy@8", "--head", "torch@8"]])
def test_a_sweep_without_sample_still_says_it_holds_timings_only(tmp_path, capsys, argv):
    run = make_sweep(tmp_path / "timed", {"numpy": {8: (None, 4.0, None)}, "torch": {8: (None, 6.0, None)}})
    data = rundir.load(run)
    data.config.recorded["sample"] = False
    rundir.save(run, data)
    line = one_line_error(capsys, [argv[0], str(run), *argv[1:]])
    assert "a sweep run: made without --sample, it holds timings only" in line, line


def test_a_size_a_case_failed_at_says_why_in_one_line(sweep, capsys):
    data = rundir.load(sweep)
    t = data.results["torch"].points[2]
    t.error, t.processes = "refuses 512x512x512\nTraceback (most recent call last): ...", []
    rundir.save(sweep, data)
    line = one_line_error(capsys, ["export", str(sweep), "--format", "folded", "--case", "torch@512"])
    assert "torch failed at 512 (refuses 512x512x512)" in line, line
    assert "Traceback" not in line


def test_a_sizes_layers_sum_to_the_figure_export_and_the_table_read(tmp_path, capsys):
    """The layers at a sampled size (the terminal's and the page's layer table) are scaled by the case's pooled
    figure there, the one the sweep's time table shows and export reads of CASE@SIZE; they were scaled by the
    median of every loop, so a CPU sweep's layer table read numpy 5.64 us total at 64 where its time table, its
    page's table and export read 5.63 (and further apart where the processes ran at more different speeds)."""
    from flametool.analyse import sweep as sweep_analysis

    path = sweep_dir(tmp_path / "sweep")
    data = json.loads((path / "run.json").read_text())
    # the processes at different speeds, and not alike for both cases: the median of every loop is then
    # another figure than the pooled one
    for label, factors in (("numpy", (1.0, 1.9)), ("torch", (1.0, 1.1))):
        for point in data["results"][label]["points"]:
            for process, f in zip(point["processes"], factors):
                process["cpu_us"] = [v * f for v in process["cpu_us"]]
                process["wall_us"] = [v * f for v in process["wall_us"]]
    (path / "run.json").write_text(json.dumps(data))
    run = rundir.load(path)
    a = sweep_analysis.analyse(path, run)
    checked, apart = 0, 0
    for size, by_case in a.layers.items():
        for label, costs in by_case.items():
            (point,) = [p for p in run.results[label].points if casenames.sized(label, p.shape, "matmul") == f"{label}@{size}"]
            (shown,) = [p.cpu_us for p in a.curves[label] if p.shape == point.shape]
            apart += abs(statistics.median(v for pr in point.processes for v in pr.cpu_us) / shown - 1) > 0.05
            assert costs.us_per_call == pytest.approx(shown, rel=1e-12), (label, size)
            out = tmp_path / f"{label}@{size}.json"
            assert main.main(["export", str(path), "--format", "speedscope", "--case", f"{label}@{size}", "-o", str(out)]) == 0
            (profile,) = json.loads(out.read_text())["profiles"]
            assert sum(profile["weights"]) == pytest.approx(costs.us_per_call, rel=1e-9)
            checked += 1
    assert checked == 4 and apart >= 2  # where the median of every loop is another figure
    # and the time table says what its figures are: it said "median of every loop" of the pooled figures
    from flametool import render

    shown = render.show("terminal", a)
    assert "each pooled over the processes at the median process's speed" in shown and "median of every loop" not in shown


@pytest.mark.parametrize("groups", [None, []])
def test_a_sweep_whose_groups_are_gone_is_read_unpaired(tmp_path, capsys, groups):
    """A sweep's run.json with `groups` null or empty (edited, or cut short by hand) while its cases still name group
    0: summary and report failed with an internal error (IndexError); each case is pooled on its own, as one
    whose group run.json does not hold is in a compare run."""
    run = make_sweep(tmp_path / "run", {"numpy": {8: (None, 4.0, None)}, "torch": {8: (None, 6.0, None)}})
    doc = json.loads((run / "run.json").read_text())
    doc["groups"] = groups
    (run / "run.json").write_text(json.dumps(doc))
    assert main.main(["summary", str(run)]) == 0
    out = capsys.readouterr().out
    assert "torch vs numpy at size 8: 1.500×" in out and "not paired" in out, out
    assert main.main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 0
