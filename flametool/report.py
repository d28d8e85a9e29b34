"""report.html: the Jinja2 environment and the view model its templates read.

Everything the page shows is decided here, as plain dataclasses of strings and numbers; the templates in
templates/ only lay it out. The page is one file with its style, script and data inline, so it opens from
file:// anywhere, with no network. It is rendered from the run directory alone (run.json, the .folded and
.prof files), which is why `flametool report` works on a machine without a GPU.
"""

from __future__ import annotations

import functools
import json
import shlex
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import jinja2
from markupsafe import Markup

from . import __version__, analysis, attribution, cases, charts, flame, profstats, rundir
from . import stacks as st
from .errors import FlametoolError

REPORT_FILE = "report.html"
PAGE = "report.html.j2"
FEW_SAMPLES = 200
SLOWDOWN_WARN = 1.5
CPROFILE_WARN = 1.5
SPREAD_WARN = 1.5  # slowest / fastest timed repeat
TOP_FRAMES = 40
TOP_DIFF = 40


# --- templates: in the wheel as flametool/templates, in a checkout as the top-level templates/ ----------

def templates_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / PAGE).is_file():
            return candidate
    raise FlametoolError(f"report templates not found (looked in {here / 'templates'} and {here.parent / 'templates'}); "
                         "reinstall flametool")


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

def us(value) -> str:
    if not isinstance(value, (int, float)):
        return "–"
    if value >= 10_000:
        return f"{value / 1000:,.1f} ms"
    if value >= 100:
        return f"{value:,.0f} us"
    return f"{value:,.2f} us"


def num(value: float) -> str:
    return f"{value:,.2f}"


def pm(value: float, se: float) -> str:
    return f"{value:,.2f} ± {se:,.2f}"


def shape_text(shape) -> str:
    return ",".join(map(str, shape)) if isinstance(shape, list) and shape else "–"


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


@dataclass
class Caveat:
    kind: str  # short tag shown before the text
    text: str


@dataclass
class LayerRow:
    layer: str
    colour: str
    values: list[str]
    delta: str
    delta_sign: str  # "more" | "less" | ""


@dataclass
class Layers:
    chart: charts.StackedChart | None
    delta_chart: charts.DeltaChart | None
    labels: list[str]
    rows: list[LayerRow]
    totals: list[str]
    total_delta: str
    closure: list[str]
    skipped: list[str]
    diff_title: str


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
class Report:
    title: str
    run_dir: str
    generated: str
    version: str
    complete: bool
    headline: Headline
    warnings: list[Caveat]
    layers: Layers
    frame_tables: list[FrameTable]
    diff_table: FrameTable | None
    flames: FlameGraphs
    cprofile: list[CProfileCase]
    environment: list[tuple[str, str]]
    css: Markup = Markup("")
    js: Markup = Markup("")
    sections: list[tuple[str, str]] = field(default_factory=list)


def ok_results(data: dict) -> dict[str, dict]:
    return {l: r for l, r in data["results"].items() if not r.get("error")}


def headline(data: dict, case_diff: dict | None) -> Headline:
    ok = ok_results(data)
    base = next(iter(ok), "")
    base_cpu = ok[base]["cpu_us_per_call"] if base else None
    rows = []
    for label, r in data["results"].items():
        reps = [v for v in r.get("cpu_us_per_call_repeats") or [] if isinstance(v, (int, float))]
        cpu = r.get("cpu_us_per_call")
        gpu = r.get("gpu_us_per_call")
        rows.append(CaseRow(
            label=label, library=r.get("library") or r.get("factory") or "", dtype=r.get("dtype") or "–",
            shape=shape_text(r.get("shape")), device=r.get("device_name") or r.get("device") or "–",
            cpu=us(cpu), cpu_spread=f"{us(min(reps))} – {us(max(reps))}" if len(reps) > 1 else "",
            gpu=us(gpu) if gpu is not None else ("none (CPU)" if r.get("device") == "cpu" else "–"),
            ratio=f"{cpu / base_cpu:.2f}×" if isinstance(cpu, (int, float)) and base_cpu else "–",
            bound=("host-bound" if r.get("host_bound") else "not host-bound") if r.get("host_bound") is not None else "–",
            error=r.get("error") or "",
        ))
    processes = (data.get("config") or {}).get("processes") or 1
    loops = f"the timed loops of {processes} fresh processes per case" if processes > 1 else "the timed loops"
    return Headline(rows, sentence(data, case_diff, ok), base,
                    f"CPU: host time per call (median of {loops}; their range below). GPU: device time per call "
                    "from events around the same calls. ×: CPU time against the first case.",
                    against_floors(ok))


