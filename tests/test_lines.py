"""Host time per source line (analyse/lines.py) on hand-built stacks: a planted hot line's share, self against
total, the error of a share, the step's lines, the .pyx mapping from the record, and lines matched across two
cases (the same file:line, the step's lines in order, moved lines by function and text)."""

import math

import pytest

from flametool.analyse import attribution as at
from flametool.analyse import lines as ln
from flametool.run import folded
from flametool.render import lines_view
from flametool.run import sources as rec

STEP = "cupy_step.<locals>.step (case.py:{})"


def profile(text: str, loop: int = 0, us: float = 100.0, by_line: bool = True) -> at.Profile:
    return at.make_profile("c", folded.parse(text), loop, us, by_line=by_line)


# a step of three ops: line 20 is planted hot (70 of 100 samples), most of it in a library line below it
PLANTED = (
    f"{STEP.format(19)};add (lib/ops.py:5) 10\n"
    f"{STEP.format(20)};matmul (lib/ops.py:9);gemm (_linalg.cpp:120) 50\n"
    f"{STEP.format(20)};matmul (lib/ops.py:9) 15\n"
    f"{STEP.format(20)} 5\n"
    f"{STEP.format(21)};add (lib/ops.py:5);malloc (libc.so.6) 20\n"
)


def by_where(case: ln.CaseLines) -> dict[str, ln.LineCost]:
    return {l.where: l for l in case.lines}


def test_a_planted_hot_line_reads_its_share_self_and_total():
    case = ln.case_lines(profile(PLANTED))
    lines = by_where(case)
    assert case.samples == 100
    hot = lines["case.py:20"]
    assert hot.total.samples == 70 and hot.total.us_per_call == pytest.approx(70.0)
    assert hot.self.samples == 5 and hot.self.us_per_call == pytest.approx(5.0)
    assert hot.step and hot.kind == ln.PYTHON and hot.function.endswith("cupy_step.<locals>.step")
    # the library's lines: matmul's own 15, the C++ line 50 (its file not in the record: no text)
    assert lines["lib/ops.py:9"].self.samples == 15 and lines["lib/ops.py:9"].total.samples == 65
    assert lines["_linalg.cpp:120"].self.samples == 50 and lines["_linalg.cpp:120"].kind == ln.NATIVE
    assert lines["_linalg.cpp:120"].text is None and lines["_linalg.cpp:120"].origin is None
    # add (lib/ops.py:5) under two step lines: its total counts both; a leaf without a line (malloc in libc)
    # gives no line self time
    assert lines["lib/ops.py:5"].total.samples == 30 and lines["lib/ops.py:5"].self.samples == 10
    assert lines["case.py:21"].self.samples == 0
    # by self time, largest first; the step's own lines in source order
    assert case.lines[0].where == "_linalg.cpp:120"
    assert [l.where for l in case.step_lines()] == ["case.py:19", "case.py:20", "case.py:21"]
    assert not lines["lib/ops.py:9"].step


def test_the_error_is_the_binomial_error_of_the_share_as_for_frames():
    p = profile(PLANTED)
    hot = by_where(ln.case_lines(p))["case.py:20"]
    assert hot.total.se_us == pytest.approx(math.sqrt(0.7 * 0.3 / 100) * 100.0)
    # a line that is a whole frame (the frame of the line-level profile) reads the frame's figures
    frames = {f.frame: f for f in at.attribute(p).frames}
    gemm = next(f for name, f in frames.items() if "_linalg.cpp:120" in name)
    line = by_where(ln.case_lines(p))["_linalg.cpp:120"]
    assert (line.self, line.total) == (gemm.self, gemm.total)


def test_every_lines_key_says_the_error_is_the_shares_alone():
    # a workload's one fn line holds every sample of its step: its total is the case's time per call and read
    # '119.44 ± 0.00', each key saying the ± was 'one standard error from the number of samples', as if that time
    # were exact. The ± stays the share's (as a frame's, one computation for every view), and every key of lines
    # now says the time's own uncertainty is not in it
    from flametool.render import aligned_lines

    whole = by_where(ln.case_lines(profile(f"{STEP.format(7)};exp (lib/e.py:3) 60\n{STEP.format(7)} 40\n", us=119.44)))
    assert whole["case.py:7"].total.us_per_call == pytest.approx(119.44) and whole["case.py:7"].total.se_us == 0.0
    assert "not of the case's time per call" in lines_view.LINE_SE and "reads ± 0.00" in lines_view.LINE_SE
    keys = [lines_view.TERMINAL_KEY, lines_view.DELTA_KEY.format(head="b", base="a"), lines_view.LISTING_NOTE,
            aligned_lines.KEY.format(dash="-"), aligned_lines.NOTE]
    assert all(lines_view.LINE_SE in k for k in keys)
    assert not any("error from the number of samples" in k for k in keys)


def test_the_loops_own_samples_and_the_recorded_count_are_in_the_denominator():
    case = ln.case_lines(profile(PLANTED, loop=100))
    assert case.samples == 200
    assert by_where(case)["case.py:20"].total.us_per_call == pytest.approx(35.0)
    assert all(l.file for l in case.lines)  # the loop's frame has no line


