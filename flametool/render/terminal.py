"""Printing to the terminal: lines and table cells of untrusted text, tables drawn whole (no word or figure
cut), and a renderer's drawing as text. Every name printed here may come from another machine's run directory: it
goes through format.visible first. The tables themselves: compare_tables.py, diff_tables.py, sweep_tables.py,
atlas_tables.py; the live progress line: progress.py."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Callable

from rich import box
from rich.console import Console, JustifyMethod, RenderableType, RenderHook
from rich.table import Table
from rich.text import Span, Text

from . import format as fmt
from .symbols import in_ascii
from .base import Options


def text(value: object) -> Text:
    """A table cell or line of untrusted text: controls made visible, no markup read from it."""
    return Text(fmt.visible(value))


def label(name: str) -> Text:
    """A case's name in a table's first column: whole, a long one folded over lines of format.LABEL_WIDTH (at 80
    columns a 72-character name on one line made the time, counted and threads tables 150-190 columns wide)."""
    return Text(fmt.folded(fmt.visible(name), fmt.LABEL_WIDTH))


def header(name: str, what: str = "", under: bool = False) -> Text:
    """A column's header naming a case: a long name (over format.HEADER_WIDTH) folded over lines, whole; with
    `what`, `name what` ('numpy self'), `what` under the name where the name is folded or `under` says so (a table
    that is too wide: the column is then no wider than its figures need)."""
    name = fmt.visible(name)
    if not what:
        return Text(fmt.folded(name, fmt.HEADER_WIDTH))
    if len(name) > fmt.HEADER_WIDTH or under:
        return Text(f"{fmt.folded(name, fmt.HEADER_WIDTH)}\n{what}")
    return Text(f"{name} {what}")


def say(console: Console, line: object, **kwargs: Any) -> None:
    """Print one line of untrusted text (an error naming a path or a label)."""
    console.print(text(line), highlight=False, **kwargs)


def show(console: Console, table: Table) -> None:
    """Print a table whole. Where the console is narrower than the table, rich narrows columns below their
    longest word and cuts words to '…', figures too ('3.… us'); so then the table is drawn without its box,
    and where that is still wider than the console, on a console just wide enough for every column to keep
    its longest word (the terminal wraps the lines: a figure is never cut). A title longer than the table is
    wide (titled) is printed as lines of its own above it, the table at its own width: held to the title's
    width, a table of five short figures was stretched across 160 columns."""
    if table.title is not None and table.min_width:
        spelled(console, table)
        asked, table.min_width = table.min_width, None
        natural = table.__rich_measure__(console, console.options.update_width(1 << 20)).maximum
        if asked > natural:
            title = table.title  # made visible by titled() already
            table.title = None
            console.print(title if isinstance(title, Text) else Text(title), highlight=False)
        else:
            table.min_width = asked
    if table.min_width and table.min_width > console.width:  # a title wider than the console: rich would squeeze
        table.min_width = console.width  # the columns below their words to keep the width the title asked for
    if fits(console, table):
        console.print(table)
        return
    boxless(table)
    held_at_words(console, table)
    # print(width=) is clamped to the console's: widen the console itself, for this table. Its size is set
    # whole: a console on a dumb terminal (TERM=dumb: Emacs' shell, some CI logs) reads 80 columns whatever its
    # width was set to, unless its height is set too, and the search below never ended on one
    kept = console._width, console._height
    width = console.width
    try:
        if not fits(console, table):
            low, high = width, width + table.__rich_measure__(console, console.options.update_width(1 << 20)).maximum
            while low < high:  # the narrowest console that draws every word whole
                middle = (low + high) // 2
                console.size = (middle, console.height)
                low, high = (low, middle) if fits(console, table) else (middle + 1, high)
            console.size = (low, console.height)
        console.print(table)
    finally:
        console._width, console._height = kept


@dataclass
class Column:
    """A column of a table that show_parts may draw in a part of its own: its header and a cell per row."""

    header: Text | str
    cells: list[Text | str]
    justify: JustifyMethod | None = None  # None: a figure's place (right), or a row name's (left) in `first`
    no_wrap: bool = False  # a cell's lines as they are (an aligned line's code, folded at its words beforehand)


def show_parts(console: Console, title: str, first: Column | list[Column], groups: list[list[Column]],
               ends: set[int] = set(), keep: int = 1, fold_headers: bool = False) -> None:
    """A table of a column of row names (`first`, or several: a sweep's size and case) and the columns of `groups`,
    drawn whole (show) where it fits the console with no cell wrapped (`fold_headers`: no word cut, for columns
    whose figures are one word each, their headers folded over lines: 'PyTorch' over 'dispatcher'), else in
    parts: as many columns of a group after another as fit, each part headed
    by the row names again and its title saying which part it is of how many (a layer table of a dozen cases and
    their pairs was 700 columns wide, each of its lines wrapped over nine of an 80-column terminal); a group (the
    cases, the pairs) begins a part of its own. A column too wide for the console alone is a part of its own,
    drawn as show() draws it. `ends`: the rows a section ends after (a line under them); `keep`: the columns go
    into parts `keep` at a time, never apart (a sweep's host and wall of one case)."""
    names = first if isinstance(first, list) else [first]
    parts = split_parts(console, names, groups, ends, keep, fold_headers)
    for k, part in enumerate(parts):
        shown = title if len(parts) == 1 else f"{title} ({k + 1} of {len(parts)})"
        show(console, parts_table(shown, names, part, ends))


def parts_table(title: str, names: list[Column], part: list[Column], ends: set[int] = set()) -> Table:
    """One part of show_parts' table: the row names (to the left unless their Column says) and `part`'s columns."""
    table = titled(title)
    for name in names:
        table.add_column(name.header, justify=name.justify or "left", no_wrap=name.no_wrap)
    for column in part:
        table.add_column(column.header, justify=column.justify or "right", no_wrap=column.no_wrap)
    for i in range(len(names[0].cells)):
        table.add_row(*(c.cells[i] for c in (*names, *part)), end_section=i in ends)
    return table


def split_parts(console: Console, names: list[Column], groups: list[list[Column]], ends: set[int] = set(),
                keep: int = 1, fold_headers: bool = False) -> list[list[Column]]:
    """The parts show_parts draws: the columns of `groups` whole where they fit beside `names`, else as many of a
    group after another as fit, `keep` at a time."""
    def fits_drawn(part: list[Column]) -> bool:  # no cell wrapped, boxed or else without the box (as show() draws)
        table = parts_table("", names, part, ends)
        if fold_headers:
            return narrowest(console, table) <= console.width
        if unwrapped(console, table):
            return True
        boxless(table)
        return unwrapped(console, table)

    columns = [c for group in groups for c in group]
    if fits_drawn(columns):
        return [columns]
    parts = []
    for group in groups:
        start = 0
        while start < len(group):
            end = start + keep
            while end < len(group) and fits_drawn(group[start:end + keep]):
                end += keep
            parts.append(group[start:end])
            start = end
    return parts


def boxless(table: Table) -> None:
    """A table drawn without its box and edge, one space between columns: the narrowest rich draws."""
    table.box, table.show_edge, table.padding, table.min_width = box.SIMPLE_HEAD, False, (0, 1, 0, 0), None


def held_at_words(console: Console, table: Table) -> None:
    """Each column that rich would draw narrower than its longest word at the console's width held at that word's
    width, until none is: rich takes the width a table must give up from its widest columns first, so a column of
    names was cut below its longest name while a column headed 'all threads / call' kept 15 columns for figures
    of 8, and widening the console until the names fitted drew an atlas table 109 wide at 80 columns where 80
    sufficed. Held, the width comes from the columns that can fold (a header of several words) instead."""
    need = needs(console, table)
    while not fits(console, table):
        widths = table._calculate_column_widths(console, console.options.update_width(console.width - table._extra_width))
        squeezed = [i for i, (column, w, n) in enumerate(zip(table.columns, widths, need)) if w < n and column.width is None]
        if not squeezed:  # every column short of its word is held already: the table cannot fit (show widens it)
            return
        for i in squeezed:
            table.columns[i].width = need[i] - table._get_padding_width(i)


def fits(console: Console, table: Table) -> bool:
    """Whether rich draws every column of `table` at least as wide as its longest word (header included) at the
    console's width: else it would cut words and figures ('timed togeth…', '3.… us'). Read off the widths rich
    itself would draw (the table's own measure and its drawn widths differ by a column or two)."""
    spelled(console, table)
    kept, table.min_width = table.min_width, None  # the width kept for a title (titled) may be wrapped
    try:
        widths = table._calculate_column_widths(console, console.options.update_width(console.width - table._extra_width))
        need = needs(console, table)
    finally:
        table.min_width = kept
    return all(w >= n for w, n in zip(widths, need))


def needs(console: Console, table: Table) -> list[int]:
    """The width each column of `table` needs to draw every word whole (its padding included): its longest word,
    or for a column that is not wrapped (no_wrap: a line's code, a frame's name) its longest line. rich measures a
    cell by its longest word either way, so a column of code was given the width of '(the lines'…' and rich cut
    it to '(the l…' (a '…' of its own, in ASCII output too)."""
    unbounded = console.options.update_width(1 << 20)
    got = [table._measure_column(console, unbounded, column) for column in table.columns]
    return [m.maximum if column.no_wrap else m.minimum for column, m in zip(table.columns, got)]


def narrowest(console: Console, table: Table) -> int:
    """The width show() can draw `table` at with no word cut: without its box, each column as wide as it needs
    (needs), the width taken from the columns that can fold (held_at_words). The table is drawn as it was."""
    drawn = (table.box, table.show_edge, table.padding, table.min_width)
    boxless(table)
    try:
        spelled(console, table)
        return sum(needs(console, table)) + table._extra_width
    finally:
        table.box, table.show_edge, table.padding, table.min_width = drawn


def fit_names(console: Console, table: Table, index: int, shortest: int = 20) -> None:
    """Column `index` of names (frames, kernels) on one line each: where the table is wider than the console, each
    name is cut in its middle (format.middle) to the widest that lets the table fit as show() draws it
    (narrowest), never below `shortest` characters; a name is never broken over lines."""
    column = table.columns[index]
    column.overflow, column.no_wrap = "ellipsis", True
    narrowed_to_fit(console, table, index, fmt.middle, shortest)


def fold_labels(console: Console, table: Table, labels: list[str], index: int = 0) -> bool:
    """Column `index` of case names (label, folded over lines of format.LABEL_WIDTH): where the table is wider than
    the console, folded narrower, to the widest that fits (narrowed_to_fit), no narrower than a header's
    (format.HEADER_WIDTH); whether it fits. `labels`: the column's names, a row each, as given to label()."""
    table.columns[index]._cells = [Text(fmt.visible(name)) for name in labels]
    return narrowed_to_fit(console, table, index, lambda name, width: fmt.folded(name, min(width, fmt.LABEL_WIDTH)),
                           fmt.HEADER_WIDTH)


def fold_paths(console: Console, table: Table, index: int) -> None:
    """Column `index` of file:line (a source line's place), each whole: where the table is wider than the console,
    folded after a folder (format.PATH_BREAKS) to the widest that fits (narrowed_to_fit). Left to rich, a path was
    one word wider than the table could give ('array_api_compat/torch/_aliases.py:376': the diff's lines 86 wide at
    80), or folded inside a name ('tests/cases/workloa' over 'd_cases.py:10')."""
    narrowed_to_fit(console, table, index, lambda name, width: fmt.folded(name, width, fmt.PATH_BREAKS, anywhere=True))


def narrowed_to_fit(console: Console, table: Table, index: int, cut: Callable[[str, int], str],
                    shortest: int = 20, fits: Callable[[], bool] | None = None) -> bool:
    """Each cell of column `index` made `cut(cell, limit)` at the widest limit that lets the table fit (`fits`;
    by default as show() draws it: narrowest, the other columns held at their words), never below `shortest`
    characters (at `shortest` where nothing fits); whether it fits. The cells as they were where they fit whole."""
    column = table.columns[index]
    names = [c.plain if isinstance(c, Text) else str(c) for c in column._cells]
    fitting = fits or (lambda: narrowest(console, table) <= console.width)

    def fits_at(limit: int) -> bool:
        column._cells = [Text(cut(n, limit)) for n in names]
        return fitting()

    longest = max(map(len, names), default=0)
    if fits_at(longest):
        return True
    if longest <= shortest:
        return False
    low, high = shortest, longest  # the widest limit that fits, by halves
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits_at(mid) else (low, mid - 1)
    return fits_at(low)


def unwrapped(console: Console, table: Table) -> bool:
    """Whether the table is drawn with no cell wrapped ('0.16 ±' over '0.16') at the console's width."""
    spelled(console, table)
    kept, table.min_width = table.min_width, None  # the width kept for a title (titled) may be wrapped
    try:
        return table.__rich_measure__(console, console.options.update_width(1 << 20)).maximum <= console.width
    finally:
        table.min_width = kept


def titled(title: str) -> Table:
    """A table at least as wide as its title, so a long title is not folded over a narrow table."""
    title = fmt.visible(title)
    return Table(title=Text(title), title_justify="left", min_width=len(title))


def ascii_text(value: Text) -> Text:
    """`value` with flametool's symbols spelled in ASCII, each replacement in the style of the symbol it stands
    for."""
    plain = value.plain
    if in_ascii(plain) == plain:
        return value
    spelled_text = value.blank_copy()
    last = 0
    for i, c in enumerate(plain):
        if in_ascii(c) != c:
            symbol = value[i:i + 1]
            spelled_text.append(value[last:i])
            spelled_text.append(Text(in_ascii(c), style=symbol.style, spans=[
                Span(0, len(in_ascii(c)), span.style) for span in symbol.spans]))
            last = i + 1
    spelled_text.append(value[last:])
    return spelled_text


def words(value: str | Text) -> str | Text:
    """A title's or caption's text with flametool's symbols spelled in ASCII."""
    return in_ascii(value) if isinstance(value, str) else ascii_text(value)


def spelled(console: Console, renderable: RenderableType) -> RenderableType:
    """`renderable` as drawn on `console`: on an output that takes ASCII only (AsciiBuffer), its text and a
    table's title, headers and cells with flametool's symbols spelled in ASCII ('+-' for '±') before rich lays
    them out, so that a column holding one is as wide as its cells ('±' written as '+-' by the stream's error
    handler had put the column one character off). A table is spelled in place: the widths measured (fits,
    unwrapped) are those drawn."""
    if console.encoding.startswith("utf"):
        return renderable
    if isinstance(renderable, (str, Text)):
        return words(renderable)
    if isinstance(renderable, Table):
        table = renderable
        if table.title is not None:
            as_titled = table.min_width == len(str(table.title))  # titled(): the table as wide as its title
            table.title = words(table.title)
            if as_titled:
                table.min_width = len(str(table.title))
        if table.caption is not None:
            table.caption = words(table.caption)
        for column in table.columns:
            column.header = spelled(console, column.header)
            column.footer = spelled(console, column.footer)
            column._cells = [spelled(console, cell) for cell in column._cells]
    return renderable


class AsciiSymbols(RenderHook):
    """What is printed on an ASCII-only console, spelled in ASCII before it is laid out (spelled)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [spelled(self.console, r) for r in renderables]


class AsciiBuffer(io.StringIO):
    """A text buffer that says it takes ASCII only: rich then draws its tables' boxes in ASCII."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "ascii"


def console_text(options: Options, draw: Callable[[Console], None]) -> str:
    """What `draw` prints, as text: on a console of the options' width, in colour when asked, its boxes in ASCII
    when the output takes no UTF-8 (its other symbols, such as '×', are replaced where it is written:
    commands/streams.ascii_fallback)."""
    buffer = AsciiBuffer() if options.ascii else io.StringIO()
    console = Console(file=buffer, width=options.width or 160, force_terminal=options.colour,
                      color_system="auto" if options.colour else None, soft_wrap=False)
    if options.ascii:
        console.push_render_hook(AsciiSymbols(console))
    draw(console)
    return buffer.getvalue()
