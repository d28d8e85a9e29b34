"""Every figure equals its twin in every view: the terminal summary and layer table, the report, and
`flametool diff`, on a hand-built run (the head calls libc from two layers and has a layer the base lacks)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from flametool.analyse import dispatch
from flametool.commands import main
from flametool.run import rundir
from flametool.run.record import RunConfig
from flametool.render import html as report, report_environment
from flametool.render import compare_tables
from runbuild import make_run

BASE = ("step (s.py:1);ufunc_generic_fastcall (_multiarray_umath.so) 30\n"
        "step (s.py:1);ufunc_generic_fastcall (_multiarray_umath.so);sgemm_kernel (libopenblas.so) 60\n"
        "step (s.py:1) 7\n")
HEAD = ("step (s.py:1);THPVariable_mm (libtorch_python.so) 20\n"
        "step (s.py:1);THPVariable_mm (libtorch_python.so);at::native::mm (libtorch_cpu.so) 25\n"
        "step (s.py:1);THPVariable_mm (libtorch_python.so);pthread_getspecific (libc.so.6) 9\n"
        "step (s.py:1);pthread_getspecific (libc.so.6) 4\n"
        "step (s.py:1);THPVariable_mm (libtorch_python.so);at::native::mm (libtorch_cpu.so);sgemm_kernel (libopenblas.so) 70\n"
        "step (s.py:1) 13\n")
LIBC = "pthread_getspecific (libc.so.6)"
NUMBER = re.compile(r"[+-]?\d[\d,]*\.\d\d")


@pytest.fixture
def run(tmp_path):
    out = make_run(tmp_path / "run", {"numpy": (BASE, 5.63, 3), "torch": (HEAD, 6.857, 2)})
    r = rundir.load(out)
    r.config = RunConfig.of({"processes": 5, "repeats": 3})  # asked; the hand-built run ran 1 process of 1 round
    rundir.save(out, r)
    return out


def printed(fn, *args) -> str:
    buffer = io.StringIO()
    fn(*args, Console(file=buffer, width=250, color_system=None))
    return buffer.getvalue()


def rows(text: str, title: str) -> dict[str, list[str]]:
    """The rows of the table under `title`: first cell -> the other cells."""
    body = text[text.index(title):]
    out: dict[str, list[str]] = {}
    for line in body.splitlines()[1:]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            out[cells[0]] = cells[1:]
    return out


def value(cell: str) -> float:
    return float(NUMBER.search(cell).group().replace(",", ""))


@pytest.mark.parametrize("view", ["caller", "library"])
def test_a_layer_rows_difference_is_head_minus_base_in_every_view(run, view, capsys):
    a = dispatch.analyse_dir(run)
    table = rows(printed(lambda a, c: compare_tables.print_layers(a, c, view=view), a), "host time per call by layer")
    assert table, "no layer table"
    for layer, (base, head, delta) in table.items():
        # no blank difference; the difference is head - base of the two figures shown beside it
        assert delta not in ("", "-"), layer
        b = value(base) if base != "-" else 0.0
        h = value(head) if head != "-" else 0.0
        assert value(delta) == pytest.approx(h - b, abs=1e-9), (layer, base, head, delta)
    # the report shows the same strings for the same rows
    model = report.build(dispatch.analyse_dir(run))
    section = model.layers if view == "caller" else model.layers_library
    shown = {r.layer: (r.values, r.deltas[0][0]) for r in section.rows}
    for layer, (base, head, delta) in table.items():
        if layer == "total (measured)":
            assert section.totals == [base, head] and section.total_deltas == [delta]
            continue
        values, d = shown[layer]
        assert [v if v != "–" else "-" for v in values] == [base, head] and d == delta, layer
    # and `flametool diff` (caller view) on the same run: the same figures, the same differences
    if view == "caller":
        assert main.main(["diff", str(run), "--base", "numpy", "--head", "torch"]) == 0
        diffed = rows(capsys.readouterr().out, "host time per call by layer")
        for layer, (base, head, delta) in table.items():
            db, dh, dd = diffed[layer]
            assert value(dd) == value(delta) and value(db) == (value(base) if base != "-" else 0.0), layer
            assert value(dh) == (value(head) if head != "-" else 0.0), layer


def test_a_frame_called_from_several_layers_says_so(run):
    a = dispatch.analyse_dir(run)
    text = printed(compare_tables.print_layers, a)
    frames = rows(text, "frames that differ most")
    assert frames[LIBC][0] == "several: PyTorch binding, Python"
    torch = next(f for f in a.cases["torch"].frames if f.frame == LIBC)
    assert torch.charged == ["PyTorch binding", "Python"]
    model = report.build(dispatch.analyse_dir(run))
    in_report = [r.layer for t in model.frame_tables + model.diff_tables for r in t.rows if r.frame == LIBC]
    assert in_report and set(in_report) == {"several: PyTorch binding, Python"}
    # a frame of one layer keeps its one label
    assert frames["THPVariable_mm (libtorch_python.so)"][0] == "PyTorch binding"


def test_samples_one_sign_and_what_ran(run):
    a = dispatch.analyse_dir(run)
    summary = printed(compare_tables.print_summary, a)
    layers = printed(compare_tables.print_layers, a)
    model = report.build(dispatch.analyse_dir(run))
    for label in ("numpy", "torch"):
        n = a.run.results[label].sampling.analysed_samples
        assert rows(summary, "profiled loops")[label][-1] == f"{n} at 100 Hz"
        assert f"{label}: layers sum to" in layers and f"from {n} samples" in layers.split(f"{label}: layers sum to")[1].splitlines()[0]
        assert any(line.startswith(f"{label}: ") and f"from {n} samples" in line for line in model.layers.closure)
        few = [c.text for c in model.warnings if c.kind == "few samples" and c.text.startswith(f"{label}: ")]
        assert few == [f"{label}: {n} samples in the loop (fewer than 200): small figures carry large uncertainty; "
                       "sample longer (--sample-seconds)."]
    # one sign convention: head − base of the pair numpy:torch, in the pair line, the sentence, the chart titles
    (lead,) = model.headline.pairs[0].lines
    assert lead.startswith("torch / numpy = ") and "torch − numpy = +" in lead
    assert model.headline.sentence.startswith("At the sampled shape (64,64,64) torch − numpy = +1.23 us per call")
    assert "In torch − numpy, the largest layer difference" in model.headline.sentence
    assert "minus" not in model.headline.sentence and model.layers.diff_titles == ["torch − numpy"]
    assert "torch - numpy" in layers  # the terminal's table column, ASCII
    # the environment says what ran beside what was asked
    env = dict(report_environment.environment_rows(run, a.run))
    assert env["processes run"] == "1 (5 asked)" and env["rounds run per process"].startswith("1 (at least 3, --repeats;")
    assert "config: processes" not in env and "config: repeats" not in env


@pytest.mark.parametrize("pool_threads, threads, words", [
    (None, 3, "--pool-threads 1 would perturb it less (each native sample stopped all 3 threads)"),
    (1, 3, "--rate 4 --sample-seconds 50 would perturb it less and still give about 200 samples"),
])
def test_the_advice_is_the_same_in_the_terminal_and_the_report(run, pool_threads, threads, words):
    r = rundir.load(run)
    r.config = RunConfig.of(r.config.recorded | {"pool_threads": pool_threads, "sample_seconds": 5})
    s = r.results["torch"].sampling
    s.rate_hz, s.threads, s.total_samples = 25, threads, s.kept_samples
    s.sampled_us_per_call = 2.5 * r.results["torch"].profile.own_us_per_call  # sampling slowed it 2.5x
    rundir.save(run, r)
    summary = printed(compare_tables.print_summary, dispatch.analyse_dir(run)).replace("\n", " ")
    assert f"torch: sampling slowed the loop 2.50x at 25 Hz (shares stay fair); {words}" in summary
    caveat = next(c for c in report.build(dispatch.analyse_dir(run)).warnings if c.kind == "sampling slowed the loop")
    assert caveat.text.endswith(f" {words}.")


def test_every_terminal_table_has_a_key_a_newcomer_reads(run):
    """Issue 33, item 3: under each table of compare's terminal output a line says what its columns are, with
    no unexplained jargon: the interval is in parentheses (not "brackets"), the profiled loops' ratios say
    what they are relative to, the frame table's two differences are named apart ("delta" stood beside "delta
    total"), and a CPU run has no GPU column."""
    a = dispatch.analyse_dir(run)
    summary = printed(compare_tables.print_summary, a)
    layers = printed(compare_tables.print_layers, a)
    text = summary + layers
    for jargon in ("in brackets", "while sampled", "delta", "charged to their callers", " proc\n"):
        assert jargon not in text, jargon
    after = lambda title: text[text.index(title):].split("└", 1)[1].splitlines()[1]  # noqa: E731
    assert after("time per call, as timed").startswith("host (CPU) / call: the host's clock around the loop")
    assert "95% interval in parentheses" in summary and "GPU" not in summary.split("time per call, as timed")[1].split("profiled")[0]
    assert after("profiled loops").startswith("timed together: the figure above at this shape; alone: the same loop")
    assert "how many times the alone figure" in summary
    assert after("host time per call by layer").startswith("each case's time per call (timed together) split by")
    assert after("frames that differ most").startswith("self: time in the frame's own code; total: with the frames")
    assert "diff: torch minus numpy (+: torch spends more)" in layers
    head_row = layers[layers.index("frames that differ most"):].splitlines()[2]
    assert [c.strip() for c in head_row.strip("┃").split("┃")][-2:] == ["diff self", "diff total"]


