"""report.html: rendered from a real CPU run, a hand-built run with hostile names, the H200 reference
stacks and any recorded samples/; every section there, its data parseable, nothing loaded from elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import pytest

from checks import one_line_error

from flametool import render
from flametool.analyse import attribution, dispatch
from flametool.commands import base, main
from flametool.run import rundir
from flametool.analyse import flamegraph as flame
from flametool.render import html as report, jinja_env
from flametool.run.record import Group
from flametool.run.timing import Loops
from reportruns import CLOSER, ROOT, XSS, cpu_run_dir, h200_run_dir, hostile_run, sample_runs
from runbuild import env_run_dir, make_run, snapshot

SECTIONS = ["headline", "warnings", "layers", "frames", "flames", "cprofile", "environment"]
# attributes through which a page loads something (a link the reader clicks, <a href>, loads nothing)
LOADING = {"src", "srcset", "data", "poster", "action", "formaction", "background", "xlink:href"}


class Page(HTMLParser):
    """What the tests look at: tags with their attributes, the text of every <script>, and all text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in: tuple[str, dict] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag in ("script", "style"):
            self._in = (tag, attrs)
            self._buf = []

    def handle_endtag(self, tag):
        if self._in and tag == self._in[0]:
            body = "".join(self._buf)
            (self.scripts.append((self._in[1], body)) if tag == "script" else self.styles.append(body))
            self._in = None

    def handle_data(self, data):
        if self._in:
            self._buf.append(data)
        else:
            self.text.append(data)

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if a.get("id")}

    def flame_data(self) -> dict:
        blocks = [body for attrs, body in self.scripts if attrs.get("id") == "flame-data"]
        assert len(blocks) == 1 and [a.get("type") for a, _ in self.scripts if a.get("id") == "flame-data"] == ["application/json"]
        return json.loads(blocks[0])


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    return cpu_run_dir(tmp_path_factory)


@pytest.fixture(scope="module")
def h200_run(tmp_path_factory):
    return h200_run_dir(tmp_path_factory)


@pytest.fixture
def evil_run(tmp_path):
    return hostile_run(tmp_path / "evil")


def rendered(run: Path) -> tuple[str, Page]:
    html = render.show("html", dispatch.analyse_dir(run))
    return html, Page(html)


def check_page(run: Path, html: str, page: Page) -> dict:
    """What every report must satisfy, whatever its run."""
    assert set(SECTIONS) <= page.ids(), set(SECTIONS) - page.ids()
    order = [html.index(f'<section id="{s}"') for s in SECTIONS]
    assert order == sorted(order), "sections out of order"
    data = page.flame_data()
    analysed_run = dispatch.analyse_dir(run)
    analysed = [l for l, a in analysed_run.cases.items() if isinstance(a, attribution.CaseCosts)]
    kinds = [g["kind"] for g in data["graphs"]]
    assert kinds.count("case") == len(analysed)
    # one differential graph per compared pair that both sides sampled, each tied to its pair
    diffs = [p for p in analysed_run.pairs if p.diff]
    assert kinds.count("diff") == len(diffs)
    assert [g["id"] for g in data["graphs"] if g["kind"] == "diff"] == [f"fg-diff-{i}" for i in range(len(diffs))]
    for g in data["graphs"]:
        assert page.ids() >= {g["id"]}
        width = 5 if g["kind"] == "case" else 7
        for i, row in enumerate(g["rows"]):
            assert len(row) == width and -1 <= row[0] < i and row[1] < len(data["strings"])
    no_external_loads(page)
    return data


def no_external_loads(page: Page) -> None:
    for tag, attrs in page.tags:
        assert tag not in ("link", "iframe", "object", "embed", "base"), tag
        if tag == "script":
            assert "src" not in attrs
        for name, value in attrs.items():
            if name in LOADING and value is not None:
                assert value.startswith("data:") or value.startswith("#"), (tag, name, value)
            if name == "href" and value is not None:
                assert value.startswith("#"), (tag, name, value)  # only in-page anchors
            if name == "style" and value:
                assert "url(" not in value.lower(), value
    for css in page.styles:
        assert "url(" not in css.lower() and "@import" not in css.lower() and "@font-face" not in css.lower()
    for attrs, body in page.scripts:
        for api in ("fetch(", "XMLHttpRequest", "import(", "importScripts", "WebSocket", ".src ="):
            assert api not in body, api


# --- the page -------------------------------------------------------------------------------------------

def test_compare_writes_report(cpu_run):
    """compare renders report.html itself, through the same function as `flametool report`."""
    path = cpu_run / rundir.REPORT_FILE
    assert path.is_file()
    page = Page(path.read_text(encoding="utf-8"))
    check_page(cpu_run, path.read_text(encoding="utf-8"), page)
    assert rundir.load(cpu_run).complete is True and dispatch.analyse_dir(cpu_run).first_diff is not None


