"""The terminal's tables at 80 columns and in ASCII: no word or figure cut by rich, no table wider than the
console where it can be made to fit, nothing but ASCII on an output that takes ASCII only. On the committed runs and
small hand-built tables and runs, no measuring."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from flametool import render
from flametool.analyse import dispatch
from flametool.render import format as fmt, terminal
from flametool.render.base import Options

ROOT = Path(__file__).resolve().parent.parent
LONG = ["numpy_matmul_with_a_freshly_allocated_output_every_single_call",
        "einsum_numpy_contraction_of_two_operands_spelled_as_a_string_ij_jk_ik"]


def drawn(table: Table, width: int, ascii: bool = False) -> str:
    buffer = terminal.AsciiBuffer() if ascii else io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, soft_wrap=False)
    if ascii:
        console.push_render_hook(terminal.AsciiSymbols(console))
    terminal.show(console, table)
    return buffer.getvalue()


def long_named_run(tmp_path: Path) -> Path:
    """Four cases sampled at one line of one step (s.py:1), two of them with long names."""
    sys.path.insert(0, str(Path(__file__).parent))
    from runbuild import make_run

    stack = "step (s.py:1);ufunc_generic_fastcall (_multiarray_umath.so);{leaf} (libopenblas.so) 60\nstep (s.py:1) 7\n"
    labels = ["numpy", "np_dot", *LONG]
    return make_run(tmp_path / "run", {l: (stack.format(leaf=f"kernel_{i}"), 5.0 + i, 3) for i, l in enumerate(labels)})


def test_a_column_that_is_not_wrapped_is_as_wide_as_its_longest_line():
    """rich measures a cell by its longest word, a column that is not wrapped too: the aligned lines' code column was
    given the width of 'step(a,' and rich cut its lines to 'def step…' with a '…' of its own (in ASCII output too)."""
    def table() -> Table:  # a new one each time: show() holds a drawn table's columns at their widths
        made = Table()
        made.add_column("line", justify="right")
        made.add_column("code", no_wrap=True)
        for name in ("numpy", "torch", "cupy", "jax", "jax-eager", "dpnp"):
            made.add_column(f"{name}\ntotal", justify="right", no_wrap=True)
        made.add_row("10", "def step(a, b):", *["10.00 ± 0.25"] * 6)
        return made

    for ascii in (False, True):
        text = drawn(table(), 80, ascii)
        assert "def step(a, b):" in text and "…" not in text, text
        assert all(ord(c) < 128 for c in text) or not ascii, text


def test_the_aligned_lines_of_long_named_cases_keep_their_code_whole_in_ascii(tmp_path):
    a = dispatch.analyse_dir(long_named_run(tmp_path))
    assert a.aligned is not None
    for width in (60, 80, 160):
        text = render.show("terminal", a, Options(width=width, ascii=True))
        assert [c for c in text if ord(c) > 127] == [], width
        table = text[text.index("lines aligned"):]
        # whole, folded at its words where narrow, never cut by rich (in ASCII neither)
        assert "(the lines' sum)" in table or "(the lines'" in table and "sum)" in table.replace("|", " ").split(), table
        assert "..." not in table, table


def frame_table(text: str, pair: str) -> list[str]:
    table = text[text.index(f"frames that differ most ({pair})"):]
    return table[:table.index("self: time in the frame's own code")].splitlines()


def test_frame_names_are_cut_only_where_folding_the_headers_leaves_them_too_wide():
    """The frame table's headers were on one line from 100 columns up whatever the frames ('cupy self'): at 100
    columns the H200 run's frames were cut to 33 characters ('cupy._core._gufu…_GUFunc.__call__') where with 'self'
    under each case's name 47 fit. Now the headers fold where that lets the frames be longer; at 80 as they were."""
    a = dispatch.analyse_dir(ROOT / "samples" / "h200-hostbound-1024")
    whole = frame_table(render.show("terminal", a, Options(width=160)), "torch - cupy")
    names = [line.split("│")[1].strip() for line in whole[4:-1] if line.split("│")[1].strip()]
    assert len(names) == 10 and max(map(len, names)) > 47, names
    rows = frame_table(render.show("terminal", a, Options(width=100)), "torch - cupy")
    assert max(map(len, rows)) <= 100, rows
    shown = [line.split("  ")[0] for line in rows[3:] if line[:1].strip()]
    assert [s for s in shown if "…" in s] == ["cupy._core._routines_li…__Pyx__Import_GetModule"], shown
    assert all(name in shown for name in names if len(name) <= 47), shown
    narrow = frame_table(render.show("terminal", a, Options(width=80)), "torch - cupy")
    assert max(map(len, narrow)) <= 80 and "cupy._core._r…ort_GetModule" in "\n".join(narrow)  # cut where it must be


