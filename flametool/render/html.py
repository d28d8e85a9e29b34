"""The HTML renderer, report.html: the Jinja2 environment and the view model its templates read.

A new section of the page is a dataclass here (what it shows, decided here), a function that fills it from
the analysis, a field of Report, and a partial in templates/partials/ that lays it out.

Everything the page shows is decided here, as plain dataclasses of strings and numbers; the templates in
templates/ only lay it out. The page is one file with its style, script and data inline, so it opens from
file:// anywhere, with no network. It is rendered from the run directory alone (run.json, the .folded and
.prof files, which the analysis read), which is why `flametool report` works on a machine without a GPU.
The renderer reads no file of the run: what it shows comes in the analysis.
"""

from __future__ import annotations

import functools
import json
import shlex
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import cast

import jinja2
from markupsafe import Markup

from .. import __version__
from ..workload import builtins
from ..run import counts, perturbation, rundir
from ..run.counts import count_words
from . import aligned_lines, atlas_page, charts, counted_lines, format as fmt, lines_view, sweep_page
from ..analyse import countdiff, cxxnames, flamegraph as flame, naming
from ..analyse.compare import Analysis, PairAnalysis
from ..analyse.attribution import CaseCosts, Skipped
from ..analyse.treediff import LayerDelta, PairDiff
from ..analyse.sweep import SweepAnalysis
from ..analyse.atlas import AtlasAnalysis
from ..errors import FlametoolError
from ..run.profiled import ProfileProcess, Sampling
from ..run.record import CaseResult, Run
from .base import Renderer

REPORT_FILE = "report.html"
PAGE = "report.html.j2"
SWEEP_PAGE = "sweep.html.j2"
ATLAS_PAGE = "atlas.html.j2"
FEW_SAMPLES = 200
SLOWDOWN_WARN = 1.5
CPROFILE_WARN = 1.5
SPREAD_WARN = 1.5  # slowest / fastest timed repeat
TOP_FRAMES = 40
TOP_DIFF = 40


# --- templates: in the wheel as flametool/templates, in a checkout as the top-level templates/ ----------

def templates_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "templates", package.parent / "templates"):
        if (candidate / PAGE).is_file():
            return candidate
    raise FlametoolError(f"report templates not found (looked in {package / 'templates'} and "
                         f"{package.parent / 'templates'}); reinstall flametool")


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,  # every name on the page comes from a profile: C++ names, user case files
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def asset(env: jinja2.Environment, name: str) -> Markup:
    """A CSS or JS file from templates/assets, inlined as is (not rendered: braces are not Jinja's)."""
    source, _, _ = env.loader.get_source(env, f"assets/{name}")  # type: ignore[union-attr]
    if "</" + ("style" if name.endswith(".css") else "script") in source.lower():
        raise FlametoolError(f"templates/assets/{name}: must not contain its own closing tag")
    return Markup(source)


