"""Diffs on a merged call tree: case vs case in a run, one case across two runs, and `flametool diff`."""

import pytest

from checks import one_line_error

from flametool.analyse import attribution as at
from flametool.commands import main
from flametool.analyse import treediff
from flametool.run import folded
from runbuild import make_run, snapshot

# base: 6 samples at 6 us per call; head: 8 samples at 8 us per call -> 1 us per sample on both sides
BASE = ("case_a.<locals>.step (tests/a.py:1);shared (lib/s.py:1);x (lib/s.py:2) 4\n"
        "case_a.<locals>.step (tests/a.py:1);shared (lib/s.py:1) 2\n")
HEAD = ("case_b.<locals>.step (tests/b.py:1);shared (lib/s.py:1);x (lib/s.py:2) 4\n"
        "case_b.<locals>.step (tests/b.py:1);shared (lib/s.py:1);planted (tests/b.py:9);0x1 (libc.so.6) 3\n"
        "case_b.<locals>.step (tests/b.py:1);shared (lib/s.py:1);planted (tests/b.py:9) 1\n")


def profile(label, text, us):
    return at.make_profile(label, folded.parse(text), 0, us)


@pytest.fixture
def d():
    return treediff.diff(profile("a", BASE, 6.0), profile("b", HEAD, 8.0), view="library", with_tree=True)


def rows(d):
    return {r.frame: r for r in d.frames}


def test_steps_of_two_cases_line_up_and_the_shared_part_cancels(d):
    r = rows(d)
    assert r[treediff.STEP_ROOT].delta_total_us_per_call == pytest.approx(2.0)
    assert r["lib.s.x"].delta_us_per_call == pytest.approx(0.0)
    assert r["lib.s.shared"].delta_us_per_call == pytest.approx(-2.0)
    assert r["tests.b.planted"].delta_us_per_call == pytest.approx(1.0)
    assert r["tests.b.planted"].delta_total_us_per_call == pytest.approx(4.0)
    assert r["[libc.so.6]"].delta_us_per_call == pytest.approx(3.0)
    # the step functions' own names do not appear: they are the aligned root
    assert not any("case_a" in f or "case_b" in f for f in r)
    assert d.frames[0].frame == "[libc.so.6]"  # the biggest change in self time comes first


def test_the_caller_view_moves_the_c_library_delta_to_its_callers():
    caller = treediff.diff(profile("a", BASE, 6.0), profile("b", HEAD, 8.0))  # the default view
    assert "C library/allocator" not in {r.layer for r in caller.layers}
    assert sum(r.delta_us_per_call for r in caller.layers) == pytest.approx(2.0)


def test_layer_deltas_add_up_to_the_measured_difference(d):
    assert d.base == "a" and d.head == "b"
    assert d.delta_us_per_call == pytest.approx(2.0)
    assert sum(r.delta_us_per_call for r in d.layers) == pytest.approx(2.0)
    by_layer = {r.layer: r for r in d.layers}
    assert by_layer["C library/allocator"].delta_us_per_call == pytest.approx(3.0)
    assert by_layer["Python"].delta_us_per_call == pytest.approx(-1.0)
    assert by_layer["C library/allocator"].delta_se_us > 0


def test_differential_flame_graph_nodes(d):
    root = d.tree
    root.check()  # total = self + children's totals, both sides, everywhere
    ub, uh = d.us_per_sample
    by_path = {}
    for node, parent, _ in root.walk():
        by_path[by_path_of(by_path, parent) + (node.name,)] = node
    step = by_path[(treediff.STEP_ROOT,)]
    assert step.total[1] * uh == pytest.approx(8.0) and step.total[0] * ub == pytest.approx(6.0)
    planted = by_path[(treediff.STEP_ROOT, "lib.s.shared", "tests.b.planted")]
    assert planted.total[0] == 0 and (planted.total[1] * uh - planted.total[0] * ub) == pytest.approx(4.0)
    assert planted.layer == "Python"
    x = by_path[(treediff.STEP_ROOT, "lib.s.shared", "lib.s.x")]
    assert x.self[1] * uh - x.self[0] * ub == pytest.approx(0.0)


def by_path_of(by_path: dict, node) -> tuple:
    return next((path for path, n in by_path.items() if n is node), ())