def test_a_sweeps_layer_table_too_wide_for_80_columns_is_drawn_in_parts_with_every_figure():
    """The table of layers at each sampled size had a column per layer: eleven layers drew it 123 columns wide at 80
    (every line wrapped). Now in parts that fit, each headed by the size and case, every figure in one of them."""
    a = dispatch.analyse_dir(ROOT / "samples" / "h200-sweep-fp16")
    title = "host time per call by layer at each sampled (host-bound) size"
    wide = render.show("terminal", a, Options(width=160))
    table = wide[wide.index(title):].splitlines()
    cells = [line.replace("│", " ").split() for line in table[1:]]
    rows = [c for c in cells if c and c[0].isdigit()][:10]
    assert len(rows) == 10 and len(rows[0]) == 13, rows  # size, case, total and ten layers
    text = render.show("terminal", a, Options(width=80))
    assert max(map(len, text.splitlines())) <= 80, text
    parts = text[text.index(title):].split(title)[1:]
    assert len(parts) == 2 and "(1 of 2)" in parts[0] and "(2 of 2)" in parts[1], parts
    for size, case, *figures in rows:  # each row's figures, in order, over the parts
        got = [f for part in parts for line in part.replace("│", " ").splitlines()
               if line.split()[:2] == [size, case] for f in line.split()[2:]]
        assert got == figures, (size, case, got, figures)


def test_the_profiled_loops_fit_80_columns_without_the_op_and_an_empty_counted_column():
    """The profiled loops' table was 82 columns wide at 80 on the H200 run (94 for a workload, whose op is one word of
    32 characters), wrapped on the terminal. Too wide, it leaves out the op in its sampled shape (the timing table
    names it) and a counted column of '-' (no case counted), and its key the counted column's words."""
    a = dispatch.analyse_dir(ROOT / "samples" / "h200-hostbound-1024")
    text = render.show("terminal", a, Options(width=80))
    table = text[text.index("profiled loops:"):text.index("timed together: the figure above")]
    assert max(map(len, table.splitlines())) <= 80, table
    assert "counted" not in table and "matmul" not in table and "1024,1024,1024" in table
    for figures in (["17.72 us", "15.84 us", "19.34 us", "18.97 us", "398 at"], ["0.10 us", "0.12 us", "0.28 us",
                                                                                 "0.19 us", "16 at"]):
        lines = table.splitlines()
        row = next(i for i, line in enumerate(lines) if all(f in line for f in figures))
        assert lines[row + 1].endswith(" 25 Hz "), (figures, table)  # the rate with its unit (a lone 'Hz' before)
    assert "counted: that loop" not in " ".join(text.split())
    wide = render.show("terminal", a, Options(width=160))  # where it fits, as it was
    assert "│ matmul 1024,1024,1024 │       17.72 us │" in wide and "counted: that loop" in " ".join(wide.split())


def aligned_table(text: str) -> str:
    block = text[text.index("lines aligned"):]
    return block[:block.index("self: the line's own code")]


def test_the_aligned_lines_fold_long_case_names_in_their_headers(tmp_path):
    """The aligned lines' headers held each case's whole name on one line: with two names of 62 and 69 characters
    the table was 190 columns wide at 160 (and wider with more cases, at any width). Now folded as every table's
    (terminal.header): within the console, every name whole over its lines, the figures with their ± at 160."""
    a = dispatch.analyse_dir(long_named_run(tmp_path))
    for width in (80, 160):
        table = aligned_table(render.show("terminal", a, Options(width=width)))
        assert max(map(len, table.splitlines())) <= width, table
        words = table.replace("│", " ").replace("┃", " ").split()
        assert all(piece in words for name in LONG for piece in fmt.folded(name, fmt.HEADER_WIDTH).splitlines()), table
    assert "6.70 ± 0.17" in aligned_table(render.show("terminal", a, Options(width=160)))


