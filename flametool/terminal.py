"""Terminal output: the live progress line while cases run, and the summary table at the end."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text


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
        line = Text(f"[{len(self.labels)}/{self.total}] {label}: {what}")
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

    timing = Table(title="time per call (median of repeats; spread in brackets)", title_justify="left")
    for col, right in (("case", False), ("dtype", False), ("shape", False), ("CPU", True), ("GPU", True),
                       (f"CPU / {base_label}", True), ("bound", False)):
        timing.add_column(col, justify="right" if right else "left")
    for label, r in results.items():
        if r.get("error"):
            timing.add_row(Text(label), r.get("dtype") or "", _row_shape(r.get("shape")), "failed", "", "", "")
            continue
        timing.add_row(
            Text(label), r["dtype"], _row_shape(r["shape"]),
            fmt_us(r["cpu_us_per_call"]) + spread(r.get("cpu_us_per_call_repeats") or []),
            fmt_us(r["gpu_us_per_call"]),
            f"{r['cpu_us_per_call'] / base:.2f}x" if base else "-",
            "host" if r.get("host_bound") else "device",
        )
    console.print(timing)

    profiling = Table(title="profiled loops (at the sampled shape)", title_justify="left")
    for col, right in (("case", False), ("sampled at", False), ("CPU", True), ("cProfile", True),
                       ("while sampled", True), ("samples", True)):
        profiling.add_column(col, justify="right" if right else "left")
    for label, r in ok.items():
        st = r.get("sample_timing") or {}
        slowdown = (r.get("sampling") or {}).get("slowdown")
        inflation = r.get("cprofile_inflation")
        profiling.add_row(
            Text(label), _row_shape(r.get("sample_shape")), fmt_us(st.get("cpu_us_per_call")),
            f"{fmt_us(r.get('cprofile_us_per_call'))} ({inflation:.2f}x)" if inflation else "-",
            f"{fmt_us(r.get('sampled_us_per_call'))} ({slowdown:.2f}x)" if slowdown else "-",
            f"{r['samples']} at {r['rate_hz']} Hz" if r.get("samples") is not None else "-",
        )
    console.print(profiling)

    for label, r in results.items():
        if r.get("error"):
            console.print(Text(f"{label}: failed: {r['error']}"), highlight=False)
            continue
        if not r.get("host_bound"):
            console.print(Text(f"{label}: {r['bound_note']}"), highlight=False)
        if r.get("sample_shape") != r.get("shape"):
            console.print(Text(f"{label}: {r['sample_shape_reason']}"), highlight=False)
        sampling = r.get("sampling") or {}
        if sampling and not sampling.get("complete"):
            console.print(Text(f"{label}: sampling incomplete: {sampling.get('error')}"), highlight=False)
        elif sampling.get("behind"):
            console.print(Text(f"{label}: py-spy fell {sampling['behind_seconds']:.1f} s behind; try a lower --rate"),
                          highlight=False)
    if not data.get("complete"):
        console.print(Text("run incomplete: run.json holds what finished"), highlight=False)
    console.print(Text(f"run directory: {run_dir}"), highlight=False)