def test_cpu_run_report(cpu_run):
    html, page = rendered(cpu_run)
    data = check_page(cpu_run, html, page)
    text = " ".join(page.text)
    for label in ("numpy", "torch"):
        assert f"flametool snakeviz {cpu_run} --case {label}" in text
        assert f"snakeviz {cpu_run / (label + '.prof')}" in text
    assert "torch − numpy = " in text and "us per call on the host (torch " in text  # the headline sentence
    # the headline leads with the paired ratio of the two cases, timed in the same processes
    pairs = report.build(dispatch.analyse_dir(cpu_run)).headline.pairs[0].lines
    assert pairs[0].startswith("torch / numpy = ") and pairs[0].endswith(", paired over 2 processes"), pairs
    assert text.index(pairs[0]) < text.index("us per call on the host (torch ")
    # a graph for each of the three cases and a differential one for each of the two pairs (torch and add_case,
    # each against numpy): no other thread's graph
    assert [p.head for p in dispatch.analyse_dir(cpu_run).pairs] == ["torch", "add_case"] and len(data["graphs"]) == 5
    assert sum(1 for t, _ in page.tags if t == "rect") > 0  # the layer chart is drawn, server-side


def test_h200_reference_report(h200_run):
    """Thousands of stacks, C++ names hundreds of characters long: pruned, and the page says so."""
    html, page = rendered(h200_run)
    data = check_page(h200_run, html, page)
    graphs = {g["kind"]: g for g in data["graphs"]}
    assert all(g["pruned_nodes"] > 0 for g in data["graphs"])
    assert "are not drawn" in html
    names = set(data["strings"])
    assert any(n.startswith("cupy._core._routines_linalg.") for n in names)
    assert any("THPVariable_mm" in n for n in names)
    assert graphs["diff"]["head"] == "torch" and graphs["diff"]["base"] == "cupy"
    text = " ".join(page.text)
    assert "At the sampled shape (256,256,256) torch − cupy = −" not in text  # one minus sign: the ASCII one
    assert "torch − cupy = -" in text and "In torch − cupy, the largest layer difference" in text
    assert "not host-bound" in text and "256,256,256" in text  # which shape was sampled, and why
    # its figures were measured in separate processes: the page says the comparison is not paired
    assert "not paired: each case in processes of its own" in text and "not paired" in [w.kind for w in report.build(dispatch.analyse_dir(h200_run)).warnings]
    assert len(html) < 1_500_000


@pytest.mark.parametrize("run", sample_runs() or [pytest.param(None, marks=pytest.mark.skip(reason="no samples/ recorded yet"))],
                         ids=lambda p: p.name if p else "none")
