"""Printing to the terminal: lines and table cells of untrusted text, tables drawn whole (no word or figure
cut), and a renderer's drawing as text. Every name printed here may come from another machine's run directory: it
goes through format.visible first. The tables themselves: compare_tables.py, diff_tables.py, sweep_tables.py,
atlas_tables.py; the live progress line: progress.py."""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass
from typing import Any, Callable

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, OverflowMethod, RenderableType, RenderHook
from rich.containers import Lines
from rich.measure import Measurement
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


# a unit after a figure: the space before it is never a place to break ('32.73' over 'us', '398 at 25' over 'Hz')
UNIT = re.compile(r"(?:us|ms|ns|s|Hz|kHz|B|KiB|MiB|GiB|kB|MB|GB|%)(?![\w/])")
# a count and the noun it counts ('1 kernel,', '10 API calls', '2 processes', '0.25 (1/4) kernels'): one piece, as a
# figure and its unit are (the atlas's counts read '1' / 'kernel,' / '10 API' / 'calls', each row four lines tall)
COUNT = re.compile(r"[+-]?\d[\d,.]*|\(\d+/\d+\)")
COUNTED = re.compile(r"(?:\(\d+/\d+\)\s+)?(?:(?:CUDA|API|Python|device|host)\s+)*(?:kernel|call|process|sample|thread|loop|step|line|frame"
                     r"|memset|cop(?:y|ie)|launch|allocation|function|round|case)(?:e?s)?(?![\w/])")
PLUS_MINUS = ("±", in_ascii("±"))  # '0.16 ± 0.02': the error with its sign, '+-' in ASCII


WHOLE, PIECES, WORDS = 0, 1, 2  # a cell broken between its phrases only; inside them too; at any space (as rich)


class Phrased(Text):
    """A table cell's text that breaks over lines between its phrases only: never between a figure and its unit
    ('32.73 us', '± 0.16'), inside brackets only where its column cannot hold them whole ('(22.08 to' over
    '24.96)'), at any space only where its table cannot fit otherwise (kept_whole). rich breaks a cell at any
    space, and a space that does not break (U+00A0) is one to rich (str.split and the pattern its wrap splits
    words by take it for one), so a column narrower than a cell's line read '32.73' / 'us' / '(1.85x)' and
    '23.33' / 'us' / '(22.08' / 'to' / '24.96)'. Measured (__rich_measure__) no narrower than its widest phrase,
    piece or word as its `level` says, no wider than its lines at the width given; drawn (wrap) broken at the
    fewest places its column's width needs: between its phrases, then inside those that do not fit. The spaces
    printed are plain spaces (a table copied from the terminal reads as it did)."""

    level: int = PIECES  # WHOLE, PIECES or WORDS: where it may break to be as narrow as it is measured

    @classmethod
    def of(cls, text: Text) -> "Phrased":
        made = cls(style=text.style, justify=text.justify, overflow=text.overflow, no_wrap=text.no_wrap,
                   end=text.end, tab_size=text.tab_size)
        made.append_text(text)
        return made

    def phrases(self) -> list[list[list[tuple[int, int]]]]:
        """Its lines, each as its phrases (where it may break), each phrase as its pieces (where it breaks only if the
        phrase does not fit: inside brackets, before a '±'), each piece (start, end) in `plain`."""
        return phrases_of(self.plain)

    def width_of(self, start: int, end: int) -> int:
        return cell_len(self.plain[start:end])

    def laid(self, width: int) -> list[tuple[int, int]]:
        """Its lines at `width`: phrases filled in line by line, a phrase wider than `width` begun on a line of its
        own and broken between its pieces; a piece wider than `width` is left to rich (wrapped at its spaces)."""
        laid = []
        for phrases in self.phrases():
            line: tuple[int, int] | None = None
            for phrase in phrases:
                start, end = phrase[0][0], phrase[-1][1]
                whole = self.width_of(start, end) <= width
                if not whole and line is not None:
                    laid.append(line)
                    line = None
                for s, e in [(start, end)] if whole else phrase:
                    if line is not None and self.width_of(line[0], e) <= width:
                        line = (line[0], e)
                    else:
                        if line is not None:
                            laid.append(line)
                        line = (s, e)
            laid.append(line if line is not None else (0, 0))
        return laid

    def need(self, level: int) -> int:
        """The width it cannot be drawn narrower than at `level`: its widest phrase (WHOLE), piece (PIECES) or
        word (WORDS)."""
        if level == WORDS:
            return max((cell_len(word) for word in self.plain.split()), default=0)
        return max((self.width_of(p[0][0], p[-1][1]) if level == WHOLE else max(self.width_of(s, e) for s, e in p)
                    for phrases in self.phrases() for p in phrases), default=0)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        least = self.need(self.level)
        return Measurement(least, max(least, max((self.width_of(s, e) for s, e in self.laid(options.max_width)), default=0)))

    def wrap(self, console: Console, width: int, *, justify: JustifyMethod | None = None,
             overflow: OverflowMethod | None = None, tab_size: int = 8, no_wrap: bool | None = None) -> Lines:
        if no_wrap:
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        broken = self.blank_copy()
        for i, (s, e) in enumerate(self.laid(width)):
            broken.append_text(Text("\n") if i else Text())
            broken.append_text(self[s:e])
        return broken.wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)


