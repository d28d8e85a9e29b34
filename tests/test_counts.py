"""The counted loop (measure/counting.py) and its structural diff (analyse/countdiff.py), on the CPU: what a
step does, counted exactly, and an environment B whose sitecustomize.py adds one numpy call inside numpy.matmul
showing as exactly +1 call of it per step in `diff` and in the JSON summary."""

from __future__ import annotations

import cProfile
import json
import shutil
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from flametool.run import rundir
from flametool.analyse import compare, countdiff, dispatch
from flametool.commands import main
from flametool.render import format as fmt, report_counts
from flametool.run import counts
from flametool.run.counts import Counts, Tally, count_words, fraction_text, parse_fraction
from flametool.measure import counting
from shared import flametool_once, once

CASES = Path(__file__).parent / "cases" / "env_cases.py"
# B: numpy.matmul wrapped so that each call also calls numpy.zeros once (the numpy case's step calls matmul)
SITECUSTOMIZE = '''
import numpy as _np

_orig, _zeros = _np.matmul, _np.zeros


def matmul(*args, **kwargs):
    _zeros(1)
    return _orig(*args, **kwargs)


matmul.__wrapped__ = _orig
_np.matmul = matmul
'''


def test_fractions_are_exact_and_read_back():
    assert fraction_text(Fraction(3)) == "3" and fraction_text(Fraction(129, 32)) == "129/32"
    assert parse_fraction("129/32") == Fraction(129, 32) and parse_fraction("-7") == -7
    for bad in ("1.5", "1/0", "x", True, None, "1/-2"):
        with pytest.raises(ValueError):
            parse_fraction(bad)


def test_a_count_that_differs_between_calls_reads_as_a_size_then_exactly():
    """A busy-wait's clock reads (46741 in 9750 steps): people read the size, the JSON keeps the exact value."""
    assert count_words(Fraction(3)) == "3" and count_words(Fraction(1), sign=True) == "+1"
    assert count_words(Fraction(46741, 9750), sign=True) == "+4.794 (46741/9750)"
    assert count_words(Fraction(-1, 4), sign=True) == "-0.25 (-1/4)"
    base = Counts(10, 10, [Tally("python", "f", Fraction(1))], tracer="t")
    head = Counts(10, 10, [Tally("python", "f", Fraction(1)), Tally("python", "time.perf_counter",
                                                                     Fraction(46741, 9750))], tracer="t")
    d = countdiff.diff_counts(base, head)
    assert countdiff.lines(d)[0] == "head makes 4.794 (46741/9750) calls of time.perf_counter per step; base makes none of it"
    (row,) = [r for r in countdiff.to_json(d)["differences"] if r["name"] == "time.perf_counter"]
    assert (row["base"], row["head"], row["delta"]) == ("0", "46741/9750", "46741/9750")


def test_counts_round_trip_through_json():
    c = Counts(steps=64, python_steps=200, tallies=[Tally("api", "cuLaunchKernel", Fraction(1), us=1.5),
                                                     Tally("copy", "HTOD", Fraction(1, 4), Fraction(1024))],
               us_per_call=3.0, tracer="cupti-python 13.4.0", missing=[])
    back = Counts.from_json(json.loads(json.dumps(c.to_json())))
    assert back == c and back.total("api") == 1 and back.counted("kernel")


def test_module_names_do_not_depend_on_where_an_environment_lives():
    paths = ["/a/lib/python3.12/site-packages", "/b/site"]
    assert counting.module_of("/a/lib/python3.12/site-packages/numpy/_core/fromnumeric.py", paths) == \
        "numpy._core.fromnumeric"
    assert counting.module_of("/b/site/sitecustomize.py", paths) == "sitecustomize"
    assert counting.function_name(("~", 0, "<built-in method numpy.empty>")) == "numpy.empty"
    assert counting.function_name(("~", 0, "<method 'reshape' of 'numpy.ndarray' objects>")) == "numpy.ndarray.reshape"


