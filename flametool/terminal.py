"""Terminal output: the live progress line while cases run, and the summary table at the end.

Names printed here come from run directories made on other machines and from whatever code was profiled
(frame names, labels, error texts, paths), so every such string goes through ``visible`` (control
characters as escapes: ESC[2J prints as \\x1b[2J and clears nothing) and into a ``Text`` (no console
markup or emoji codes are read from it)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text


# C0 and C1 control characters and DEL (ESC, CSI, BEL, BS, CR, ...), Unicode line and paragraph
# separators, and the bidirectional controls that reorder what follows them on screen
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = [chr(i) for i in range(0x20)] + ["\x7f"] + [chr(i) for i in range(0x80, 0xA0)] + ["\u2028", "\u2029", *_BIDI]
_VISIBLE = str.maketrans({c: f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in _CONTROLS})


def visible(value: object) -> str:
    """The text with every control character written as an escape (\\x1b, \\u202e), for a terminal."""
    return str(value).translate(_VISIBLE)


def text(value: object) -> Text:
    """A table cell or line of untrusted text: controls made visible, no markup read from it."""
    return Text(visible(value))


def say(console: Console, line: object, **kwargs) -> None:
    """Print one line of untrusted text (an error naming a path or a label)."""
    console.print(text(line), highlight=False, **kwargs)


def titled(title: str) -> Table:
    """A table at least as wide as its title, so a long title is not folded over a narrow table."""
    title = visible(title)
    return Table(title=Text(title), title_justify="left", min_width=len(title))


class Progress:
    """A spinner with the case and phase on a terminal; plain lines elsewhere (CI logs, pipes)."""

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.total = total
        self.labels: list[str] = []
        self.status = None

    def __enter__(self) -> "Progress":
        if self.console.is_terminal:
            self.status = self.console.status("starting")
            self.status.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.status is not None:
            self.status.__exit__(*exc)

    def update(self, label: str, what: str) -> None:
        if label not in self.labels:
            self.labels.append(label)
        line = text(f"[{len(self.labels)}/{self.total}] {label}: {what}")
        if self.status is not None:
            self.status.update(line)
        else:
            self.console.print(line, highlight=False)


def fmt_us(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 10_000:
        return f"{value / 1000:,.1f} ms"
    return f"{value:,.2f} us"


def spread(values: list[float]) -> str:
    if len(values) < 2:
        return ""
    return f" ({min(values):,.2f}-{max(values):,.2f})"


def _row_shape(shape: list[int] | None) -> str:
    return ",".join(map(str, shape)) if shape else "-"


def print_summary(data: dict, run_dir: Path, console: Console) -> None:
    results = data["results"]
    ok = {label: r for label, r in results.items() if not r.get("error")}
    base_label = next(iter(ok), None)
    base = ok[base_label]["cpu_us_per_call"] if base_label else None

    processes = (data.get("config") or {}).get("processes") or 1
    timing = titled("time per call (median of " + (f"{processes} processes' timed loops" if processes > 1 else "repeats")
                    + "; spread in brackets)")
    for col, right in (("case", False), ("dtype", False), ("shape", False), ("CPU", True), ("GPU", True),
                       (f"CPU / {base_label}", True), ("bound", False)):
        timing.add_column(text(col), justify="right" if right else "left")
    for label, r in results.items():
        if r.get("error"):
            timing.add_row(text(label), text(r.get("dtype") or ""), _row_shape(r.get("shape")), "failed", "", "", "")
            continue
        timing.add_row(
            text(label), text(r["dtype"]), _row_shape(r["shape"]),
            fmt_us(r["cpu_us_per_call"]) + spread(r.get("cpu_us_per_call_repeats") or []),
            fmt_us(r["gpu_us_per_call"]),
            f"{r['cpu_us_per_call'] / base:.2f}x" if base else "-",
            "host" if r.get("host_bound") else "device",
        )
    console.print(timing)

    profiling = titled("profiled loops (at the sampled shape)")
    for col, right in (("case", False), ("sampled at", False), ("CPU", True), ("cProfile", True),
                       ("while sampled", True), ("samples", True)):
        profiling.add_column(col, justify="right" if right else "left")
    for label, r in ok.items():
        st = r.get("sample_timing") or {}
        slowdown = (r.get("sampling") or {}).get("slowdown")
        inflation = r.get("cprofile_inflation")
        profiling.add_row(
            text(label), _row_shape(r.get("sample_shape")), fmt_us(st.get("cpu_us_per_call")),
            f"{fmt_us(r.get('cprofile_us_per_call'))} ({inflation:.2f}x)" if inflation else "-",
            f"{fmt_us(r.get('sampled_us_per_call'))} ({slowdown:.2f}x)" if slowdown else "-",
            f"{r['samples']} at {r['rate_hz']} Hz" if r.get("samples") is not None else "-",
        )
    console.print(profiling)

    for label, r in results.items():
        if r.get("error"):
            console.print(text(f"{label}: failed: {r['error']}"), highlight=False)
            continue
        if not r.get("host_bound"):
            console.print(text(f"{label}: {r['bound_note']}"), highlight=False)
        if r.get("sample_shape") != r.get("shape"):
            console.print(text(f"{label}: {r['sample_shape_reason']}"), highlight=False)
        sampling = r.get("sampling") or {}
        if sampling and not sampling.get("complete"):
            console.print(text(f"{label}: sampling incomplete: {sampling.get('error')}"), highlight=False)
        elif sampling.get("suggested_rate_hz"):
            why = (f"py-spy fell {sampling['behind_seconds']:.1f} s behind" if sampling.get("behind")
                   else f"sampling slowed the loop {sampling['slowdown']:.2f}x")
            console.print(text(f"{label}: {why} at {r['rate_hz']} Hz (shares stay fair); "
                               f"--rate {sampling['suggested_rate_hz']} would perturb it less"), highlight=False)
    if not data.get("complete"):
        console.print(text("run incomplete: run.json holds what finished"), highlight=False)
    console.print(text(f"run directory: {run_dir}"), highlight=False)


def _pm(value: float, se: float) -> str:
    return f"{value:,.2f} ± {se:,.2f}"


def print_layers(analysis: dict, case_diff: dict | None, console: Console, top: int = 10) -> None:
    """Host time per call by layer, side by side for every analysed case, then where two cases differ."""
    done = {l: a for l, a in analysis.items() if "skipped" not in a}
    for label, a in analysis.items():
        if "skipped" in a:
            console.print(text(f"{label}: no stack analysis: {a['skipped']}"), highlight=False)
    if not done:
        return
    from .layers import order

    table = titled("host time per call by layer, us (± one standard error from the sample count)")
    table.add_column("layer")
    for label in done:
        table.add_column(text(label), justify="right")
    if case_diff:
        table.add_column(text(f"{case_diff['head']} - {case_diff['base']}"), justify="right")
        deltas = {r["layer"]: r for r in case_diff["layers"]}
    for layer in order({l for a in done.values() for l in a["layers_us_per_call"]}):
        row = [text(layer)]
        for a in done.values():
            us = a["layers_us_per_call"].get(layer)
            row.append(_pm(us, a["layers_se_us"][layer]) if us is not None else "-")
        if case_diff:
            d = deltas.get(layer)
            row.append(f"{d['delta_us_per_call']:+,.2f} ± {d['delta_se_us']:,.2f}" if d else "-")
        table.add_row(*row)
    row = [text("total (measured)")] + [f"{a['us_per_call']:,.2f}" for a in done.values()]
    if case_diff:
        row.append(f"{case_diff['delta_us_per_call']:+,.2f}")
    table.add_row(*row, end_section=True)
    console.print(table)
    for label, a in done.items():
        c = a["closure"]
        flag = "" if c["within_tolerance"] else f" (outside {c['tolerance']:.0%}: samples were lost)"
        libc = a["layers_called_from_us_per_call"].get("C library/allocator") or {}
        callers = ", ".join(f"{k} {v:,.2f}" for k, v in list(libc.items())[:3])
        console.print(text(f"{label}: layers sum to {c['layers_sum_us_per_call']:,.2f} of {c['measured_us_per_call']:,.2f} us "
                           f"per call (ratio {c['ratio']:.3f}){flag}; {a['samples']} samples"
                           + (f"; C library called from: {callers}" if callers else "")), highlight=False)
    if case_diff:
        print_frame_deltas(case_diff, console, top)


def print_frame_deltas(case_diff: dict, console: Console, top: int = 10) -> None:
    table = titled(f"frames that differ most ({case_diff['head']} - {case_diff['base']}, self time, us per call)")
    table.add_column("frame", overflow="fold", ratio=1)
    table.add_column("layer")
    for col in (case_diff["base"], case_diff["head"], "delta", "delta total"):
        table.add_column(text(col), justify="right", no_wrap=True)
    changed = [r for r in case_diff["frames"] if r["delta_us_per_call"] or r["delta_total_us_per_call"]]
    if not changed:
        console.print(text("no frame differs"), highlight=False)
        return
    for r in changed[:top]:
        table.add_row(text(r["display"]), text(r["layer"]), f"{r['base_self_us_per_call']:,.2f}", f"{r['head_self_us_per_call']:,.2f}",
                      f"{r['delta_us_per_call']:+,.2f} ± {r['delta_se_us']:,.2f}", f"{r['delta_total_us_per_call']:+,.2f}")
    console.print(table)


def print_run_diff(case_diff: dict, label: str, console: Console, top: int = 10) -> None:
    """`flametool diff`: one case in two runs."""
    table = titled(f"{label}: host time per call by layer, us (base {case_diff['base_run']}, head {case_diff['head_run']})")
    for col in ("layer", "base", "head", "delta"):
        table.add_column(col, justify="left" if col == "layer" else "right")
    for r in case_diff["layers"]:
        table.add_row(text(r["layer"]), f"{r['base_us_per_call']:,.2f}", f"{r['head_us_per_call']:,.2f}",
                      f"{r['delta_us_per_call']:+,.2f} ± {r['delta_se_us']:,.2f}")
    table.add_row(text("total (measured)"), f"{case_diff['base_us_per_call']:,.2f}", f"{case_diff['head_us_per_call']:,.2f}",
                  f"{case_diff['delta_us_per_call']:+,.2f}")
    console.print(table)
    print_frame_deltas(case_diff | {"base": "base", "head": "head"}, console, top)
    if not case_diff.get("same_shape_and_dtype", True):
        console.print(text("note: the two runs sampled this case at different shapes or dtypes"), highlight=False)
