"""What a user reads (issue 43): the answer first, counted differences in words, no empty CUDA parts on a CPU run,
kernel names demangled and shortened (the full name on hover and in the JSON), tables that keep names whole at 80
columns. On the committed runs and small hand-built records, no measuring."""

from __future__ import annotations

import io
import json
import re
from fractions import Fraction
from pathlib import Path

from flametool import render
from flametool.analyse import countdiff, cxxnames, dispatch
from flametool.commands import main
from flametool.render import format as fmt
from flametool.render.base import Options
from flametool.run.counts import Counts, Tally

ROOT = Path(__file__).resolve().parent.parent
H200_SUM = ROOT / "tests" / "data" / "h200-sum-counts"
HOSTBOUND = ROOT / "samples" / "h200-hostbound-1024"
MANGLED = ("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIN3c104HalfENS0_14func_wrapper_tIS4_ZNS0_11sum_"
           "functorIS4_fS4_EclERNS_14TensorIteratorEEUlffE_EEjS4_Li4ELi8EEEEEvT1_")


def test_a_kernel_name_is_demangled_and_shortened_by_template_depth():
    assert cxxnames.demangled(MANGLED).startswith("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<")
    assert cxxnames.shortened(MANGLED) == "at::native::reduce_kernel<…>"
    assert cxxnames.shortened("nvjet_hsh_128x64") == "nvjet_hsh_128x64"  # not mangled: as it is
    assert cxxnames.demangled("_Znot a symbol") == "_Znot a symbol"  # the demangler fails: the raw name


def test_a_python_functions_own_name_in_angle_brackets_is_not_taken_for_a_template():
    """cProfile names a comprehension, a lambda or a generator expression '<dictcomp>': on Python 3.11 numpy's sum
    calls numpy._core.fromnumeric.<dictcomp>, which the counted differences read as '<…>'."""
    for name in ("numpy._core.fromnumeric.<dictcomp>", "mine.<lambda>", "<genexpr>"):
        assert cxxnames.shortened(name) == name
    base = Counts(10, 10, [Tally("python", "step()", Fraction(1))], tracer=None)
    head = Counts(10, 10, [Tally("python", "step()", Fraction(1)),
                           Tally("python", "numpy._core.fromnumeric.<dictcomp>", Fraction(1))])
    d = countdiff.diff_counts(base, head, "torch", "numpy")
    assert any("1 call of numpy._core.fromnumeric.<dictcomp> per step" in line for line, _ in d.listed)
    assert "1 numpy._core.fromnumeric.<dictcomp>" in fmt.named_counts(head.tallies, short=True, width=60)
    assert cxxnames.shortened("void k<float, 4>(float*)") == "k<…>"  # a template's arguments still hidden
    assert countdiff.thing("python", "step()", Fraction(1)) == "1 call of step()"  # not 'step', as a C++ name reads
    # and the report's hover text, the full name where a line shows it shortened, has none for a name shown whole
    twice = Counts(10, 10, [Tally("python", "step()", Fraction(2))])
    hovers = dict(countdiff.named_lines(countdiff.diff_counts(base, twice, "torch", "numpy")))
    assert hovers["numpy makes 2 calls of step() per step; torch makes 1"] == ""


def test_counted_differences_read_as_sentences_with_plurals_right():
    base = Counts(10, 10, [Tally("python", "step()", Fraction(1))], tracer=None)
    head = Counts(10, 10, [Tally("python", "step()", Fraction(1)), Tally("python", "torch.mm", Fraction(1))])
    lines = countdiff.lines(countdiff.diff_counts(base, head, "numpy", "torch"))
    assert lines[0] == "torch makes 1 call of torch.mm per step; numpy makes none of it"
    assert "numpy: 1 Python call per step; torch: 2 Python calls per step" in lines
    assert any(l.startswith("numpy: the one Python call is step() itself") for l in lines)
    assert not any("Python calls per step; " in l and "1 Python calls" in l for l in lines)


def test_the_headline_comes_first_and_the_counts_under_it(capsys):
    for argv in (["summary", str(H200_SUM)], ["diff", str(H200_SUM), "--base", "cupy", "--head", "torch"]):
        assert main.main(argv) == 0
        out = capsys.readouterr().out
        first = next(l for l in out.splitlines() if "cupy" in l and not l.startswith("flametool summary"))
        assert "0.635×" in first, first  # the ratio, before any counted line
        assert out.index("0.635×") < out.index("torch makes 1 call of torch.sum per step; cupy makes none of it")
        assert "_ZN2at6native" not in out and "at::native::reduce_kernel<…>" in out
    text = render.show("terminal", dispatch.analyse_dir(H200_SUM), Options(width=160))
    assert text.splitlines()[0].startswith("torch / cupy = 0.635×")