def test_a_step_is_counted_exactly_on_the_cpu():
    a = np.ones((8, 8), np.float32)
    out = np.empty_like(a)
    calls = [0]

    def step():
        np.matmul(a, a, out=out)
        np.empty(1)
        calls[0] += 1
        if calls[0] % 4 == 0:  # a refill every fourth call: a quarter per step, exactly
            np.zeros(1)

    profiler = cProfile.Profile()
    profiler.enable()
    counting._loop(step, 400)
    profiler.disable()
    profiler.create_stats()
    c = counting.count(step, lambda: None, 64, "cpu", python=(profiler.stats, 400))
    got = {t.name: t.count for t in c.of("python")}
    assert got["numpy.empty"] == 1 and got["numpy.zeros"] == Fraction(1, 4)
    assert not any(name.endswith("._loop") for name in got)  # the loop is flametool's, not the step's
    assert c.tracer is None and c.missing == ["the case runs on the CPU (no CUDA API calls or kernels to count)"]
    assert c.us_per_call > 0 and {t.name for t in c.of("host-alloc")}


@pytest.mark.parametrize("steps", [37, 250])  # the profiled loop's length: --iters 37, the default 250
def test_work_that_repeats_every_few_calls_is_counted_exactly_whatever_the_loops_length(steps):
    """The counted loop's windows hold whole periods of work that repeats every 2, 4, 8 or 16 calls, so their
    difference is exact at any loop length (a window of 250 calls held 62 or 63 of a fourth call's work: 63/250
    where a step makes 1/4, and its lines, read so, were left out as not summing to the step's)."""
    calls = [0]

    def step():
        calls[0] += 1
        if calls[0] % 2 == 0:
            len(())
        if calls[0] % 4 == 0:
            len(())
        if calls[0] % 8 == 0:
            len(())

    profiler = cProfile.Profile()
    profiler.enable()
    counting._loop(step, 800)
    profiler.disable()
    profiler.create_stats()
    c = counting.count(step, lambda: None, counting.count_steps(steps), "cpu", python=(profiler.stats, 800))
    assert {t.name: t.count for t in c.of("python")}["builtins.len"] == Fraction(7, 8)  # 1/2 + 1/4 + 1/8
    assert not [m for m in c.missing if "per line" in m], c.missing
    assert sorted(l.counts["python"] for l in c.by_line if "python" in l.counts) == \
        [Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), 1]  # the three lines and step() at its def line


def test_the_cprofile_loop_holds_whole_periods_so_lines_of_periodic_work_are_listed(tmp_path, monkeypatch):
    """The cProfile loop, whose table gives the step's Python calls, ran loops of 250 calls: a step making a call
    every fourth read 63/250 (or 62/250) there and 1/4 per line, so its Python calls per line were left out as
    not summing to the step's. Its loops are whole 16s now: both read 1/4, and the lines are listed."""
    from flametool.measure.child import loops

    monkeypatch.setattr(loops, "CPROFILE_MAX_LOOPS", 1)  # one loop (an odd number of 250s held 62 or 63 fourths)
    calls = [0]

    def step():
        calls[0] += 1
        if calls[0] % 4 == 0:
            len(())

    _, profiled, table, corrupted = loops.cprofile_phase(step, lambda: None, 250, str(tmp_path / "step.prof"))
    assert corrupted is None and profiled % 16 == 0 and profiled > 0
    c = counting.count(step, lambda: None, counting.count_steps(250), "cpu", python=(table, profiled))
    assert {t.name: t.count for t in c.of("python")}["builtins.len"] == Fraction(1, 4)
    assert not [m for m in c.missing if "per line" in m], c.missing
    assert Fraction(1, 4) in [l.counts.get("python") for l in c.by_line]


def test_the_kinds_table_is_what_every_reader_says():
    """run/counts.py's COUNTED is the one place a counted kind is written: the table's columns, the diff's words,
    the totals line, run.json's clocks and the report's note all read it."""
    assert [c.title for c in counts.columns()] == ["Python calls", "CUDA API calls", "kernels",
                                                   "copies, memsets, device allocations, host allocations"]
    assert list(counts.CLOCKS) == ["api", "kernel", "copy", "memset"]
    assert report_counts.counted_by() == ("Python calls from the cProfile loop; CUDA API calls, kernels, copies and memsets "
                                 "from CUPTI in a counted loop of their own")
    c = Counts(10, 10, [Tally("python", "f", Fraction(2)), Tally("kernel", "k", Fraction(1)),
                        Tally("copy", "HtoD", Fraction(1), Fraction(64)), Tally("host-alloc", "blocks", Fraction(1))],
               tracer="t")
    assert fmt.count_cells(c, empty="-") == ["2 in 1 function", "", "1 k", "1 copy HtoD (64 B)"]
    assert countdiff.summary_line(c) == "2 Python calls, 0 CUDA API calls, 1 kernel, 1 copy per step"


