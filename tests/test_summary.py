"""`flametool summary RUN` and `diff --format`: text, Markdown (parsed with markdown-it-py, as a pull-request
page would render it) and JSON (read back with json; docs/summary-json.md), on hand-built runs and a stored
sample; the figures are the analysis's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from checks import one_line_error
from flametool.analyse import diff, dispatch, summary
from flametool import render
from flametool.commands import main
from test_anchor import saved_run

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture
def two_runs(tmp_path):
    """Run B: the host 38% slower, cupy itself 1% slower relative to torch."""
    return (saved_run(tmp_path / "a", 17.0, 11.0),
            saved_run(tmp_path / "b", 17.0 * 1.01 * 1.38, 11.0 * 1.38))


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_diff_json_reads_back_with_the_anchored_change_and_the_verdict(two_runs, capsys):
    a, b = two_runs
    code, out, err = run_cli(capsys, "diff", str(a), str(b), "--case", "cupy", "--fail-above", "0.5", "--format", "json")
    doc = json.loads(out)
    assert (doc["schema"], doc["version"], doc["kind"]) == (summary.SCHEMA, summary.VERSION, "diff")
    (pair,) = doc["pairs"]
    assert pair["measure"] == "anchored" and pair["anchor"] == "torch" and pair["units"] == "6 + 6 processes"
    assert pair["ratio"]["low"] < pair["ratio"]["value"] < pair["ratio"]["high"]
    assert pair["ratio"]["value"] == pytest.approx(1.01, rel=2e-3)
    assert pair["anchor_change"] == pytest.approx(1.38, rel=5e-3)
    assert pair["absolute"]["ratio"]["value"] == pytest.approx(1.01 * 1.38, rel=1e-2)
    assert pair["difference_us"]["value"] == pytest.approx(pair["at_us"] * (pair["ratio"]["value"] - 1))
    assert pair["largest_layer"] is None and pair["largest_frame"] is None  # not sampled
    assert pair["verdict"]["outcome"] == "slower" and code == diff.SLOWER_EXIT == doc["verdict"]["exit_code"]
    assert err == f"flametool: {pair['verdict']['sentence']}\n" and err.startswith("flametool: cupy: B vs A: +1.0%")  # the JSON verdict, word for word
    # the same figures as the analysis
    result = diff.diff_runs(a, b, "cupy")
    assert pair["ratio"]["value"] == result.change.ratio and pair["difference_us"]["value"] == result.change.anchored.diff_us
    # what the speed adjustment did, the figure it gave and the unadjusted one beside it
    speed, fit = pair["speed_adjustment"], result.change.anchored.speed
    assert speed["ratio"] == pair["ratio"]["value"] and speed["low"] == pair["ratio"]["low"]
    assert speed["unadjusted"]["ratio"] == fit.unadjusted and speed["sentence"] == fit.sentence("A", "B")
    assert speed["base_processes"] == speed["head_processes"] == 6 and speed["overlap"] == fit.overlap


def test_summary_of_a_sample_is_the_analysis_s_figures(capsys):
    run = SAMPLES / "h200-hostbound-1024"
    code, out, _ = run_cli(capsys, "summary", str(run), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    a = dispatch.analyse_dir(run)
    assert [(p["base"], p["head"]) for p in doc["pairs"]] == [(p.base, p.head) for p in a.pairs]
    for got, p in zip(doc["pairs"], a.pairs):
        f = p.headline
        assert got["measure"] == "paired" and got["anchor"] is None and got["verdict"] is None
        assert got["ratio"] == {"value": f.ratio, "low": f.ratio_interval.low, "high": f.ratio_interval.high}
        assert got["difference_us"]["value"] == f.diff_us
        # one figure: the difference is the timing table's figures apart, and the layer table's total
        assert got["difference_us"]["value"] == pytest.approx(a.timings[p.head].cpu_us - a.timings[p.base].cpu_us)
        assert got["difference_us"]["value"] == pytest.approx(p.diff.delta_us_per_call)
        biggest = max(p.diff.layers, key=lambda r: abs(r.delta_us_per_call))
        assert got["largest_layer"]["layer"] == biggest.layer
        assert got["largest_frame"]["frame"] == p.diff.frames[0].display
    assert {c["label"] for c in doc["cases"]} == set(a.run.results)


def cells(tokens) -> list[list[str]]:
    """The rows of the first table, each a list of its cells' text."""
    rows, row, inside = [], None, False
    for t in tokens:
        if t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            inside = True
        elif t.type == "inline" and inside:
            row.append(t.content)
            inside = False
        elif t.type == "tr_close":
            rows.append(row)
        elif t.type == "table_close":
            break
    return rows