def test_a_line_twice_in_one_stack_counts_once_in_its_total():
    text = f"{STEP.format(3)};rec (lib/r.py:2);rec (lib/r.py:2);rec (lib/r.py:2) 4\n{STEP.format(3)} 4\n"
    line = by_where(ln.case_lines(profile(text)))["lib/r.py:2"]
    assert line.total.samples == 4 and line.self.samples == 4


def test_a_function_level_profile_is_refused():
    with pytest.raises(ValueError, match="by_line=True"):
        ln.case_lines(profile(PLANTED, by_line=False))


RECORD = rec.Sources({
    "case.py": rec.SourceFile("case", "/home/u/case.py", {20: "y = a @ b"}),
    "_linalg.cpp": rec.SourceFile("source", "/src/cupy/_linalg.cpp", {120: "__pyx_t_1 = gemm(...);"},
                                  {120: ("cupy/_linalg.pyx", 612)}),
    "cupy/_linalg.pyx": rec.SourceFile("source", "/src/cupy/cupy/_linalg.pyx", {612: "    gemm(handle, a, b)"}),
})


def test_texts_and_the_pyx_mapping_come_from_the_record():
    lines = by_where(ln.case_lines(profile(PLANTED), RECORD))
    assert lines["case.py:20"].text == "y = a @ b" and lines["case.py:20"].origin == "case"
    gemm = lines["_linalg.cpp:120"]
    assert gemm.kind == ln.CYTHON and gemm.pyx == rec.PyxLine("cupy/_linalg.pyx", 612, "    gemm(handle, a, b)")
    assert lines["case.py:19"].text is None  # a line the record does not hold: file:line alone


def test_generated_lines_fold_into_their_pyx_line():
    text = (f"{STEP.format(1)};f (_linalg.cpp:120);g (_linalg.cpp:121) 3\n"
            f"{STEP.format(1)};f (_linalg.cpp:121) 2\n")
    record = rec.Sources({"_linalg.cpp": rec.SourceFile("source", "x", {}, {120: ("m.pyx", 7), 121: ("m.pyx", 7)}),
                          "m.pyx": rec.SourceFile("source", "y", {7: "total += i"})})
    lines = by_where(ln.case_lines(profile(text), record, fold_pyx=True))
    assert "_linalg.cpp:120" not in lines
    pyx = lines["m.pyx:7"]
    assert (pyx.self.samples, pyx.total.samples, pyx.text, pyx.kind, pyx.pyx) == (5, 5, "total += i", ln.CYTHON, None)


def test_a_native_step_has_no_step_lines():
    lines = ln.case_lines(profile("matmul (numpy/_umath.so);0x1 (libblas.so) 3\nmatmul (numpy/_umath.so) 1\n"))
    assert lines.lines == [] and lines.step_lines() == []


# --- across two cases ----------------------------------------------------------------------------------

def case_of(text: str, us: float = 100.0, record: rec.Sources = rec.Sources(), label: str = "c") -> ln.CaseLines:
    p = at.make_profile(label, folded.parse(text), 0, us, by_line=True)
    return ln.case_lines(p, record)


def test_two_builds_match_by_file_and_line_with_the_error_of_the_difference():
    base = case_of("s (case.py:5);f (lib/a.py:10) 50\ns (case.py:5) 50\n")
    head = case_of("s (case.py:5);f (lib/a.py:10) 70\ns (case.py:5) 30\n")
    deltas = ln.diff_lines(base, head)
    f = next(d for d in deltas if d.where == "lib/a.py:10")
    assert f.matched_by == ln.BY_FILE_LINE
    assert f.self_delta == pytest.approx(20.0)
    assert f.self_se == pytest.approx(math.hypot(math.sqrt(0.25 / 100), math.sqrt(0.21 / 100)) * 100)
    assert {d.where for d in deltas} == {"lib/a.py:10", "case.py:5"}
    assert deltas[0].where in ("lib/a.py:10", "case.py:5") and abs(deltas[0].self_delta) == pytest.approx(20.0)
    # sorted by |difference| in total: the step line differs by nothing there
    assert ln.diff_lines(base, head, by="total")[0].where == "lib/a.py:10"


def test_different_libraries_match_the_steps_lines_in_order():
    cupy = case_of("cupy_f.<locals>.step (case.py:10);mm (cupy/m.py:3) 60\n"
                   "cupy_f.<locals>.step (case.py:11);s (cupy/s.py:4) 40\n")
    torch = case_of("torch_f.<locals>.step (case.py:20);mm (torch/m.py:3) 30\n"
                    "torch_f.<locals>.step (case.py:21);s (torch/s.py:4) 70\n")
    deltas = {d.where: d for d in ln.diff_lines(cupy, torch)}
    first = deltas["case.py:10 -> case.py:20"]
    assert first.matched_by == ln.BY_STEP_ORDER and first.total_delta == pytest.approx(-30.0)
    assert deltas["case.py:11 -> case.py:21"].total_delta == pytest.approx(30.0)
    # the libraries' own lines are each side's alone
    assert deltas["cupy/m.py:3"].head is None and deltas["torch/m.py:3"].base is None
    assert deltas["torch/m.py:3"].matched_by == ""