def script_json(value) -> Markup:
    """JSON safe inside <script type="application/json">: '<', '>' and '&' as \\u escapes, so no name
    (a frame called '</script><img onerror=...>') can close the tag, and JSON.parse reads it back as is."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
                  .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# --- the view model ---------------------------------------------------------------------------------------

us, num, pm, shape_text = fmt.us, fmt.num, fmt.pm, fmt.shape


@dataclass
class CaseRow:
    label: str
    library: str
    dtype: str
    shape: str
    device: str
    cpu: str
    cpu_spread: str
    gpu: str
    ratio: str
    bound: str
    error: str


@dataclass
class Headline:
    cases: list[CaseRow]
    sentence: str
    base: str
    note: str
    floors: list[str] = field(default_factory=list)
    pairs: list[str] = field(default_factory=list)  # each compared pair: ratio and difference with intervals
    method: str = ""  # how those were computed, and which time the layer and frame figures use
    speed_note: str = ""  # which figures hold across runs, and what the intervals of microseconds cover


@dataclass
class Caveat:
    kind: str  # short tag shown before the text
    text: str


@dataclass
class LayerRow:
    layer: str
    colour: str
    values: list[str]
    deltas: list[tuple[str, str]]  # per compared pair: (text, "more" | "less" | "")


@dataclass
class Layers:
    chart: charts.StackedChart | None
    delta_charts: list[charts.DeltaChart | None]  # per compared pair, in the order of Report.pairs
    labels: list[str]
    rows: list[LayerRow]
    totals: list[str]
    total_deltas: list[str]
    closure: list[str]
    skipped: list[str]
    diff_titles: list[str]
    speed_notes: list[str] = field(default_factory=list)  # a pair's sides put at their common speed (anchored)


@dataclass
class FrameRow:
    frame: str  # full name, shown on hover
    display: str
    layer: str
    colour: str
    cells: list[tuple[str, float]]  # (text, sort key)


@dataclass
class FrameTable:
    id: str
    title: str
    headers: list[str]
    rows: list[FrameRow]
    note: str
    pair: int | None = None  # the compared pair it belongs to (Report.pairs), shown when that pair is chosen


@dataclass
class FlameGraphs:
    graphs: list[dict]  # id, kind, title, caption
    data: Markup
    threshold: str
    note: str


@dataclass
class ProfileRow:
    function: str
    cells: list[tuple[str, float]]


@dataclass
class CProfileCase:
    label: str
    file: str
    commands: list[str]
    summary: str
    rows: list[ProfileRow]
    note: str


@dataclass
class CountsSection:
    """What one step() call does, counted (exact): each pair's differences first, then each case's counts."""

    pairs: list[tuple[str, list[tuple[str, str]]]]  # ("torch vs cupy", [(line, full name on hover or '')])
    headers: list[str]
    rows: list[list]  # a cell: text, or a named column's (shown, full name) pairs
    notes: list[str]
    # each case's threads other than the caller: case, CPU per call on them, samples, by layer, most own time
    threads: list[list[str]] = field(default_factory=list)
    sources: str = ""  # what counts which kind (html.counted_by), for the note above the table
    lines: counted_lines.CountedLines | None = None  # per line of step(), the GPU's busy share (counted_lines.py)


def counts_section(a: Analysis) -> CountsSection | None:
    """None for a run whose cases have no counted loop (recorded before counting): the page is as it was."""
    counted = {l: r.profile.counts for l, r in a.run.results.items() if r.profile is not None and r.profile.counts}
    if not counted:
        return None

    rows: list[list] = []
    cols, tracers = fmt.counted_columns(counted.values())  # a CPU run: no CUDA columns, all 'not counted'
    for label, c in counted.items():
        own = cast(ProfileProcess, a.run.results[label].profile).own_us_per_call  # counted: its counts are its profile's
        rows.append([label, *(named_cell(c, col) for col in cols),
                     f"{c.us_per_call:,.2f} us" + (f" ({c.us_per_call / own:.2f}× the {own:,.2f} us alone)" if own else "")
                     if c.us_per_call else "–"])
    on_cpu = not tracers and fmt.run_device(a.run) == "cpu"
    pairs = [(f"{p.head} vs {p.base}", countdiff.named_lines(p.counts, notes=not on_cpu))
             for p in a.pairs if p.counts is not None]
    notes = [fmt.GPU_COUNTS] if on_cpu else list(dict.fromkeys(m for c in counted.values() for m in c.missing))
    threads = [[label, f"{t.us_per_call:,.2f} us", str(t.profile.samples) if t.profile else "–",
                "; ".join(f"{layer} {f.us_per_call:,.2f} us" for layer, f in
                          sorted(t.costs.layers.items(), key=lambda kv: -kv[1].us_per_call)) if t.costs
                else fmt.threads_unsampled(a.run.results[label]),
                (f"{t.costs.frames[0].display} ({t.costs.frames[0].self.us_per_call:,.2f} us)"
                 if t.costs and t.costs.frames else "–")]
               for label, t in fmt.busy_threads(a.threads).items()]
    return CountsSection(pairs, ["case", *(col.title for col in cols), "counted loop, host time per call"],
                         rows, notes, threads, sources=counted_by(bool(tracers) or not on_cpu), lines=counted_lines.view(a))


def named_cell(c, col) -> "str | list[tuple[str, str]]":
    """A counted table's cell: a named column's as (shown, full) pairs, each name shortened by template depth and
    its demangled whole on hover; the others as text."""
    tallies = sorted((t for t in c.tallies if t.kind in col.kinds), key=lambda t: (-t.count, t.name))
    if col.cell != "named" or not all(c.counted(k) for k in col.kinds) or not tallies:
        return fmt.count_cell(c, col, "–")
    return [(f"{count_words(t.count)} {cxxnames.shortened(t.name)}", cxxnames.demangled(t.name)) for t in tallies]


def counted_by(traced: bool = True) -> str:
    """What counts which kind, as the report's note says it: 'Python calls from the cProfile loop; CUDA API calls,
    kernels, copies and memsets from CUPTI in a counted loop of their own' (the kinds counted always, by their
    library's pool or tracemalloc, left to the table; `traced`: False on a CPU run, where no tracer ran)."""
    by = {"cprofile": "the cProfile loop", **({"tracer": "CUPTI in a counted loop of their own"} if traced else {})}
    parts = []
    for source, words in by.items():
        titles = [k.title for k in counts.COUNTED if k.counted_by == source]
        if titles:
            parts.append(f"{', '.join(titles[:-1]) + ' and ' if len(titles) > 1 else ''}{titles[-1]} from {words}")
    return "; ".join(parts)