def against_floors(ok: dict[str, dict]) -> list[str]:
    """How far each library case is above each floor measured in the same run, at the same shape and dtype."""
    floors = {l: r for l, r in ok.items() if l in cases.FLOORS and str(r.get("factory")).startswith(cases.__name__ + ":")
              and isinstance(r.get("cpu_us_per_call"), (int, float))}
    lines = []
    for label, r in ok.items():
        cpu = r.get("cpu_us_per_call")
        if label in floors or not isinstance(cpu, (int, float)):
            continue
        parts = [f"{cpu - f['cpu_us_per_call']:+,.2f} us against {fl} ({us(f['cpu_us_per_call'])}: {cases.FLOORS[fl]})"
                 for fl, f in floors.items() if (f.get("shape"), f.get("dtype")) == (r.get("shape"), r.get("dtype"))]
        if parts:
            lines.append(f"{label} ({us(cpu)} per call): " + "; ".join(parts) + ".")
    return lines


def sentence(data: dict, case_diff: dict | None, ok: dict[str, dict]) -> str:
    if case_diff:
        base, head, delta = case_diff["base"], case_diff["head"], case_diff["delta_us_per_call"]
        # the slower case is the subject, and every figure is given as "its time minus the other's"
        slower, faster, sign = (head, base, 1.0) if delta >= 0 else (base, head, -1.0)
        shape = shape_text(ok.get(head, {}).get("sample_shape"))
        times = (case_diff.get("base_us_per_call"), case_diff.get("head_us_per_call"))
        ratio = (max(times) / min(times)) if all(isinstance(t, (int, float)) and t > 0 for t in times) else None
        text = (f"At the sampled shape ({shape}) {slower} spends {abs(delta):,.2f} us per call more than {faster} "
                f"on the host" + (f" ({ratio:.2f}×)" if ratio else "") + ".")
        layers = sorted(case_diff["layers"], key=lambda r: -abs(r["delta_us_per_call"]))
        frames = [r for r in case_diff["frames"] if r["delta_us_per_call"]]
        parts = []
        if layers and layers[0]["delta_us_per_call"]:
            l0 = layers[0]
            parts.append(f"largest layer difference: {l0['layer']} ({sign * l0['delta_us_per_call']:+,.2f} us)")
        if frames:
            f0 = frames[0]
            parts.append(f"largest frame difference: {f0['display']} ({sign * f0['delta_us_per_call']:+,.2f} us of its own time)")
        if parts:
            text += f" In {slower} minus {faster}, the " + "; the ".join(parts) + "."
        return text
    timed = [(l, r["cpu_us_per_call"]) for l, r in ok.items() if isinstance(r.get("cpu_us_per_call"), (int, float))]
    if len(timed) >= 2:
        (a, ta), (b, tb) = timed[:2]
        return (f"{b} takes {tb:,.2f} us per call on the host against {a}'s {ta:,.2f} us ({tb / ta:.2f}×); "
                "there is no stack diff to say where (fewer than two cases were sampled).")
    if timed:
        return f"One case measured: {timed[0][0]}, {timed[0][1]:,.2f} us per call on the host."
    return "No case finished; nothing was measured."


def _threads(sampling: dict) -> str:
    threads = sampling.get("threads")
    return f"all {threads} threads of the process" if isinstance(threads, int) else "the whole process"