ALIASES = "array_api_compat/torch/_aliases.py"
FROMNUMERIC = "numpy/_core/fromnumeric.py"


def library_lines_run(tmp_path: Path, labels: tuple[str, str] = ("numpy", "torch"), whole: bool = True) -> Path:
    """Two cases of a workload's fn (w.py) that reach library lines with long paths, their texts in sources.json
    (as a CPU workload run's are: array_api_compat's torch.sum beside numpy's reductions); `whole`: fn kept whole
    from its def line (10) to its last (12), as a run records a short step."""
    import json

    sys.path.insert(0, str(Path(__file__).parent))
    from runbuild import make_run

    base, head = labels
    stacks = {base: (f"fn (w.py:11);_wrapreduction ({FROMNUMERIC}:83) 30\nfn (w.py:12);_wrapreduction ({FROMNUMERIC}:67) 20\n"
                     f"fn (w.py:12);sum ({FROMNUMERIC}:2417) 10\n", 5.0, 3),
              head: (f"fn (w.py:11);sum ({ALIASES}:376) 40\nfn (w.py:12);sum ({ALIASES}:376) 10\n", 8.0, 3)}
    run = make_run(tmp_path / "run", stacks)
    texts = {"w.py": {10: "def fn(a, b):", 11: "e = xp.sum(d, axis=0)", 12: "return e + 1.0"},
             FROMNUMERIC: {67: "passkwargs = {k: v for k, v in kwargs.items()", 83:
                           "return ufunc.reduce(obj, axis, dtype, out, **passkwargs)", 2417: "if isinstance(a, _gentype):"},
             ALIASES: {376: "return torch.sum(x, axis, dtype=dtype, keepdims=keepdims, **kwargs)"}}
    doc = {"version": 1, "files": {f: {"origin": "library", "path": f"/site/{f}", "pyx": {},
                                       "lines": {str(n): f"    {t}" for n, t in lines.items()}}
                                   for f, lines in texts.items()}}
    if whole:
        doc["files"]["w.py"]["functions"] = {"10": 12}
    (run / "sources.json").write_text(json.dumps(doc))
    return run


def block(text: str, start: str, end: str) -> str:
    table = text[text.index(start):]
    return table[:table.index(end)]


def test_the_source_lines_tables_fold_a_long_path_after_a_folder_to_fit(tmp_path):
    """The diff's lines that differ most were 86 columns wide at 80 on a CPU workload run: its path
    'array_api_compat/torch/_aliases.py:376' one word the table could not give its width. Each table of source
    lines (the diff's, and compare's, with a case's name beside) now folds a path after a folder where the table
    does not fit, whole ('array_api_compat/torch/' over '_aliases.py:376'); where it fits, as it was."""
    from flametool.analyse import diff

    got = diff.diff_cases(library_lines_run(tmp_path / "short"), "numpy", "torch", "caller")
    key = "self: the line's own code; total: with all it calls; diff:"
    wide = block(render.show("terminal", got, Options(width=160)), "source lines that differ most", key)
    assert f"{ALIASES}:376" in wide and "return torch.sum(x," in wide, wide
    for ascii in (False, True):
        table = block(render.show("terminal", got, Options(width=80, ascii=ascii)), "source lines that differ most", key)
        assert max(map(len, table.splitlines())) <= 80, table
        words = table.replace("|", " ").split()
        assert "array_api_compat/torch/" in words and "_aliases.py:376" in words, table
        # folded after a folder, never inside a name ('numpy/_core/fromnumeric.py:241' over '7')
        assert f"{FROMNUMERIC}:2417" in words or "fromnumeric.py:2417" in words, table
    a = dispatch.analyse_dir(library_lines_run(tmp_path / "named", ("numpy", "torch_fresh_out")))
    table = block(render.show("terminal", a, Options(width=80)), "source lines, us per call", "self: the line's own code")
    assert max(map(len, table.splitlines())) <= 80, table
    assert "array_api_compat/torch/" in table and "_aliases.py:376" in table, table