@dataclass
class Report:
    pairs: list[str]  # the compared pairs with a diff, "head − base": the page shows one at a time
    title: str
    run_dir: str
    generated: str
    version: str
    complete: bool
    headline: Headline
    warnings: list[Caveat]
    layers: Layers  # the default view: system libraries charged to the layer that called them
    layers_library: Layers  # system libraries as layers of their own
    layer_rule: str
    frame_tables: list[FrameTable]
    diff_tables: list[FrameTable]
    flames: FlameGraphs
    cprofile: list[CProfileCase]
    environment: list[tuple[str, str]]
    css: Markup = Markup("")
    js: Markup = Markup("")
    sections: list[tuple[str, str]] = field(default_factory=list)
    counts: CountsSection | None = None  # what each call does, counted (runs recorded before counting: None)
    lines: lines_view.LinesSection | None = None  # host time per source line (render/lines_view.py)
    aligned: aligned_lines.AlignedSection | None = None  # the step lines the cases share (render/aligned_lines.py)


def ok_results(run: Run) -> dict[str, CaseResult]:
    return {l: r for l, r in run.results.items() if not r.error}


def headline(a: Analysis) -> Headline:
    run = a.run
    ok = ok_results(run)
    base = next(iter(ok), "")
    base_cpu = t.cpu_us if base and (t := a.timings.get(base)) else None
    rows = []
    for label, r in run.results.items():
        t = a.timings.get(label)
        cpu = t.cpu_us if t else None
        rows.append(CaseRow(
            label=label, library=r.library or r.factory or "", dtype=r.dtype or "–",
            shape=fmt.op_shape(run.config.operation, r.shape), device=r.device_name or r.device or "–",
            cpu=us(cpu), cpu_spread=f"95%: {fmt.interval(t.interval, us)}" if t and t.interval else "",
            gpu=us(t.gpu_us) if t and t.gpu_us is not None else ("none (CPU)" if r.device == "cpu" else "–"),
            ratio=times(cpu / base_cpu) if isinstance(cpu, (int, float)) and base_cpu else "–",
            bound=("host-bound" if r.timing.host_bound else "not host-bound") if r.timing and r.timing.host_bound is not None else "–",
            error=r.error or "",
        ))
    processes = run.config.timing_processes
    pairs, methods = [], []
    for p in a.pairs:
        pairs += fmt.pair_lines(p, run, processes)
        if p.headline is not None and p.headline.method not in methods:
            methods.append(p.headline.method)
    method = (" ".join(m[0].upper() + m[1:] + "." for m in methods)
              + " A case's own time: a bootstrap 95% interval over its processes."
              + " Layer and frame figures are sample shares times each case's paired time per call at the sampled "
                "shape (pooled over its timing processes at the median process's speed, as in the table); the sampled process's own unsampled time "
                "is shown beside it in the cProfile section as a check. The words (host-bound, floor, anchor, "
                "speed-adjusted, layers): docs/glossary.md in flametool's repository.")
    on_gpu = any(r.device != "cpu" for r in ok.values())
    return Headline(rows, sentence(a, ok), base,
                    "host (CPU) / call: the host's clock around the loop, per call, pooled over the case's timing "
                    "processes at the median process's speed (the figure its pairs' ratios and differences are taken "
                    "at), its 95% interval below. "
                    + ("GPU / call: device time per call from CUDA events around the same calls. " if on_gpu else
                       "GPU / call: none, the run is on the CPU. ")
                    + f"× first: host time against the first case's ({base}). bound: host-bound, "
                    + ("the GPU waited for the host's launches (what flametool measures), or not, the host waited "
                       "for the GPU." if on_gpu else "the loop's time is the host's own work."),
                    against_floors(a, ok), pairs, method, fmt.speed_note(a.pairs) or "")


def against_floors(a: Analysis, ok: dict[str, CaseResult]) -> list[str]:
    """How far each library case is above each floor measured in the same run, at the same shape and dtype."""
    cpu = {l: t.cpu_us for l in ok if (t := a.timings.get(l))}
    floors = {l: r for l, r in ok.items() if builtins.is_floor(l, r.factory) and l in cpu}
    lines = []
    for label, r in ok.items():
        if label in floors or label not in cpu:
            continue
        parts = [f"{fmt.shown_delta(cpu[fl], cpu[label]):+,.2f} us against {fl} ({us(cpu[fl])}: {builtins.FLOORS[fl]})"
                 for fl, f in floors.items() if (f.shape, f.dtype) == (r.shape, r.dtype)]
        if parts:
            lines.append(f"{label} ({us(cpu[label])} per call): " + "; ".join(parts) + ".")
    return lines