def test_a_new_counted_kind_is_one_row_of_the_table(monkeypatch):
    """A kind added to COUNTED alone (here CUDA graph launches, traced, shown with the memory column) is counted
    where the tracer ran, named in the table's header and cells, worded in a diff's line, totalled, timed in
    run.json's clocks and said in the report's note."""
    graph = counts.Kind("graph", "graph launches", "graph", counts.GPU_CLOCK, "tracer", summed="made",
                        same_listed=True, column="memory")
    table = counts.COUNTED + (graph,)
    monkeypatch.setattr(counts, "COUNTED", table)
    monkeypatch.setattr(counts, "KINDS", {k.name: k for k in table})
    monkeypatch.setattr(counts, "CLOCKS", {k.name: k.clock for k in table if k.clock is not None})
    base = Counts(10, 10, [Tally("graph", "g", Fraction(1))], tracer="t")
    head = Counts(10, 10, [Tally("graph", "g", Fraction(2))], tracer="t")
    assert counts.columns()[-1].title == "copies, memsets, device allocations, host allocations, graph launches"
    assert fmt.count_cells(head)[-1] == "2 graph g"
    assert countdiff.lines(countdiff.diff_counts(base, head))[0] == "head makes 2 graph g per step; base makes 1"
    assert countdiff.summary_line(head).endswith(", 2 graph launches per step")
    assert head.to_json()["clocks"]["graph"] == "GPU us per step"
    assert not Counts(10, 10).counted("graph") and "graph launches from CUPTI" in report_counts.counted_by()


def test_a_structural_difference_is_exact_and_listed_first():
    base = Counts(10, 10, [Tally("python", "f", Fraction(1)), Tally("api", "cudaStreamIsCapturing", Fraction(1)),
                           Tally("kernel", "nvjet", Fraction(1))], tracer="t")
    head = Counts(10, 10, [Tally("python", "f", Fraction(1)), Tally("python", "numpy.empty", Fraction(1)),
                           Tally("kernel", "nvjet", Fraction(1))], tracer="t")
    d = countdiff.diff_counts(base, head, "A", "B")
    lines = countdiff.lines(d)
    assert lines[:2] == ["B makes 1 call of numpy.empty per step; A makes none of it",
                         "A makes 1 call of cudaStreamIsCapturing per step; B makes none of it"]
    assert "both make 1 launch of kernel nvjet per step" in lines
    assert countdiff.diff_counts(None, None) is None
    assert countdiff.diff_counts(None, head).notes[0].startswith("base has no counted loop")


