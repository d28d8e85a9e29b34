"""A user with many cases of long names (tests/cases/many_cases.py): the run directory's file names, the terminal's
layout and the views that list every case and pair."""

from __future__ import annotations

from pathlib import Path

from flametool.measure.measurement import case_logs
from flametool.run import rundir

CASES = Path(__file__).parent / "cases" / "many_cases.py"
LONG = ["numpy_matmul_with_a_freshly_allocated_output_every_single_call",
        "einsum_numpy_contraction_of_two_operands_spelled_as_a_string_ij_jk_ik",
        "numpy_dot_of_the_two_operands_returning_a_new_array_each_time_it_is_called",
        "numpy_matmul_into_a_preallocated_output_array_the_same_for_every_call"]


def test_a_group_of_long_names_names_its_logs_within_a_file_name():
    labels = ["numpy", *LONG]
    stem = rundir.group_stem(labels)
    assert len(f"{stem}-timing-100.log".encode()) <= 255
    assert stem == f"numpy+{LONG[0]}+{LONG[1]}+2-more", stem
    assert rundir.group_stem(["numpy", "torch"]) == "numpy+torch"  # as before, where it fits


def test_the_logs_of_a_group_named_in_short_are_found_for_each_of_its_cases(tmp_path):
    groups = [["numpy", *LONG]]
    stem = rundir.group_stem(groups[0])
    for name in (f"{stem}-timing.log", f"{stem}-timing-2.log", "numpy.log"):
        (tmp_path / name).write_text("printed\n")
    found = case_logs(tmp_path, LONG[3], groups)  # a case the short name leaves out
    assert [p.name for p in found] == [f"{stem}-timing-2.log", f"{stem}-timing.log"]
    assert [p.name for p in case_logs(tmp_path, "numpy", groups)] == ["numpy.log"]  # its own, where it has one


def test_many_cases_of_long_names_run(cli, tmp_path):
    """Five cases whose names joined are longer than a file name may be: the first timing process's log was named
    after them all, and the run stopped before it began (`...-timing.log: cannot be written (File name too long)`)."""
    out = tmp_path / "run"
    args = [a for name in LONG for a in ("--case", f"{CASES}:{name}")]
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", *args, "--processes", "1", "--repeats", "1",
               "--iters", "50", "--no-sample", "--no-count", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = rundir.load(out)
    assert all(data.results[label].timing.cpu_us_per_call > 0 for label in ["numpy", *LONG])


LABELS = ["numpy", "np_dot", "torch_mm", "busy_10us", *LONG]
STACK = "step (s.py:1);ufunc_generic_fastcall (_multiarray_umath.so);{leaf} (libopenblas.so) 60\nstep (s.py:1) 7\n"


def many_cases_run(tmp_path: Path) -> Path:
    """A hand-built run of numpy and eight cases, four of them with long names: each with a leaf frame of its own."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from runbuild import make_run

    from flametool.run.record import RunConfig

    out = make_run(tmp_path / "run", {l: (STACK.format(leaf=f"kernel_{i}"), 5.0 + i, 3) for i, l in enumerate(LABELS)})
    run = rundir.load(out)
    run.config = RunConfig.of({"pairs": [["numpy", label] for label in LABELS[1:]]})  # as compare's default pairs
    rundir.save(out, run)
    return out


def printed_at(run: Path, width: int, draw) -> str:
    import io

    from rich.console import Console

    from flametool.analyse import dispatch

    buffer = io.StringIO()
    draw(dispatch.analyse_dir(run), Console(file=buffer, width=width, color_system=None))
    return buffer.getvalue()


def test_the_layer_table_of_many_cases_is_drawn_in_parts_that_fit(tmp_path):
    """The layer table had a column per case and per pair side by side, each as wide as its name: for twelve cases
    700 columns, every line wrapped over nine of an 80-column terminal. Now it is drawn in parts that fit, the
    cases' then the pairs', each headed by the layers, every name whole over lines of 20 characters."""
    from flametool.render import compare_tables, format as fmt

    run = many_cases_run(tmp_path)
    for width in (80, 160):
        text = printed_at(run, width, lambda a, c: compare_tables.print_layers(a, c))
        table = text[:text.index("each case's time per call")]
        assert max(len(line.rstrip()) for line in table.splitlines()) <= width, table
        parts = table.count("host time per call by layer, us")
        assert parts > 1 and f"({parts} of {parts})" in table, table
        for label in LABELS:  # each name whole, its lines one above another
            assert all(piece in table for piece in fmt.folded(label, fmt.HEADER_WIDTH).splitlines()), label
        totals = [line for line in table.splitlines() if "total (measured)" in line]
        figures = [line.split("total (measured)")[1].replace("│", " ").split() for line in totals]
        assert len(totals) == parts and sum(map(len, figures)) == 2 * len(LABELS) - 1  # every case and pair
        # the cases' parts, then the pairs' (signed): no part holds both
        signed = [all(f[0] in "+-" for f in part) for part in figures]
        assert not signed[0] and signed[-1] and signed == sorted(signed), figures


def test_frame_tables_of_long_names_keep_the_frames_whole(tmp_path):
    """A frame table's figures were headed `CASE self` on one line: a 69-character name made its column 74 wide and
    the frames were cut to 20 characters ('float_sum_…_umath.s…'). The name is folded over lines now."""
    from flametool.render import compare_tables

    run = many_cases_run(tmp_path)
    text = printed_at(run, 160, lambda a, c: compare_tables.print_layers(a, c))
    section = text[text.index(f"frames that differ most ({LONG[1]} - numpy)"):]
    section = section[:section.index("self: time in")]
    assert "ufunc_generic_fastcall (_multiarray_umath.so)" in section and "kernel_5 (libopenblas.so)" in section
    assert max(len(line.rstrip()) for line in section.splitlines()) <= 160


def test_the_lines_table_names_each_case_whole(tmp_path):
    """The terminal's lines table cut a case's name to 30 characters ('numpy_matmul_with_a_freshly_a…'): two cases
    whose names begin alike read as one. A long name is folded over lines on its case's first row."""
    from flametool.render import compare_tables, format as fmt

    text = printed_at(many_cases_run(tmp_path), 80, compare_tables.print_lines)
    assert "source lines, us per call" in text and "…" not in text.split("self: the line's own code")[0]
    for label in LABELS:
        assert all(piece in text for piece in fmt.folded(label, 30).splitlines()), label