def test_the_lines_table_heads_a_short_step_with_its_def_line_greyed(tmp_path):
    """The report lists a short step() whole from its def line (lines_view.listing); the terminal's lines table began
    at its first sampled line ('w.py:11 e = xp.sum(d, axis=0)'), the step's name nowhere. Now headed by its def line,
    no figures, greyed where the terminal has colour; a step not kept whole as before."""
    run = library_lines_run(tmp_path / "whole")
    a = dispatch.analyse_dir(run)
    text = render.show("terminal", a, Options(width=160))
    table = block(text, "source lines, us per call", "self: the line's own code").splitlines()
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in table if line.startswith("│")]
    for label in ("numpy", "torch"):
        ours = [r for r in rows if r[0] == label]
        assert ours[0] == [label, "w.py:10", "def fn(a, b):", "", ""] and ours[1][1] == "w.py:11", rows
    assert "a short step() is headed by its def line" in " ".join(text.split())
    coloured = render.show("terminal", a, Options(width=160, colour=True))
    assert any("def fn(a, b):" in line and "\x1b[2m" in line for line in coloured.splitlines()), coloured
    plain = render.show("terminal", dispatch.analyse_dir(library_lines_run(tmp_path / "cut", whole=False)),
                        Options(width=160))
    assert "def fn(a, b):" not in plain and "w.py:11" in plain and "def line" not in plain


STEP_TEXTS = {10: "def step(a, b):", 11: "c = a * b", 12: "d = xp.exp(c)", 13: "return xp.sum(d, axis=0) + 1.0"}


def more_cases(more: list[str]):
    """test_aligned_lines' numpy and torch lines (their code STEP_TEXTS) and the cases `more`, each a copy of numpy's
    or torch's column in turn."""
    from dataclasses import replace

    sys.path.insert(0, str(Path(__file__).parent))
    import test_aligned_lines as t
    from flametool.analyse.aligned import Aligned

    base = t.two_libraries()
    base = replace(base, rows=[replace(r, text=STEP_TEXTS[r.line]) for r in base.rows])
    return Aligned(base.file, [*base.columns, *(replace(base.columns[i % 2], label=l) for i, l in enumerate(more))],
                   [replace(r, cells={**r.cells, **{l: r.cells[("numpy", "torch")[i % 2]] for i, l in enumerate(more)}})
                    for r in base.rows])


def aligned_at_80(aligned, ascii: bool) -> str:
    """The aligned lines' table of `aligned` as compare prints it at 80 columns (ASCII: as to a terminal without
    UTF-8)."""
    import io

    sys.path.insert(0, str(Path(__file__).parent))
    import test_aligned_lines as t
    from flametool.render import compare_tables

    buffer = terminal.AsciiBuffer() if ascii else io.StringIO()
    console = Console(file=buffer, width=80, color_system=None, soft_wrap=False)
    if ascii:
        console.push_render_hook(terminal.AsciiSymbols(console))
    compare_tables.print_aligned(t.Analysed(aligned), console)  # type: ignore[arg-type]
    return aligned_table(buffer.getvalue())


def test_five_cases_fold_the_aligned_lines_code_at_its_words_beside_their_figures():
    """Five cases at 80 columns: the aligned lines' code was cut to 12 characters ('def step(a,…', 'return xp.s…')
    beside case columns wider than their figures. Now the code is folded at its words into the width the figures of
    the lines leave (the step's sum and the headers wrap at their words, as they did), every line's text whole."""
    five = more_cases(["cupy", "jax", "jax-eager"])
    for ascii in (False, True):
        table = aligned_at_80(five, ascii)
        assert max(map(len, table.splitlines())) <= 80, table
        assert "…" not in table and "..." not in table, table
        lines = table.splitlines()
        for text in ("def step(a, b):", "c = a * b", "d = xp.exp(c)"):  # on one line each, beside their figures
            assert any(text in line and "0.00" in line or text in line and "2.00" in line or text in line and
                       "3.00" in line for line in lines), table
        assert "return xp.sum(d," in table and "axis=0) + 1.0" in table, table  # at its words, over two lines


