"""Large profiles take other paths than small ones: a large .folded is read in byte ranges by worker
processes (reading.py), and the flame graphs come from the call tree as arrays (calltree.py). Each is checked
here against the straightforward path on a synthetic profile of the benchmark's shape (made quickly, a
small number of lines), with the large-file paths forced on."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from flametool.analyse import attribution as at
from flametool.analyse import treediff as df
from flametool.run import folded
from flametool import pool
from flametool.analyse import naming, reading, nodetree
from flametool.errors import RunDirError
from flametool.analyse import flamegraph as flame

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import large_profile  # noqa: E402  (the benchmark's generator of py-spy-like stacks)
from shared import once  # noqa: E402

# 1000 lines (885 and 893 stacks, past the 500 a test asks for; the flame graph's pruning at 0.05 still prunes):
# the reference graph builders here are plain Python, and 2000 lines took 13 s of a worker, 1000 take 8
LINES = 1000


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory) -> Path:
    """The benchmark's run directory of two cases (cupy-like and torch-like stacks, LINES lines each); made
    once in the session, by whichever worker asks first (tests/shared.py), and only read."""
    return once(tmp_path_factory, "large", lambda where: large_profile.run_dir(where, LINES)) / "run"


@pytest.fixture(scope="module")
def synthetic(synthetic_run) -> dict[str, Path]:
    """Its two .folded files (large_profile.generate's, seeds 1 and 2)."""
    return {label: synthetic_run / f"{label}.folded" for label in ("cupy", "torch")}


def forced_parallel(monkeypatch, ranges: int) -> None:
    """Every file read in `ranges` worker processes, however small it is."""
    monkeypatch.setattr(reading, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(pool, "cpus", lambda: ranges)


def straightforward(path: Path, by_line: bool = False, extra=()):
    """Every stack read, then named and merged in one pass (naming.normalize)."""
    stacks = [s for s in folded.read(path) if s.frames and s.count > 0] + list(extra)
    return naming.normalize(stacks, by_line)


@pytest.mark.parametrize("by_line", [False, True])
def test_a_file_read_in_ranges_is_read_as_in_one_pass(synthetic, monkeypatch, by_line):
    extra = [folded.Stack((naming.LOOP_FRAME,), 5)]
    expected = straightforward(synthetic["cupy"], by_line, extra)
    forced_parallel(monkeypatch, 3)
    assert len(reading.line_ranges(synthetic["cupy"], 3)) == 3
    got = reading.read_normalized(synthetic["cupy"], by_line, extra)
    # the same stacks in the same (first-seen) order, the same names in the same order, each the same Frame
    assert got[0] == expected[0]
    assert list(got[1].items()) == list(expected[1].items())
    assert len(got[0]) > 500  # a profile with some breadth, not a few stacks


def test_a_module_path_in_a_later_range_renames_a_frame_of_an_earlier_one(tmp_path, monkeypatch):
    """'fast_path (_speedups.c)' is named from an extension path that only the last range holds."""
    path = tmp_path / "p.folded"
    lines = [f"step (c.py:{i});fast_path (_speedups.c:{100 + i}) 3\n" for i in range(300)]
    lines.append("step (c.py:1);x (mypkg/_speedups.cpython-311-x86_64-linux-gnu.so) 1\n")
    path.write_text("".join(lines))
    forced_parallel(monkeypatch, 4)
    stacks, frames = reading.read_normalized(path)
    assert stacks[0].frames == ("c.step", "mypkg._speedups.fast_path")
    assert (stacks, frames) == straightforward(path)


def test_a_bad_line_in_a_later_range_is_numbered_in_the_whole_file(tmp_path, monkeypatch):
    path = tmp_path / "p.folded"
    path.write_text("a;b 1\n" * 500 + "a;b x\n" + "a;c 2\n" * 20)
    forced_parallel(monkeypatch, 2)
    with pytest.raises(RunDirError, match=r"line 501: count 'x' is not an integer"):
        reading.read_normalized(path)


def test_line_ranges_start_at_lines_and_cover_the_file(synthetic):
    path = synthetic["torch"]
    data = path.read_bytes()
    ranges = reading.line_ranges(path, 5)
    assert ranges[0][0] == 0 and ranges[-1][1] is None
    assert all(data[s - 1:s] == b"\n" for s, _ in ranges[1:])
    assert all(e == s2 for (_, e), (s2, _) in zip(ranges, ranges[1:]))


# --- the flame graphs: from the arrays as from nodetree.Node ---------------------------------------------------

def reference_case_graph(profile: at.Profile, threshold: float) -> flame.Graph:
    """flame.case_graph as it was: the whole tree as Node objects, walked."""
    strings = flame.Strings()
    root = nodetree.build([profile], f"all: {profile.label}")
    graph = flame.Graph("g", "case", profile.label, extra={"total_us": profile.us(root.total[0])})
    floor = threshold * root.total[0]
    row_of = {id(root): 0}
    graph.rows.append([-1, strings(root.name), strings(""), round(profile.us(root.total[0]), 4), 0.0])
    for node, parent, kept in root.pruned_walk(lambda n: n.total[0] >= floor and n.total[0] > 0):
        if not kept:
            graph.pruned_nodes += nodetree.count(node)
            graph.pruned_us += profile.us(node.total[0])
            continue
        row_of[id(node)] = len(graph.rows)
        graph.rows.append([row_of[id(parent)], strings(node.name), strings(node.layer),
                           round(profile.us(node.total[0]), 4), round(profile.us(node.self[0]), 4)])
    graph.drawn_nodes = len(graph.rows)
    return graph, strings


def reference_diff_graph(case_diff: "df.PairDiff", threshold: float) -> flame.Graph:
    strings = flame.Strings()
    root = case_diff.tree
    ub, uh = case_diff.us_per_sample
    base, head = case_diff.base, case_diff.head
    head_root, base_root = root.total[1] * uh, root.total[0] * ub
    graph = flame.Graph("d", "diff", f"{head} vs {base}", extra={"base": base, "head": head, "width_from": "head",
                                                                "head_total_us": head_root, "base_total_us": base_root})
    floor_h, floor_b = threshold * head_root, threshold * base_root
    graph.rows.append([-1, strings(f"all: {head} vs {base}"), strings(""), round(head_root, 4), round(base_root, 4), 0.0, 0.0])
    row_of = {id(root): 0}

    def visible(n):
        ht, bt = n.total[1] * uh, n.total[0] * ub
        return not ((ht < floor_h or ht == 0) and (bt < floor_b or bt == 0))

    for node, parent, kept in root.pruned_walk(visible):
        ht, bt = node.total[1] * uh, node.total[0] * ub
        if not kept:
            graph.pruned_nodes += nodetree.count(node)
            graph.pruned_us += max(ht, bt)
            continue
        row_of[id(node)] = len(graph.rows)
        graph.rows.append([row_of[id(parent)], strings(node.name), strings(node.layer or "other"), round(ht, 4),
                           round(bt, 4), round(node.self[1] * uh, 4), round(node.self[0] * ub, 4)])
    graph.drawn_nodes = len(graph.rows)
    return graph, strings


@pytest.mark.parametrize("threshold", [0.0, flame.DISPLAY_THRESHOLD, 0.05])
def test_flame_graphs_from_arrays_are_those_from_the_node_tree(synthetic, threshold):
    profiles = []
    for label, path in synthetic.items():
        stacks, frames = reading.read_normalized(path, extra=[folded.Stack((naming.LOOP_FRAME,), 40)])
        stacks, repaired = naming.repair_sandwiches(stacks, frames)
        profiles.append(at.Profile(label, stacks, frames, 12.5, None, repaired))
    for p in profiles:
        strings = flame.Strings()
        got = flame.case_graph(p, strings, "g", threshold)
        expected, expected_strings = reference_case_graph(p, threshold)
        assert got.to_json() == expected.to_json() and got.drawn_nodes == expected.drawn_nodes
        assert strings.items == expected_strings.items
        assert got.pruned_nodes == expected.pruned_nodes
    case_diff = df.diff(*profiles, with_tree=True)
    strings = flame.Strings()
    got = flame.diff_graph(case_diff, strings, "d", threshold)
    expected, expected_strings = reference_diff_graph(case_diff, threshold)
    assert got.to_json() == expected.to_json() and got.drawn_nodes == expected.drawn_nodes
    assert strings.items == expected_strings.items
    assert got.pruned_nodes == expected.pruned_nodes and (threshold == 0.0 or got.pruned_nodes > 0)


@pytest.mark.parametrize("text", [b"a;b 1\nc;\xff\xfe 2\n", b"a;b 1\n\xff 0\n", b"a 1\nb\xe2\x82 1\n", b"a 1\nb \xff1\n"])
@pytest.mark.parametrize("ranges", [1, 2])
def test_a_file_that_is_not_utf8_cannot_be_read(tmp_path, monkeypatch, text, ranges):
    """Lines are split as bytes: every byte is still decoded once, in a frame, a count or a line of no samples."""
    path = tmp_path / "p.folded"
    path.write_bytes(text * 50)
    forced_parallel(monkeypatch, ranges)
    with pytest.raises(RunDirError, match="cannot be read .*can't decode"):
        reading.read_normalized(path)


def test_counts_are_read_as_python_reads_them(tmp_path, monkeypatch):
    """Counts the fast split does not take (other digits, a carriage return, a blank line) as folded.read has them."""
    path = tmp_path / "p.folded"
    path.write_text("a;b 1\r\nc;d \u0661\u0662\n\n \t\na;b 1_0\n\u2003\nx 0\n", encoding="utf-8", newline="")
    forced_parallel(monkeypatch, 2)
    assert reading.read_normalized(path) == straightforward(path)
    assert [s.count for s in reading.read_normalized(path)[0]] == [11, 12]


# --- a large run's cases prepared side by side --------------------------------------------------------------

def analysed_run(run: Path) -> dict:
    """What the report and the terminal show of a run: every case's figures in both views, every pair's diff
    in both views, and the flame graphs' data."""
    from flametool.analyse import dispatch
    from flametool.render import report_flames

    a = dispatch.analyse_dir(run)
    diffs = [p.diff for p in a.pairs if p.diff]
    strip = [dataclasses.replace(d, aligned=None, tree=None) for d in diffs]
    libs = [dataclasses.replace(p.diff_by_library, aligned=None, tree=None) for p in a.pairs if p.diff_by_library]
    return {"cases": a.cases, "library": a.cases_by_library, "diffs": strip, "diffs_library": libs,
            "flames": str(report_flames.flame_graphs(a, diffs))}


def test_cases_prepared_in_workers_are_those_prepared_here(synthetic_run, monkeypatch):
    run = synthetic_run
    monkeypatch.setattr(reading, "PARALLEL_BYTES", 1 << 60)
    here = analysed_run(run)
    forced_parallel(monkeypatch, 2)
    assert analysed_run(run) == here
    assert len(here["diffs"]) == 1 and here["diffs"][0].frames