def warnings(data: dict, analysed: dict) -> list[Caveat]:
    out: list[Caveat] = []
    results = data["results"]
    ok = ok_results(data)
    if not data.get("complete"):
        out.append(Caveat("run incomplete", "run.json is marked incomplete (the run was interrupted or a case failed): "
                                             "what is shown is what finished."))
    for label, r in results.items():
        if r.get("error"):
            out.append(Caveat("case failed", f"{label}: {r['error']}"))
    for key, what in (("dtype", "dtypes"), ("shape", "shapes"), ("device", "devices"), ("sample_shape", "sampled shapes")):
        values = {l: r.get(key) for l, r in ok.items()}
        if len({json.dumps(v) for v in values.values()}) > 1:
            listed = ", ".join(f"{l} {shape_text(v) if isinstance(v, list) else v}" for l, v in values.items())
            out.append(Caveat("not like for like", f"the cases ran with different {what}: {listed}."))
    for label, r in ok.items():
        if r.get("host_bound") is False:
            out.append(Caveat("not host-bound", f"{label}: {r.get('bound_note') or 'the timed loop was not host-bound'}. "
                                                 f"Sampled at {shape_text(r.get('sample_shape'))}: {r.get('sample_shape_reason') or 'no reason recorded'}."))
        samples = r.get("samples")
        if isinstance(samples, int) and samples < FEW_SAMPLES:
            out.append(Caveat("few samples", f"{label}: {samples} samples inside step() (fewer than {FEW_SAMPLES}): "
                                              "small figures carry large uncertainty; sample longer (--sample-seconds)."))
        sampling = r.get("sampling") if isinstance(r.get("sampling"), dict) else None
        if sampling:
            slowdown = sampling.get("slowdown")
            if isinstance(slowdown, (int, float)) and slowdown > SLOWDOWN_WARN:
                out.append(Caveat("sampling slowed the loop", f"{label}: the loop ran {slowdown:.1f}× slower while py-spy "
                                   f"sampled it (each native sample stops {_threads(sampling)}). Shares stay fair; times come from "
                                   "the unsampled loop."))
            if sampling.get("complete") is False or sampling.get("error"):
                out.append(Caveat("sampling incomplete", f"{label}: {sampling.get('error') or 'py-spy did not finish'}."))
            if sampling.get("behind"):
                out.append(Caveat("sampler behind", f"{label}: py-spy fell {sampling.get('behind_seconds') or 0:.1f} s "
                                                     "behind; try a lower --rate."))
        inflation = r.get("cprofile_inflation")
        if isinstance(inflation, (int, float)) and inflation > CPROFILE_WARN:
            out.append(Caveat("cProfile inflation", f"{label}: the loop ran {inflation:.1f}× slower under cProfile: "
                               "its table says which Python functions run, not how long C code takes."))
        reps = [v for v in r.get("cpu_us_per_call_repeats") or [] if isinstance(v, (int, float)) and v > 0]
        if len(reps) > 1 and max(reps) / min(reps) > SPREAD_WARN:
            out.append(Caveat("noisy timing", f"{label}: the timed loops ranged from {us(min(reps))} to {us(max(reps))} "
                                               "per call; the median is shown. Was the machine busy?"))
    for label, a in analysed.items():
        c = a.get("closure") or {}
        if c and not c.get("within_tolerance", True) and c.get("ratio") is not None:
            out.append(Caveat("samples lost", f"{label}: layers sum to {c['ratio']:.0%} of the measured time per call "
                                               "(stacks went missing between the sampler and the analysis)."))
    return out


