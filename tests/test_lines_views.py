"""The views of source lines (issue 39) on stored runs, without measuring: a run recorded before sources.json still
shows its lines (file:line alone); a hostile line text is escaped and shortened in the terminal, the report, every
summary and the diff; --source checked in one line; the child's sys.path decoded strictly; the lines kept for a
listing; export --lines keeps line-level frames."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from flametool import render
from flametool.analyse import dispatch
from flametool.commands import main
from flametool.measure import profiling, protocol
from flametool.render import lines_view
from flametool.render.base import Options
from flametool.analyse.lines import LineCost
from flametool.run import folded
from flametool.run import sources as rec
from flametool.errors import RunDirError

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "h200-seed-fp16"  # cupy and torch, sampled, no sources.json (recorded before it)
CUPY_STEP = ("flametool/cases.py", 155)  # cupy's step line there: `return cupy.matmul(a, b, out=out)`


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main.main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


def test_a_run_without_sources_json_shows_its_lines_as_file_and_line(capsys):
    a = dispatch.analyse_dir(str(SAMPLE))
    assert not (SAMPLE / rec.SOURCES_FILE).exists() and a.sources == rec.Sources()
    step = a.lines["cupy"].step_lines()
    assert [l.key for l in step][-1] == CUPY_STEP and all(l.text is None for l in a.lines["cupy"].lines)
    terminal = render.show("terminal", a)
    assert "source lines, us per call: each case's step() lines" in terminal and "flametool/cases.py:155" in terminal
    code, out, _ = cli(capsys, "summary", str(SAMPLE), "--format", "json")
    pair = json.loads(out)["pairs"][0]
    assert code == 0 and pair["lines"] and all(side is None or side["text"] is None
                                               for d in pair["lines"] for side in (d["base"], d["head"]))
    code, html, _ = cli(capsys, "report", str(SAMPLE), "-o", "-")
    assert code == 0 and '<section id="lines">' in html and '<a href="#lines">Lines</a>' in html


def test_compare_s_terminal_says_a_pair_s_lines_that_differ_most_without_an_aligned_table():
    # the pair's lines were said only under the aligned table, so two --env builds of a case of one's own (no step
    # line shared with another library) had them in summary and the report, not where compare ends
    a = dispatch.analyse_dir(str(SAMPLE))
    assert a.aligned is None
    terminal = render.show("terminal", a)
    block = terminal[terminal.index("torch − cupy, the lines that differ most:"):].splitlines()
    assert block[1].startswith("  flametool/cases.py:155 -0.57 ± 0.16 us of its own time")


HOSTILE = "[b]m[/b] <script>alert(1)</script> \x1b[2J\x1b]8;;http://x\x07 & `tick` |pipe| \u202e" + "A" * 100_000


@pytest.fixture
def hostile_run(tmp_path) -> Path:
    """The sample run with a sources.json written by hand: cupy's step line holds a hostile text of 100 KB,
    every other line's file is gone (file:line alone)."""
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    (run / "report.html").unlink()
    doc = {"version": 1, "files": {CUPY_STEP[0]: {"origin": "case", "path": "/gone/cases.py",
                                                  "lines": {str(CUPY_STEP[1]): HOSTILE}, "pyx": {}}}}
    (run / rec.SOURCES_FILE).write_text(json.dumps(doc))
    return run