def test_the_json_keeps_the_full_kernel_name_and_the_report_shows_it_on_hover(capsys, tmp_path):
    assert main.main(["summary", str(H200_SUM), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = {d["name"] for d in doc["pairs"][0]["counts"]["differences"]}
    assert MANGLED in names
    out = tmp_path / "report.html"
    assert main.main(["report", str(H200_SUM), "-o", str(out)]) == 0
    page = out.read_text()
    assert 'title="void at::native::reduce_kernel&lt;512, 1,' in page and "at::native::reduce_kernel&lt;…&gt;" in page


def test_a_cpu_run_has_no_cuda_columns_and_one_line_on_what_a_gpu_adds():
    c = Counts(10, 10, [Tally("python", "step()", Fraction(1))], tracer=None,
               missing=["the case runs on the CPU (no CUDA API calls or kernels to count)"])
    cols, tracers = fmt.counted_columns([c, c])
    assert [col.title for col in cols] == ["Python calls"] and tracers == []
    gpu = Counts(10, 10, [Tally("kernel", "k", Fraction(1))], tracer="cupti-python 13.4.0")
    assert len(fmt.counted_columns([gpu])[0]) == 4 and fmt.counted_columns([gpu])[1] == ["cupti-python 13.4.0"]


def test_names_are_cut_in_the_middle_never_broken_at_80_columns():
    assert fmt.middle("ufunc_generic_fastcall (_multiarray_umath.so)", 20) == "ufunc_gene…_fastcall"
    assert fmt.middle("short", 20) == "short"
    text = render.show("terminal", dispatch.analyse_dir(HOSTBOUND), Options(width=80))
    table = text[text.index("frames that differ most (torch - cupy)"):]
    table = table[:table.index("self: time in the frame's own code")]
    rows = [l for l in table.splitlines()[3:] if l.strip()]
    assert all(len(l) <= 80 for l in rows), [l for l in rows if len(l) > 80]
    # every frame name on one line: a row that starts a frame has its figures beside it
    starts = [l for l in rows if re.search(r"[+-]\d+\.\d\d ± ", l)]
    assert len(starts) == 10
    assert not re.search(r"togeth…|cProfi…", text)  # headers whole


def test_the_readme_tests_in_one_line_and_ci_runs_that_line():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("Install what the tests need"):]
    block = section[section.index("```sh\n") + 6:section.index("\n```", section.index("```sh\n"))]
    assert block == "bash .ci/test"
    assert "\nbash .ci/test\n" in (ROOT / ".ci" / "run").read_text()
    script = (ROOT / ".ci" / "test").read_text()
    assert all(step in script for step in ('torch==2.13.0 -e ".[test]"', "python3 -m mypy",
                                           'pytest -q -n 4 --dist loadfile -m "not serial"', "pytest -q -m serial"))
    assert 'pytest -q -n 4 --dist loadfile -m "not serial"' in readme and "pytest -q -m serial" in readme


def test_progress_for_a_log_is_a_line_per_phase_of_each_process(monkeypatch):
    import io as _io

    from rich.console import Console

    from flametool.render import progress as live

    buffer = _io.StringIO()
    clock = [0.0]
    monkeypatch.setattr(live.time, "monotonic", lambda: clock[0])
    settled = []
    with live.Progress(Console(file=buffer, width=200), "auto", lambda: settled.append(True)) as progress:
        assert progress.mode == "lines"  # not a terminal
        for process in (1, 2):
            for what in ("importing numpy", "numpy: setting up at 64", "numpy: warm-up (50 calls)",
                         "timed loop 1/3 at 64", "timed loop 2/3 at 64"):
                progress.update("timing numpy+torch", f"process {process}/2: {what}")
        assert not settled
        for what in ("importing numpy", "setting up at 64", "warm-up (50 calls)", "timed loop 1/3 at 64",
                     "cProfile loop", "sampling with py-spy --native at 100 Hz for 5 s", "count"):
            progress.update("numpy", what)
        clock[0] = 11.0  # a phase that lasts: its line again every 10 s
        progress.update("numpy", "count")
    assert settled == [True]  # the timing was done when the first case's profiling began
    assert buffer.getvalue().splitlines() == [
        "timing numpy+torch: process 1/2: importing numpy", "timing numpy+torch: process 2/2: importing numpy",
        "numpy: importing numpy", "numpy: cProfile loop", "numpy: sampling with py-spy --native at 100 Hz for 5 s",
        "numpy: count", "numpy: count"]
    quiet = _io.StringIO()
    with live.Progress(Console(file=quiet), "none") as progress:
        progress.update("numpy", "count")
    assert quiet.getvalue() == ""


def test_a_childs_result_is_a_line_with_progress_all_only():
    """spawn.run_child's update when a child's result is in: where a process's work ends (the rest until the next
    process is its exit: benchmarks/compare_floor.py reads it), a line of --progress all, not of a log's lines."""
    import io as _io

    from rich.console import Console

    from flametool.measure import spawn
    from flametool.render import progress as live

    assert live.RESULT_IN == spawn.RESULT_IN  # render does not import measure: the words are kept in step here
    printed = {}
    for mode in ("lines", "all"):
        buffer = _io.StringIO()
        with live.Progress(Console(file=buffer, width=200), mode) as progress:
            progress.update("timing numpy+torch", "process 1/2: timed loop 1/3 at 64")
            progress.update("timing numpy+torch", f"process 1/2: {spawn.RESULT_IN}")
            progress.update("numpy", "count")
            progress.update("numpy", spawn.RESULT_IN)
        printed[mode] = buffer.getvalue().splitlines()
    assert printed["lines"] == ["timing numpy+torch: process 1/2: timed loop 1/3 at 64", "numpy: count"]
    assert printed["all"] == ["timing numpy+torch: process 1/2: timed loop 1/3 at 64",
                              "timing numpy+torch: process 1/2: result received", "numpy: count",
                              "numpy: result received"]


def test_the_readme_example_is_what_compare_prints():
    readme = (ROOT / "README.md").read_text()
    at = readme.index("And the terminal view of `samples/h200-hostbound-1024`")
    block = readme[readme.index("```text\n", at) + 8:readme.index("\n```", readme.index("```text\n", at))]
    view = render.show("terminal", dispatch.analyse_dir(HOSTBOUND), Options(width=1000))
    assert view.splitlines()[:len(block.splitlines())] == block.splitlines()
    cpu = readme[readme.index("On this CPU machine"):]
    first = cpu[cpu.index("```text\n") + 8:].splitlines()[0]
    assert re.fullmatch(r"torch / numpy = \d\.\d{3}× \(95%: .+\); torch − numpy = .+ us per call \(95%: .+\), paired "
                        r"over 5 processes", first), first


def test_a_count_of_one_takes_its_noun_in_the_singular():
    from flametool.render import format as fmt

    assert [fmt.many(n, "sample") for n in (0, 1, 2, 1200)] == ["0 samples", "1 sample", "2 samples", "1,200 samples"]


def test_a_closure_of_one_sample_says_one_sample():
    """The layers' closure line under the layer table (and in the report): '... from 1 sample', not '1 samples'
    (seen at --rate 1 --sample-seconds 0.5)."""
    from types import SimpleNamespace

    from flametool.render import format as fmt

    closure = SimpleNamespace(layers_sum_us_per_call=66.56, measured_us_per_call=66.56, ratio=1.0)
    for n, said in ((1, "from 1 sample"), (2, "from 2 samples")):
        line = fmt.closure_sentence(SimpleNamespace(closure=closure, samples=n, repaired_samples=0))
        assert line.endswith(said), line


def test_an_interval_is_written_at_its_figures_precision():
    """'274 us (272.37 to 275.50)': a figure of 100 us or more is whole microseconds, its interval was written to
    two decimals beside it; now both alike, and a figure under 100 us keeps its two decimals in both."""
    from flametool.render import format as fmt
    from flametool.run.stats import Interval

    assert f"{fmt.us(274.1)} ({fmt.interval(Interval(272.37, 275.5, ''), fmt.us_bare)})" == "274 us (272 to 276)"
    assert fmt.interval(Interval(17.104, 17.3, ""), fmt.us_bare) == "17.10 to 17.30"
    assert fmt.interval(Interval(12_500, 12_700, ""), fmt.us_bare) == "12.5 ms to 12.7 ms"


def test_a_table_too_wide_for_the_console_takes_its_width_from_columns_that_can_fold():
    """rich narrows a table's widest columns first: a column of names went below its longest name and the console was
    widened until it fitted, so the atlas table was drawn 109 wide at 80 columns (its lines wrapped on the terminal)
    though folding the headers of its figures' columns ('all threads / call') left it room at 80."""
    from rich.console import Console
    from rich.table import Table

    from flametool.render import terminal

    table = Table()
    table.add_column("size")
    for name in ("all threads / call", "host time / call", "layer that differs most", "kernels, API calls / call"):
        table.add_column(name, justify="right")
    table.add_row("1024,1024,1024,1024,1024,1024,1024,1024,1024", "23.43 us", "1.53 us", "Cython +8.81 us", "1 kernel")
    console = Console(file=io.StringIO(), width=80, color_system=None)
    terminal.show(console, table)
    drawn = console.file.getvalue()
    assert "1024,1024,1024,1024,1024,1024,1024,1024,1024" in drawn and "…" not in drawn, drawn
    assert max(map(len, drawn.splitlines())) <= 80, drawn
    atlas = render.show("terminal", dispatch.analyse_dir(ROOT / "samples" / "h200-atlas"), Options(width=80))
    assert max(map(len, atlas.splitlines())) <= 80, atlas