def layer_section(analysis_data: dict, case_diff: dict | None) -> Layers:
    done = {l: a for l, a in analysis_data.items() if "skipped" not in a}
    skipped = [f"{l}: no stack analysis ({a['skipped']})" for l, a in analysis_data.items() if "skipped" in a]
    chart = charts.stacked(
        {l: {k: (v, a["layers_se_us"].get(k, 0.0)) for k, v in a["layers_us_per_call"].items()} for l, a in done.items()},
        {l: a["us_per_call"] for l, a in done.items()},
    ) if done else None
    deltas = {r["layer"]: r for r in case_diff["layers"]} if case_diff else {}
    from .layers import order

    rows = []
    for layer in order({k for a in done.values() for k in a["layers_us_per_call"]} | set(deltas)):
        values = [pm(a["layers_us_per_call"][layer], a["layers_se_us"].get(layer, 0.0)) if layer in a["layers_us_per_call"]
                  else "–" for a in done.values()]
        d = deltas.get(layer)
        rows.append(LayerRow(layer, charts.colour(layer), values,
                             f"{d['delta_us_per_call']:+,.2f} ± {d['delta_se_us']:,.2f}" if d else "",
                             ("more" if d["delta_us_per_call"] > 0 else "less" if d["delta_us_per_call"] < 0 else "") if d else ""))
    delta_rows = [r for r in (case_diff or {}).get("layers", []) if r["base_us_per_call"] or r["head_us_per_call"]]
    closure = []
    for label, a in done.items():
        c = a["closure"]
        closure.append(f"{label}: layers sum to {c['layers_sum_us_per_call']:,.2f} of {c['measured_us_per_call']:,.2f} us "
                       f"measured (ratio {c['ratio']:.3f}), from {a['samples']} samples.")
    return Layers(
        chart=chart,
        delta_chart=charts.delta(delta_rows, case_diff["base"], case_diff["head"]) if case_diff and delta_rows else None,
        labels=list(done), rows=rows, totals=[num(a["us_per_call"]) for a in done.values()],
        total_delta=f"{case_diff['delta_us_per_call']:+,.2f}" if case_diff else "",
        closure=closure, skipped=skipped,
        diff_title=f"{case_diff['head']} − {case_diff['base']}" if case_diff else "",
    )


def frame_tables(analysis_data: dict) -> list[FrameTable]:
    tables = []
    for i, (label, a) in enumerate(analysis_data.items()):
        if "skipped" in a:
            continue
        rows = [FrameRow(f["frame"], f.get("display") or f["frame"], f["layer"], charts.colour(f["layer"]), [
            (pm(f["self_us_per_call"], f.get("self_se_us", 0.0)), f["self_us_per_call"]),
            (pm(f["total_us_per_call"], f.get("total_se_us", 0.0)), f["total_us_per_call"]),
            (str(f["samples"]), f["samples"]),
        ]) for f in a["hot_frames"][:TOP_FRAMES]]
        total = a.get("frames_total", len(a["hot_frames"]))
        tables.append(FrameTable(f"frames-{i}", label, ["self us/call", "total us/call", "samples"], rows,
                                 f"{len(rows)} of {total} frames, by own (self) time; ± one standard error from the sample count."))
    return tables


def diff_table(case_diff: dict | None) -> FrameTable | None:
    if not case_diff:
        return None
    changed = [r for r in case_diff["frames"] if r["delta_us_per_call"] or r["delta_total_us_per_call"]]
    base, head = case_diff["base"], case_diff["head"]
    rows = [FrameRow(r["frame"], r.get("display") or r["frame"], r["layer"], charts.colour(r["layer"]), [
        (num(r["base_self_us_per_call"]), r["base_self_us_per_call"]),
        (num(r["head_self_us_per_call"]), r["head_self_us_per_call"]),
        (pm(r["delta_us_per_call"], r["delta_se_us"]).replace(num(r["delta_us_per_call"]), f"{r['delta_us_per_call']:+,.2f}", 1),
         r["delta_us_per_call"]),
        (f"{r['delta_total_us_per_call']:+,.2f}", r["delta_total_us_per_call"]),
    ]) for r in changed[:TOP_DIFF]]
    return FrameTable("frames-diff", f"{head} − {base}", [f"{base} self", f"{head} self", "Δ self", "Δ total"], rows,
                      f"{len(rows)} of {len(changed)} frames that differ, largest difference in own time first "
                      f"(us per call; {head} minus {base}; frames matched by name on the merged call tree).")