def test_a_shared_step_line_matches_across_libraries():
    # a workload written once: both steps are the same function of one file, on the same lines
    cupy = case_of("step (work.py:19);mm (cupy/m.py:3) 10\n", us=80.0)
    torch = case_of("step (work.py:19);mm (torch/m.py:3) 10\n", us=50.0)
    shared = next(d for d in ln.diff_lines(cupy, torch) if d.where == "work.py:19")
    assert shared.matched_by == ln.BY_FILE_LINE and shared.total_delta == pytest.approx(-30.0)


def test_moved_lines_match_by_function_and_text():
    old = rec.Sources({"lib/a.py": rec.SourceFile("library", "/a", {10: "    x = f(y)", 11: "    return x"})})
    new = rec.Sources({"lib/a.py": rec.SourceFile("library", "/a", {14: "    x = f(y)", 15: "    return x  "})})
    base = case_of("s (case.py:5);g (lib/a.py:10) 40\ns (case.py:5);g (lib/a.py:11) 10\ns (case.py:5) 50\n", record=old)
    head = case_of("s (case.py:5);g (lib/a.py:14) 60\ns (case.py:5);g (lib/a.py:15) 10\ns (case.py:5) 30\n", record=new)
    deltas = {d.where: d for d in ln.diff_lines(base, head)}
    moved = deltas["lib/a.py:10 -> lib/a.py:14"]
    assert moved.matched_by == ln.BY_FUNCTION_TEXT and moved.self_delta == pytest.approx(20.0)
    assert deltas["lib/a.py:11 -> lib/a.py:15"].self_delta == pytest.approx(0.0)  # whitespace at the end aside
    assert list(deltas)[0] == "lib/a.py:10 -> lib/a.py:14"  # the largest difference first


def test_a_case_file_edited_between_two_runs_matches_its_lines_by_text_not_by_number():
    # run B's file has one line added above step(): the same statements, each one line further down; line 24 is
    # `helper(100)` in A and `s += i` in B, which is not one line to compare
    text_a = {20: "        np.matmul(a, b, out=out)", 23: "            s += i", 24: "        helper(100)"}
    a = rec.Sources({"case.py": rec.SourceFile("case", "/a", text_a)})
    b = rec.Sources({"case.py": rec.SourceFile("case", "/a", {n + 1: t for n, t in text_a.items()})})
    base = case_of(f"{STEP.format(20)} 30\n{STEP.format(23)} 60\n{STEP.format(24)};h (case.py:9) 10\n", record=a)
    head = case_of(f"{STEP.format(21)} 30\n{STEP.format(24)} 60\n{STEP.format(25)};h (case.py:10) 10\n", record=b)
    deltas = ln.diff_lines(base, head)
    assert {d.where: d.matched_by for d in deltas if d.base is not None and d.base.step} == {
        "case.py:20 -> case.py:21": ln.BY_FUNCTION_TEXT, "case.py:23 -> case.py:24": ln.BY_FUNCTION_TEXT,
        "case.py:24 -> case.py:25": ln.BY_FUNCTION_TEXT}
    assert all(d.self_delta == pytest.approx(0.0) and d.total_delta == pytest.approx(0.0)
               for d in deltas if d.base is not None and d.base.step)
    # a line whose text is not known on one side still matches by file and line (nothing says it moved)
    bare = case_of(f"{STEP.format(20)} 30\n{STEP.format(23)} 70\n")
    assert {d.where: d.matched_by for d in ln.diff_lines(base, bare)}["case.py:23"] == ln.BY_FILE_LINE


def test_two_env_builds_of_a_library_keep_each_ones_lines(tmp_path):
    # `compare --env A=... --env B=...` of mylib whose B adds a check at line 27: both builds' frames name
    # 'mylib/core.py', one file per build. The merged record kept A's texts for both, so B's check read as
    # `mean = ...` and A's line 27 (mean) was matched with B's (the check) by file and line: -5 us, +5 us and
    # -15 us on lines B had not changed, and the changed line nowhere
    old = {26: "    x = _as_array(x)", 27: "    mean = x.mean()", 28: "    std = x.std()"}
    new = {26: "    x = _as_array(x)", 27: "    if not np.isfinite(x).all():", 28: "        raise ValueError",
           29: "    mean = x.mean()", 30: "    std = x.std()"}
    records = [(label, rec.Sources({"bench.py": rec.SourceFile("case", "/w/bench.py", {5: "    norm()"}),
                                    "mylib/core.py": rec.SourceFile("library", f"/{label}/mylib/core.py", texts)}))
               for label, texts in (("s@A", old), ("s@B", new))]
    rec.save(tmp_path, rec.merge(records))
    record = rec.load(tmp_path)  # as every view reads it
    step = "s (bench.py:5);standardize (mylib/core.py:{}) {}\n"
    base = case_of(step.format(27, 20) + step.format(28, 60) + "s (bench.py:5) 20\n", record=record, label="s@A")
    head = case_of(step.format(27, 10) + step.format(29, 20) + step.format(30, 60) + "s (bench.py:5) 10\n",
                   record=record, label="s@B")  # 100 samples a side: a sample is 1 us
    assert by_where(head)["mylib/core.py:27"].text == "    if not np.isfinite(x).all():"
    assert by_where(base)["mylib/core.py:27"].text == "    mean = x.mean()"
    deltas = {d.where: d for d in ln.diff_lines(base, head, by="total")}
    assert deltas["mylib/core.py:27 -> mylib/core.py:29"].total_delta == pytest.approx(0.0)
    assert deltas["mylib/core.py:28 -> mylib/core.py:30"].total_delta == pytest.approx(0.0)
    check = deltas["mylib/core.py:27"]
    assert check.base is None and check.total_delta == pytest.approx(10.0)
    # a file both read from one path (the case's own, a library the same in both) is kept once
    assert set(record.cases) == {"s@B"} and set(record.cases["s@B"]) == {"mylib/core.py"}
    # the report's listing of B's function greys B's unsampled line 28 with B's text, not A's `std = ...`
    rows = {r.line: r for listed in lines_view.case_listings(head, record).listings for r in listed.rows
            if listed.file == "mylib/core.py"}
    assert rows["28"].text.strip() == "raise ValueError" and not rows["28"].sampled