def test_words_fit_the_device_op_and_run(run):
    """Issue 33, item 4: a CPU run's torch layer is not called "ATen/CUDA glue" (a CUDA run's still is, with
    the same colour and place); a CPU run whose elementwise cases read different values is not told of a
    GEMM's GPU clocks, and why it matters is said once however many operand shapes differ; a ratio already
    at ±5% is not advised more processes to reach ±5%."""
    from flametool.analyse import layers as ly
    from flametool.analyse.operands import UnlikeOperands
    from flametool.render import charts
    from flametool.render import format as fmt
    from test_stats import spread_pair

    a = dispatch.analyse_dir(run)
    layers = printed(compare_tables.print_layers, a)
    assert "ATen glue" in rows(layers, "host time per call by layer") and "CUDA" not in layers
    model = report.build(dispatch.analyse_dir(run))
    assert "ATen glue" in [r.layer for r in model.layers.rows] and "CUDA" not in json_of(model)
    assert charts.colour("ATen glue") == charts.colour("ATen/CUDA glue")
    assert ly.order(["CPU BLAS", "ATen glue", "Python"]) == ["Python", "ATen glue", "CPU BLAS"]
    r = rundir.load(run)
    for result in r.results.values():
        result.device = "cuda:0"
    rundir.save(run, r)
    assert "ATen/CUDA glue" in rows(printed(compare_tables.print_layers, dispatch.analyse_dir(run)), "host time per call by layer")

    unlike = [UnlikeOperands([4096], "float32", {"numpy": "aa", "mine": "bb"}, {"numpy": "seeded", "mine": "its own"}),
              UnlikeOperands([64, 64], "float32", {"numpy": "cc", "mine": "dd"}, {"numpy": "seeded", "mine": "its own"})]
    cpu = fmt.unlike_lines(unlike, "cpu", "add")
    assert len(cpu) == 2 and not any("GEMM" in l or "GPU" in l for l in cpu)
    assert sum("like with like" in l for l in cpu) == 1
    gpu = fmt.unlike_lines(unlike[:1], "cuda:0", "matmul")
    assert "A GEMM's GPU time depends on the values" in gpu[0]
    same = UnlikeOperands([8], "float32", {"numpy": "aa", "torch": "aa", "mine": "bb"},
                          {"numpy": "seeded", "torch": "seeded", "mine": "its own"})
    said = fmt.unlike_sentence(same, "cpu", "add")
    assert "torch and numpy read different values" not in said and "seeded" not in said  # the generator: run.json
    assert "mine and numpy" in said and "mine and torch" in said
    # a case of one's own is told where the built-in cases' values come from (a new user met the warning and had to
    # find the fix in docs/writing-cases.md)
    assert "flametool.workload.values.uniform: docs/writing-cases.md#operand-values-and-fingerprints" in said
    # only the pairs compared: torch against numpy read the same bytes, so nothing is said of them
    assert fmt.unlike_lines([same], "cpu", "add", [("numpy", "torch")]) == []
    assert fmt.unlike_lines([same], "cpu", "add", [("numpy", "mine")])[0].startswith(
        "at 8 float32, mine and numpy read different values")

    at_five = spread_pair(10, 0.065)  # an interval that reaches 5.03%: shown as ±5%
    assert at_five.wide and f"{at_five.reach:.0%}" == "5%"
    assert fmt.wide_note(at_five) is None
    wider = spread_pair(10, 0.07)  # 5.4%
    assert fmt.wide_note(wider) and "±5%" not in fmt.wide_note(wider).split(":")[1].split(";")[0]


def json_of(model) -> str:
    import dataclasses
    import json

    return json.dumps(dataclasses.asdict(model), default=str)


def test_a_signed_figure_that_rounds_to_zero_has_no_minus():
    """An interval read '-0.02 to -0.00' (a not-anchored difference of two runs)."""
    from flametool.render import format as fmt

    assert fmt.signed(-0.001) == "+0.00" and fmt.signed(-0.006) == "-0.01" and fmt.signed(1234.5) == "+1,234.50"
