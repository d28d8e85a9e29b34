"""What `flametool atlas` prints: per op and library the host time per call, the ratio to the op's fastest
library, the layer that differs most, and where each op's report is."""

from __future__ import annotations

import re

from rich.console import Console

from . import format as fmt
from ..analyse.atlas import AtlasAnalysis
from .base import Renderer
from .terminal import console_text, narrowed_to_fit, say, show, text, titled


def print_atlas(a: AtlasAnalysis, console: Console) -> None:
    """An atlas: per op and library the host time per call, the CPU time of all threads, the ratio to the op's
    fastest library and the layer that differs most from it; where each op's report is."""
    item = a.item
    table = titled(f"atlas: host time per call at each {item}'s {'host-bound ' if item == 'op' else ''}size (pooled "
                   f"over the processes at the median process's speed, 95% interval), the ratio to the {item}'s fastest "
                   "library (paired) and the layer that differs most from it")
    counted = any(c.counted for row in a.rows for c in row.cells.values())  # runs before counting: as they were
    cols = ((item, False), ("size", False), ("library", False), ("host / call", True), ("all threads / call", True),
            ("x fastest", True), ("layer that differs most", False)) + ((("kernels, API calls / call", False),)
                                                                       if counted else ())
    for col, right in cols:
        table.add_column(col, justify="right" if right else "left")
    for row in a.rows:
        if row.error and not row.cells:
            table.add_row(text(row.op), "-", "-", "failed (below)", "", "", "", *([""] if counted else []))
            continue
        for i, (label, c) in enumerate(row.cells.items()):
            first = i == 0
            op = row.op + (" (incomplete)" if row.error else "")  # figures of an op the atlas stopped during
            table.add_row(text(op if first else ""), text(fmt.shape(row.shape) if first else ""), text(label),
                          "failed (below)" if c.error else fmt.us(c.us) + (f" ({fmt.interval(c.interval, fmt.us_bare)})"
                                                                                    if c.interval else ""),
                          fmt.us(c.all_threads_us), text(fmt.ratio_to_fastest(c.ratio, "" if c.error else row.fastest or "")),
                          text(fmt.differs_most(c)), *([text(c.counted or "-")] if counted else []))
    # a size is folded after a comma ('1024,1024,' over '1024') where the table is too wide, before a figure is
    # parted from its unit: at 80 columns the size's one word left the figures too little ('23.33' over 'us');
    # never inside a dimension (narrowed by the counts' column, '1048576' read '104857' over '6')
    dims = [d for row in a.rows if row.cells for d in re.findall(r"[^,]+,?", fmt.shape(row.shape))]
    narrowed_to_fit(console, table, 1, lambda size, width: fmt.folded(size, width, ",", anywhere=True),
                    max(map(len, dims), default=len("1024,")))
    show(console, table)
    # why a cell failed, whole under the table, as the page says it: in its cell a reason of a few hundred
    # characters was folded over ten lines of a column 40 wide
    for row in a.rows:
        if row.error and not row.cells:
            say(console, f"failed: {row.op}: {row.error}")
        for label, c in row.cells.items():
            if c.error:
                say(console, f"failed: {row.op} {label}: {c.error}")
    say(console, "host / call: the calling thread's clock around the loop (what a program waits for); all threads: "
                 "CPU time of every thread of the process during the loop, per call (a library's worker threads "
                 "included); layers: the calling thread's samples")
    for row in a.rows:
        if not row.error:
            say(console, f"{row.op}: each library against the first, layers and frames: {a.run_dir / row.report}")
    if not a.run.complete:
        say(console, "the atlas is incomplete (interrupted): the ops it did not finish are marked so")


class TerminalAtlas(Renderer[AtlasAnalysis]):
    """What `flametool atlas` prints: the table of ops and libraries."""

    name, kind = "terminal", AtlasAnalysis

    def render(self, result: AtlasAnalysis) -> str:
        return console_text(self.options, lambda console: print_atlas(result, console))