def test_a_line_one_build_added_leads_by_its_total():
    # B's check calls numpy for all it costs (self 0 of 12 us): by its own time it ranked below line 10's noise
    # (5 us of its own), and the summary's 'line that differs most' was numpy's, not the line B added
    record = rec.Sources({"lib/core.py": rec.SourceFile("library", "/l", {
        10: "    m = x.mean()", 12: "    if not np.isfinite(x).all():"})})
    # A's copy of the file: line 12 is the statement B's check now stands above (two builds' copies of one file),
    # its function kept whole, so the check is known to be nowhere in it
    a_record = rec.Sources({"lib/core.py": rec.SourceFile("library", "/a", {
        9: "def f(x):", 10: "    m = x.mean()", 11: "    s = x.std()", 12: "    return (x - m) / s"}, {}, {9: 12})})
    base = case_of("s (case.py:5);f (lib/core.py:10) 60\ns (case.py:5);f (lib/core.py:10);mean (np.so) 40\n",
                   record=a_record)
    head = case_of("s (case.py:5);f (lib/core.py:10) 55\ns (case.py:5);f (lib/core.py:10);mean (np.so) 33\n"
                   "s (case.py:5);f (lib/core.py:12);isfinite (np.so) 12\n", record=record)
    first = ln.diff_lines(base, head)[0]
    assert first.where == "lib/core.py:12" and first.added and first.total_delta == pytest.approx(12.0)
    assert lines_view.delta_sentence(first).startswith(
        "lib/core.py:12 `if not np.isfinite(x).all():` head only: +12.00 ± 3.25 us with all it calls (+0.00 ")
    # a line of a function the other side never ran (another library's step in one case file) is ranked by its
    # own time, as before: its total is all the case's time
    other = case_of("s (case.py:5);f (lib/core.py:30);mean (np.so) 100\n", record=record)
    assert not any(d.added for d in ln.diff_lines(case_of("t (case.py:9);mean (np.so) 100\n"), other))


def test_a_line_an_edit_moved_past_the_other_copys_kept_lines_is_unknown_not_one_sides():
    # a library file edited between two runs, `check(b)` added at 12 in f: head's line 13 `b = b + 1` is the base's
    # line 12, never sampled there, yet read 'head only' (the base's line 13 is `return b`, and the base's copy,
    # kept only near its sampled lines, lacks its line 12), while the new check read 'unknown in base'
    old = {10: "    a = 1", 11: "    b = g(a)", 13: "    return b"}
    new = {10: "    a = 1", 11: "    b = g(a)", 12: "    check(b)", 13: "    b = b + 1", 14: "    return b"}
    f = "s (case.py:5);f (lib/core.py:{}) {}\n"
    base = case_of(f.format(10, 20) + f.format(11, 40) + f.format(13, 10) + "s (case.py:5) 30\n",
                   record=rec.Sources({"lib/core.py": rec.SourceFile("library", "/l/lib/core.py", old)}))
    head = case_of(f.format(10, 20) + f.format(11, 40) + f.format(12, 8) + f.format(13, 5) + f.format(14, 10)
                   + "s (case.py:5) 17\n",
                   record=rec.Sources({"lib/core.py": rec.SourceFile("library", "/l/lib/core.py", new)}))
    deltas = {d.where: d for d in ln.diff_lines(base, head)}
    moved = deltas["lib/core.py:13"]
    assert moved.base is None and moved.unknown and moved.one_side == "unknown in base"
    assert deltas["lib/core.py:12"].one_side == "unknown in base"
    # with the base's f kept whole (every line known), `b = b + 1` is known to be nowhere in it: head's alone
    whole = {9: "def f():", **old, 12: "    b = b * 2"}
    base = case_of(f.format(10, 20) + f.format(11, 40) + f.format(13, 10) + "s (case.py:5) 30\n",
                   record=rec.Sources({"lib/core.py": rec.SourceFile("library", "/l/lib/core.py", whole, {}, {9: 13})}))
    assert {d.where: d for d in ln.diff_lines(base, head)}["lib/core.py:13"].one_side == "head only"