def rendered_text(md: MarkdownIt, cell: str) -> str:
    """What a reader sees of a cell: its inline markup rendered, as text."""
    return "".join(c.content for t in md.parseInline(cell) for c in (t.children or []) if c.type == "text")


def test_markdown_reads_as_a_table_per_comparison_with_its_notes(capsys):
    code, out, _ = run_cli(capsys, "summary", str(SAMPLES / "h200-hostbound-1024"), "--format", "markdown",
                           "--fail-above", "5")
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(out)
    assert tokens[0].type == "heading_open" and tokens[0].tag == "h3"
    rows = cells(tokens)
    assert rows[0] == ["comparison", "ratio (95% interval)", "difference, us per call (95% interval)",
                       "verdict (--fail-above 5%)"]
    assert [rendered_text(md, r[0]) for r in rows[1:]] == ["torch vs cupy", "cupy vs cublas", "torch vs cublas"]
    assert all(len(r) == 4 for r in rows)
    assert rendered_text(md, rows[1][1]) == "0.666× (0.655 to 0.678)"
    assert rendered_text(md, rows[1][2]) == "-5.91 (-6.11 to -5.71) at cupy's 17.72 us"
    assert [rendered_text(md, r[3]) for r in rows[1:]] == ["✅ passed", "❌ slower", "❌ slower"] and code == 3
    # cupy is 84% slower than cublas: more than 90%? no: within it; every pair passed: the verdict line says so
    # ('of 3 comparisons: 3 passed'), no column says it again on each row
    code, out, _ = run_cli(capsys, "summary", str(SAMPLES / "h200-hostbound-1024"), "--format", "markdown",
                           "--fail-above", "90")
    assert code == 0 and "(of 3 comparisons: 3 passed)" in out
    assert cells(md.parse(out))[0] == ["comparison", "ratio (95% interval)", "difference, us per call (95% interval)"]
    # how every pair was measured: once, under the table, not in a column of the same cell on every row
    assert out.count("paired in the same processes, over 10 processes") == 1
    assert "<p>measured: paired in the same processes, over 10 processes</p>" in md.render(out)
    html = md.render(out)
    assert "<strong>torch vs cupy</strong>" in html and "largest frame difference" in html and "<code>" in html


def test_markdown_keeps_a_label_s_markup_as_text(tmp_path, capsys):
    a = saved_run(tmp_path / "a", 17.0, 11.0)
    data = json.loads((a / "run.json").read_text())
    data["results"] = {"cu*py|x": data["results"]["cupy"], "torch": data["results"]["torch"]}
    data["groups"][0]["cases"] = ["cu*py|x", "torch"]
    (a / "run.json").write_text(json.dumps(data))
    _, out, _ = run_cli(capsys, "summary", str(a), "--format", "markdown")
    md = MarkdownIt("commonmark").enable("table")
    rows = cells(md.parse(out))
    assert len(rows[1]) == 3 and rendered_text(md, rows[1][0]) == "torch vs cu*py|x"


def test_text_summary_says_the_headline_the_verdict_and_what_holds(two_runs, capsys):
    a, b = two_runs
    code, out, _ = run_cli(capsys, "diff", str(a), str(b), "--case", "cupy", "--fail-above", "1.2", "--format", "markdown")
    assert code == diff.INCONCLUSIVE_EXIT and "⚠️ inconclusive" in out and "processes a side would settle it" in out
    code, out, _ = run_cli(capsys, "summary", str(a))
    assert code == 0 and out.splitlines()[1].startswith("torch vs cupy: ")
    assert "paired in the same processes, over 6 processes" in out


@pytest.mark.parametrize("argv, words", [
    (["summary", str(SAMPLES / "h200-sweep-fp16"), "--fail-above", "5"], "a sweep run: --fail-above judges"),
    (["summary", str(SAMPLES / "h200-atlas"), "--fail-above", "5"], "or a diff; an atlas's ratios are per op"),
    (["summary", str(SAMPLES / "h200-hostbound-1024"), "--format", "xml"], "--format 'xml': choose from text"),
    (["summary", str(SAMPLES / "h200-hostbound-1024"), "--fail-above", "nan"], "--fail-above nan: must be a number"),
    (["diff", str(SAMPLES / "h200-hostbound-1024"), str(SAMPLES / "h200-seed-fp16"), "--format", "speedscope"],
     "--format 'speedscope': choose from text, markdown, json"),
])
def test_bad_summary_input_is_one_line(capsys, argv, words):
    assert words in one_line_error(capsys, argv)


