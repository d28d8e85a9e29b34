"""Lines aligned across cases (issue 40, item 3; analyse/aligned.py, render/aligned_lines.py): the table made from
hand-built lines and counts (which cases share step lines, rows in source order, the counted loop's file names
matched to the samples', the lines' sums), its terminal form within 80 columns, its JSON, and one real CPU run of a
workload on numpy and torch (tests/shared.py's, which test_workloads.py reads too) in the terminal, the report and
the JSON summary."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction

import pytest
from rich.console import Console

from shared import WORKLOAD_CASES, workload_compare

from flametool import render
from flametool.analyse import dispatch
from flametool.analyse.aligned import Aligned, align, same_file
from flametool.analyse.attribution import Figure
from flametool.analyse.lines import CaseLines, LineCost
from flametool.commands.main import main
from flametool.render import aligned_lines, compare_tables
from flametool.render.base import Options
from flametool.run.counts import OUTSIDE, Counts, LineCounts

F = Fraction


def cost(file: str, line: int, self_n: int, total_n: int, step: bool = True, text: str | None = None) -> LineCost:
    return LineCost(file, line, "fn", "python", Figure(self_n * 0.5, 0.1, self_n), Figure(total_n * 0.5, 0.2, total_n),
                    text if text is not None else f"line {line}", None, step)


def case(label: str, *lines: LineCost) -> CaseLines:
    return CaseLines(label, 10.0, 20, list(lines))


def counted(file: str, per_line: dict[int, dict[str, Fraction]], outside: dict[str, Fraction] | None = None,
            kinds: tuple[str, ...] = ("python", "kernel")) -> Counts:
    """A counted loop whose tallies are the lines' sums (as run/counts.py's by_line promises)."""
    from flametool.run.counts import Tally

    by_line = [LineCounts(file, n, dict(c), f"text {n}") for n, c in sorted(per_line.items())]
    if outside:
        by_line.append(LineCounts(OUTSIDE, 0, dict(outside)))
    totals: dict[str, Fraction] = {}
    for l in by_line:
        for k, v in l.counts.items():
            totals[k] = totals.get(k, F(0)) + v
    return Counts(100, 100, [Tally(k, "all", v) for k, v in totals.items()], by_line=by_line, by_line_kinds=list(kinds))


def two_libraries() -> Aligned:
    lines = {"numpy": case("numpy", cost("w.py", 11, 2, 4), cost("w.py", 12, 0, 6), cost("np/x.py", 5, 3, 3, step=False)),
             "torch": case("torch", cost("w.py", 12, 1, 9), cost("w.py", 13, 4, 4), cost("w.py", 11, 0, 1))}
    counts = {"numpy": counted("tests/w.py", {10: {"python": F(1)}, 11: {"python": F(2)}, 12: {"python": F(3)}}),
              "torch": counted("tests/w.py", {10: {"python": F(1)}, 12: {"kernel": F(2), "python": F(1)},
                                              13: {"kernel": F(1)}}, outside={"kernel": F(1, 4)})}
    got = align(lines, counts, ["numpy", "torch"])
    assert got is not None
    return got


def test_two_cases_sharing_step_lines_make_one_row_per_line_in_source_order():
    a = two_libraries()
    assert a.file == "w.py" and [c.label for c in a.columns] == ["numpy", "torch"]
    # line 10 (the def line: the call of fn) only counted, 13 only torch's: every line of either side, in order
    assert [r.line for r in a.rows] == [10, 11, 12, 13]
    assert all(r.file == "w.py" for r in a.rows)  # the counted loop's 'tests/w.py' named as the samples name it
    row = {r.line: r for r in a.rows}
    assert row[11].cells["numpy"].self == Figure(1.0, 0.1, 2) and row[11].cells["torch"].total == Figure(0.5, 0.2, 1)
    assert row[13].cells["numpy"].total == Figure(0.0, 0.0, 0)  # sampled, no sample at the line: zero
    assert row[10].cells["torch"].counts == {"python": F(1)} and row[12].cells["torch"].counts == {"kernel": 2, "python": 1}
    assert row[11].text == "line 11" and row[10].text == "text 10"  # the samples' text first, else the counts'
    assert a.kinds == ["python", "kernel"]


def test_each_case_s_lines_and_what_no_line_made_sum_to_its_step_s_counts():
    a = two_libraries()
    for col in a.columns:
        for kind in col.kinds:
            rows = sum((r.cells[col.label].counts.get(kind, F(0)) for r in a.rows), F(0))
            assert rows + col.outside.get(kind, F(0)) == col.line_sum[kind] == col.step[kind], (col.label, kind)
    torch = a.columns[1]
    assert torch.outside == {"kernel": F(1, 4)} and torch.step["kernel"] == F(13, 4)


def test_steps_that_share_a_file_but_no_line_make_no_table():
    # cupy's and torch's built-in steps: two functions of one file
    lines = {"cupy": case("cupy", cost("libraries.py", 35, 1, 5)), "torch": case("torch", cost("libraries.py", 86, 1, 5))}
    assert align(lines, {}, ["cupy", "torch"]) is None
    assert align({"numpy": lines["cupy"]}, {}, ["numpy"]) is None  # one case
    assert align({}, {}, []) is None


def test_a_case_with_another_step_gets_host_time_at_the_shared_lines_only():
    lines = {"numpy": case("numpy", cost("w.py", 11, 1, 2)), "torch": case("torch", cost("w.py", 11, 1, 3)),
             "jax-eager": case("jax-eager", cost("wl.py", 252, 0, 9), cost("w.py", 11, 2, 2, step=False))}
    counts = {"jax-eager": counted("wl.py", {252: {"python": F(5)}})}
    a = align(lines, counts, ["numpy", "torch", "jax-eager"])
    assert a is not None and [c.label for c in a.columns] == ["numpy", "torch", "jax-eager"]
    jax = a.columns[2]
    assert not jax.shares_step and jax.kinds == [] and jax.outside == {}
    assert a.rows[0].cells["jax-eager"].self == Figure(1.0, 0.1, 2) and a.rows[0].cells["jax-eager"].counts == {}
    assert [r.line for r in a.rows] == [11]


def test_jax_eager_and_jitted_jax_are_not_joined_by_the_wrapper_around_fn():
    # as a workload's run reads them: jax-eager's sampled step is fn (its lines in w.py), its counted loop's step
    # the wrapper in workloads.py that calls fn; jitted jax runs none of fn's lines, and its counted loop the same
    # wrapper. The wrapper's lines joined jitted jax to the table (its fn lines reading 0.00 ± 0.00) and put
    # jax-eager's counts outside fn's lines (its cells blank: "none at the line")
    wrapper = {267: {"python": F(1)}, 268: {"python": F(31)}}
    lines = {"numpy": case("numpy", cost("w.py", 11, 1, 2), cost("w.py", 12, 1, 3)),
             "jax": case("jax", cost("jax/_src/pjit.py", 5, 9, 9, step=False)),
             "jax-eager": case("jax-eager", cost("w.py", 11, 2, 4), cost("w.py", 12, 1, 5))}
    counts = {"numpy": counted("w.py", {10: {"python": F(1)}, 12: {"python": F(2)}}),
              "jax": counted("flametool/workload/workloads.py", wrapper),
              "jax-eager": counted("flametool/workload/workloads.py", wrapper)}
    a = align(lines, counts, ["numpy", "jax", "jax-eager"])
    assert a is not None and a.file == "w.py" and [c.label for c in a.columns] == ["numpy", "jax-eager"]
    assert [r.line for r in a.rows] == [10, 11, 12]
    eager = a.columns[1]
    assert eager.shares_step and eager.kinds == [] and eager.outside == {}  # no per-line counts: '–', not blank
    assert a.rows[1].cells["jax-eager"].total == Figure(2.0, 0.2, 4) and a.rows[1].cells["jax-eager"].counts == {}
    assert aligned_lines.view(a, aligned_lines.full_fields(a)).rows[1].cells[1][2] == "–"


def test_a_case_counted_but_not_sampled_has_counts_and_no_figures():
    lines = {"numpy": case("numpy", cost("w.py", 11, 1, 2))}
    counts = {"torch": counted("w.py", {11: {"python": F(2)}})}
    a = align(lines, counts, ["numpy", "torch"])
    assert a is not None
    cell = a.rows[0].cells["torch"]
    assert cell.self is None and cell.total is None and cell.counts == {"python": 2}
    assert a.columns[1].us_per_call is None and a.columns[0].kinds == []


def test_file_names_are_the_same_file_at_a_folder_boundary():
    assert same_file("w.py", "tests/cases/w.py") and same_file("a/w.py", "a/w.py")
    assert not same_file("w.py", "tests/cases/xw.py")


@dataclass
class Analysed:
    """What print_aligned reads of an Analysis."""

    aligned: Aligned | None
    pairs: list = field(default_factory=list)
    pair_lines: dict = field(default_factory=dict)


def drawn(a: Aligned, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, soft_wrap=False, file=open("/dev/null", "w"))
    compare_tables.print_aligned(Analysed(a), console)  # type: ignore[arg-type]
    return console.export_text()


def test_the_terminal_table_fits_80_columns_and_says_what_it_left_out():
    a = two_libraries()
    wide, narrow = drawn(a, 200), drawn(a, 80)
    assert "numpy" in wide and "Py calls" in wide and "kernels" in wide and "left out" not in wide
    assert max(map(len, narrow.splitlines())) <= 80, narrow
    said = " ".join(narrow.split())
    assert "left out to fit" in said or "only, to fit" in said
    for n in ("10", "11", "12", "13", "step()"):
        assert re.search(rf"^[\s│]*{re.escape(n)}\s", narrow, re.M), narrow


def test_many_cases_show_total_us_and_kernels_only_and_say_so():
    # five libraries, as many as a workload runs on (numpy, cupy, torch, jax, jax-eager)
    base = two_libraries()
    more = [f"{c.label}{i}" for i in range(2) for c in base.columns][:3]
    many = Aligned(base.file, [*base.columns, *(replace(base.columns[i % 2], label=l) for i, l in enumerate(more))],
                   [replace(r, cells={**r.cells, **{l: r.cells[("numpy", "torch")[i % 2]] for i, l in enumerate(more)}})
                    for r in base.rows])
    text = drawn(many, 80)
    assert max(map(len, text.splitlines())) <= 80, text
    assert "5 cases: each shows total us and kernels only" in " ".join(text.split())
    assert "4.50 (2)" in text  # torch's line 12: 4.50 us, 2 kernels


def test_the_json_holds_every_figure_and_exact_counts():
    doc = aligned_lines.to_json(two_libraries())
    assert doc["file"] == "w.py" and [c["label"] for c in doc["cases"]] == ["numpy", "torch"]
    assert doc["cases"][1]["outside"] == {"kernel": "1/4"} and doc["cases"][1]["step"] == {"python": "2", "kernel": "13/4"}
    row = doc["rows"][1]
    assert row["line"] == 11 and row["cases"]["numpy"]["self_us"] == 1.0 and row["cases"]["numpy"]["counts"] == {"python": "2"}
    json.dumps(doc, allow_nan=False)


# --- one real run ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out, proc = workload_compare(tmp_path_factory)
    assert proc.returncode == 0, proc.stderr
    return out, proc


def fn_lines() -> list[int]:
    """fn's def line and its body's lines in workload_cases.py's scaled_exp_sum."""
    source = WORKLOAD_CASES.read_text().splitlines()
    first = next(i + 1 for i, l in enumerate(source) if l.strip() == "def fn(a, b):")
    last = next(i + 1 for i, l in enumerate(source) if l.strip() == "return e + 1.0")
    return list(range(first, last + 1))