def test_a_line_sampled_on_one_side_only_that_both_have_is_not_sampled_not_one_sides_alone():
    # two runs of one numpy: _methods.py:79 caught 4 times in one and never in the other was labelled 'head only'
    # (+0.40), as if only that run's numpy ran the line
    methods = {77: "def _sum(a, axis=None):", 78: "    x = 1", 79: "    return umr_sum(a, axis)"}
    record = rec.Sources({"numpy/_methods.py": rec.SourceFile("library", "/np", methods)})
    base = case_of("s (case.py:5);_sum (numpy/_methods.py:78) 6\ns (case.py:5) 94\n", record=record)
    head = case_of("s (case.py:5);_sum (numpy/_methods.py:78) 6\ns (case.py:5);_sum (numpy/_methods.py:79) 4\n"
                   "s (case.py:5) 90\n", record=record)
    d = next(d for d in ln.diff_lines(base, head) if d.where == "numpy/_methods.py:79")
    assert d.base is None and d.unsampled and d.one_side == "not sampled in base"
    row = next(r for r in lines_view.delta_rows(ln.diff_lines(base, head)) if r.where == "numpy/_methods.py:79")
    assert row.matched == "not sampled in base"
    assert lines_view.delta_sentence(d).startswith(
        "numpy/_methods.py:79 `return umr_sum(a, axis)` not sampled in base: +4.00 ± ")
    got = next(j for j in lines_view.deltas_json(ln.diff_lines(base, head)) if j["where"] == "numpy/_methods.py:79")
    assert got["not_sampled_in"] == "base" and got["matched_by"] is None
    # and from the other side: base's line that head did not catch
    back = next(d for d in ln.diff_lines(head, base) if d.where == "numpy/_methods.py:79")
    assert back.one_side == "not sampled in head"
    # the text unknown (its file not found, a run recorded before sources.json), in a function both sides ran:
    # nothing says whether the base has it (test_a_line_past_the_other_builds_known_text_is_unknown_there)
    bare = next(d for d in ln.diff_lines(case_of("s (case.py:5);_sum (numpy/_methods.py:78) 6\n"), case_of(
        "s (case.py:5);_sum (numpy/_methods.py:78) 6\ns (case.py:5);_sum (numpy/_methods.py:79) 4\n"))
        if d.where == "numpy/_methods.py:79")
    assert bare.one_side == "unknown in base" and not bare.unsampled and bare.unknown
    # a line of a file the other side never ran (numpy's, against torch's step), in one run whose record holds
    # the file for both cases: that side's alone
    torch = case_of("s (case.py:5);mm (torch/functional.py:3) 100\n", record=record)
    alone = next(d for d in ln.diff_lines(head, torch) if d.where == "numpy/_methods.py:79")
    assert not alone.unsampled and alone.one_side == "base only"
    assert next(r for r in lines_view.delta_rows(ln.diff_lines(head, torch))
                if r.where == "numpy/_methods.py:79").matched == "base only"


def test_a_def_line_sampled_on_one_side_does_not_unmatch_the_steps_ops():
    # numpy's step caught on its `def` line as the call entered it (1 sample), torch's never: the two ops are
    # still the two steps' lines in order, and their difference is the ops' (not one op against nothing)
    record = rec.Sources({"lib.py": rec.SourceFile("library", "/l", {
        41: "    def step() -> None:", 42: "        matmul(a, b, out=out)", 72: "    def step() -> None:",
        73: "        mm(a, b, out=out)"})})
    numpy = case_of("numpy_f.<locals>.step (lib.py:41) 1\nnumpy_f.<locals>.step (lib.py:42);m (x.so) 99\n",
                    us=7.0, record=record)
    torch = case_of("torch_f.<locals>.step (lib.py:73);mm (y.so) 100\n", us=8.0, record=record)
    deltas = {d.where: d for d in ln.diff_lines(numpy, torch)}
    ops = deltas["lib.py:42 -> lib.py:73"]
    assert ops.matched_by == ln.BY_STEP_ORDER and ops.total_delta == pytest.approx(8.0 - 6.93)
    assert deltas["lib.py:41"].head is None  # the def line alone, on its side
    # with a def line on both sides, those two are matched with each other, the ops with each other
    torch_def = case_of("torch_f.<locals>.step (lib.py:72) 2\ntorch_f.<locals>.step (lib.py:73);mm (y.so) 98\n",
                        us=8.0, record=record)
    both = {d.where: d.matched_by for d in ln.diff_lines(numpy, torch_def)}
    assert both["lib.py:41 -> lib.py:72"] == ln.BY_STEP_ORDER and both["lib.py:42 -> lib.py:73"] == ln.BY_STEP_ORDER
    # a step written on one line (`def step(): return ...`) is its op, matched with the other step's op
    one = case_of("one_f.<locals>.step (one.py:3);m (x.so) 100\n", us=7.0,
                  record=rec.Sources({"one.py": rec.SourceFile("case", "/o", {3: "def step(): return mm(a, b)  # one"})}))
    assert {d.where: d.matched_by for d in ln.diff_lines(one, torch_def)}["one.py:3 -> lib.py:73"] == ln.BY_STEP_ORDER


def test_a_text_twice_on_one_side_is_not_guessed():
    old = rec.Sources({"a.py": rec.SourceFile("library", "/a", {1: "pass", 2: "pass"})})
    new = rec.Sources({"a.py": rec.SourceFile("library", "/a", {7: "pass"})})
    base = case_of("s (case.py:5);g (a.py:1) 1\ns (case.py:5);g (a.py:2) 1\n", record=old)
    head = case_of("s (case.py:5);g (a.py:7) 1\n", record=new)
    assert {d.matched_by for d in ln.diff_lines(base, head) if "a.py:" in d.where and "case" not in d.where} == {""}