def test_samples_render(run, tmp_path):
    before = snapshot(run)
    out = tmp_path / "report.html"
    assert main.main(["report", str(run), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    kind = rundir.load(run).kind
    if kind == "sweep":
        check_sweep_page(run, html, Page(html))
    elif kind == "atlas":  # its sections, and a link to the report of each op it measured
        assert {"headline", "table", "layers", "frames", "environment"} <= Page(html).ids()
        # written elsewhere (-o): each link reaches the op's report in the atlas's folder, from where the page is
        for row in dispatch.analyse_dir(run).rows:
            link = os.path.relpath(run / row.dir / "report.html", out.parent)
            assert (f'href="{link}"' in html) == (row.error is None)
            assert row.error is not None or (out.parent / link).is_file()
    else:
        check_page(run, html, Page(html))
    assert snapshot(run) == before


def check_sweep_page(run: Path, html: str, page: Page) -> None:
    """A sweep's report: its sections in order, a line and a mark per case, kind and measured size in the
    plot, a table row per size, each crossover and sampled size named, and nothing loaded from elsewhere."""
    a = dispatch.analyse_dir(run)
    sections = ["headline", "plot", "ratio", *(["layers"] if a.layers else []), "table", "environment"]
    order = [html.index(f'<section id="{s}"') for s in sections]
    assert order == sorted(order), "sections out of order"
    plotted = [p for pts in a.curves.values() for p in pts if p.cpu_us]
    lines = sum(1 for pts in a.curves.values() for kind in ("cpu_us", "gpu_us") if any(getattr(p, kind) for p in pts))
    assert html.count("<polyline") == lines + len([sp for sp in a.pairs if any(p.wall for p in sp.points)])
    assert html.count("<circle") >= len(plotted)
    table = html[html.index('<section id="table"'):html.index('<section id="environment"')]
    assert table.count("<tr>") == 1 + len(a.shapes)
    for label, c in a.crossovers.items():
        assert f"{label}: {c.text}" in html.replace("&#39;", "'")
        if c.size:
            assert f"crossover {label} ≈ {c.size:,.0f}" in html
    for size, by_case in a.layers.items():
        for label in by_case:
            assert f"{label} {size}" in html
    no_external_loads(page)


def test_markup_in_frame_names_is_text(evil_run):
    html, page = rendered(evil_run)
    check_page(evil_run, html, page)
    assert not [a for t, a in page.tags if t == "img"], "a frame name became an <img> tag"
    assert [a.get("id") or a.get("type") for a, _ in page.scripts] == ["flame-data", None], "a frame name opened a <script>"
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "onerror=alert(1)>" not in html.replace("&gt;", "")  # never as live markup
    strings = page.flame_data()["strings"]
    assert any(XSS in s for s in strings) and any(CLOSER in s for s in strings)  # JSON gives the names back as they were
    assert "</script><script>alert(2)" not in html


def test_warnings(tmp_path):
    """Each fairness problem named on the page."""
    run = make_run(tmp_path / "r", {"a": ("step (s.py:1);f (s.py:2) 50\n", 10.0, 0), "b": ("step (s.py:1);g (s.py:3) 50\n", 12.0, 0)})
    data = rundir.load(run)
    a, b = data.results["a"], data.results["b"]
    b.dtype, b.shape = "bfloat16", [128, 64, 64]
    b.timing.host_bound, b.timing.bound_note = False, "GPU time per call far above CPU"
    b.sample_shape_reason = "not host-bound, so sampled at 1024,1024,1024"
    b.profile.cprofile_us_per_call = 3.0 * b.profile.own_us_per_call  # 3x its own unsampled loop
    b.timing.processes[0].cpu_us = [12.0, 40.0]  # one process, two loops far apart
    a.profile.sampling.sampled_us_per_call = 2.5 * a.profile.own_us_per_call  # 2.5x slower while sampled
    a.profile.sampling.complete, a.profile.sampling.error, a.profile.sampling.threads = False, "py-spy exited with code 1", 34
    data.complete = False
    rundir.save(run, data)
    assert b.profile.cprofile_inflation == pytest.approx(3.0) and a.profile.slowdown == pytest.approx(2.5)
    text = " ".join(Page(render.show("html", dispatch.analyse_dir(run))).text)
    for words in ("run incomplete", "different dtypes", "different shapes", "not host-bound", "1024,1024,1024",
                  "few samples", "2.50× slower while py-spy", "stops all 34 threads of the process", "sampling incomplete", "py-spy exited with code 1",
                  "3.00× slower under cProfile", "noisy timing"):
        assert words in text, words


def test_the_sampling_warning_counts_one_thread_as_one():
    """A CPU run's process samples one thread: the warning said 'each native sample stops all 1 threads of the
    process' (compare --device cpu, numpy slowed 1.68x)."""
    from flametool.render.report_caveats import _threads
    from flametool.run.profiled import Sampling
    one, many = Sampling(["py-spy"], 100, 5.0), Sampling(["py-spy"], 100, 5.0)
    one.threads, many.threads = 1, 34
    assert _threads(one) == "the process's one thread"
    assert _threads(many) == "all 34 threads of the process"


def test_headline_names_the_difference(tmp_path):
    run = make_run(tmp_path / "r", {
        "a": ("step (s.py:1);shared (lib.so) 100\n", 10.0, 0),
        "b": ("step (s.py:1);shared (lib.so) 100\nstep (s.py:1);malloc (libc.so.6) 100\n", 20.0, 0),
    })
    model = report.build(dispatch.analyse_dir(run))
    # the headline leads with the paired ratio and difference (one process, one round each: no interval)...
    (answer,) = model.headline.pairs
    assert answer.lines == ["b / a = 2.000× (no interval); b − a = +10.00 us per call, paired over 1 round of one process"]
    assert answer.cautions == ["b / a: no interval (too few processes or rounds); run with --processes 5 for one"]
    # ...then says where the difference is
    assert model.headline.sentence.startswith("At the sampled shape (64,64,64) b − a = +10.00 us per call on the host "
                                              "(b 20.00 us against a 10.00 us, 2.00×")
    # by default malloc is charged to its caller (step, Python); the library view keeps it apart
    assert "Python (+10.00 us)" in model.headline.sentence and "malloc (libc.so.6) (+10.00" in model.headline.sentence
    assert [r.deltas for r in model.layers_library.rows if r.layer == "C library/allocator"] == [[("+10.00 ± 0.71", "more")]]
    assert "C library/allocator" not in {r.layer for r in model.layers.rows}
    html = render.show("html", dispatch.analyse_dir(run))
    assert html.index("b / a = 2.000×") < html.index("At the sampled shape (64,64,64) b − a")


def paired_processes(run: Path, loops: dict[str, list[list[float]]]) -> None:
    """Give each case of a hand-built run these loops, one list per timing process (all cases paired)."""
    data = rundir.load(run)
    for label, per_process in loops.items():
        data.results[label].timing.processes = [Loops(list(l), slots=[]) for l in per_process]
    data.groups = [Group(list(loops), len(loops) > 1, "paired: hand-built", len(next(iter(loops.values()))))]
    rundir.save(run, data)


def test_headline_names_the_processes(tmp_path):
    """How many processes a paired figure pools, and the interval over them, are on the page."""
    stack = "step (s.py:1);f (s.py:2) 50\n"
    run = make_run(tmp_path / "r", {"a": (stack, 10.0, 0), "b": (stack, 12.0, 0)})
    # the processes run at speeds of their own; b / a is 1.19, 1.20 and 1.21 within them
    paired_processes(run, {"a": [[10.0, 10.0], [15.0, 15.0], [20.0, 20.0]], "b": [[11.9, 11.9], [18.0, 18.0], [24.2, 24.2]]})
    model = report.build(dispatch.analyse_dir(run))
    ((line,),) = [p.lines + p.cautions for p in model.headline.pairs]  # a tight interval: no note that it is wide
    assert line.startswith("b / a = 1.200× (95%: 1.17") and line.endswith(", paired over 3 processes"), line
    assert "over 3 processes" in model.headline.method
    rows = {c.label: c for c in model.headline.cases}
    assert rows["a"].cpu == "15.00 us" and rows["a"].cpu_spread.startswith("95%: ")  # bootstrap over the processes
    # one process of three rounds: the units are rounds of that process, and the page says so, not "3 processes"
    paired_processes(run, {"a": [[10.0, 10.2, 10.4]], "b": [[12.0, 12.3, 12.5]]})
    ((line,),) = [p.lines for p in report.build(dispatch.analyse_dir(run)).headline.pairs]
    assert line.startswith("b / a = 1.20") and "3 processes" not in line and "3 rounds" in line, line


def test_an_anchored_pair_s_method_and_sentence_are_of_the_anchored_figure(tmp_path):
    """A compare --env run, not sampled: the page's method said "Isolated: ... a process's own speed is not
    cancelled" right under the anchored figure (which cancels it), and the sentence under them spoke of torch@a
    against numpy@a, the anchor beside the case, a pair nothing compares."""
    run = env_run_dir(tmp_path / "r", [0.60, 0.61, 0.59, 0.60], [0.66, 0.67, 0.65, 0.66])
    a = dispatch.analyse_dir(run)
    (pair,) = a.pairs
    assert pair.anchored is not None and pair.anchored.ratio == pytest.approx(1.1, rel=1e-3)
    h = report.build(a).headline
    assert h.pairs[0].lines[0].startswith("numpy@b / numpy@a relative to torch = 1.100×"), h.pairs
    assert h.method.startswith("Anchored: each environment's processes time the case beside the anchor"), h.method
    assert "Isolated" not in h.method
    # the compared pair; its figures are in its line just above, not said again (the sentence read 'numpy@b −
    # numpy@a = +0.68 us per call relative to torch (1.100×, the pair's figure above); there is no stack diff ...')
    assert h.sentence == ("There is no stack diff to say where numpy@b's difference from numpy@a comes from (no case "
                          "was sampled)."), h.sentence
    assert "torch@a" not in h.sentence and f"{pair.anchored.diff_us:.2f}" in h.pairs[0].lines[0]
    # sampled: the sentence's figures are the diff's, at the common speed of both sides' processes (it called them
    # "the pooled times", which the case table shows: numpy@a 6.00 us there, 6.84 us at the common speed)
    a = dispatch.analyse_dir(env_run_dir(tmp_path / "sampled", [0.60, 0.61, 0.59, 0.60], [0.66, 0.67, 0.65, 0.66],
                                         sampled=True))
    (pair,) = a.pairs
    assert pair.diff is not None and pair.diff.base_us_per_call == pytest.approx(pair.anchored.at_us)
    sentence = report.build(a).headline.sentence
    assert sentence.startswith(f"At the sampled shape (64,64,64) numpy@b − numpy@a = +{pair.anchored.diff_us:.2f} us "
                               f"per call on the host (numpy@b {pair.anchored.at_us * pair.anchored.ratio:.2f} us "
                               f"against numpy@a {pair.anchored.at_us:.2f} us, 1.10×; both at the common speed of "
                               "their processes, as the pair's figure above)"), sentence
    assert a.timings["numpy@a"].cpu_us != pytest.approx(pair.anchored.at_us, rel=1e-3)


def test_a_fail_above_run_s_page_gives_its_verdict(tmp_path):
    """compare --env ... --fail-above 3 exited 3 (slower), and its page said +10% but never whether that failed the
    gate the run was given: a CI user opening the report could not see the verdict. Now the headline gives it, as
    summary --fail-above gives it; a run made without --fail-above has none."""
    run = env_run_dir(tmp_path / "r", [0.60, 0.61, 0.59, 0.60], [0.66, 0.67, 0.65, 0.66])
    assert [p.verdict for p in report.build(dispatch.analyse_dir(run)).headline.pairs] == [""]
    data = json.loads((run / "run.json").read_text())
    data["config"]["fail_above"] = 3.0
    (run / "run.json").write_text(json.dumps(data))
    (line,) = [p.verdict for p in report.build(dispatch.analyse_dir(run)).headline.pairs]
    assert line.startswith("verdict: slower: numpy@b vs numpy@a: +10.0% (95%: "), line
    assert line.endswith("slower by more than --fail-above 3%"), line
    assert main.main(["report", str(run)]) == 0
    assert line in (run / "report.html").read_text()


def test_an_env_run_s_page_leads_with_the_answer_and_puts_the_method_below_it(tmp_path):
    """The page of a compare --env --fail-above run gave its anchored figure, the figure not anchored and what the
    speed adjustment did as equally bold bullets, and the verdict under all of them: the answer did not stand out
    from how it was reached. Now the answer (the anchored figure, then its verdict) comes first, in bold, and the
    method lines after it in a quieter list."""
    run = env_run_dir(tmp_path / "r", [0.60, 0.61, 0.59, 0.60], [0.66, 0.67, 0.65, 0.66])
    data = json.loads((run / "run.json").read_text())
    data["config"]["fail_above"] = 3.0
    (run / "run.json").write_text(json.dumps(data))
    h = report.build(dispatch.analyse_dir(run)).headline
    (answer,) = h.pairs
    (figure,) = answer.lines
    assert figure.startswith("numpy@b / numpy@a relative to torch = 1.100× (95%: "), figure
    assert answer.verdict.startswith("verdict: slower: numpy@b vs numpy@a: +10.0% (95%: ") and answer.outcome == "slower"
    assert [line.split(":")[0] for line in h.how] == ["not anchored", "speed adjustment"], h.how
    html = render.show("html", dispatch.analyse_dir(run))
    head = html[html.index('<section id="headline">'):]
    at = {what: head.index(what) for what in ('<span class="answer">numpy@b / numpy@a relative to torch',
                                              '<span class="verdict slower">verdict: slower',
                                              '<ul class="how">', "<li>not anchored: ", "<li>speed adjustment: ")}
    assert list(at.values()) == sorted(at.values()), at
    # the answer is bold and the method quiet: the page's own style says so
    style = " ".join(Page(html).styles)
    assert "ul.pairs .answer { font-size: 17px; font-weight: 600; }" in style
    assert "ul.how { color: var(--muted); font-size: 12.5px;" in style


def test_pairs_that_are_not_paired_say_so(tmp_path):
    """A case timed in processes of its own (--isolate, or it could not share one): the caveat, with why,
    and the pair figure marked not paired."""
    stack = "step (s.py:1);f (s.py:2) 50\n"
    run = make_run(tmp_path / "r", {"a": (stack, 10.0, 0), "b": (stack, 12.0, 0)})
    data = rundir.load(run)
    data.groups = [Group(["a"], False, "--isolate: each case in processes of its own", 1),
                   Group(["b"], False, "--isolate: each case in processes of its own", 1)]
    data.results["a"].group, data.results["b"].group = 0, 1
    rundir.save(run, data)
    model = report.build(dispatch.analyse_dir(run))
    assert model.headline.pairs[0].lines[0] == "b / a = 1.200× (no interval); b − a = +2.00 us per call, not paired: each case in processes of its own"
    caveats = [w.text for w in model.warnings if w.kind == "not paired"]
    assert len(caveats) == 2 and caveats[0].startswith("a: --isolate: each case in processes of its own.")


def test_processes_that_differ_are_flagged(tmp_path):
    stack = "step (s.py:1);f (s.py:2) 50\n"
    run = make_run(tmp_path / "r", {"a": (stack, 10.0, 0), "b": (stack, 12.0, 0)})
    paired_processes(run, {"a": [[10.0], [20.0]], "b": [[12.0], [24.0]]})
    text = " ".join(Page(render.show("html", dispatch.analyse_dir(run))).text)
    assert "a: its timing processes ran at 10.00 us to 20.00 us per call" in text
    assert "not paired" not in text  # both cases shared those processes


def test_run_is_analysed_in_memory(tmp_path):
    """run.json holds measurements only: the report analyses the run afresh, and writes nothing."""
    run = make_run(tmp_path / "r", {"a": ("step (s.py:1);f (s.py:2) 300\n", 10.0, 0), "b": ("step (s.py:1);g (s.py:3) 300\n", 12.0, 0)})
    before = snapshot(run)
    html, page = rendered(run)
    assert len(page.flame_data()["graphs"]) == 3
    assert snapshot(run) == before


def test_pruning_threshold():
    from flametool.analyse import attribution as at
    from flametool.run import folded

    raw = [folded.Stack(("step (s.py:1)", "big (s.py:2)"), 9990), folded.Stack(("step (s.py:1)", "tiny (s.py:3)", "deeper (s.py:4)"), 10)]
    graph = flame.case_graph(at.make_profile("x", raw, 0, 100.0), flame.Strings(), "g")
    assert graph.pruned_nodes == 2 and abs(graph.pruned_us - 0.1) < 1e-9
    assert graph.drawn_nodes == 3  # root, step, big


def test_environment_is_strict_and_escaping():
    env = jinja_env.environment()
    assert env.autoescape is True and env.undefined is jinja2.StrictUndefined
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ r.missing }}").render(r=object())