def test_eight_cases_draw_the_aligned_lines_in_parts_each_headed_by_the_line_and_its_code():
    """Eight cases, four of them long-named, at 80 columns: no one table of the aligned lines fits (it was drawn 143
    wide, every line wrapped). Now in parts, each headed by the line and its code again, a case's columns together,
    every case's figure of every line in one of them; the code whole, folded at its words only where it must be."""
    texts = STEP_TEXTS
    more = ["cupy", "jax", *LONG, "numpy_dot_of_the_two_operands_returning_a_new_array", "jax-eager"]
    eight = more_cases(more)
    for ascii in (False, True):
        table = aligned_at_80(eight, ascii)
        assert max(map(len, table.splitlines())) <= 80, table
        parts = table.split("lines aligned")[1:]
        assert len(parts) > 1 and all(f"of {len(parts)})" in p.splitlines()[0] for p in parts), table
        assert "…" not in table and "..." not in table, table
        for part in parts:  # each part has every line's code, on one line or at its words (no narrower than needed)
            words = part.replace("|", " ").replace("│", " ").split()
            for text in texts.values():
                assert all(w in words for w in text.split()), (text, part)
            assert "def step(a, b):" in part and "d = xp.exp(c)" in part, part
        assert table.count("10.00 (") == 8, table  # each case's step() sum, in one part
        cells = " ".join(table.replace("|", " ").replace("│", " ").replace("┃", " ").split())
        for label in ("numpy", "torch", *more):  # every case's header, whole over its lines
            assert all(piece in cells.split() for piece in fmt.folded(label, fmt.HEADER_WIDTH).splitlines()), label


def lone_units(table: str) -> list[str]:
    """The lines of a drawn table where a unit stands without its figure before it ('us' under '32.73')."""
    lone, lines = [], table.splitlines()
    body = next(i for i, line in enumerate(lines) if set(line.strip()) <= set("─━-+|┡╇┩"))  # under the headers
    for line in lines[body:]:
        words = line.replace("│", " ").replace("|", " ").split()
        lone += [line for before, word in zip(["", *words], words) if word in ("us", "ms", "Hz") and not before[-1:].isdigit()]
    return lone


def test_a_figure_keeps_its_unit_and_an_interval_breaks_only_before_its_bracket():
    """rich broke a cell at any space where its column was narrower than the cell: at 80 columns the profiled loops
    read '32.73' / 'us' / '(1.85x)', the atlas '23.33' / 'us' / '(22.08' / 'to' / '24.96)' (rows five lines tall),
    the timing table '24.54 us' / '(24.39 to' / '24.69)' and a sweep's ratios '(0.654 to' / '0.686)'. Now a figure
    keeps its unit, an interval is whole under its figure where the table can give its width (the headers fold
    first), and broken after its 'to' only where it cannot (the atlas); no table wider than 80, in ASCII neither."""
    sums = dispatch.analyse_dir(ROOT / "tests" / "data" / "h200-sum-counts")
    atlas = dispatch.analyse_dir(ROOT / "samples" / "h200-atlas")
    sweep = dispatch.analyse_dir(ROOT / "samples" / "h200-sweep-fp16")
    for ascii in (False, True):
        text = render.show("terminal", sums, Options(width=80, ascii=ascii))
        timing = block(text, "time per call, as timed", "host (CPU) / call: the host's clock")
        loops = block(text, "profiled loops:", "timed together: the figure above")
        assert "(24.39 to 24.69)" in timing and "32.73 us" in loops and "7.61 us" in loops, (timing, loops)
        table = block(render.show("terminal", atlas, Options(width=80, ascii=ascii)), "atlas:", "host / call: the")
        lines = table.splitlines()
        row = next(i for i, line in enumerate(lines) if "23.33 us" in line)
        assert "(22.08 to" in lines[row + 1] and "24.96)" in lines[row + 2], table
        pairs = block(render.show("terminal", sweep, Options(width=80, ascii=ascii)), "torch against cupy: wall",
                      "host time per call by layer")
        assert "(0.654 to 0.686)" in pairs, pairs
        for drawn_table in (timing, loops, table, pairs):
            assert max(map(len, drawn_table.splitlines())) <= 80, drawn_table
            assert lone_units(drawn_table) == [], drawn_table