def times(ratio: float) -> str:
    """'× first': two decimals, or three figures below 0.1 (a CUDA graph's launch read 0.00× of cupy's)."""
    return f"{ratio:.2f}×" if ratio >= 0.1 or ratio == 0 else f"{ratio:.2g}×"


def sentence(a: Analysis, ok: dict[str, CaseResult]) -> str:
    # the pair the page shows first (its pair switch selects the first pair with a diff): the prose and the view
    # below it speak of one pair (the largest gap, cupy − cublas, was told above a view of torch − cupy)
    pair = next((p for p in a.pairs if p.diff), None)
    if pair is not None:
        case_diff = pair.diff
        assert case_diff is not None  # only the pairs with a diff
        base, head = case_diff.base, case_diff.head
        b, h = case_diff.base_us_per_call, case_diff.head_us_per_call
        # one sign convention everywhere: head − base of the pair BASE:HEAD, as the pair's line and the charts
        delta = fmt.shown_delta(b, h)
        shape = shape_text(ok[head].sample_shape if head in ok else None)
        text = (f"At the sampled shape ({shape}) {head} − {base} = {delta:+,.2f} us per call on the host ({head} "
                f"{num(h)} us against {base} {num(b)} us" + (f", {h / b:.2f}×" if b else "") + "; the pooled times, as "
                "the pair's figure above).")
        layers = sorted(case_diff.layers, key=lambda r: -abs(r.delta_us_per_call))
        frames = [r for r in case_diff.frames if r.delta_us_per_call]
        parts = []
        if layers and layers[0].delta_us_per_call:
            l0 = layers[0]
            parts.append(f"largest layer difference: {l0.layer} "
                         f"({fmt.shown_delta(l0.base_us_per_call, l0.head_us_per_call):+,.2f} us)")
        if frames:
            f0 = frames[0]
            parts.append(f"largest frame difference: {f0.display} "
                         f"({fmt.shown_delta(f0.base_self_us_per_call, f0.head_self_us_per_call):+,.2f} us of "
                         "its own time)")
        if parts:
            text += f" In {head} − {base}, the " + "; the ".join(parts) + "."
        return text
    timed = [(l, t.cpu_us) for l in ok if (t := a.timings.get(l))]
    if len(timed) >= 2:
        (x, tx), (y, ty) = timed[:2]
        return (f"{y} takes {ty:,.2f} us per call on the host against {x}'s {tx:,.2f} us ({ty / tx:.2f}×); "
                "there is no stack diff to say where (fewer than two cases were sampled).")
    if timed:
        return f"One case measured: {timed[0][0]}, {timed[0][1]:,.2f} us per call on the host."
    return "No case finished; nothing was measured."


def _threads(sampling: Sampling) -> str:
    return f"all {sampling.threads} threads of the process" if sampling.threads is not None else "the whole process"