def flame_graphs(profiles: dict[str, attribution.Profile], analysis_data: dict, case_diff: dict | None) -> FlameGraphs:
    strings = flame.Strings()
    graphs: list[flame.Graph] = []
    for i, (label, profile) in enumerate(profiles.items()):
        if "skipped" in analysis_data.get(label, {}):
            continue
        graphs.append(flame.case_graph(profile, strings, f"fg-{i}"))
    diff_graph = flame.diff_graph(case_diff, strings, "fg-diff") if case_diff else None
    if diff_graph:
        graphs.append(diff_graph)
    pct = f"{flame.DISPLAY_THRESHOLD:.1%}"
    meta = []
    for g in graphs:
        caption = (f"{g.pruned_nodes} frames under {pct} of the total are not drawn (together {g.pruned_us:,.2f} us per call)"
                   if g.pruned_nodes else f"every frame drawn (none under {pct} of the total)")
        meta.append({"id": g.id, "kind": g.kind, "title": g.title, "caption": caption + f"; {g.drawn_nodes} drawn."})
    payload = {
        "strings": strings.items,
        # short forms of long C++ names for the boxes (templates folded); tooltips show the full name
        "short": {i: short for i, name in enumerate(strings.items) if (short := st.display_name(name, 120)) != name},
        "colours": {layer: charts.colour(layer) for layer in {strings.items[r[2]] for g in graphs for r in g.rows}},
        "more": charts.MORE, "less": charts.LESS,
        "graphs": [g.to_json() for g in graphs],
    }
    note = "" if graphs else "No case has stacks to draw (not sampled, or every sampled case failed)."
    if not diff_graph and graphs:
        note = "No differential graph: it needs two sampled cases."
    return FlameGraphs(meta, script_json(payload), pct, note)


def cprofile_cases(run: Path, data: dict) -> list[CProfileCase]:
    out = []
    for label, r in data["results"].items():
        name = (r.get("files") or {}).get("prof")
        commands = [f"flametool snakeviz {shlex.quote(str(run))} --case {shlex.quote(label)}"]
        if not isinstance(name, str) or Path(name).name != name:
            out.append(CProfileCase(label, "", [], "", [], "no cProfile file for this case"
                                    + (" (it failed)" if r.get("error") else "")))
            continue
        path = run / name
        commands.append(f"snakeviz {shlex.quote(str(path))}")
        stats = profstats.load(path)
        steps = r.get("cprofile_calls") if isinstance(r.get("cprofile_calls"), int) else None
        rows, n = profstats.top(stats, steps)
        per = "per step() call" if steps else "in the whole profile (number of calls unknown)"
        summary = (f"{us(r.get('cprofile_us_per_call'))} per call under cProfile"
                   + (f", {r['cprofile_inflation']:.2f}× the unsampled loop" if isinstance(r.get("cprofile_inflation"), (int, float)) else "")
                   + (f"; {steps:,} calls profiled" if steps else "") + f"; top {len(rows)} of {n} functions by own time, {per}.")
        out.append(CProfileCase(label, name, commands, summary, [ProfileRow(row.function, [
            (f"{row.calls_per_step:,.3g}", row.calls_per_step),
            (num(row.self_us), row.self_us),
            (num(row.cumulative_us), row.cumulative_us),
        ]) for row in rows], ""))
    return out