def test_a_native_step_sits_under_the_root():
    p = profile("n", "ufunc_generic_fastcall (numpy/_core/_umath.so);sgemm_ (libopenblas.so) 2\n", 2.0)
    assert treediff.aligned(p)[0].frames == (treediff.STEP_ROOT, "ufunc_generic_fastcall (numpy/_core/_umath.so)",
                                         "sgemm_ (libopenblas.so)")


# --- flametool diff RUN_A RUN_B --------------------------------------------------------------------------

@pytest.fixture
def runs(tmp_path):
    # two processes a side: a --fail-above verdict needs them (one process's rounds share its own speed)
    a = make_run(tmp_path / "a", {"numpy": (BASE, 6.0, 0), "torch": (BASE, 6.0, 0)}, processes=2)
    b = make_run(tmp_path / "b", {"numpy": (HEAD, 8.0, 0)}, processes=2)
    return a, b


def test_diff_runs_passes_under_the_threshold(capsys, runs):
    a, b = runs
    before = snapshot(a), snapshot(b)
    assert main.main(["diff", str(a), str(b), "--fail-above", "50"]) == 0
    out = capsys.readouterr().out
    assert "numpy" in out and "planted" in out
    assert (snapshot(a), snapshot(b)) == before  # diff writes nothing


def test_diff_runs_fails_above_the_threshold_with_exit_3(capsys, runs):
    a, b = runs
    line = one_line_error(capsys, ["diff", str(a), str(b), "--case", "numpy", "--fail-above", "10"], code=3)
    assert "+33.3%" in line and "numpy" in line


def test_diff_runs_faster_never_fails(capsys, runs):
    a, b = runs
    assert main.main(["diff", str(b), str(a), "--fail-above", "0"]) == 0


@pytest.mark.parametrize("args, words", [
    (["--case", "torch"], "no such case"),
    (["--case", "jax"], "no such case"),
    (["--fail-above", "-1"], "--fail-above"),
])
def test_diff_runs_bad_input(capsys, runs, args, words):
    a, b = runs
    assert words in one_line_error(capsys, ["diff", str(a), str(b), *args])


def test_diff_runs_missing_or_corrupt_run(capsys, runs, tmp_path):
    a, b = runs
    assert "no such run directory" in one_line_error(capsys, ["diff", str(a), str(tmp_path / "nope")])
    (b / "run.json").write_text("{not json")
    before = snapshot(b)
    assert "cannot be read as JSON" in one_line_error(capsys, ["diff", str(a), str(b)])
    assert snapshot(b) == before


def test_diff_runs_garbage_folded(capsys, runs):
    a, b = runs
    (b / "numpy.folded").write_text("\x00\x01 garbage\n")
    before = snapshot(b)
    assert "numpy.folded: line 1" in one_line_error(capsys, ["diff", str(a), str(b)])
    assert snapshot(b) == before


def test_an_address_above_step_is_not_a_root_of_its_own():
    p = profile("n", "0x7f1b (libc.so.6);case.<locals>.step (t/c.py:1);f (lib/m.py:2) 1\n"
                     "case.<locals>.step (t/c.py:1);f (lib/m.py:2) 1\n", 2.0)
    assert treediff.aligned(p) == [folded.Stack((treediff.STEP_ROOT, "lib.m.f"), 2)]


# --- diff RUN --base A --head B of a run that was not sampled ------------------------------------------------

def test_diff_of_two_cases_of_a_run_not_sampled_gives_the_ratio(capsys, tmp_path):
    """`--no-sample`: as `diff RUN_A RUN_B` and `summary` do, the ratio and the verdict, and no layers."""
    from flametool.run import rundir

    run = make_run(tmp_path / "r", {"numpy": (BASE, 6.0, 0), "torch": (HEAD, 9.0, 0)}, processes=2)
    data = rundir.load(run)
    for r in data.results.values():
        r.profile.files, r.profile.sampling = {}, None
        (run / f"{r.label}.folded").unlink()
    rundir.save(run, data)
    assert main.main(["diff", str(run), "--base", "numpy", "--head", "torch"]) == 0
    out = capsys.readouterr().out
    assert "torch / numpy = 1.500×" in out and "not both sampled" in out
    line = one_line_error(capsys, ["diff", str(run), "--base", "numpy", "--head", "torch", "--fail-above", "10"], code=3)
    assert "+50.0%" in line