# --- the command ------------------------------------------------------------------------------------------

def test_report_command_writes_into_run_dir(evil_run, capsys):
    before = snapshot(evil_run)
    assert main.main(["report", str(evil_run)]) == 0
    captured = capsys.readouterr()  # the line saying where it went is a status line: standard error
    assert captured.out == "" and captured.err.strip() == f"report: {evil_run / 'report.html'}"
    after = snapshot(evil_run)
    assert set(after) - set(before) == {"report.html"} and all(after[k] == v for k, v in before.items())
    assert not [p for p in evil_run.iterdir() if p.name.startswith(".report.html")]  # no temporary left


def test_report_output_elsewhere_leaves_run_dir_alone(evil_run, tmp_path):
    before = snapshot(evil_run)
    out = tmp_path / "elsewhere.html"
    assert main.main(["report", str(evil_run), "-o", str(out)]) == 0
    assert out.stat().st_size > 0 and snapshot(evil_run) == before


def _missing_run_json(run: Path):
    (run / "run.json").unlink()


def _corrupt_run_json(run: Path):
    (run / "run.json").write_text('{"schema": 1, "results": {', encoding="utf-8")


def _newer_schema(run: Path):
    data = json.loads((run / "run.json").read_text())
    data["schema"] = rundir.SCHEMA + 1
    (run / "run.json").write_text(json.dumps(data))