def test_a_workload_run_aligns_fn_s_lines_for_numpy_and_torch(compared):
    out, _ = compared
    a = dispatch.analyse_dir(out)
    got = a.aligned
    assert got is not None and got.file.endswith("workload_cases.py")
    assert [c.label for c in got.columns] == ["numpy", "torch"] and all(c.shares_step for c in got.columns)
    assert [r.line for r in got.rows] == fn_lines()
    assert [r.text.strip() for r in got.rows][1:] == ["c = a * b", "d = xp.exp(c)", "e = xp.sum(d, axis=0)",
                                                       "return e + 1.0"]
    for col in got.columns:
        assert col.us_per_call and col.samples > 0
        # both libraries' host time at fn's lines: every body line has a figure, most of the step is below them
        assert all(r.cells[col.label].total is not None for r in got.rows)
        assert sum(r.cells[col.label].total.samples for r in got.rows[1:]) > 0
        # per-line counts: the lines' and outside's sum is the step's count, kind by kind, Python calls included
        step = a.run.results[col.label].profile.counts
        assert "python" in col.kinds
        for kind in col.kinds:
            rows = sum((r.cells[col.label].counts.get(kind, F(0)) for r in got.rows), F(0))
            assert rows + col.outside.get(kind, F(0)) == col.line_sum[kind] == step.placed_total(kind), (col.label, kind)
        assert col.step["python"] == step.total("python") > 0