def test_diff_by_must_be_self_or_total():
    c = case_of("s (case.py:5) 1\n")
    with pytest.raises(ValueError):
        ln.diff_lines(c, c, by="both")


def test_the_h200_sample_reads_the_steps_line_and_cupys_cpp_lines():
    from pathlib import Path
    from flametool.run import rundir
    run_dir = Path(__file__).parent.parent / "samples" / "h200-hostbound-1024"
    run = rundir.load(run_dir)
    cupy, torch = (ln.case_lines(at.load_profile(run_dir, run, label, by_line=True)) for label in ("cupy", "torch"))
    (step,) = cupy.step_lines()
    assert step.where == "flametool/cases.py:155" and step.total.samples == sum(
        s.count for s in at.load_profile(run_dir, run, "cupy", by_line=True).stacks if s.frames[0] != at.naming.LOOP_FRAME)
    cpp = by_where(cupy)["_routines_linalg.cpp:22480"]
    assert cpp.kind == ln.NATIVE and cpp.function == "cupy._core._routines_linalg.matmul" and cpp.total.us_per_call > 10
    steps = next(d for d in ln.diff_lines(cupy, torch) if d.matched_by == ln.BY_STEP_ORDER)
    assert steps.where == "flametool/cases.py:155 -> flametool/cases.py:136"


def test_a_workloads_line_sampled_on_one_library_only_is_not_matched_with_another_line():
    # a workload's fn on numpy and torch, one function of one file: numpy's samples caught `return s, d` and not
    # the def line, torch's the def line and not `return s, d`; each is that line on its own side, not one
    # line against the other (the compare printed `work.py:32 -> work.py:29 `return s, d` -> `def fn(a, b):``)
    record = rec.Sources({"work.py": rec.SourceFile("case", "/w", {
        29: "    def fn(a, b):", 30: "        s = a + b", 31: "        d = a - b", 32: "        return s, d"})})
    fn = "tuple_ret.<locals>.fn (work.py:{})"
    numpy = case_of(f"{fn.format(30)} 40\n{fn.format(31)} 50\n{fn.format(32)} 10\n", record=record)
    torch = case_of(f"{fn.format(29)} 5\n{fn.format(30)} 45\n{fn.format(31)} 50\n", record=record)
    deltas = {d.where: d.matched_by for d in ln.diff_lines(numpy, torch)}
    assert deltas == {"work.py:29": "", "work.py:30": ln.BY_FILE_LINE, "work.py:31": ln.BY_FILE_LINE,
                      "work.py:32": ""}
    # nor an op with another op: numpy sampled lines 30 and 32, torch 30 and 31
    torch_31 = case_of(f"{fn.format(30)} 45\n{fn.format(31)} 55\n", record=record)
    numpy_32 = case_of(f"{fn.format(30)} 45\n{fn.format(32)} 55\n", record=record)
    assert {d.where: d.matched_by for d in ln.diff_lines(numpy_32, torch_31)} == {
        "work.py:30": ln.BY_FILE_LINE, "work.py:31": "", "work.py:32": ""}


def test_a_def_line_is_not_matched_with_an_op_when_the_counts_happen_to_agree():
    # cupy's step sampled on its def line and one op, torch's on two ops: the def line stays apart
    record = rec.Sources({"c.py": rec.SourceFile("case", "/c", {10: "    def step():", 11: "        mm(a, b)"}),
                          "t.py": rec.SourceFile("case", "/t", {20: "        mm(a, b)", 21: "        add(a, b)"})})
    cupy = case_of("cf.<locals>.step (c.py:10) 3\ncf.<locals>.step (c.py:11) 97\n", record=record)
    torch = case_of("tf.<locals>.step (t.py:20) 50\ntf.<locals>.step (t.py:21) 50\n", record=record)
    assert all(d.matched_by == "" for d in ln.diff_lines(cupy, torch))


def test_a_step_edited_between_two_runs_does_not_match_a_line_with_one_its_edit_moved():
    # run B's file has two lines added above fn and line 7 edited (`h = h + b` -> `h = h + b * 2.0`, now line 9):
    # base's `return e / s` (12) was sampled, head's (14) not; head's line 12 is base's 10, matched by its text.
    # Base's 12 is not head's edited 9 (the diff printed `steps.py:12 -> steps.py:9 return e / s -> h = h + b * 2.0`)
    a = {6: "h = xp.matmul(x, w)", 7: "h = h + b", 8: "h = xp.maximum(h, 0.0)",
         9: "m = xp.max(h, axis=-1, keepdims=True)", 10: "e = xp.exp(h - m)", 12: "return e / s"}
    b = {8: "h = xp.matmul(x, w)", 9: "h = h + b * 2.0", 10: "h = xp.maximum(h, 0.0)",
         11: "m = xp.max(h, axis=-1, keepdims=True)", 12: "e = xp.exp(h - m)"}
    fn = "several.<locals>.fn (steps.py:{}) {}\n"
    base = case_of("".join(fn.format(n, 10) for n in a),
                   record=rec.Sources({"steps.py": rec.SourceFile("case", "/s", a)}))
    head = case_of("".join(fn.format(n, 10) for n in b),
                   record=rec.Sources({"steps.py": rec.SourceFile("case", "/s", b)}))
    deltas = {d.where: d.matched_by for d in ln.diff_lines(base, head)}
    assert deltas == {"steps.py:6 -> steps.py:8": ln.BY_FUNCTION_TEXT, "steps.py:8 -> steps.py:10": ln.BY_FUNCTION_TEXT,
                      "steps.py:9 -> steps.py:11": ln.BY_FUNCTION_TEXT, "steps.py:10 -> steps.py:12": ln.BY_FUNCTION_TEXT,
                      "steps.py:7": "", "steps.py:9": "",
                      "steps.py:12": ""}