def warnings(a: Analysis, analysed: dict[str, CaseCosts]) -> list[Caveat]:
    run = a.run
    out: list[Caveat] = []
    ok = ok_results(run)
    if not run.complete:
        out.append(Caveat("run incomplete", "run.json is marked incomplete (the run was interrupted or a case failed): "
                                             "what is shown is what finished."))
    for label, r in run.results.items():
        if r.error:
            out.append(Caveat("case failed", f"{label}: {r.error}"))
    for key, what in (("dtype", "dtypes"), ("shape", "shapes"), ("device", "devices"), ("sample_shape", "sampled shapes")):
        values = {l: getattr(r, key) for l, r in ok.items()}
        if len({json.dumps(v) for v in values.values()}) > 1:
            listed = ", ".join(f"{l} {shape_text(v) if isinstance(v, list) else v}" for l, v in values.items())
            out.append(Caveat("not like for like", f"the cases ran with different {what}: {listed}."))
    for line in fmt.unlike_lines(a.unlike, fmt.run_device(run), run.config.operation,
                                 [(p.base, p.head) for p in a.pairs]):
        out.append(Caveat("operands differ", line + "."))
    if a.new_outputs:
        out.append(Caveat("outputs differ", fmt.outputs_sentence(a.new_outputs) + "."))
    for label, r in ok.items():
        group = run.group_of(label)
        if group is not None and not group.paired and len(run.results) > 1:
            out.append(Caveat("not paired", f"{label}: {group.reason}. Its comparison with the other cases carries "
                                             "each process's own speed (a fresh process can run the same loop tens of "
                                             "percent faster or slower)."))
        if r.timing and r.timing.host_bound is False:
            out.append(Caveat("not host-bound", f"{label}: {r.timing.bound_note or 'the timed loop was not host-bound'}. "
                                                 f"{fmt.sampled_at(r.shape, r.sample_shape, r.sample_shape_reason)}."))
        samples = r.sampling.analysed_samples if r.sampling else None  # counted as every view counts them
        if samples is not None and samples < FEW_SAMPLES:
            out.append(Caveat("few samples", f"{label}: {samples} samples in the loop (fewer than {FEW_SAMPLES}): "
                                              "small figures carry large uncertainty; sample longer (--sample-seconds)."))
        sampling = r.sampling
        if sampling:
            assert r.profile is not None  # sampling is its
            slowdown = r.profile.slowdown
            # what would help, as the terminal says it
            advice = perturbation.perturbation_advice(sampling, slowdown, run.config.pool_threads,
                                                 run.config.sample_seconds or sampling.seconds)
            if slowdown is not None and slowdown > SLOWDOWN_WARN:
                out.append(Caveat("sampling slowed the loop", f"{label}: the loop ran {slowdown:.1f}× slower while py-spy "
                                   f"sampled it (each native sample stops {_threads(sampling)}). Shares stay fair; times come from "
                                   "the unsampled loops." + (f" {advice}." if advice else "")))
            if not sampling.complete or sampling.error:
                out.append(Caveat("sampling incomplete", f"{label}: {sampling.error or 'py-spy did not finish'}."))
            if sampling.behind:
                out.append(Caveat("sampler behind", f"{label}: py-spy fell {sampling.behind_seconds:.1f} s "
                                                     f"behind; {advice or 'try a lower --rate'}."))
        inflation = r.profile.cprofile_inflation if r.profile else None
        if inflation is not None and inflation > CPROFILE_WARN:
            out.append(Caveat("cProfile inflation", f"{label}: the loop ran {inflation:.1f}× slower under cProfile: "
                               "its table says which Python functions run, not how long C code takes."))
        t = a.timings.get(label)
        if t and t.processes > 1:
            assert r.timing is not None  # t is made from it
            meds = r.timing.process_medians
            if len(meds) > 1 and max(meds) / min(meds) > SPREAD_WARN:
                out.append(Caveat("processes differ", f"{label}: its timing processes ran at {us(min(meds))} to "
                                                       f"{us(max(meds))} per call. Paired comparisons cancel that; "
                                                       "its own figure is at the median process's speed."))
        elif t and len(t.loops) > 1 and max(t.loops) / min(t.loops) > SPREAD_WARN:
            out.append(Caveat("noisy timing", f"{label}: the timed loops ranged from {us(min(t.loops))} to {us(max(t.loops))} "
                                               "per call; the median is shown. Was the machine busy?"))
    for label, x in analysed.items():
        c = x.closure()
        if not c.within_tolerance and c.ratio is not None:
            out.append(Caveat("samples lost", f"{label}: layers sum to {c.ratio:.0%} of the measured time per call "
                                               "(stacks went missing between the sampler and the analysis)."))
    return out


def layer_section(analysis_data: dict[str, CaseCosts | Skipped], diffs: list[PairDiff]) -> Layers:
    done = {l: a for l, a in analysis_data.items() if isinstance(a, CaseCosts)}
    skipped = [f"{l}: no stack analysis ({a.reason})" for l, a in analysis_data.items() if isinstance(a, Skipped)]
    chart = charts.stacked_costs(done) if done else None
    deltas = [{r.layer: r for r in d.layers} for d in diffs]
    from ..analyse.layers import order

    def cell(d: LayerDelta | None) -> tuple[str, str]:
        if not d:
            return "", ""
        v = fmt.shown_delta(d.base_us_per_call, d.head_us_per_call)
        return fmt.pm(v, d.delta_se_us, sign=True), "more" if v > 0 else "less" if v < 0 else ""

    rows = []
    for layer in order({k for a in done.values() for k in a.layers} | {k for d in deltas for k in d}):
        values = [pm(a.layers[layer].us_per_call, a.layers[layer].se_us) if layer in a.layers
                  else "–" for a in done.values()]
        rows.append(LayerRow(layer, charts.colour(layer), values, [cell(d.get(layer)) for d in deltas]))
    delta_charts = []
    for d in diffs:
        shown = [r for r in d.layers if r.base_us_per_call or r.head_us_per_call]
        delta_charts.append(charts.delta(shown, d.base, d.head) if shown else None)
    closure = [f"{label}: {fmt.closure_sentence(a)}." for label, a in done.items()]
    return Layers(
        chart=chart, delta_charts=delta_charts,
        labels=list(done), rows=rows, totals=[num(a.us_per_call) for a in done.values()],
        total_deltas=[fmt.signed(fmt.shown_delta(d.base_us_per_call, d.head_us_per_call)) for d in diffs],
        closure=closure, skipped=skipped,
        diff_titles=[f"{d.head} − {d.base}" for d in diffs],
        speed_notes=[f"{d.head} − {d.base}: {d.at_speed}" for d in diffs if d.at_speed],
    )