def _clean(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "A" * (rec.MAX_TEXT + 1) not in text  # shortened: never the 100 KB line


def test_a_hostile_line_text_is_escaped_and_shortened_in_every_view(hostile_run, capsys):
    a = dispatch.analyse_dir(str(hostile_run))
    line = next(l for l in a.lines["cupy"].lines if l.key == CUPY_STEP)
    assert line.text == rec.clean_text(HOSTILE) and len(line.text) == rec.MAX_TEXT
    assert all(l.text is None for l in a.lines["cupy"].lines if l.key != CUPY_STEP)  # the others: file:line alone
    # the terminal: shortened, control characters as escapes, rich markup printed as text
    for colour in (False, True):
        terminal = render.show("terminal", a, Options(width=160, colour=colour))
        rows = [r for r in terminal.splitlines() if "flametool/cases.py:155" in r and "cupy" in r]
        assert rows and "\\x1b[2J" in terminal and "[b]m[/b]" in terminal
        _clean(terminal.replace("\x1b[", "") if colour else terminal)  # rich's own colours aside
    row = next(r for r in lines_view.terminal_rows(a) if r.where == "flametool/cases.py:155")
    assert len(row.code) <= lines_view.TEXT_WIDTH and row.code.endswith("…")
    # the report: autoescaped, shortened
    code, html, _ = cli(capsys, "report", str(hostile_run), "-o", "-")
    assert code == 0 and "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    _clean(html)
    # the summaries: JSON holds it as data (cleaned and capped), Markdown escapes its markup, text shows it visible
    code, out, _ = cli(capsys, "summary", str(hostile_run), "--format", "json")
    texts = [side["text"] for d in json.loads(out)["pairs"][0]["lines"] for side in (d["base"], d["head"])
             if side is not None and side["text"] is not None]
    assert code == 0 and texts == [rec.clean_text(HOSTILE)]
    _clean(out)
    code, md, _ = cli(capsys, "summary", str(hostile_run), "--format", "markdown")
    # Markdown: the line's code is a code span, which a renderer shows as it is (its markup as text, its HTML
    # escaped): rendered, no tag of it is read as one
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(md)
    assert code == 0 and "<script>" not in html and "<code>[b]m[/b] &lt;script&gt;alert(1)&lt;/script&gt;" in html
    _clean(md)
    code, text, _ = cli(capsys, "summary", str(hostile_run), "--format", "text")
    assert code == 0 and "line that differs most" in text
    _clean(text)
    # diff of the two cases: its table of lines
    code, out, _ = cli(capsys, "diff", str(hostile_run), "--base", "torch", "--head", "cupy")
    assert code == 0 and "source lines that differ most (cupy - torch)" in out
    _clean(out)


def test_a_line_whose_file_is_gone_is_file_and_line_alone(hostile_run):
    a = dispatch.analyse_dir(str(hostile_run))
    gone = next(l for l in a.lines["cupy"].lines if l.text is None and l.self.samples)
    assert lines_view.code(gone) == "" and lines_view.where(gone.where) == gone.where


def test_a_listing_greys_the_lines_without_samples_and_shows_the_pyx_line():
    cost = lambda line, n: LineCost(  # noqa: E731
        "hot.c", line, "hot_busy", "cython", lines_view_figure(n), lines_view_figure(n), f"c{line}",
        rec.PyxLine("hot.pyx", 9, "        total += i * i") if line == 12 else None, False)
    record = rec.Sources({"hot.c": rec.SourceFile("source", "/src/hot.c", {11: "  /* between */"})})
    got = lines_view.listing([cost(10, 4), cost(12, 8)], record, 10.0, "hot_busy")
    assert [(r.line, r.sampled, r.text) for r in got.rows] == [("10", True, "c10"), ("11", False, "  /* between */"),
                                                               ("12", True, "c12")]
    assert got.rows[2].pyx == "hot.pyx:9: total += i * i" and got.rows[2].total_pct == 80.0
    far = lines_view.listing([cost(10, 4), cost(10 + lines_view.LISTING_SPAN + 5, 1)], record, 10.0, "f")
    assert [r.line for r in far.rows] == ["10", "⋮", str(10 + lines_view.LISTING_SPAN + 5)]


def test_two_lines_matched_in_step_order_show_both_texts():
    # numpy's step line against torch's, matched by their order in the two steps: the row and the summary's
    # sentence say what each side's line reads, not the head's text alone beside the base's place
    from flametool.analyse.attribution import Figure
    from flametool.analyse.lines import BY_FILE_LINE, BY_STEP_ORDER, LineDelta

    def line(n: int, text: str, self_us: float = 1.0, total_us: float = 7.0) -> LineCost:
        return LineCost("lib.py", n, "f.<locals>.step", "python", Figure(self_us, 0.1, 1), Figure(total_us, 0.1, 7),
                        text, None, True)

    d = LineDelta(line(42, "        matmul(a, b, out=out)"), line(73, "        mm(a, b, out=out)", 1.0, 8.0),
                  BY_STEP_ORDER, 0.0, 0.1, 1.0, 0.1)
    (row,) = lines_view.delta_rows([d])
    assert row.where == "lib.py:42 -> lib.py:73" and row.code == "matmul(a, b, out=out) -> mm(a, b, out=out)"
    assert "`matmul(a, b, out=out)` -> `mm(a, b, out=out)`" in lines_view.delta_sentence(d)
    same = LineDelta(line(42, "x = 1"), line(42, "x = 1", 1.0, 8.0), BY_STEP_ORDER, 0.0, 0.1, 1.0, 0.1)
    assert lines_view.delta_rows([same])[0].code == "x = 1" and lines_view.delta_sentence(same).count("`") == 2
    # a line whose difference shows as +0.00 is not among those that differ (a summary listed one at '+0.00 ± 0.00
    # us of its own time (total +0.00 ± 0.00)')
    nothing = LineDelta(line(43, "y = 2"), line(43, "y = 2", 1.004, 6.997), BY_STEP_ORDER, 0.004, 0.1, -0.003, 0.1)
    # the rows show the difference of the two sides' rounded figures: 1.004 - 0.996 is 0.008 (rounds to 0.01) but
    # shows as 1.00 - 1.00 = +0.00, and 1.006 - 0.996 rounds to 0.01 and shows as 1.01 - 1.00 = +0.01
    hidden = LineDelta(line(44, "z = 3", 0.996), line(44, "z = 3", 1.004), BY_FILE_LINE, 0.008, 0.1, 0.0, 0.1)
    shows = LineDelta(line(45, "w = 4", 0.996), line(45, "w = 4", 1.006), BY_FILE_LINE, 0.01, 0.1, 0.0, 0.1)
    assert lines_view.changed([d, nothing, same, hidden, shows]) == [d, same, shows]
    assert "+0.01 ± 0.10 us of its own time" in lines_view.delta_sentence(shows)


def test_a_long_matched_pair_s_place_names_both_lines():
    """A CPU compare's page listed numpy's step line matched to torch's as
    '…kload/libraries.py:42 -> flametool/workload/libraries.py:73': the pair's text was cut at its start as one, so
    the base's file lost its name and the head's stayed whole. Each side now keeps its file's name."""
    from flametool.analyse.lines import BY_STEP_ORDER, LineDelta

    def line(file: str, n: int) -> LineCost:  # the head's (line 73's) total is 1 us above the base's
        return LineCost(file, n, "f.<locals>.step", "python", lines_view_figure(1), lines_view_figure(7 + (n == 73)),
                        "x", None, True)

    one_file = LineDelta(line("flametool/workload/libraries.py", 42), line("flametool/workload/libraries.py", 73),
                         BY_STEP_ORDER, 0.0, 0.1, 1.0, 0.1)
    (row,) = lines_view.delta_rows([one_file])
    assert row.where == "flametool/workload/libraries.py:42 -> line 73", row.where
    assert lines_view.delta_sentence(one_file).startswith("flametool/workload/libraries.py:42 -> line 73 ")
    deep = "/very/long/site-packages/path/of/a/library/"
    two_files = LineDelta(line(deep + "numpy_side.py", 42), line(deep + "torch_side.py", 73), BY_STEP_ORDER,
                          0.0, 0.1, 1.0, 0.1)
    (row,) = lines_view.delta_rows([two_files])
    base, head = row.where.split(" -> ")
    assert base.endswith("/numpy_side.py:42") and head.endswith("/torch_side.py:73"), row.where
    assert len(row.where) <= lines_view.WHERE_WIDTH


def test_a_markdown_summary_s_line_keeps_its_code_as_code():
    """In Markdown (summary --format markdown, a pull-request comment) a line's sentence escapes its words and
    keeps its code spans as code: escaped whole, `s += i` had rendered as literal backticks around the text."""
    from markdown_it import MarkdownIt

    from flametool.analyse.lines import BY_FILE_LINE, LineDelta
    from flametool.render.summary_formats import md

    def line(text: str, us: float) -> LineCost:
        return LineCost("my_case.py", 23, "f.<locals>.step", "python", lines_view_figure(us), lines_view_figure(us),
                        text, None, True)

    d = LineDelta(line("    s += a_b * 2", 1), line("    s += a_b * 2", 6), BY_FILE_LINE, 5.0, 0.1, 5.0, 0.1)
    written = lines_view.delta_sentence(d, md)
    html = MarkdownIt("commonmark").renderInline(written)
    assert "<code>s += a_b * 2</code>" in html and "\\`" not in written, written
    assert html.startswith("my_case.py:23 <code>") and "+5.00 ± 0.10 us of its own time" in html
    assert lines_view.delta_sentence(d) == "my_case.py:23 `s += a_b * 2` +5.00 ± 0.10 us of its own time (total +5.00 ± 0.10)"


def test_a_long_step_s_hottest_lines_are_in_the_terminal_and_the_rest_counted():
    # a step of 12 lines whose time is in its last two (a loop after ten small ops): the terminal's rows keep the
    # lines with the most time, in source order, and say how many it left out
    from types import SimpleNamespace

    from flametool.analyse.lines import CaseLines

    def line(n: int, samples: int) -> LineCost:
        return LineCost("case.py", n, "f.<locals>.step", "python", lines_view_figure(samples),
                        lines_view_figure(samples), f"x{n}", None, True)

    steps = [line(n, 1) for n in range(10, 20)] + [line(20, 40), line(21, 60)]
    case = CaseLines("mine", 110.0, 110, sorted(steps, key=lambda l: -l.self.samples))
    # an Analysis's two fields that terminal_rows reads (sources: a step kept whole gets its def row from them)
    from flametool.run.sources import Sources

    rows = lines_view.terminal_rows(SimpleNamespace(lines={"mine": case}, sources=Sources()))  # type: ignore[arg-type]
    shown = [r.where for r in rows]
    assert "case.py:20" in shown and "case.py:21" in shown
    assert len(shown) == lines_view.STEP_LINES + 1 and shown[:-1] == sorted(shown[:-1], key=lambda w: int(w[8:]))
    assert shown[-1].startswith(f"… {12 - lines_view.STEP_LINES} more step() lines")


def lines_view_figure(n: int):
    from flametool.analyse.attribution import Figure

    return Figure(n * 1.0, 0.1, n)


def test_a_function_s_lines_between_its_samples_are_kept_for_its_listing():
    stacks = [folded.Stack(("step (case.py:20)", "f (lib.py:10)"), 3), folded.Stack(("step (case.py:22)",
                                                                                      "f (lib.py:14)"), 1),
              folded.Stack(("step (case.py:20)", "g (big.py:1)"), 1), folded.Stack(("g (big.py:500)",), 1)]
    assert profiling.wanted_lines(stacks) == {"case.py": {20, 21, 22}, "lib.py": {10, 11, 12, 13, 14},
                                              "big.py": {1, 500}}


def test_the_child_s_sys_path_is_decoded_strictly():
    good = protocol.CaseProfiled(calls=1, sys_path=["/a", "/b"])
    line = protocol.encode(protocol.Done(good))
    assert protocol.decode(line) == protocol.Done(good)
    for bad in (["/a", 3], "/a", [""], ["a\0b"], None):
        data = json.loads(line)
        data["result"]["sys_path"] = bad
        assert protocol.decode(json.dumps(data)) is None, bad
    old = json.loads(line)
    del old["result"]["sys_path"]  # a child of before: none
    got = protocol.decode(json.dumps(old))
    assert isinstance(got, protocol.Done) and got.result.sys_path == []


@pytest.mark.parametrize("make, message", [(lambda p: p / "nope", "no such folder"),
                                           (lambda p: p, "holds no Cython sources")])
def test_a_bad_source_root_is_one_line_and_exit_2(tmp_path, capsys, make, message):
    code, out, err = cli(capsys, "compare", "--device", "cpu", "--libs", "numpy", "--source", str(make(tmp_path)),
                         "--out", str(tmp_path / "run"))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_export_lines_keeps_line_level_frames(capsys):
    code, out, _ = cli(capsys, "export", str(SAMPLE), "--format", "speedscope", "--lines", "--case", "cupy")
    names = [f["name"] for f in json.loads(out)["shared"]["frames"]]
    assert code == 0 and any(re.search(r":155$", n) for n in names) and any(".cpp:" in n or re.search(r":\d+$", n)
                                                                             for n in names)
    code, out, _ = cli(capsys, "export", str(SAMPLE), "--format", "folded", "--lines", "--case", "cupy")
    assert code == 0 and any(f.endswith(":155") for s in folded.parse(out) for f in s.frames)


STEP_FILE = '''import numpy as np


def factory():
    a = np.ones(4)

    @staticmethod
    def step():
        b = a + 1
        c = b * 2
        return c

    return step


def long():
''' + "    x = 1\n" * 45


def test_a_short_step_is_kept_whole_and_listed_from_its_def_line(tmp_path):
    """A step's listing began at its first sampled line and ended at its last: its `def` line and a trailing
    `return` without samples were left out. The step (and any function of the case's file) of at most
    WHOLE_FUNCTION lines is now kept whole in sources.json and listed from its def to its last line."""
    from flametool.measure import sources as measured

    case = tmp_path / "case.py"
    case.write_text(STEP_FILE)
    stacks = [folded.Stack(("factory.<locals>.step (case.py:9)", "add (lib.so)"), 3),
              folded.Stack(("factory.<locals>.step (case.py:10)",), 1), folded.Stack(("long (case.py:20)",), 1)]
    whole = profiling.step_functions(stacks, str(case))
    assert whole == {"case.py": [{9, 10}, {20}]}
    record = measured.collect(profiling.wanted_lines(stacks), measured.Roots(case), whole)
    got = record.files["case.py"]
    # the innermost def holding the lines (not factory), from its def line (not its decorator); `long` is too long
    assert got.functions == {8: 11} and {8, 11} <= set(got.lines) and record.function("case.py", [9]) == (8, 11)
    # round trip, and a record of before (no functions) reads as none
    again = rec.Sources.from_json(json.loads(json.dumps(record.to_json())), "sources.json")
    assert again.files["case.py"].functions == {8: 11}
    old = record.to_json()
    del old["files"]["case.py"]["functions"]
    assert rec.Sources.from_json(old, "s").function("case.py", [9]) is None
    cost = lambda line, n: LineCost("case.py", line, "factory.<locals>.step", "python",  # noqa: E731
                                    lines_view_figure(n), lines_view_figure(n), got.lines[line], None, True)
    listed = lines_view.listing([cost(9, 3), cost(10, 1)], record, 10.0, "step")
    assert [(r.line, r.sampled, r.text.strip()) for r in listed.rows] == [
        ("8", False, "def step():"), ("9", True, "b = a + 1"), ("10", True, "c = b * 2"), ("11", False, "return c")]
    # without the function kept (an old run), from the first sampled line to the last, as before
    assert [r.line for r in lines_view.listing([cost(9, 3), cost(10, 1)], rec.Sources(), 10.0, "step").rows] == ["9", "10"]


def test_a_built_in_workload_s_fn_is_kept_whole_as_a_user_s_is(tmp_path):
    """A built-in workload (`--workload softmax`, named by its module) was listed from its first sampled line in
    the report where a user's workload file was listed whole from its `def fn` line: only the case's `file` told
    the measuring side which functions are the case's own, and a built-in's CaseSpec names a module. Where fn is
    not the stacks' root (jax-eager's step is a function around fn, as here) nothing kept it whole. Now the
    module, as a path (CaseSpec.own_file), is the case's own file, as the analysis already took it."""
    from flametool.workload import builtin_workloads, workloads
    from flametool.workload.cases import CaseSpec

    root = Path(builtin_workloads.__file__).resolve().parents[2]  # the sys.path entry flametool is found under
    source = Path(builtin_workloads.__file__).read_text().splitlines()
    start = source.index("def softmax(xp: Any, shape: tuple[int, ...] = (64, 256)) -> tuple[Callable[..., Any], "
                         "list[np.ndarray]]:")
    def_line = 1 + source.index("    def fn(x):", start)  # fn: its def line and four lines
    file = "flametool/workload/builtin_workloads.py"
    wrapper = "_step.<locals>.step (flametool/workload/workloads.py:279)"
    stacks = "".join(f"{wrapper};softmax.<locals>.fn ({file}:{def_line + i}) {n}\n" for i, n in ((1, 6), (2, 4), (4, 3)))
    (tmp_path / "jax-eager.folded").write_text(stacks)
    built_in = CaseSpec("jax-eager", "softmax", module=workloads.BUILTIN_MODULE, xp="jax-eager")
    assert built_in.own_file == file
    record = profiling.line_texts(tmp_path / "jax-eager.folded", built_in, [str(root)], [])
    assert record.function(file, [def_line + 1]) == (def_line, def_line + 4), record.files[file].functions
    # as a user's copy of it, named by its file, was and is
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(builtin_workloads.__file__, mine / "steps.py")
    (tmp_path / "mine.folded").write_text(stacks.replace(file, "steps.py"))
    user = CaseSpec("jax-eager", "softmax", file=str(mine / "steps.py"), xp="jax-eager")
    assert profiling.line_texts(tmp_path / "mine.folded", user, [str(mine)], []).function(
        "steps.py", [def_line + 1]) == (def_line, def_line + 4)
    # and the listing begins at the def line, its unsampled lines grey
    cost = lambda line, n: LineCost(file, line, "softmax.<locals>.fn", "python",  # noqa: E731
                                    lines_view_figure(n), lines_view_figure(n), record.text(file, line), None, True)
    listed = lines_view.listing([cost(def_line + 1, 6), cost(def_line + 2, 4), cost(def_line + 4, 3)], record, 10.0, "fn")
    assert [(int(r.line) - def_line, r.sampled) for r in listed.rows] == [(0, False), (1, True), (2, True), (3, False),
                                                                         (4, True)]
    assert listed.rows[0].text.strip() == "def fn(x):"


def test_a_function_kept_whole_is_checked_and_bounded_when_read():
    doc = {"version": 1, "files": {"c.py": {"origin": "case", "path": "/c", "lines": {}, "functions": {"9": 3}}}}
    with pytest.raises(RunDirError, match=r"functions\[\"9\"\]"):
        rec.Sources.from_json(doc, "sources.json")
    # a hand-written record's huge function is not listed line by line
    doc["files"]["c.py"]["functions"] = {"1": 10**8}
    record = rec.Sources.from_json(doc, "sources.json")
    cost = LineCost("c.py", 5, "f", "python", lines_view_figure(1), lines_view_figure(1), None, None, True)
    assert [r.line for r in lines_view.listing([cost], record, 10.0, "f").rows] == ["5"]