# numpy's OpenBLAS and torch's MKL do the same product under other names; torch takes a lock numpy does not
OPENBLAS = ("step (s.py:1);ufunc_generic_fastcall (_multiarray_umath.so);sgemm_nn (libopenblas.so);"
            "sgemm_kernel_HASWELL (libopenblas.so) 50\n"
            "step (s.py:1);ufunc_generic_fastcall (_multiarray_umath.so);sgemm_nn (libopenblas.so);"
            "sgemm_oncopy_HASWELL (libopenblas.so) 10\n"
            "step (s.py:1);ufunc_generic_fastcall (_multiarray_umath.so) 20\n")
MKL = ("step (s.py:1);THPVariable_mm (libtorch_python.so);mkl_blas_sgemm (libtorch_cpu.so);"
       "mkl_blas_def_sgemm_kernel_0_zen (libtorch_cpu.so) 52\n"
       "step (s.py:1);THPVariable_mm (libtorch_python.so);mkl_blas_sgemm (libtorch_cpu.so);"
       "mkl_blas_def_sgemm_scopy_right4_bdz (libtorch_cpu.so) 9\n"
       "step (s.py:1);THPVariable_mm (libtorch_python.so);pthread_mutex_lock (libc.so.6) 4\n"
       "step (s.py:1);THPVariable_mm (libtorch_python.so) 15\n")


def test_frames_of_two_libraries_are_matched_by_what_they_do(tmp_path, capsys):
    """Issue 33, item 2: numpy's OpenBLAS sgemm_kernel_HASWELL against torch's MKL
    mkl_blas_def_sgemm_kernel_0_zen led the frame diff (-6.44 / +6.73 us) and summary's "largest frame
    difference": one job under two names. Across libraries, frames of one role (roles.json) that only one side
    has are one row, and what differs beyond them leads; within one library (two runs of a case) frames are
    matched by name alone."""
    from flametool.analyse import dispatch, roles

    assert {"GEMM kernel", "allocator", "lock", "launch"} <= set(roles.about())
    run = make_run(tmp_path / "run", {"numpy": (OPENBLAS, 8.0, 0), "torch": (MKL, 8.0, 0)})
    a = dispatch.analyse_dir(run)
    d = a.pairs[0].diff
    by = {r.frame: r for r in d.frames}
    kernel = by["[GEMM kernel]"]
    assert kernel.members == (("sgemm_kernel_HASWELL (libopenblas.so)",), ("mkl_blas_def_sgemm_kernel_0_zen (libtorch_cpu.so)",))
    assert kernel.display == "GEMM kernel: sgemm_kernel_HASWELL (numpy) ≈ mkl_blas_def_sgemm_kernel_0_zen (torch)"
    assert kernel.delta_us_per_call == pytest.approx(0.2)  # 52 - 50 samples of 0.1 us
    assert "[GEMM packing]" in by and "[GEMM driver]" in by
    assert not any("HASWELL" in r.frame or "zen" in r.frame for r in d.frames if r.role is None)
    assert by["pthread_mutex_lock (libc.so.6)"].role is None  # a lock only one side takes stays itself
    assert abs(d.frames[0].delta_us_per_call) > abs(kernel.delta_us_per_call)
    assert main.main(["summary", str(run)]) == 0
    out = capsys.readouterr().out
    assert "largest frame difference: " in out and "HASWELL" not in out.split("largest frame difference: ")[1]
    # one library in two runs (or two environments): by name only
    same = treediff.diff(profile("a", OPENBLAS, 8.0), profile("b", OPENBLAS.replace(" 50\n", " 40\n"), 7.0))
    assert not any(r.role for r in same.frames)