def frame_tables(analysis_data: dict[str, CaseCosts | Skipped]) -> list[FrameTable]:
    tables = []
    for i, (label, a) in enumerate(analysis_data.items()):
        if isinstance(a, Skipped):
            continue
        rows = [FrameRow(f.frame, f.display or f.frame, f.layer_label or f.layer, charts.colour(f.layer), [
            (pm(f.self.us_per_call, f.self.se_us), f.self.us_per_call),
            (pm(f.total.us_per_call, f.total.se_us), f.total.us_per_call),
            (str(f.self.samples), f.self.samples),
        ]) for f in a.frames[:TOP_FRAMES]]
        total = len(a.frames)
        tables.append(FrameTable(f"frames-{i}", label, ["self us/call", "total us/call", "samples"], rows,
                                 f"{len(rows)} of {total} frames, by own (self) time, us per call. self: time in the frame's own code; "
                                 "total: with the frames it calls; samples: py-spy's stacks with the frame on top; ± one "
                                 "standard error from the sample count."))
    return tables


def diff_table(case_diff: PairDiff, pair: int) -> FrameTable:
    changed = [r for r in case_diff.frames if r.delta_us_per_call or r.delta_total_us_per_call]
    base, head = case_diff.base, case_diff.head
    rows = [FrameRow(r.frame, r.display or r.frame, r.layer_label or r.layer, charts.colour(r.layer), [
        (num(r.base_self_us_per_call), r.base_self_us_per_call),
        (num(r.head_self_us_per_call), r.head_self_us_per_call),
        (fmt.pm(fmt.shown_delta(r.base_self_us_per_call, r.head_self_us_per_call), r.delta_se_us, sign=True),
         r.delta_us_per_call),
        (f"{r.delta_total_us_per_call:+,.2f}", r.delta_total_us_per_call),
    ]) for r in changed[:TOP_DIFF]]
    return FrameTable(f"frames-diff-{pair}", f"{head} − {base}", [f"{base} self", f"{head} self", "Δ self", "Δ total"],
                      rows, f"{len(rows)} of {len(changed)} frames that differ, largest difference in own time first, "
                      f"us per call. self: time in the frame's own code; total: with the frames it calls; Δ: {head} "
                      f"minus {base} (+: {head} spends more), ± one standard error from the number of samples; frames "
                      "matched by name on the merged call tree" + (fmt.ROLE_KEY if any(r.role for r in changed) else "")
                      + "."
                      + (f" {case_diff.at_speed}." if case_diff.at_speed else ""), pair)


def flame_graphs(a: Analysis, diffs: list[PairDiff]) -> FlameGraphs:
    strings = flame.Strings()
    graphs: list[flame.Graph] = []
    for i, (label, profile) in enumerate(a.profiles.items()):
        graphs.append(flame.case_graph(profile, strings, f"fg-{i}"))
    for i, (label, t) in enumerate(a.threads.items()):  # each case's threads other than the caller
        if t.profile is not None:
            graphs.append(flame.case_graph(t.profile, strings, f"fg-threads-{i}"))
    pair_of: dict[str, int] = {}
    for i, d in enumerate(diffs):  # one differential graph per compared pair
        g = flame.diff_graph(d, strings, f"fg-diff-{i}")
        if g:
            graphs.append(g)
            pair_of[g.id] = i
    diff_graph = bool(pair_of)
    pct = f"{flame.DISPLAY_THRESHOLD:.1%}"
    meta = []
    for g in graphs:
        caption = (f"{g.pruned_nodes} frames under {pct} of the total are not drawn (together {g.pruned_us:,.2f} us per call)"
                   if g.pruned_nodes else f"every frame drawn (none under {pct} of the total)")
        meta.append({"id": g.id, "kind": g.kind, "title": g.title, "caption": caption + f"; {g.drawn_nodes} drawn.",
                     "pair": pair_of.get(g.id)})
    payload = {
        "strings": strings.items,
        # short forms of long C++ names for the boxes (templates folded); tooltips show the full name
        "short": {i: short for i, name in enumerate(strings.items) if (short := naming.display_name(name, 120)) != name},
        # sorted: the same run gives the same page, byte for byte, whichever process renders it
        "colours": {layer: charts.colour(layer) for layer in sorted({strings.items[r[2]] for g in graphs for r in g.rows})},
        "more": charts.MORE, "less": charts.LESS,
        "graphs": [g.to_json() for g in graphs],
    }
    note = "" if graphs else "No case has stacks to draw (not sampled, or every sampled case failed)."
    if not diff_graph and graphs:
        note = "No differential graph: it needs two sampled cases."
    return FlameGraphs(meta, script_json(payload), pct, note)