@pytest.fixture(scope="module")
def env_b(tmp_path_factory) -> Path:
    def make(d: Path) -> None:  # one for the session: the shared run below names it
        (d / "site").mkdir()
        (d / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
        script = d / "python"
        script.write_text(f'#!/bin/sh\nPYTHONPATH="{d / "site"}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
        script.chmod(0o755)

    return once(tmp_path_factory, "counts-env-b", make) / "python"


@pytest.fixture(scope="module")
def env_run(cli, tmp_path_factory, env_b):
    # made once in the session, by whichever worker asks first (tests/shared.py), and only read
    out, proc = flametool_once(tmp_path_factory, "counts-envs", "compare", "--device", "cpu", "--libs", "numpy",
                               "--case", f"{CASES}:dot", "--anchor", "dot", "--env", f"a={sys.executable}",
                               "--env", f"b={env_b}", "--no-sample", "--processes", "2", "--repeats", "3", "--iters", "100")
    assert proc.returncode == 0, proc.stderr
    return out


def test_one_numpy_call_more_in_b_is_plus_one_per_step(cli, env_run):
    a = dispatch.analyse_dir(env_run)
    (pair,) = [p for p in a.pairs if (p.base, p.head) == ("numpy@a", "numpy@b")]
    changed = {(r.kind, r.name): r.delta for r in pair.counts.changed}
    assert changed == {("python", "numpy.zeros"): 1, ("python", "sitecustomize.matmul"): 1}
    # the anchor is the same in both
    assert not countdiff.diff_counts(*(compare.counts_of(a.run, l) for l in ("dot@a", "dot@b"))).changed

    doc = json.loads(cli("summary", str(env_run), "--format", "json").stdout)
    assert doc["version"] == 3
    (p,) = [p for p in doc["pairs"] if (p["base"], p["head"]) == ("numpy@a", "numpy@b")]
    assert {(d["name"], d["delta"]) for d in p["counts"]["differences"]} == {("numpy.zeros", "1"),
                                                                             ("sitecustomize.matmul", "1")}
    assert p["difference_us"]["value"] is not None  # the anchored time difference beside it
    assert p["counts"]["head_counts"]["tallies"] and p["counts"]["base_counts"]["python_steps"]

    text = cli("diff", str(env_run), "--base", "numpy@a", "--head", "numpy@b").stdout
    timed, counted = text.index("numpy@b / numpy@a"), text.index("numpy@b makes 1 call of numpy.zeros per step")
    assert timed < counted and "numpy@b makes 1 call of sitecustomize.matmul per step; numpy@a makes none of it" in text


def test_a_run_recorded_before_counting_still_reports_and_diffs(cli, env_run, tmp_path):
    """A schema 2 run (no counted loop) reads back, summarises and diffs: no counts, one line saying so."""
    old = tmp_path / "old"
    shutil.copytree(env_run, old)
    data = json.loads((old / "run.json").read_text())
    data["schema"] = 2
    for r in data["results"].values():
        (r.get("profile") or {}).pop("counts", None)
    (old / "run.json").write_text(json.dumps(data))
    run = rundir.load(old)
    assert run.schema == 2 and all(r.profile is None or r.profile.counts is None for r in run.results.values())
    doc = json.loads(cli("summary", str(old), "--format", "json").stdout)
    assert all(p["counts"] is None for p in doc["pairs"])
    diffed = cli("diff", str(old), str(env_run), "--case", "numpy@b")
    assert diffed.returncode == 0, diffed.stderr
    assert "A has no counted loop" in diffed.stdout


H200_SUM = Path(__file__).parent / "data" / "h200-sum-counts"  # compare --op sum on the H200, cupti-python 13.4.0


def run_main(capsys, *argv: str) -> tuple[int, str]:
    """A command in this process (no interpreter to start): its exit code and what it printed."""
    code = main.main(list(argv))
    return code, capsys.readouterr().out


def test_an_h200_run_shows_kernels_and_api_calls_per_call(capsys, tmp_path):
    """What the H200 recorded (benchmarks/results/h200-2026-12-01f-compare-addsum.txt): the terminal, the JSON
    summary, the diff and the report show each library's kernels and API calls per call, counts first."""
    run = rundir.load(H200_SUM)
    counts = {l: r.profile.counts for l, r in run.results.items()}
    assert all(c is not None and c.tracer == "cupti-python 13.4.0" for c in counts.values())
    assert counts["cuda-launch"].of("api")[0].name == "cuLaunchKernel" and counts["cuda-launch"].total("kernel") == 1

    text = run_main(capsys, "diff", str(H200_SUM), "--base", "cupy", "--head", "torch")[1]
    assert text.index("torch / cupy") < text.index("torch makes 1 call of torch.sum per step; cupy makes none of it")
    doc = json.loads(run_main(capsys, "summary", str(H200_SUM), "--format", "json")[1])
    by_case = {c["label"]: c["counts"] for c in doc["cases"]}
    kernels = {l: sum(Fraction(t["count"]) for t in c["tallies"] if t["kind"] == "kernel") for l, c in by_case.items()}
    assert kernels == {l: c.total("kernel") for l, c in counts.items()}
    (pair,) = doc["pairs"]
    assert len(pair["counts"]["differences"]) == len(countdiff.diff_counts(counts["cupy"], counts["torch"]).changed)

    out = tmp_path / "report.html"
    assert run_main(capsys, "report", str(H200_SUM), "-o", str(out))[0] == 0
    page = out.read_text()
    assert 'id="counts"' in page and "flametool_empty" in page and "cuLaunchKernel" in page


def test_the_atlas_gains_kernels_and_api_calls_per_call(tmp_path):
    """An atlas whose sum run has counts (the H200's): a column of kernels and API calls per call, and the
    fastest library is a library, not the driver floor."""
    from flametool.render.base import Options
    from flametool.render.atlas_tables import TerminalAtlas

    atlas = tmp_path / "atlas"
    shutil.copytree(Path(__file__).parent.parent / "samples" / "h200-atlas", atlas,
                    ignore=shutil.ignore_patterns("*.folded", "report.html"))
    data = json.loads((atlas / "run.json").read_text())
    data["parts"] = [p for p in data["parts"] if p["op"] in ("matmul", "sum")]
    (atlas / "run.json").write_text(json.dumps(data))
    shutil.rmtree(atlas / "sum")
    shutil.copytree(H200_SUM, atlas / "sum")
    a = dispatch.analyse_dir(atlas)
    (row,) = [r for r in a.rows if r.op == "sum"]
    counts = rundir.load(H200_SUM).results
    for label, c in row.cells.items():
        assert (c.kernels, c.api_calls) == (counts[label].profile.counts.total("kernel"),
                                            counts[label].profile.counts.total("api"))
    assert row.fastest != "cuda-launch"
    assert all(not c.counted for r in a.rows if r.op == "matmul" for c in r.cells.values())  # recorded before
    text = TerminalAtlas(Options(width=300)).render(a)
    assert "kernels, API calls" in text and "1 kernel, 1 API call" in text


def test_a_worker_thread_gets_its_own_time_and_stacks(cli, tmp_path):
    """py-spy samples every thread: the threads other than the caller are kept apart (LABEL.threads.folded),
    with their CPU time per call from the timed loops (every thread's CPU time minus the caller's own)."""
    from flametool.render.base import Options
    from flametool.render.compare_tables import TerminalCompare

    out = tmp_path / "run"
    proc = cli("compare", "--device", "cpu", "--libs", "numpy",
               "--case", f"{Path(__file__).parent / 'cases' / 'thread_cases.py'}:spin_beside",
               "--processes", "1", "--repeats", "3", "--iters", "5000", "--sample-seconds", "0.5", "--rate", "100",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    run = rundir.load(out)
    r = run.results["spin_beside"]
    assert r.file("threads") == "spin_beside.threads.folded" and r.sampling.other_samples > 0
    assert all(p.other_threads_us for p in r.at_sample_shape.processes)
    a = dispatch.analyse_dir(out)
    t = a.threads["spin_beside"]
    assert t.us_per_call > 0 and t.profile is not None and t.profile.samples == r.sampling.other_samples
    names = {f.frame for f in t.costs.frames}
    assert any("worker_spin" in n for n in names) and "[thread spinner]" in names
    assert not any("worker_spin" in f.frame for f in a.cases["spin_beside"].frames)  # not in the caller's
    assert "threads other than the caller" in TerminalCompare(Options(width=300)).render(a)
    assert cli("report", str(out), "-o", str(tmp_path / "r.html")).returncode == 0
    page = (tmp_path / "r.html").read_text()
    assert "Threads other than the caller" in page and "spin_beside: other threads" in page


def test_a_damaged_count_is_one_error_naming_where(tmp_path):
    from flametool.errors import RunDirError

    run = tmp_path / "run"
    shutil.copytree(H200_SUM, run)
    data = json.loads((run / "run.json").read_text())
    data["results"]["cupy"]["profile"]["counts"]["tallies"][0]["count"] = "1.5"
    (run / "run.json").write_text(json.dumps(data))
    with pytest.raises(RunDirError, match=r"results\.cupy\.profile\.counts: not a count: '1\.5'"):
        rundir.load(run)