def test_the_unanchored_difference_is_the_difference_of_the_two_figures_shown(capsys):
    """diff's "not anchored" line puts A's and B's times per call side by side and their difference after them:
    that difference is of the two figures as shown (it printed 17.40 → 17.72, +0.31)."""
    import re
    from pathlib import Path

    samples = Path(__file__).resolve().parent.parent / "samples"
    a, b = samples / "h200-seed-fp16", samples / "h200-hostbound-1024"
    if not (a.is_dir() and b.is_dir()):
        pytest.skip("the H200 samples are not recorded")
    assert main.main(["diff", str(a), str(b), "--case", "cupy"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    m = re.search(r"not anchored: A ([\d.,]+) us → B ([\d.,]+) us per call, ([+-][\d.,]+) us", out)
    assert m, out[:600]
    base, head, diff = (float(x.replace(",", "")) for x in m.groups())
    assert diff == pytest.approx(head - base, abs=1e-9)
    # where the host ran slower, in the words markdown uses ('in B (RUN_B)' in the text only)
    assert re.search(r"the host ran [\d.]+% slower in B speed adjustment:", out) and "(RUN_B)" not in out


def test_a_run_against_itself_has_one_interval_in_every_view(capsys):
    """diff RUN RUN: the processes on both sides are the same units, so every interval of the change is the
    figure alone, in the text as in JSON (the text printed the anchored ratio's 0.980 to 1.021 beside JSON's
    1.000 to 1.000, and JSON a difference interval of -0.38 to +0.38 beside that ratio interval)."""
    import json
    import re
    from pathlib import Path

    run = Path(__file__).resolve().parent.parent / "samples" / "h200-seed-fp16"
    if not run.is_dir():
        pytest.skip("samples/h200-seed-fp16 is not recorded")
    assert main.main(["diff", str(run), str(run), "--case", "cupy"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert re.search(r"= 1\.000× \(95%: 1\.000 to 1\.000\); B − A = \+0\.00 us per call \(95%: \+0\.00 to \+0\.00\)", text)
    assert "+0.00 us (95%: +0.00 to +0.00), 1.000×" in text  # the unanchored figure beside it
    assert main.main(["diff", str(run), str(run), "--case", "cupy", "--format", "json"]) == 0
    pair = json.loads(capsys.readouterr().out)["pairs"][0]
    for figure in (pair["ratio"], pair["difference_us"], pair["absolute"]["ratio"], pair["absolute"]["difference_us"]):
        assert figure["low"] == figure["value"] == figure["high"], figure


def test_a_run_interrupted_before_its_cases_were_timed_is_said_so(capsys, tmp_path):
    """diff of a run stopped before anything was timed said "have no case in common" (both list the same cases)
    or "(it failed there)" (nothing failed): it says the run ended first, as its run.json says."""
    from flametool.run import rundir

    a = make_run(tmp_path / "a", {"numpy": (BASE, 6.0, 0), "torch": (BASE, 6.0, 0)}, processes=2)
    b = make_run(tmp_path / "b", {"numpy": (HEAD, 8.0, 0), "torch": (HEAD, 8.0, 0)}, processes=2)
    run = rundir.load(a)
    run.complete = False
    for r in run.results.values():
        r.timing = r.sample_timing = r.profile = None
    rundir.save(a, run)
    line = one_line_error(capsys, ["diff", str(a), str(b)])
    assert "have no case timed in both (numpy, torch in each" in line and "ended before they were timed" in line, line
    line = one_line_error(capsys, ["diff", str(a), str(b), "--case", "torch"])
    assert "it has no timings in RUN_A (the run ended before it was timed: run.json is incomplete)" in line, line
    # two cases of the interrupted run: the same cause, not "(it failed there)"
    line = one_line_error(capsys, ["diff", str(a), "--base", "numpy", "--head", "torch"])
    assert "it has no timings in" in line and "(the run ended before it was timed: run.json is incomplete)" in line, line


def test_an_inconclusive_verdict_more_processes_would_not_settle_gives_no_advice_against_itself():
    """'more processes would not settle it at this spread' was followed by 'to decide it, compare again ... and a
    longer --budget': the advice to add processes goes where processes would settle it, and only there."""
    from types import SimpleNamespace

    from flametool.analyse.diff import Change, verdict
    from flametool.run.stats import Interval

    def change(need):
        anchored = SimpleNamespace(processes_to_settle=lambda limit: need, units=5, unit_name="processes")
        return Change(1.04, Interval(1.01, 1.07, "t"), "relative to torch", anchored)  # type: ignore[arg-type]

    stuck = verdict(change(None), "numpy@b vs numpy@a", 5.0)
    assert stuck.outcome == "inconclusive" and "more processes would not settle it" in stuck.sentence
    assert "longer --budget" not in stuck.sentence, stuck.sentence
    settles = verdict(change(14), "numpy@b vs numpy@a", 5.0)
    assert "about 14 processes a side would settle it" in settles.sentence and "longer --budget" in settles.sentence


def _unpaired_change(paired: bool, units: int, unit_name: str, low: float, high: float):
    from flametool.analyse.diff import Change
    from flametool.run.stats import Interval, PairFigures

    f = PairFigures("numpy", "torch", paired, 1.2, Interval(low, high, "t"), 1.0, Interval(0.5, 1.5, "t"), units,
                    unit_name, [], [], "m", 5.0)
    return Change(f.ratio, f.ratio_interval, "paired in the same processes" if paired else "not paired", None, f)


@pytest.mark.parametrize("units, unit_name, low, high", [(1, "rounds of one process", 1.19, 1.21),
                                                         (3, "processes", 1.0, 1.4)])
def test_an_unpaired_verdict_advises_processes_not_a_budget(units, unit_name, low, high):
    """compare --isolate --fail-above: no process is added for a pair not timed in the same processes, so its
    inconclusive verdict advised '--fail-above and a longer --budget' (or that compare 'adds processes until the
    verdict is decided'), which would have run the same processes again."""
    from flametool.analyse.diff import UNPAIRED, verdict

    v = verdict(_unpaired_change(False, units, unit_name, low, high), "torch vs numpy", 10)
    assert v.outcome == "inconclusive" and UNPAIRED in v.sentence, v.sentence
    assert "--budget" not in v.sentence and "it adds processes" not in v.sentence, v.sentence
    # a paired pair keeps its advice: there compare adds processes until it is decided
    v = verdict(_unpaired_change(True, units, unit_name, low, high), "torch vs numpy", 10)
    assert UNPAIRED not in v.sentence and ("--budget" in v.sentence or "it adds processes" in v.sentence), v.sentence


def test_compare_says_an_unpaired_verdict_was_not_left_to_a_budget():
    """compare --isolate --fail-above 5 --budget 15 said 'inconclusive (not decided within the budget of 15 s)
    ... in 7 s': no process was added for the pair, the budget had nothing to do with it."""
    from flametool.commands.compare import how_decided

    unpaired = _unpaired_change(False, 1, "rounds of one process", 1.19, 1.21)
    assert how_decided("inconclusive", unpaired, 15.0) == "not decided: not paired, so no processes were added"
    assert how_decided("slower", unpaired, 15.0) == "decided"
    paired = _unpaired_change(True, 3, "processes", 1.0, 1.4)
    assert how_decided("inconclusive", paired, 15.0) == "not decided within the budget of 15 s"
    assert how_decided("inconclusive", paired, None) == "not decided"
    # the processes stopped at the most compare runs, not at the budget: said as it was
    assert how_decided("inconclusive", paired, 15.0, 12) == "not decided within the budget of 15 s"
    assert how_decided("inconclusive", paired, 15.0, 3) == "not decided with the most processes compare runs (3)"
    # stopped at the --processes it always runs (3 here): a --budget 15 run that took 57 s read 'not decided within
    # the budget of 15 s'
    assert how_decided("inconclusive", paired, 15.0, 12, 3) == (
        "not decided with the 3 processes it starts with (--processes; the budget of 15 s bounds only the processes "
        "added after them)")
    assert how_decided("inconclusive", paired, 15.0, 12, 2) == "not decided within the budget of 15 s"


def test_an_inconclusive_verdict_at_the_most_processes_asks_for_more_processes_not_a_longer_budget():
    """compare --fail-above that stopped at the most processes it runs (60 a side with --env) advised 'a longer
    --budget SECONDS', which adds none: it now names --processes as many as would settle it."""
    from types import SimpleNamespace

    from flametool.analyse.diff import Change, verdict
    from flametool.run.stats import Interval

    anchored = SimpleNamespace(processes_to_settle=lambda limit: 90, units=60, unit_name="processes")
    change = Change(1.04, Interval(1.01, 1.07, "t"), "relative to torch", anchored)  # type: ignore[arg-type]
    at_most = verdict(change, "numpy@b vs numpy@a", 5.0, most=60)
    assert at_most.outcome == "inconclusive" and "longer --budget SECONDS" not in at_most.sentence, at_most.sentence
    assert "--fail-above 5 --processes 90 (this run stopped at the most processes compare runs, 60 a side" \
        in at_most.sentence, at_most.sentence
    # stopped by the budget (no `most`): the budget's advice, as before
    assert "a longer --budget SECONDS" in verdict(change, "numpy@b vs numpy@a", 5.0).sentence