@functools.lru_cache(maxsize=4096)  # a table is measured many times over while it is fitted (kept_whole)
def phrases_of(plain: str) -> list[list[list[tuple[int, int]]]]:
    """Phrased.phrases of a cell's text."""
    lines, start = [], 0
    for line in plain.split("\n"):
        phrases: list[list[tuple[int, int]]] = []
        depth, last = 0, None  # brackets open before the word; the word before (its start, end)
        counted = 0  # where the noun after a count ends: the words before it are glued to the count
        for word in re.finditer(r"\S+", line):
            s, e = start + word.start(), start + word.end()
            if last is None:
                phrases.append([(s, e)])
            else:
                before = plain[last[0]:last[1]]
                if COUNT.fullmatch(before) and (noun := COUNTED.match(plain, s)) is not None:
                    counted = noun.end()
                glued = (before in PLUS_MINUS or (before[-1].isdigit() and UNIT.match(plain, s) is not None)
                         or s < counted or (depth > 0 and word.group() == "to"))  # '(22.08 to' over '24.96)'
                if glued:  # one piece with the word before
                    phrases[-1][-1] = (phrases[-1][-1][0], e)
                elif depth > 0 or word.group() in PLUS_MINUS:
                    phrases[-1].append((s, e))
                else:
                    phrases.append([(s, e)])
            depth = max(0, depth + word.group().count("(") - word.group().count(")"))
            last = (s, e)
        lines.append(phrases)
        start += len(line) + 1
    return lines


def phrased(console: Console, cell: Any) -> Any:
    """A table cell as a Phrased (rich's reading of a str: its markup, no highlighting); any other renderable as
    it is."""
    if isinstance(cell, str):
        cell = console.render_str(cell, highlight=False)
    return Phrased.of(cell) if type(cell) is Text else cell


def kept_whole(console: Console, table: Table) -> None:
    """Each column's cells measured whole ('23.33 us (22.08 to 24.96)', at most broken before its bracket) where
    the table, drawn as narrow as show() draws it (narrowest), still fits the console; where it does not, the
    intervals of the column that gives up the most width may break inside their brackets, then the next's, until
    it fits. Where only parting figures from their units lets it fit, they part, as rich parted them (else the
    table is drawn wider than the console, each of its lines wrapped by the terminal); where even that does not
    fit, they stay together ('±' alone on a line gained one column of a table too wide whatever)."""
    spelled(console, table)
    cells = [[c for c in column._cells if isinstance(c, Phrased)] for column in table.columns]
    if not cells:
        return
    for column in cells:
        for c in column:
            c.level = WHOLE
    for level in (PIECES, WORDS):
        before = [c.level for column in cells for c in column]
        while narrowest(console, table) > console.width:
            gains = [max((c.need(c.level) for c in column), default=0) - max((c.need(level) for c in column), default=0)
                     if any(c.level < level for c in column) else 0 for column in cells]
            best = max(range(len(cells)), key=gains.__getitem__)
            if gains[best] <= 0:
                break
            for c in cells[best]:
                c.level = level
        if level == WORDS and narrowest(console, table) > console.width:
            for c, kept in zip((c for column in cells for c in column), before):
                c.level = kept


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
    kept_whole(console, table)
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
    in_utf8 = console.encoding.startswith("utf")
    if isinstance(renderable, (str, Text)):
        return renderable if in_utf8 else words(renderable)
    if isinstance(renderable, Table):
        table = renderable
        if not in_utf8:
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
            # its cells broken between their phrases (Phrased), a line's code or a frame's name (no_wrap) as it is
            column._cells = [spelled(console, cell) if column.no_wrap else phrased(console, spelled(console, cell))
                             for cell in column._cells]
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