def cprofile_cases(a: Analysis) -> list[CProfileCase]:
    run, data = a.run_dir, a.run
    out = []
    for label, r in data.results.items():
        name = r.file("prof")
        commands = [f"flametool snakeviz {rundir.shell_word(run)} --case {shlex.quote(label)}"]
        if not rundir.is_file_name(name):
            out.append(CProfileCase(label, "", [], "", [], "no cProfile file for this case"
                                    + (" (it failed)" if r.error else "")))
            continue
        path = run / name
        commands.append(f"snakeviz {rundir.shell_word(path)}")
        table = a.cprofile[label]
        if isinstance(table, Exception):  # the file could not be read: the report says so as `report` always did
            raise table
        assert table is not None  # it has a .prof (checked above, as cprofile_table checks)
        prof = r.profile
        steps = prof.cprofile_calls if prof else None
        rows, n = table.rows, table.functions
        per = "per step() call" if steps else "in the whole profile (number of calls unknown)"
        own = prof.own_us_per_call if prof else None
        summary = (f"{us(prof.cprofile_us_per_call if prof else None)} per call under cProfile"
                   + (f", {prof.cprofile_inflation:.2f}× the unsampled loop of the same process ({us(own)})"
                      if prof and prof.cprofile_inflation else "")
                   + (f"; {steps:,} calls profiled" if steps else "") + f"; top {len(rows)} of {n} functions by own time, {per}.")
        out.append(CProfileCase(label, name, commands, summary, [ProfileRow(row.function, [
            (f"{row.calls_per_step:,.3g}", row.calls_per_step),
            (num(row.self_us), row.self_us),
            (num(row.cumulative_us), row.cumulative_us),
        ]) for row in rows], ""))
    return out


def environment_rows(run: Path, data: Run) -> list[tuple[str, str]]:
    env, config = data.env, data.config
    gpu = env.gpu
    results = data.results.values()
    names = sorted({str(r.device_name) for r in results if r.device_name})
    runtimes = sorted({r.device_info.cuda_runtime for r in results if r.device_info.cuda_runtime})
    command = data.command
    rows = [
        ("command", shlex.join(map(str, command)) if isinstance(command, list) else "–"),
        ("started", data.started or "–"),
        ("finished", (data.finished or "–") + ("" if data.complete else " (incomplete)")),
        ("run directory", str(run)),
        ("device", str(config.device or gpu.device or "–")),
        ("GPU", ", ".join(names) or ", ".join(gpu.visible) or "none"),
        ("driver", gpu.driver or "–"),
        ("CUDA (driver API)", gpu.cuda_driver_api or "–"),
        ("CUDA runtime", ", ".join(runtimes) or "–"),
        ("Python", " ".join(v for v in (env.python_implementation, env.python) if v) or "–"),
        ("OS", env.os or "–"),
        ("CPU", (env.cpu or "–") + (f" ({env.cpu_count} cores usable)" if env.cpu_count else "")),
    ]
    if fmt.run_device(data) == "cpu":  # a CPU run's page does not list the CUDA it did not use
        rows = [(k, v) for k, v in rows if not (k in ("driver", "CUDA (driver API)", "CUDA runtime") and v == "–")]
    rows += [(name, str(v)) for name, v in env.versions.items() if v]
    rows += [(f"environment {e.name}", fmt.environment_line(e).partition(": ")[2]) for e in data.environments]
    if data.config.anchor:
        rows.append(("anchor", f"{data.config.anchor}: timed beside the cases in every environment's processes"))
    shown: tuple[str, ...] = ("op", "ops", "sizes", "shape", "dtypes", "iters", "warmup", "rate_hz", "sample_seconds", "sample_shape", "sample",
             "pool_threads", "isolate", "operand_seed")
    if config.sizes:  # a sweep: its sizes say it; its "shape" is only the first of them
        shown = tuple(k for k in shown if k not in ("shape", "sample_shape"))
    recorded = config.recorded  # the options as run.json holds them, shown as they are
    rows += [(f"config: {k}", json.dumps(recorded[k]) if not isinstance(recorded[k], str) else recorded[k])
             for k in shown if k in recorded]
    return rows + ran_rows(data)