def test_eight_cases_frame_tables_fit_80_columns_with_the_error_under_its_difference(tmp_path):
    """With eight cases, four long-named, a pair's frames table was 81 columns wide at 80 (84 in ASCII, '+-' for
    '±'), wrapped by the terminal: its figures' columns were never wrapped and the frames were cut to their
    shortest already. Where that is still too wide, a difference's error goes under it ('+10.29' over '± 0.50'),
    never parted from its figure; where the table fits, on one line as before."""
    from test_many_cases import many_cases_run

    run = many_cases_run(tmp_path)
    a = dispatch.analyse_dir(run)
    for ascii in (False, True):
        text = render.show("terminal", a, Options(width=80, ascii=ascii))
        tables = text.split("frames that differ most")[1:]
        assert len(tables) == 7, text  # numpy against each of the seven others
        for table in (t[:t.index("self: time in the frame's own code")] for t in tables):
            assert max(map(len, table.splitlines())) <= 80, table
            assert not [line for line in table.splitlines() if line.rstrip().endswith(("±", "+-"))], table
    wide = render.show("terminal", a, Options(width=160))
    assert max(map(len, wide.splitlines())) <= 160 and "+5.14 ± 0.25" in wide, wide


def test_a_table_that_fits_only_with_its_figures_parted_from_their_units_is_no_wider_than_the_console():
    """Figures keep their units only where the table still fits: eight columns of '12.34 us' at 60 columns part them
    as rich did ('12.34' over 'us'), rather than draw the table wider than the console."""
    def table() -> Table:
        made = Table()
        for i in range(8):
            made.add_column(f"c{i}", justify="right")
        made.add_row(*["12.34 us"] * 8)
        return made

    assert max(map(len, drawn(table(), 60).splitlines())) <= 60
    assert "12.34 us" in drawn(table(), 100)


def test_a_count_keeps_its_noun_and_the_atlas_rows_are_shorter():
    """At 80 columns the atlas's counts read '1' / 'kernel,' / '10 API' / 'calls' (every row four lines tall, the
    table 97 lines): a count is now one piece with its noun ('1 kernel,', '2 processes'), parted only where the
    table cannot fit otherwise, and a size is never folded inside a dimension ('104857' over '6')."""
    def pieces(cell: str) -> list[list[str]]:
        return [[cell[s:e] for s, e in phrase] for phrase in terminal.phrases_of(cell)[0]]

    assert pieces("1 kernel, 10 API calls") == [["1 kernel,"], ["10 API calls"]]
    assert pieces("800 in 2 processes") == [["800"], ["in"], ["2 processes"]]
    assert pieces("0.25 (1/4) kernels, 2 hosts") == [["0.25 (1/4) kernels,"], ["2"], ["hosts"]]
    atlas = dispatch.analyse_dir(ROOT / "samples" / "h200-atlas")
    for ascii in (False, True):
        table = block(render.show("terminal", atlas, Options(width=80, ascii=ascii)), "atlas:", "host / call: the")
        lines = table.splitlines()
        assert max(map(len, lines)) <= 80, table
        assert len(lines) <= 87, table  # 97 when the counts were folded at every space
        assert "1048576" in table and "104857\n" not in table, table
        assert sum(bool(re.search(r"\b1 kernel,", line)) for line in lines) == 13, table  # a count with its noun


def test_compare_s_source_lines_fold_long_case_names_to_fit(tmp_path):
    """Two long-named cases reaching library lines: compare's source lines table was 87 columns wide at 80 (90 in
    ASCII), its case column held at 30 characters while the paths were already folded. The names fold narrower, as
    the profiled loops' do, whole over their lines."""
    a = dispatch.analyse_dir(library_lines_run(tmp_path, (LONG[0], LONG[1])))
    for ascii in (False, True):
        table = block(render.show("terminal", a, Options(width=80, ascii=ascii)), "source lines, us per call",
                      "self: the line's own code")
        assert max(map(len, table.splitlines())) <= 80, table
        # the case column: each line's first word where it begins the line (the table is drawn without its box)
        cells = "".join(line.split()[0] for line in table.splitlines()[3:] if line[:1] not in (" ", ""))
        assert LONG[0] in cells and LONG[1] in cells, table