def _two_runs(tmp_path, texts: dict[str, tuple[str, rec.Sources]]):
    """Hand-built run directories, one a name: (its case's stacks, its sources.json), as `diff` reads them."""
    from flametool.run import rundir
    from runbuild import make_run

    out = {}
    for name, (stacks, record) in texts.items():
        run = make_run(tmp_path / name, {"c": (stacks, 100.0, 0)})
        rec.save(run, record)
        out[name] = (run, rundir.load(run))
    return out


def test_a_line_the_other_run_moved_and_did_not_sample_is_that_line_unsampled(tmp_path):
    # bench.py edited between two runs: a line added at 12 moved `z = y + 1` to 13 and `return z.sum()` to 14.
    # Base never sampled its `return z.sum()` (line 13 there); head's line 14 read 'head only', since base's line
    # 14 is another statement (its next function's def), as if the edit had added the return
    from flametool.analyse import diff

    old = {10: "def step():", 11: "    y = a @ b", 12: "    z = y + 1", 13: "    return z.sum()",
           14: "def other():", 15: "    return a"}
    new = {10: "def step():", 11: "    y = a @ b", 12: "    y = y * 2", 13: "    z = y + 1",
           14: "    return z.sum()", 15: "def other():", 16: "    return a"}
    spans = {"old": {10: 13, 14: 15}, "new": {10: 14, 15: 16}}
    step = "step (bench.py:{}) {}\n"
    runs = _two_runs(tmp_path, {
        name: (stacks, rec.Sources({"bench.py": rec.SourceFile("case", "/w/bench.py", texts, {}, spans[name])}))
        for name, texts, stacks in (
            ("old", old, step.format(11, 50) + step.format(12, 40) + "other (bench.py:15) 10\n"),
            ("new", new, step.format(11, 40) + step.format(12, 20) + step.format(13, 30) + step.format(14, 5)
             + "other (bench.py:16) 5\n"))})
    (base_dir, base_run), (head_dir, head_run) = runs["old"], runs["new"]
    deltas = {d.where: d for d in diff.line_diff(base_dir, base_run, "c", head_dir, head_run, "c", None)}
    moved = deltas["bench.py:13 -> bench.py:14"]
    assert moved.base is None and moved.head is not None and moved.head.text == "    return z.sum()"
    assert moved.unsampled and moved.unsampled_at == 13 and moved.one_side == "not sampled in base"
    row = next(r for r in lines_view.delta_rows(list(deltas.values())) if r.matched == "not sampled in base")
    assert row.where == "bench.py:13 -> bench.py:14"
    got = next(j for j in lines_view.deltas_json(list(deltas.values())) if j["not_sampled_in"])
    assert got["where"] == "bench.py:13 -> bench.py:14" and got["base"] is None
    # the added line is still head's alone; the moved line both sampled is matched by its text
    assert deltas["bench.py:12"].one_side == "head only" and not deltas["bench.py:12"].unsampled
    assert deltas["bench.py:12 -> bench.py:13"].matched_by == ln.BY_FUNCTION_TEXT
    # the same text at two unsampled lines of the function: not sampled there, at no one line
    twice = {**old, 13: "    return z.sum()", 12: "    return z.sum()"}
    base = case_of(step.format(11, 60) + "s (x.py:1) 40\n",
                   record=rec.Sources({"bench.py": rec.SourceFile("case", "/w/bench.py", twice, {}, {10: 13})}))
    head = case_of(step.format(11, 60) + step.format(14, 40) + "\n",
                   record=rec.Sources({"bench.py": rec.SourceFile("case", "/w/bench.py", new, {}, {10: 14})}))
    lone = next(d for d in ln.diff_lines(base, head) if d.head is not None and d.head.line == 14)
    assert lone.one_side == "not sampled in base" and lone.unsampled_at is None and lone.where == "bench.py:14"