def _garbage_folded(run: Path):
    (run / "beta.folded").write_text("this is not a folded stack\n\x00\x01 nonsense\n", encoding="utf-8")


def _bad_prof(run: Path):
    (run / "alpha.prof").write_bytes(b"not a profile at all \x00\xff")


def _missing_prof(run: Path):
    (run / "alpha.prof").unlink()


@pytest.mark.parametrize("spoil, names", [
    (_missing_run_json, "run.json"), (_corrupt_run_json, "run.json"), (_newer_schema, "run.json"),
    (_garbage_folded, "beta.folded"), (_bad_prof, "alpha.prof"), (_missing_prof, "alpha.prof"),
])
def test_report_bad_input(evil_run, capsys, spoil, names):
    spoil(evil_run)
    before = snapshot(evil_run)
    line = one_line_error(capsys, ["report", str(evil_run)])
    assert names in line
    assert snapshot(evil_run) == before


def test_report_missing_folder(tmp_path, capsys):
    line = one_line_error(capsys, ["report", str(tmp_path / "nope")])
    assert str(tmp_path / "nope") in line and not (tmp_path / "nope").exists()


def test_compare_keeps_run_json_when_render_fails(evil_run, capsys, monkeypatch):
    """compare's last step: a report that cannot be rendered is one line, and run.json is untouched."""
    def broken(*args, **kwargs):
        raise RuntimeError("template exploded")

    before = snapshot(evil_run)
    monkeypatch.setattr(report, "fill", broken)  # what the HTML renderers render with
    from rich.console import Console

    base.write_report(evil_run, dispatch.analyse_dir(evil_run), Console(stderr=True), Console())
    err = capsys.readouterr().err
    assert "report.html not written" in err and "template exploded" in err and "flametool report" in err
    assert snapshot(evil_run) == before