def test_the_workload_run_s_aligned_lines_in_terminal_report_and_json(compared, capsys):
    out, proc = compared
    assert "lines aligned: workload_cases.py" in proc.stdout
    a = dispatch.analyse_dir(out)
    text = render.show("terminal", a, Options(width=80))
    block = text[text.index("lines aligned:"):]
    table = block[:block.index("self: the line's own code")]
    assert max(map(len, table.splitlines())) <= 80, table
    for n in fn_lines():
        assert re.search(rf"^[\s│]*{n}\s", table, re.M), table
    assert "torch − numpy, the lines that differ most:" in block
    page = render.show("html", a)
    section = page[page.index('<section id="aligned">'):]
    section = section[:section.index("</section>")]
    assert section.count('<tr class="line">') == len(fn_lines()) and "numpy</th>" in section and "torch</th>" in section
    assert main(["summary", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)["aligned_lines"]
    assert [r["line"] for r in doc["rows"]] == fn_lines() and {c["label"] for c in doc["cases"]} == {"numpy", "torch"}
    for c in doc["cases"]:
        assert c["lines_sum"] == c["step"]


def test_the_report_s_header_links_to_every_section_in_page_order(compared):
    """The workload run's page has a "Lines aligned" section (between the hot frames and the lines) that the
    header's row of links left out: each section of the page now has its link, in the page's order."""
    out, _ = compared
    page = render.show("html", dispatch.analyse_dir(out))
    nav = re.search(r"<nav>(.*?)</nav>", page, re.S)
    assert nav is not None
    links = re.findall(r'href="#([^"]+)"', nav.group(1))
    assert "aligned" in links and links == re.findall(r'<section id="([^"]+)"', page)