def test_a_line_past_the_other_builds_known_text_is_unknown_there(tmp_path):
    # `compare --env A=... --env B=...` of mylib, B adding `_check(out)` at 31, past A's last sampled line (A's
    # record holds a library's text only at A's sampled lines): it read 'not sampled in base', as if A had the
    # line and never caught it, when nothing says A's build has it
    from flametool.analyse import diff
    from flametool.run import rundir
    from runbuild import make_run

    old = {26: "    x = _as_array(x)", 27: "    out = (x - x.mean()) / x.std()"}
    new = {26: "    x = _as_array(x)", 27: "    out = (x - x.mean()) / x.std()", 31: "    _check(out)"}
    step = "s (bench.py:5);standardize (mylib/core.py:{}) {}\n"
    run = make_run(tmp_path / "run", {
        "s@A": (step.format(26, 20) + step.format(27, 80), 100.0, 0),
        "s@B": (step.format(26, 20) + step.format(27, 70) + step.format(31, 10), 100.0, 0)})
    rec.save(run, rec.merge([(label, rec.Sources({
        "bench.py": rec.SourceFile("case", "/w/bench.py", {5: "    standardize(x)"}),
        "mylib/core.py": rec.SourceFile("library", f"/{label}/mylib/core.py", texts)}))
        for label, texts in (("s@A", old), ("s@B", new))]))
    loaded = rundir.load(run)
    deltas = {d.where: d for d in diff.line_diff(run, loaded, "s@A", run, loaded, "s@B", None)}
    added = deltas["mylib/core.py:31"]
    assert added.base is None and not added.unsampled and added.unknown and added.one_side == "unknown in base"
    assert lines_view.delta_sentence(added).startswith(
        "mylib/core.py:31 `_check(out)` unknown in base: +10.00 ± ")
    assert next(j for j in lines_view.deltas_json(list(deltas.values()))
                if j["where"] == "mylib/core.py:31")["not_sampled_in"] is None
    # two runs of one install (the file read from one path, every line both hold alike): the line is there,
    # only not sampled in the base
    same = {n: rec.Sources({"mylib/core.py": rec.SourceFile("library", "/A/mylib/core.py", t)}) for n, t in
            (("old", old), ("new", new))}
    runs = _two_runs(tmp_path, {"old": (step.format(26, 20) + step.format(27, 80), same["old"]),
                                "new": (step.format(26, 20) + step.format(27, 70) + step.format(31, 10), same["new"])})
    (base_dir, base_run), (head_dir, head_run) = runs["old"], runs["new"]
    again = next(d for d in diff.line_diff(base_dir, base_run, "c", head_dir, head_run, "c", None)
                 if d.where == "mylib/core.py:31")
    assert again.one_side == "not sampled in base" and again.unsampled


def test_a_function_one_run_of_a_case_never_ran_is_not_that_runs_alone(tmp_path):
    # two runs of one numpy (one path): head caught numpy's rarely run `_sum` (line 79 of _methods.py, a file both
    # sampled) and a line of _exceptions.py, a file the base never sampled, a few times each; both read 'head
    # only', as if only head's numpy had them. `flametool diff A B` is one case in two runs: the same install's
    # line, not sampled in the base, where the base's copy of the file is head's; nothing says where it has none
    from flametool.analyse import diff

    mean = {50: "    return umr_mean(a)"}
    base_record = rec.Sources({"numpy/_methods.py": rec.SourceFile("library", "/np/numpy/_methods.py", mean)})
    head_record = rec.Sources({
        "numpy/_methods.py": rec.SourceFile("library", "/np/numpy/_methods.py", {**mean, 79: "    return umr_sum(a)"}),
        "numpy/_exceptions.py": rec.SourceFile("library", "/np/numpy/_exceptions.py", {10: "    _check(x)"})})
    runs = _two_runs(tmp_path, {
        "old": ("s (case.py:5);_mean (numpy/_methods.py:50) 50\ns (case.py:5) 50\n", base_record),
        "new": ("s (case.py:5);_mean (numpy/_methods.py:50) 50\ns (case.py:5);_sum (numpy/_methods.py:79) 3\n"
                "s (case.py:5);chk (numpy/_exceptions.py:10) 3\ns (case.py:5) 44\n", head_record)})
    (base_dir, _), (head_dir, _) = runs["old"], runs["new"]
    deltas = {d.where: d for d in diff.diff_runs(base_dir, head_dir, "c").lines}
    assert deltas["numpy/_methods.py:79"].one_side == "not sampled in base" and deltas["numpy/_methods.py:79"].unsampled
    assert deltas["numpy/_exceptions.py:10"].one_side == "unknown in base"
    back = {d.where: d for d in diff.diff_runs(head_dir, base_dir, "c").lines}
    assert back["numpy/_methods.py:79"].one_side == "not sampled in head"
    # another install's numpy (another path) in the other run: nothing says
    elsewhere = rec.Sources({"numpy/_methods.py": rec.SourceFile("library", "/venv/numpy/_methods.py", mean)})
    runs = _two_runs(tmp_path / "b", {"old": ("s (case.py:5);_mean (numpy/_methods.py:50) 50\n"
                                              "s (case.py:5) 50\n", elsewhere),
                                      "new": ("s (case.py:5);_mean (numpy/_methods.py:50) 50\n"
                                              "s (case.py:5);_sum (numpy/_methods.py:79) 3\ns (case.py:5) 47\n",
                                              head_record)})
    assert {d.where: d for d in diff.diff_runs(runs["old"][0], runs["new"][0], "c").lines}[
        "numpy/_methods.py:79"].one_side == "unknown in base"
    # two cases of one run (numpy's against torch's: compare's pairs, `diff RUN --base --head`): numpy's own line
    # is numpy's alone
    numpy = case_of("s (case.py:5);_sum (numpy/_methods.py:79) 3\ns (case.py:5) 97\n", record=head_record)
    alone = next(d for d in ln.diff_lines(case_of("t (case.py:9);mm (torch/f.py:3) 100\n", record=head_record), numpy)
                 if d.where == "numpy/_methods.py:79")
    assert alone.one_side == "head only"