# --- the templates ship in the wheel ----------------------------------------------------------------------

def test_installed_wheel_finds_templates(tmp_path, evil_run):
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(wheels), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("flametool-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert {"flametool/templates/report.html.j2", "flametool/templates/assets/report.js",
                "flametool/templates/assets/report.css"} <= names
        site = tmp_path / "site"
        zf.extractall(site)
    # the unpacked wheel first on the path: flametool and its templates come from there, not from this checkout
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import flametool, flametool.render.jinja_env as r;"
        "assert flametool.__file__.startswith(sys.argv[1]), flametool.__file__;"
        "print(r.templates_dir());"
        "from flametool.commands import main; assert main.main(['report', sys.argv[2], '-o', sys.argv[3]]) == 0"
    )
    out = tmp_path / "from-wheel.html"
    proc = subprocess.run([sys.executable, "-c", probe, str(site), str(evil_run), str(out)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert Path(proc.stdout.strip()) == site / "flametool" / "templates"
    assert 'id="flame-data"' in out.read_text(encoding="utf-8")


def test_cases_are_shown_against_the_floors(tmp_path):
    """A run with floor cases says how far each library case is above each floor at the same shape and dtype."""
    stack = "step (s.py:1);f (s.py:2) 50\n"
    run = make_run(tmp_path / "r", {"cupy": (stack, 20.0, 0), "torch": (stack, 14.0, 0), "cublas": (stack, 10.5, 0),
                                    "torch-graph": (stack, 0.04, 0)})
    data = rundir.load(run)
    for label in ("cublas", "torch-graph"):
        data.results[label].factory = f"flametool.cases:{label}"
    data.results["torch-graph"].dtype = "bfloat16"  # not comparable with the float32 cases: left out
    rundir.save(run, data)
    floors = report.build(dispatch.analyse_dir(run)).headline.floors
    assert floors == [
        "cupy (20.00 us per call): +9.50 us against cublas (10.50 us: cublasGemmEx called with the least Python).",
        "torch (14.00 us per call): +3.50 us against cublas (10.50 us: cublasGemmEx called with the least Python).",
    ]
    html = render.show("html", dispatch.analyse_dir(run))
    assert "Against the floors" in html and "+9.50 us against cublas" in html
    # a user case that happens to be labelled like a floor is not one
    data.results["cublas"].factory = "/home/me/mine.py:cublas"
    rundir.save(run, data)
    assert report.build(dispatch.analyse_dir(run)).headline.floors == []


def test_a_run_renders_to_the_same_page_in_every_process(tmp_path):
    """Two `flametool report` processes with different hash seeds: the same page but for its timestamp."""
    import os
    import re
    import subprocess
    import sys

    run = Path(__file__).resolve().parent.parent / "samples" / "h200-hostbound-1024"
    if not run.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    pages = []
    for seed in ("1", "2"):
        out = tmp_path / f"{seed}.html"
        subprocess.run([sys.executable, "-m", "flametool", "report", str(run), "-o", str(out)], check=True,
                       env=dict(os.environ, PYTHONHASHSEED=seed), capture_output=True)
        pages.append(re.sub(r"report generated \S+", "", out.read_text(encoding="utf-8")))
    assert pages[0] == pages[1]


def test_the_headline_says_each_thing_once_and_one_number_for_each_figure():
    """Issue 33, item 5, on the H200 host-bound run (three pairs, two floors not host-bound at 1024^3): the
    pairing is explained once (it was repeated per pair, each naming its base); the pair's difference
    cupy − cublas is one rounded number in the headline, the sentence under it, the layer table's total and
    the floors' line (+8.06 stood beside +8.07); and a case not host-bound at the op's host-bound size is not
    told it was moved "to the host-bound shape" it was already at."""
    import re

    run = Path(__file__).resolve().parent.parent / "samples" / "h200-hostbound-1024"
    if not run.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    m = report.build(dispatch.analyse_dir(run))
    h = m.headline
    assert h.method.count("Paired: ") == 1 and h.method.count("loops interleaved") == 1, h.method
    line = next(p.lines[0] for p in h.pairs if p.lines[0].startswith("cupy / cublas"))
    shown = re.search(r"cupy − cublas = (\S+) us per call", line).group(1)
    assert m.layers.total_deltas[m.layers.diff_titles.index("cupy − cublas")] == shown
    assert f"{shown} us against cublas" in next(f for f in h.floors if f.startswith("cupy "))
    # the prose speaks of the pair the page shows first (issue 43: it named cupy − cublas above torch − cupy)
    first = next(p.lines[0] for p in h.pairs if p.lines[0].startswith("torch / cupy"))
    shown = re.search(r"torch − cupy = (\S+) us per call", first).group(1)
    assert m.pairs[0] == "torch − cupy" and f"torch − cupy = {shown} us per call on the host" in h.sentence
    assert re.search(r"\)\. In torch − cupy, the largest", h.sentence)
    assert [c.ratio for c in h.cases if c.label.endswith("-graph")] == ["0.0034×", "0.0057×"]  # not 0.00×
    for w in m.warnings:
        moved = re.search(r"requested shape (\S+) is not host-bound.*sampled at the host-bound shape (\S+)\.", w.text)
        assert not (moved and moved.group(1) == moved.group(2).rstrip(".")), w.text
    assert any("Sampled at the requested shape 1024,1024,1024, the op's host-bound size" in w.text
               for w in m.warnings if w.text.startswith("cupy-graph: "))


def test_every_difference_on_the_page_is_the_difference_of_the_figures_shown():
    """A difference beside two figures is their difference as shown (fmt.shown_delta), wherever the page shows
    it: the layer chart's numbers read as the layer table's (+5.88 stood beside +5.89), a frame's Δ total as its
    two cases' totals (-5.81 beside 17.58 and 11.78), a line's diffs as its two sides (it showed raw differences)."""
    run = Path(__file__).resolve().parent.parent / "samples" / "h200-hostbound-1024"
    if not run.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    m = report.build(dispatch.analyse_dir(run))

    def value(text: str) -> float:
        return float(text.split(" ± ")[0].replace(",", ""))

    seen = {"chart": 0, "frame total": 0, "line": 0}
    for i, chart in enumerate(m.layers.delta_charts):
        assert chart is not None
        table = {r.layer: r.deltas[i][0] for r in m.layers.rows if r.deltas[i][0]}
        for row in chart.rows:
            assert row.text == table[row.layer].split(" ± ")[0], (m.pairs[i], row.layer)
            seen["chart"] += 1
    totals = {t.title: {r.frame: value(r.cells[1][0]) for r in t.rows} for t in m.frame_tables}
    for t in m.diff_tables:
        head, base = t.title.split(" − ")
        for r in t.rows:
            if r.frame in totals[base] and r.frame in totals[head]:
                assert value(r.cells[3][0]) == pytest.approx(totals[head][r.frame] - totals[base][r.frame], abs=1e-9), \
                    (t.title, r.frame)
                seen["frame total"] += 1
    for pair in m.lines.pairs:
        for r in pair.rows:
            sides = [0.0 if s == "–" else value(s) for s in (r.base_self, r.head_self)]
            assert value(r.diff_self) == pytest.approx(sides[1] - sides[0], abs=1e-9), (pair.title, r.where)
            seen["line"] += 1
    assert all(seen.values()), seen  # each kind was checked, not skipped


def test_a_shape_already_host_bound_in_size_is_not_moved_to_itself():
    from flametool.measure.child import work
    from flametool.workload import ops

    size = ops.host_bound_shape("matmul", "cuda")
    shape, reason = work.choose_sample_shape(None, list(size), False, "matmul")
    assert shape == list(size) and "so launches are sampled at the host-bound shape" not in reason
    shape, reason = work.choose_sample_shape(None, [65536, 24576, 12288], False, "matmul")
    assert shape == list(size) and "is not host-bound" in reason


@pytest.mark.parametrize("command, option", [("sweep", False), ("atlas", False), ("compare", True)])
def test_the_rounds_row_names_timed_seconds_only_where_the_command_has_it(tmp_path, command, option):
    """The Environment's rounds row says how long a host-bound case's rounds went on, from run.json, and names
    --timed-seconds only for compare, the one command with it (a sweep's and an atlas's op's page named it)."""
    from flametool.render import report_environment
    from runbuild import make_sweep

    out = make_sweep(tmp_path / "run", {"numpy": {8: (None, 4.0, None)}})
    data = json.loads((out / "run.json").read_text())
    data["config"].update(repeats=1, timed_seconds=0.3)  # the loops ran 2 rounds: more than asked
    data["command"] = ["flametool", command, "--device", "cpu"]
    (out / "run.json").write_text(json.dumps(data))
    rows = dict(report_environment.ran_rows(rundir.load(out)))
    said = rows["rounds run per process"]
    assert said.startswith("2 (at least 1, --repeats;") and "until it has been timed for 0.3 s" in said
    assert ("--timed-seconds" in said) is option


def test_a_run_without_line_texts_has_no_empty_code_column(tmp_path):
    """samples/h200-seed-fp16 was recorded before lines' texts were kept (no sources.json): the terminal's line
    tables drop their code column for such a run, but the page's Lines section had a 'code' column empty on every
    row of every table, under a note saying the texts are 'kept in sources.json'. The page now drops the column
    and says the run kept no text; a run that kept texts keeps the column (its texts shown)."""
    from flametool.render import lines_view

    sample = ROOT / "samples" / "h200-seed-fp16"
    if not (sample / "run.json").is_file():
        pytest.skip("samples/h200-seed-fp16 is not recorded")
    assert not (sample / "sources.json").exists()
    html = base.page(sample)
    lines = html[html.index('<section id="lines">'):]
    lines = lines[:lines.index("</section>")]
    assert "<th>code</th>" not in lines and "<th>line</th>" in lines
    assert lines_view.NO_TEXTS.split(":")[0] in " ".join(Page(lines).text)
    # a run that kept its lines' texts: the column is there, with them
    kept = tmp_path / "kept"
    shutil.copytree(sample, kept)
    (kept / "sources.json").write_text(json.dumps({"version": 1, "files": {"flametool/cases.py": {
        "origin": "case", "path": "/work/main/flametool/cases.py", "lines": {"155": "    return cupy.matmul(a, b)"}}}}))
    html = base.page(kept)
    lines = html[html.index('<section id="lines">'):]
    assert "<th>code</th>" in lines and "return cupy.matmul(a, b)" in lines


def test_the_page_title_names_its_pair_as_the_headline_does():
    """The page's title read 'cupy vs torch' (the cases' order) above a headline and summary of 'torch vs cupy'."""
    from flametool.analyse import dispatch
    from flametool.render import html

    run = Path(__file__).parent.parent / "samples" / "h200-seed-fp16"
    if not run.is_dir():
        pytest.skip("the H200 samples are not recorded")
    a = dispatch.analyse_dir(run)
    assert [(p.head, p.base) for p in a.pairs] == [("torch", "cupy")]
    assert html.build(a).title == "flametool: torch vs cupy"


def test_an_environments_page_title_names_its_pairs_not_every_case(tmp_path):
    """An --env run's title listed all its cases, the anchor's too ('numpy@a vs torch@a vs numpy@b vs torch@b')."""
    from flametool.analyse import dispatch
    from flametool.render import html

    run = env_run_dir(tmp_path / "envs", [1.5, 1.52, 1.49], [1.6, 1.62, 1.58])
    assert html.build(dispatch.analyse_dir(run)).title == "flametool: numpy@b vs numpy@a"


def test_a_page_without_stacks_says_why(tmp_path):
    """The headline of a --no-sample run said 'fewer than two cases were sampled', where none was, and the reason
    was --no-sample; a run with one case sampled names it."""
    from flametool.analyse import dispatch
    from flametool.render import report_headline
    from flametool.run import rundir

    run = make_run(tmp_path / "r", {"a": ("step (s.py:1);f (s.py:2) 50\n", 10.0, 0),
                                    "b": ("step (s.py:1);g (s.py:3) 50\n", 12.0, 0)})
    record = rundir.load(run)
    record.results["b"].profile.files.pop("folded", None)
    rundir.save(run, record)
    (run / "b.folded").unlink()
    assert report_headline.why_unsampled(dispatch.analyse_dir(run)) == "only a was sampled"
    record.results["a"].profile.files.pop("folded", None)
    record.config.recorded["sample"] = False
    rundir.save(run, record)
    (run / "a.folded").unlink()
    assert report_headline.why_unsampled(dispatch.analyse_dir(run)) == "the run was made with --no-sample"