def test_every_summary_format_keeps_the_warning_that_the_processes_disagree(tmp_path, capsys):
    """Issue 33, item 9: compare prints "the processes disagree; --processes N would bring it to about ±5%"
    under a pair whose interval is wide; `summary` (text and markdown alike) dropped it."""
    from test_anchor import SPEEDS

    noisy = [0.9 if i % 2 else 1.1 for i in range(len(SPEEDS))]  # cupy's own speed swings ±10% process to process
    run = saved_run(tmp_path / "run", 17.0, 11.0, noise=noisy)
    code, text, _ = run_cli(capsys, "summary", str(run))
    assert code == 0 and "the processes disagree" in text, text
    code, markdown, _ = run_cli(capsys, "summary", str(run), "--format", "markdown")
    assert code == 0 and "the processes disagree" in markdown, markdown
    line = next(l for l in text.splitlines() if "the processes disagree" in l).strip()
    assert line in markdown.replace("\\", "")


# --- a sweep's and an atlas's headline ----------------------------------------------------------------------

@pytest.mark.parametrize("sample, where", [("h200-sweep-fp16", "size"), ("h200-atlas", "op")])
def test_summary_of_a_sweep_or_an_atlas_is_its_headline_table(capsys, sample, where):
    """Per size (a sweep: the wall-time ratio of each pair) or per op (an atlas: each library against the op's
    fastest), the ratio with its interval, in text, Markdown and JSON: the analysis's own figures."""
    run = SAMPLES / sample
    a = dispatch.analyse_dir(run)
    if where == "size":
        expected = [(f"{p.head} vs {p.base}", a.size_name(pt.shape), pt.wall) for p in a.pairs for pt in p.points]
    else:
        expected = [(f"{label} vs {r.fastest}", r.op, c.ratio) for r in a.rows for label, c in r.cells.items()
                    if label != r.fastest]
    assert expected
    code, out, err = run_cli(capsys, "summary", str(run), "--format", "json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert (doc["version"], doc["kind"], doc["pairs"]) == (summary.VERSION, sample.split("-")[1], [])
    assert [(r["label"], r["at"]) for r in doc["rows"]] == [(label, at) for label, at, _ in expected]
    for row, (_, _, f) in zip(doc["rows"], expected):
        assert row["ratio"] == {"value": f.ratio, "low": f.ratio_interval.low, "high": f.ratio_interval.high}
    label, at, f = expected[0]
    made = summary.of(a)
    out = render.show("text", made)
    assert f"{label} at {where} {at}: {f.ratio:.3f}× (95%: {f.ratio_interval.low:.3f} to {f.ratio_interval.high:.3f})" in out
    out = render.show("markdown", made)
    cell = f"{f.ratio:.3f}× ({f.ratio_interval.low:.3f} to {f.ratio_interval.high:.3f})"
    # an atlas compares several pairs: a column of them; a sweep one pair, said once under the table with how
    # its ratios were measured (the same on every row)
    measured = f"measured: {made.rows[0].measure}, over {f.units} {f.unit_name}"
    if where == "op":
        assert f"| comparison | {where} | ratio (95% interval) |" in out and f"| {label} | {at} | {cell} |" in out
        assert f"\n\n{measured}\n\n" in out
    else:
        assert f"| {where} | ratio (95% interval) |" in out and f"| {at} | {cell} |" in out
        assert f"\n\ncomparison: {label}; {measured}\n\n" in out


def test_every_summary_format_says_where_compare_stopped_before_the_interval_settled(tmp_path, capsys):
    """run.json's timing_stop (compare stopped adding processes with a pair's interval wider than it settles at) is
    a line under that pair in the text and Markdown summaries, and `stopped` in the JSON; a run without it has
    `stopped` null."""
    from test_anchor import SPEEDS

    from flametool.run import rundir
    from flametool.run.record import TimingStop

    noisy = [0.97 if i % 2 else 1.03 for i in range(len(SPEEDS))]
    run = saved_run(tmp_path / "run", 17.0, 11.0, noise=noisy)
    code, before, _ = run_cli(capsys, "summary", str(run), "--format", "json")
    assert code == 0 and json.loads(before)["pairs"][0]["stopped"] is None
    record = rundir.load(run)
    record.timing_stop = TimingStop("spread", "cupy", "torch", 0.02, 12)
    rundir.save(run, record)
    code, text, _ = run_cli(capsys, "summary", str(run))
    line = next((l.strip() for l in text.splitlines() if "compare stopped adding processes" in l), None)
    assert code == 0 and line is not None and line.startswith("torch / cupy: compare stopped adding processes with its "
                                                              "interval at ±"), text
    assert "wider than the ±2% it settles at: its processes disagreed so much that up to 12 would not" in line
    code, markdown, _ = run_cli(capsys, "summary", str(run), "--format", "markdown")
    assert code == 0 and line in markdown.replace("\\", ""), markdown
    code, doc, _ = run_cli(capsys, "summary", str(run), "--format", "json")
    stopped = json.loads(doc)["pairs"][0]["stopped"]
    assert code == 0 and stopped == {"reason": "spread", "limit": 0.02, "most": 12, "sentence": line}
    # stopped at the most processes, undecided: the verdict asks for more --processes, not what adds them (a run
    # whose head, torch, is the slower: --fail-above takes no negative percent)
    run = saved_run(tmp_path / "slower", 11.0, 17.0, noise=noisy)
    record = rundir.load(run)
    record.timing_stop = TimingStop("most", "cupy", "torch", 0.02, 12)
    rundir.save(run, record)
    pair = json.loads(run_cli(capsys, "summary", str(run), "--format", "json")[1])["pairs"][0]
    pct = (pair["ratio"]["value"] - 1) * 100  # the interval holds it: inconclusive
    code, text, _ = run_cli(capsys, "summary", str(run), "--fail-above", f"{pct:.4f}")
    assert code == 4 and "and --processes over 12 (this run stopped at the most processes compare runs, 12)" in text, text
    assert "it adds processes until" not in text, text


def test_the_summary_says_the_shape_its_figures_are_at_and_the_reports_cautions(capsys):
    """A run whose figures are at the sample shape says so in each format, as compare's headline does (the
    summary gave seed-fp16's 17.40 us with no shape beside the report's 21.49 us at the requested one); a run
    of unlike dtypes carries the report's "not like for like" in each format (the summary dropped it)."""
    from flametool.render import html as report

    seed, reported, hostbound = SAMPLES / "h200-seed-fp16", SAMPLES / "h200-seed-as-reported", SAMPLES / "h200-hostbound-1024"
    if not (seed.is_dir() and reported.is_dir() and hostbound.is_dir()):
        pytest.skip("the H200 samples are not recorded")
    code, out, _ = run_cli(capsys, "summary", str(seed))
    assert code == 0 and "torch vs cupy at the sample shape 1024,1024,1024 (requested 65536,24576,12288): " in out
    doc = json.loads(run_cli(capsys, "summary", str(seed), "--format", "json")[1])
    assert doc["pairs"][0]["shape"] == [1024, 1024, 1024] and doc["pairs"][0]["requested_shape"] == [65536, 24576, 12288]
    assert {c["label"]: c["shape"] for c in doc["cases"]} == {"cupy": [1024, 1024, 1024], "torch": [1024, 1024, 1024]}
    assert doc["cautions"] == []
    # asked at the host-bound shape: nothing more to say
    code, out, _ = run_cli(capsys, "summary", str(hostbound))
    assert "at the sample shape" not in out and "caution" not in out
    doc = json.loads(run_cli(capsys, "summary", str(hostbound), "--format", "json")[1])
    assert all(p["requested_shape"] is None and p["shape"] == [1024, 1024, 1024] for p in doc["pairs"])
    # unlike dtypes: the report's caveat, word for word, in each format
    caveat = next(c.text for c in report.build(dispatch.analyse_dir(reported)).warnings if c.kind == "not like for like")
    assert "dtypes: cupy float16, torch bfloat16" in caveat
    assert f"caution: not like for like: {caveat.rstrip('.')}" in run_cli(capsys, "summary", str(reported))[1].splitlines()
    assert f"not like for like: {caveat.rstrip('.')}" in run_cli(capsys, "summary", str(reported), "--format", "markdown")[1]
    doc = json.loads(run_cli(capsys, "summary", str(reported), "--format", "json")[1])
    assert doc["cautions"] == [{"kind": "not like for like", "text": caveat.rstrip(".")}]
    # a diff states the shape its change is at
    doc = json.loads(run_cli(capsys, "diff", str(seed), str(hostbound), "--case", "cupy", "--format", "json")[1])
    assert doc["pairs"][0]["shape"] == [1024, 1024, 1024] and doc["pairs"][0]["requested_shape"] is None


def test_a_passing_verdict_is_said_on_stderr_as_a_failing_one_is(capsys):
    """summary --fail-above said nothing on stderr when the pair passed (diff said it): a pass is printed as a
    failure is (docs/method.md), the verdict's sentence from the same record as JSON's."""
    run = SAMPLES / "h200-hostbound-1024"
    if not run.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    code, out, err = run_cli(capsys, "summary", str(run), "--fail-above", "90", "--format", "json")
    sentence = json.loads(out)["verdict"]["sentence"]
    assert code == 0 and err == f"flametool: {sentence}\n"
    code, _, err = run_cli(capsys, "summary", str(run), "--fail-above", "3")
    assert code == 3 and err.startswith("flametool: ") and err.count("\n") == 1


def test_every_summary_format_says_which_pair_was_not_compared_and_why(tmp_path, capsys):
    """A run whose case failed: its pair is left out of the figures, and every format says so with or without
    --fail-above (only --fail-above's verdict had said it; text, Markdown and JSON read as if it had never been
    asked for, while the report named the failure)."""
    from runbuild import make_run

    stack = "case.step (case.py:1);lib (lib.so) 40\n"
    run = make_run(tmp_path / "r", {"numpy": (stack, 6.0, 0), "torch": (stack, 9.0, 0), "mine": (stack, 1.0, 0)},
                   processes=2)
    data = json.loads((run / "run.json").read_text())
    data["config"]["pairs"] = [["numpy", "torch"], ["numpy", "mine"]]
    data["results"]["mine"].update(error="step() raised in its warm-up: RuntimeError: broken build", timing=None)
    (run / "run.json").write_text(json.dumps(data))
    said = "mine vs numpy not compared: mine failed (step() raised in its warm-up: RuntimeError: broken build)"
    code, out, _ = run_cli(capsys, "summary", str(run))
    assert code == 0 and said in out and "torch vs numpy: " in out
    code, out, _ = run_cli(capsys, "summary", str(run), "--format", "markdown")
    assert code == 0 and said in MarkdownIt().render(out)
    code, out, _ = run_cli(capsys, "summary", str(run), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["not_compared"] == said and [p["label"] for p in doc["pairs"]] == ["torch vs numpy"]
    # a run whose pairs were all compared says nothing of it
    del data["config"]["pairs"][1]
    (run / "run.json").write_text(json.dumps(data))
    code, out, _ = run_cli(capsys, "summary", str(run), "--format", "json")
    assert json.loads(out)["not_compared"] is None


def test_markdown_leads_with_the_verdict_and_its_exit_code(tmp_path, capsys):
    """The pull-request comment said each pair's outcome in a table column and the exit code nowhere: its first
    line after the heading is now the worst verdict (the one that set the exit code), how the others came out,
    and the exit code."""
    run = SAMPLES / "h200-hostbound-1024"
    if not run.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    md = MarkdownIt("commonmark").enable("table")
    for pct, code_wanted, words in ((5, 3, "❌ slower, exit 3 (of 3 comparisons: 2 slower, 1 passed): cupy vs cublas: "),
                                    (90, 0, "✅ passed, exit 0 (of 3 comparisons: 3 passed): torch vs cupy: ")):
        code, out, err = run_cli(capsys, "summary", str(run), "--format", "markdown", "--fail-above", str(pct))
        tokens = md.parse(out)
        assert code == code_wanted and tokens[0].tag == "h3" and tokens[3].type == "paragraph_open", out
        first = rendered_text(md, tokens[4].content)
        assert first.startswith(words) and first.endswith(err.removeprefix("flametool: ").strip()), first
    # a pair not compared is an inconclusive verdict: said first too, with its exit code
    from runbuild import make_run

    stack = "case.step (case.py:1);lib (lib.so) 40\n"
    broken = make_run(tmp_path / "r", {"numpy": (stack, 6.0, 0), "mine": (stack, 1.0, 0)}, processes=2)
    data = json.loads((broken / "run.json").read_text())
    data["results"]["mine"].update(error="step() raised in its warm-up: RuntimeError: broken build", timing=None)
    (broken / "run.json").write_text(json.dumps(data))
    code, out, _ = run_cli(capsys, "summary", str(broken), "--format", "markdown", "--fail-above", "5")
    tokens = md.parse(out)
    assert code == 4 and rendered_text(md, tokens[4].content).startswith("⚠️ inconclusive, exit 4: "), out
    # without --fail-above there is no verdict to lead with
    out = run_cli(capsys, "summary", str(run), "--format", "markdown")[1]
    assert "exit" not in out.split("|")[0]


def test_markdown_keeps_a_frame_s_and_a_line_s_code_as_it_is(capsys):
    """A frame's name and a line's code are Markdown code spans: their backticks had been dropped (`a`b` showed
    as ab), so the comment named a frame or a line other than the one sampled; now the span's fence is longer
    than any run of backticks inside, and what renders is the name itself, markup characters and all."""
    import dataclasses

    from flametool.analyse.lines import BY_FILE_LINE, LineDelta
    from flametool.render import summary_formats

    run = SAMPLES / "h200-hostbound-1024"
    if not run.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    from flametool.analyse.attribution import Figure
    from flametool.analyse.lines import LineCost

    made = summary.of(dispatch.analyse_dir(run), None)
    name = "`tick``_a_b_*|<x>` (lib`q`.so)"
    pair = made.pairs[0]
    pair.largest_frame = dataclasses.replace(pair.largest_frame, display=name)
    line = LineCost("my_case|x.py", 5, "a_b_c.<locals>.step", "python", Figure(1.0, 0.1, 1), Figure(1.0, 0.1, 1),
                    "s = f\"`{x}`\"  # a_b*c", None, True)
    pair.lines = [LineDelta(line, dataclasses.replace(line, self=Figure(6.0, 0.1, 6), total=Figure(6.0, 0.1, 6)),
                            BY_FILE_LINE, 5.0, 0.1, 5.0, 0.1)]
    out = render.show("markdown", made)
    md = MarkdownIt("commonmark").enable("table")
    codes = [c.content for t in md.parse(out) if t.type == "inline" for c in (t.children or [])
             if c.type == "code_inline"]
    assert name in codes and 's = f"`{x}`"  # a_b*c' in codes, codes
    # the text format quotes them the same way: the same words, one way of writing a span
    assert summary_formats.frame_text(pair).startswith(f"{name} (") and "``s = f\"`{x}`\"  # a_b*c``" in (
        summary_formats.line_texts(pair)[0])


def test_markdown_of_an_incomplete_run_says_so_at_the_top(capsys):
    """A sweep stopped part-way said '**Run incomplete.**' only at the very bottom of its comment."""
    run = SAMPLES / "h200-sweep-same-operands"
    if not run.is_dir():
        pytest.skip("the H200 samples are not recorded")
    code, out, _ = run_cli(capsys, "summary", str(run), "--format", "markdown")
    lines = [l for l in out.splitlines() if l.strip()]
    assert code == 0 and lines[1] == "**Run incomplete: run.json holds what finished**", lines[:4]


def test_markdown_escapes_strikethrough_entities_and_math():
    """A name with '~', '&' or '$' was read as GitHub's strikethrough, an entity or math."""
    from flametool.render.summary_formats import md

    assert md("a~b~ &amp; $x$") == "a\\~b\\~ \\&amp; \\$x\\$"


@pytest.mark.parametrize("run", ["samples/h200-atlas", "samples/h200-hostbound-1024", "samples/h200-seed-as-reported",
                                 "samples/h200-seed-fp16", "samples/h200-sweep-fp16", "samples/h200-sweep-same-operands",
                                 "tests/data/h200-sum-counts", "tests/data/schema1-run"])
def test_markdown_says_95_once_per_column_and_every_interval_in_the_cells(capsys, run):
    """Every cell said '(95%: ...)' and a header 'ratio (95%)': each header now says '95% interval' once and each
    cell '1.836× (1.810 to 1.862)'; every ratio, difference and bound of the JSON is still in the comment."""
    path = SAMPLES.parent / run
    if not path.is_dir():
        pytest.skip(f"{run} is not recorded")
    out = run_cli(capsys, "summary", str(path), "--format", "markdown")[1]
    doc = json.loads(run_cli(capsys, "summary", str(path), "--format", "json")[1])
    md = MarkdownIt("commonmark").enable("table")
    rows = cells(md.parse(out))
    assert [h for h in rows[0] if "95%" in h] and all(h.endswith("(95% interval)") for h in rows[0] if "95%" in h)
    assert not [c for r in rows[1:] for c in r if "95%" in c], rows
    text = "\n".join(rendered_text(md, c) for r in rows[1:] for c in r)
    for p in doc["pairs"] + doc["rows"]:
        r = p["ratio"]
        assert f"{r['value']:.3f}× ({r['low']:.3f} to {r['high']:.3f})" in text, (p["label"], text)
    for p in doc["pairs"]:
        d = p["difference_us"]
        assert f"({d['low']:+,.2f} to {d['high']:+,.2f}) at " in text, (p["label"], text)


def test_markdown_says_a_column_the_same_on_every_row_once_and_keeps_one_that_differs():
    from flametool.render.summary_formats import table

    head = ["comparison", "ratio (95% interval)", "measured"]
    same = table(head, [["a vs b", "1.1×", "paired, over 2 processes"], ["c vs b", "1.2×", "paired, over 2 processes"]],
                 lift={2})
    assert same == ["| comparison | ratio (95% interval) |", "|---|---|", "| a vs b | 1.1× |", "| c vs b | 1.2× |", "",
                    "measured: paired, over 2 processes", ""]
    differ = table(head, [["a vs b", "1.1×", "paired, over 2 processes"], ["c vs b", "1.2×", "not paired"]], lift={2})
    assert differ[0] == "| comparison | ratio (95% interval) | measured |" and differ[-1] == "" and len(differ) == 5


def test_a_note_on_the_counts_of_every_pair_is_said_once(capsys):
    """Three pairs of CPU cases counted: every pair's list repeated 'both: the case runs on the CPU ...', and
    'numpy: the one Python call is step() itself (...)' in each pair with numpy; text and Markdown now say each
    once, under every pair's own counted lines, which stay with their pair."""
    from fractions import Fraction

    from flametool.analyse import countdiff
    from flametool.run.counts import ON_CPU, Counts, Tally

    run = SAMPLES / "h200-hostbound-1024"
    if not run.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    made = summary.of(dispatch.analyse_dir(run))
    calls = {"cupy": ["step()"], "torch": ["step()", "torch.mm"], "cublas": ["step()"]}
    counted = {side: Counts(10, 10, [Tally("python", n, Fraction(1)) for n in names], missing=[ON_CPU])
               for side, names in calls.items()}
    for p in made.pairs:
        p.counts = countdiff.diff_counts(counted[p.base], counted[p.head], p.base, p.head)
    itself = countdiff.step_itself_note(["cupy", "cublas"])
    assert [countdiff.step_itself(p.counts) for p in made.pairs] == [["cupy"], ["cublas", "cupy"], ["cublas"]]
    text = render.show("text", made)
    assert text.count(ON_CPU) == 1 and f"counted, every comparison: every case: {ON_CPU}" in text.splitlines()
    assert text.count("the one Python call is step() itself") == 1
    assert f"counted, every comparison: {itself}" in text.splitlines()
    mine = "  counted: torch makes 1 call of torch.mm per step; cupy makes none of it"
    assert text.splitlines()[text.splitlines().index(mine) - 1].startswith("torch vs cupy: ")
    out = render.show("markdown", made)
    plain = MarkdownIt("commonmark").enable("table").render(out)
    assert out.count("the case runs on the CPU") == 1 and out.count("the one Python call is step() itself") == 1
    assert "<li>every case: the case runs on the CPU (no CUDA API calls or kernels to count)</li>" in plain
    assert out.index("**torch vs cublas: counted per step**") < out.index("**counted, every comparison**")
    # each pair's own lines: its difference and its totals
    assert out.count("- no difference: the same calls per step on both sides") == 1
    assert out.count("- cupy: 1 Python call per step; torch: 2 Python calls per step") == 1


def test_markdown_speaks_of_microseconds_only_where_it_shows_them(capsys):
    """Every comment ended with 'Ratios relative to an anchor ... move far less from run to run than microseconds,
    ...' (197 characters), a sweep's and an atlas's too, which show ratios only. Now only under a difference in us."""
    closing = "move far less from run to run than microseconds"
    for run in ("h200-sweep-fp16", "h200-atlas"):
        code, out, _ = run_cli(capsys, "summary", str(SAMPLES / run), "--format", "markdown")
        assert code == 0 and closing not in out and " us" not in out, (run, out)
    code, out, _ = run_cli(capsys, "summary", str(SAMPLES / "h200-hostbound-1024"), "--format", "markdown")
    assert closing in out.splitlines()[-1] and "at cupy's 17.72 us" in out


def test_every_summary_format_says_which_case_failed_outside_the_compared_pairs(tmp_path, capsys):
    """`compare --workload w.py:f --libs numpy,torch,jax` where fn writes in place: jax's case failed (JAX's arrays
    are immutable) and the run exited 1, but `summary` said nothing of jax in text, Markdown or JSON: jax is in
    none of the pairs (the default is the first two libraries), and only a pair left out said what failed. Every
    format now names it and why; a long reason is cut in its middle, keeping the line of fn at its end."""
    from runbuild import make_run

    stack = "case.step (case.py:1);lib (lib.so) 40\n"
    run = make_run(tmp_path / "r", {"numpy": (stack, 6.0, 0), "torch": (stack, 9.0, 0), "jax": (stack, 1.0, 0)},
                   processes=2)
    data = json.loads((run / "run.json").read_text())
    data["config"]["pairs"] = [["numpy", "torch"]]
    why = ("jax cannot run fn: TypeError: JAX arrays are immutable and do not support in-place item assignment. "
           "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: https://docs.jax.dev/en/latest/"
           "_autosummary... at /me/w.py:58 (a[0] = 1.0)")
    data["results"]["jax"].update(error=why, timing=None)
    (run / "run.json").write_text(json.dumps(data))
    code, out, _ = run_cli(capsys, "summary", str(run))
    said = next(l for l in out.splitlines() if l.startswith("jax failed ("))
    assert code == 0 and said.endswith(" at /me/w.py:58 (a[0] = 1.0))") and " … " in said and len(said) < 200
    assert said.startswith("jax failed (jax cannot run fn: TypeError: JAX arrays are immutable")
    code, out, _ = run_cli(capsys, "summary", str(run), "--format", "markdown")
    assert "jax failed (jax cannot run fn" in MarkdownIt().render(out)
    doc = json.loads(run_cli(capsys, "summary", str(run), "--format", "json")[1])
    assert doc["failed"] == {"jax": why} and doc["not_compared"] is None
    # where a pair left out says it, it is said there, once
    data["config"]["pairs"].append(["numpy", "jax"])
    (run / "run.json").write_text(json.dumps(data))
    out = run_cli(capsys, "summary", str(run))[1]
    assert out.count("jax failed (") == 1 and "jax vs numpy not compared: jax failed (" in out


def test_a_pair_not_compared_names_its_own_cases_failures_only(tmp_path, capsys):
    """torch failed and so did jax (in no pair): 'torch vs numpy not compared: torch failed (boom); jax failed
    (...)' read as if jax's failure were a reason torch and numpy were not compared. The pair names torch's alone,
    and jax's failure is said on its own line, in every format."""
    from runbuild import make_run

    stack = "case.step (case.py:1);lib (lib.so) 40\n"
    run = make_run(tmp_path / "r", {"numpy": (stack, 6.0, 0), "torch": (stack, 9.0, 0), "jax": (stack, 1.0, 0)},
                   processes=2)
    data = json.loads((run / "run.json").read_text())
    data["config"]["pairs"] = [["numpy", "torch"]]
    data["results"]["torch"].update(error="boom", timing=None)
    data["results"]["jax"].update(error="jax cannot run fn", timing=None)
    (run / "run.json").write_text(json.dumps(data))
    code, out, _ = run_cli(capsys, "summary", str(run))
    said = next(l for l in out.splitlines() if "not compared" in l)
    assert said.endswith("torch vs numpy not compared: torch failed (boom)") and "jax" not in said, out
    assert "jax failed (jax cannot run fn)" in out and out.count("jax failed (") == 1
    markdown = MarkdownIt().render(run_cli(capsys, "summary", str(run), "--format", "markdown")[1])
    assert "<strong>torch vs numpy not compared: torch failed (boom)</strong>" in markdown
    assert markdown.count("jax failed (") == 1
    doc = json.loads(run_cli(capsys, "summary", str(run), "--format", "json")[1])
    assert doc["not_compared"] == "torch vs numpy not compared: torch failed (boom)"
    assert set(doc["failed"]) == {"torch", "jax"}


def test_every_sampled_figure_s_plus_minus_is_said_once_in_the_same_words(capsys, tmp_path):
    """The per-line keys said the ± is the share's error alone (a line in every sample reads ± 0.00); the frames' and
    layers' keys still said 'one standard error from the number of samples', and `summary` printed ± figures (the
    largest layer and frame, the lines) with no key at all. Every key now says it in format.share_se's words, and a
    summary says it once where it shows a sampled ±, not where it shows none."""
    from flametool.render import diff_tables, format as fmt, lines_view

    assert lines_view.LINE_SE == fmt.share_se("line")
    assert diff_tables.FRAME_KEY.endswith(fmt.share_se("frame")) and fmt.share_se("layer") in diff_tables.layer_key("caller")
    assert "from the number of samples" not in diff_tables.layer_key("library")
    said = "layers, frames and lines: ± one standard error of its share of the samples, not of the case's time per call"
    for form in ("text", "markdown"):
        code, out, _ = run_cli(capsys, "summary", str(SAMPLES / "h200-seed-fp16"), "--format", form)
        assert code == 0 and out.count(said) == 1 and " ± " in out.split(said)[0], (form, out)
        code, out, _ = run_cli(capsys, "summary", str(SAMPLES / "h200-atlas"), "--format", form)  # no sampled ±
        assert code == 0 and said not in out, (form, out)
    assert main.main(["report", str(SAMPLES / "h200-seed-fp16"), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "from the number of samples" not in page and "from the sample count" not in page
    assert fmt.share_se("frame") in page.replace("&#39;", "'")