def test_a_sweep_of_many_cases_draws_its_sizes_table_in_parts_that_fit(tmp_path):
    """A sweep's table of time per size had a host and a wall column per case side by side, each as wide as its
    name: with five cases of long names 300 columns. Now in parts that fit, a case's host and wall kept together."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from runbuild import make_sweep

    from flametool.analyse import dispatch
    from flametool.render import format as fmt, sweep_tables

    labels = ["numpy", *LONG]
    run = make_sweep(tmp_path / "sweep", {l: {8: (None, 1.0 + i, None), 32: (None, 2.0 + i, None)}
                                          for i, l in enumerate(labels)})
    a = dispatch.analyse(run, rundir.load(run))
    for width in (80, 160):
        import io

        from rich.console import Console

        buffer = io.StringIO()
        sweep_tables.print_sweep(a, Console(file=buffer, width=width, color_system=None))
        text = buffer.getvalue()
        table = text[:text.index(" against numpy:")]
        assert max(len(line.rstrip()) for line in table.splitlines()) <= width, table
        for i, label in enumerate(labels):
            assert all(piece in table for piece in fmt.folded(label, fmt.HEADER_WIDTH).splitlines()), label
            assert all(fmt.us(a.at(label, shape).cpu_us) in table for shape in a.shapes), label
        heads = [line for line in table.splitlines() if line.strip(" ┃").startswith("size")]
        assert len(heads) > 1 and all(h.count("host") == h.count("wall") > 0 for h in heads), heads  # host and wall


def test_the_time_and_profiled_tables_fold_a_long_name(tmp_path):
    """The time per call and profiled loops tables printed a 72-character name on one line: at 80 columns they were
    150-190 columns wide, every row wrapped by the terminal. A long name is folded over lines of 30 characters
    there, whole, so the name column is no wider than that (the other columns keep their figures whole)."""
    import re

    from flametool.render import compare_tables, format as fmt

    run = many_cases_run(tmp_path)
    for width in (80, 160):
        text = printed_at(run, width, compare_tables.print_summary)
        heads = [m for line in text.splitlines() if (m := re.match(r"[\s┃]*case\s+[┃\s]*", line))]
        assert len(heads) >= 2, text  # the time table's and the profiled loops'
        assert all(m.end() <= fmt.LABEL_WIDTH + 6 for m in heads), [m.group(0) for m in heads]
        for label in LABELS:
            assert all(piece in text for piece in fmt.folded(label, fmt.LABEL_WIDTH).splitlines()), label


def test_the_profiled_loops_of_eight_cases_fit_80_columns_their_long_names_folded_narrower(tmp_path):
    """Eight cases, four of them long-named, at 80 columns: the profiled loops' table was 85 wide (its names folded
    at 30 characters, as the timing table's, left its figures too little room). Where it is too wide, its names are
    folded narrower (no narrower than a header's 20): 80 wide, every name whole over its lines."""
    from flametool.render import compare_tables, format as fmt

    text = printed_at(many_cases_run(tmp_path), 80, compare_tables.print_summary)
    table = text[text.index("profiled loops:"):text.index("timed together: the figure above")]
    assert max(len(line.rstrip()) for line in table.splitlines()) <= 80, table
    lines = table.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    names = [line.split("  ")[0].strip() for line in lines[rule + 1:]]
    joined = "".join(names)
    for label in LABELS:
        assert label in joined, (label, names)
    assert all(len(n) <= fmt.LABEL_WIDTH for n in names), names