def ran_rows(data: Run) -> list[tuple[str, str]]:
    """What ran, beside what was asked: the timing processes of each group and the rounds of timed loops in
    each process (a host-bound shape runs more rounds than --repeats; more processes run while a ratio is
    unsettled)."""
    asked_p, asked_r = data.config.processes, data.config.repeats
    groups = [g for g in data.groups if g.cases]
    ran = sorted({g.processes for g in groups})
    text = ("; ".join(f"{'+'.join(g.cases)} {g.processes}" for g in groups) if len(ran) > 1
            else str(ran[0]) if ran else "–")
    rows = [("processes run", text + (f" ({asked_p} asked)" if asked_p is not None and ran != [asked_p] else ""))]
    rounds = sorted({len(p.cpu_us) for r in data.results.values()
                     for t in [r.timing, r.sample_timing, *r.points] if t is not None for p in t.processes if p.cpu_us})
    if rounds:
        span = str(rounds[0]) if len(rounds) == 1 else f"{rounds[0]} to {rounds[-1]}"
        rows.append(("rounds run per process", span + (f" (at least {asked_r}, --repeats; more where a case is host-bound, "
                                                        "until it has been timed for --timed-seconds)"
                                                        if asked_r is not None and rounds != [asked_r] else "")))
    return rows


LAYER_RULE = ("Layers come from the rules in layers.json. By default a frame of a system library (libc, malloc, "
              "pthread locks, the dynamic loader, libstdc++) is charged to the layer that called it, so cuBLAS means "
              "cuBLAS with its locks and allocations, and the C library is counted where it is used; the other view "
              "keeps them as a layer of their own (the hot-frame tables and flame graphs use the default view).")


SECTIONS = [("headline", "Headline"), ("warnings", "Fairness"), ("layers", "Layers"), ("frames", "Hot frames"),
            ("flames", "Flame graphs"), ("cprofile", "cProfile"), ("environment", "Environment")]


def build(a: Analysis) -> Report:
    """The view model of an analysed run directory."""
    run, data = a.run_dir, a.run
    analysed_cases = {l: x for l, x in a.cases.items() if isinstance(x, CaseCosts)}
    diffs = [p.diff for p in a.pairs if p.diff]
    env = environment()
    labels = list(data.results)
    counted = counts_section(a)
    by_line = lines_view.section(a)
    sections = SECTIONS if counted is None else SECTIONS[:1] + [("counts", "Counted")] + SECTIONS[1:]
    if by_line is not None:  # after the hot frames
        sections = [*sections[:sections.index(("frames", "Hot frames")) + 1], ("lines", "Lines"),
                    *sections[sections.index(("frames", "Hot frames")) + 1:]]
    return Report(
        pairs=[f"{d.head} − {d.base}" for d in diffs],
        title=f"flametool: {' vs '.join(labels) or 'empty run'}",
        run_dir=str(run),
        generated=datetime.now().astimezone().isoformat(timespec="seconds"),
        version=__version__,
        complete=data.complete,
        headline=headline(a),
        warnings=warnings(a, analysed_cases),
        layers=layer_section(*a.view("caller")),
        layers_library=layer_section(*a.view("library")),
        layer_rule=LAYER_RULE,
        frame_tables=frame_tables(a.cases),
        diff_tables=[diff_table(d, i) for i, d in enumerate(diffs)],
        flames=flame_graphs(a, diffs),
        cprofile=cprofile_cases(a),
        environment=environment_rows(run, data),
        css=asset(env, "report.css"),
        js=asset(env, "report.js"),
        sections=sections,
        counts=counted,
        lines=by_line,
        aligned=aligned_lines.section(a),
    )


def fill(template: str, model: object) -> str:
    """The page: the template filled with its view model (a template bug is one clear line, not the user's
    input)."""
    try:
        return environment().get_template(template).render(r=model)
    except jinja2.TemplateError as exc:
        raise FlametoolError(f"report template error: {type(exc).__name__}: {exc}") from None


class HtmlCompare(Renderer[Analysis]):
    """report.html of a compare run: one self-contained page."""

    name, kind = "html", Analysis

    def render(self, result: Analysis) -> str:
        return fill(PAGE, build(result))


class HtmlSweep(Renderer[SweepAnalysis]):
    """report.html of a sweep: its charts and tables."""

    name, kind = "html", SweepAnalysis

    def render(self, result: SweepAnalysis) -> str:
        env = environment()
        return fill(SWEEP_PAGE, sweep_page.build(result, asset(env, "report.css"),
                                                 environment_rows(result.run_dir, result.run)))


class HtmlAtlas(Renderer[AtlasAnalysis]):
    """report.html of an atlas: every op for every library, linking each op's own page."""

    name, kind = "html", AtlasAnalysis

    def render(self, result: AtlasAnalysis) -> str:
        return fill(ATLAS_PAGE, atlas_page.build(result, asset(environment(), "report.css"),
                                                 environment_rows(result.run_dir, result.run)))