def environment_rows(run: Path, data: dict) -> list[tuple[str, str]]:
    env, config = data.get("env") or {}, data.get("config") or {}
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
    results = data["results"].values()
    names = sorted({r["device_name"] for r in results if r.get("device_name")})
    runtimes = sorted({str(r["cuda_runtime"]) for r in results if r.get("cuda_runtime")})
    versions = env.get("versions") if isinstance(env.get("versions"), dict) else {}
    command = data.get("command")
    rows = [
        ("command", shlex.join(map(str, command)) if isinstance(command, list) else "–"),
        ("started", str(data.get("started") or "–")),
        ("finished", str(data.get("finished") or "–") + ("" if data.get("complete") else " (incomplete)")),
        ("run directory", str(run)),
        ("device", str(config.get("device") or gpu.get("device") or "–")),
        ("GPU", ", ".join(names) or ", ".join(map(str, gpu.get("visible") or [])) or "none"),
        ("driver", str(gpu.get("driver") or "–")),
        ("CUDA (driver API)", str(gpu.get("cuda_driver_api") or "–")),
        ("CUDA runtime", ", ".join(runtimes) or "–"),
        ("Python", " ".join(str(env[k]) for k in ("python_implementation", "python") if env.get(k)) or "–"),
        ("OS", str(env.get("os") or "–")),
        ("CPU", f"{env.get('cpu') or '–'}" + (f" ({env['cpu_count']} cores usable)" if env.get("cpu_count") else "")),
    ]
    rows += [(name, str(v)) for name, v in versions.items() if v]
    shown = ("shape", "dtypes", "iters", "warmup", "repeats", "rate_hz", "sample_seconds", "sample_shape", "sample",
             "pool_threads", "processes")
    rows += [(f"config: {k}", json.dumps(config[k]) if not isinstance(config[k], str) else config[k])
             for k in shown if k in config]
    return rows


SECTIONS = [("headline", "Headline"), ("warnings", "Fairness"), ("layers", "Layers"), ("frames", "Hot frames"),
            ("flames", "Flame graphs"), ("cprofile", "cProfile"), ("environment", "Environment")]


def build(run: Path, data: dict | None = None) -> Report:
    """The view model of a run directory. Reads, never writes."""
    run = Path(run)
    data = rundir.load(run) if data is None else data
    # run.json's 'analysis' and 'diff' are derived from the stacks and timings (and not checked on load):
    # they are computed afresh here, in memory only, so an edited or stale copy can neither crash the page nor
    # show figures that are not the run's
    # a sampled case's stacks that cannot be read are an error naming the file, as in diff and export
    profiles = {l: attribution.load_profile(run, data, l) for l in attribution.sampled_labels(data)}
    # the diff's flame graph only as drawn: a large profile's merged call tree has millions of nodes
    analysis_data, case_diff = analysis.analyse_run(run, data, profiles, flame.DISPLAY_THRESHOLD)
    analysed = {l: a for l, a in analysis_data.items() if "skipped" not in a}
    env = environment()
    labels = list(data["results"])
    return Report(
        title=f"flametool: {' vs '.join(labels) or 'empty run'}",
        run_dir=str(run),
        generated=datetime.now().astimezone().isoformat(timespec="seconds"),
        version=__version__,
        complete=bool(data.get("complete")),
        headline=headline(data, case_diff),
        warnings=warnings(data, analysed),
        layers=layer_section(analysis_data, case_diff),
        frame_tables=frame_tables(analysis_data),
        diff_table=diff_table(case_diff),
        flames=flame_graphs(profiles, analysis_data, case_diff),
        cprofile=cprofile_cases(run, data),
        environment=environment_rows(run, data),
        css=asset(env, "report.css"),
        js=asset(env, "report.js"),
        sections=SECTIONS,
    )


def render(run: Path, data: dict | None = None) -> str:
    model = build(run, data)
    try:
        return environment().get_template(PAGE).render(r=model)
    except jinja2.TemplateError as exc:  # a template bug, not the user's input: still one clear line
        raise FlametoolError(f"report template error: {type(exc).__name__}: {exc}") from None


def write(run: Path, output: Path | None = None, data: dict | None = None) -> Path:
    """Render the run directory's report to RUN/report.html, atomically (a reader never sees half a page,
    and a failed write keeps the last one), or to `output`, the file the user named, written through
    whatever is there (a symlink, a FIFO, a device) as `export -o` does."""
    run = Path(run)
    html = render(run, data)
    if output is not None:
        rundir.write_output(Path(output), html)
        return Path(output)
    path = run / REPORT_FILE
    try:
        rundir.write_atomic(path, html)
    except OSError as exc:
        raise FlametoolError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    return path
