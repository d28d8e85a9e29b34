"""Counted per line of step() (issue 39.4) and one step's timeline (issue 40.4): the counted loop's per-line
counts on a real CPU step of three lines (exact, summing to the step's), CUPTI records placed on lines from
hand-built records (pure functions), the record in run.json and its old form, the per-line count differences,
the perfetto trace's events against the trace-event format, the GPU's busy share, and a CPU run's export."""

from __future__ import annotations

import cProfile
import gc
import importlib.util
import json
import shutil
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from flametool.analyse import countdiff, timeline
from flametool.measure import counting, steplines
from flametool.render import counted_lines, perfetto
from flametool.run import steptrace
from flametool.run.counts import OUTSIDE, Counts, LineCounts, Tally
from flametool.run.steptrace import ApiCall, GpuOp, LineSpan, StepTrace
from shared import flametool_once

CASES = Path(__file__).parent / "cases" / "counted_line_cases.py"
SOURCE = CASES.read_text().splitlines()
LINE = {tag: i + 1 for i, text in enumerate(SOURCE) for tag in ("LINE 1", "LINE 2", "LINE 3") if f"# {tag}" in text}
DEF = next(i + 1 for i, t in enumerate(SOURCE) if t.strip() == "def step():")


def counted_three_lines() -> Counts:
    spec = importlib.util.spec_from_file_location("counted_line_cases", CASES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    step, sync = module.three_lines(8, 8, 8, "float32", "cpu")
    gc.collect()  # as loops.cprofile_phase does: a finalizer of an earlier test's garbage is not the step's call
    profiler = cProfile.Profile()
    profiler.enable()
    counting._loop(step, 200)
    profiler.disable()
    profiler.create_stats()
    return counting.count(step, sync, 64, "cpu", python=(profiler.stats, 200))


@pytest.fixture(scope="module")
def three() -> Counts:
    """Counted in a process of its own, as a run's child counts: tracemalloc traces every thread, and an xdist
    worker's I/O thread allocates and frees beside the loop (a case's child has no Python thread at work), which
    read -1/64 outside step()'s lines and 127/64 on the line keeping 2."""
    here = Path(__file__).parent
    script = (f"import sys, json; sys.path[:0] = [{str(here)!r}, {str(here.parent)!r}]\n"
              "import test_counted_lines as t\nprint(json.dumps(t.counted_three_lines().to_json()))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return Counts.from_json(json.loads(proc.stdout.splitlines()[-1]))


def by_line(c: Counts) -> dict[int, dict[str, Fraction]]:
    return {l.line: l.counts for l in c.by_line}


def test_a_cpu_step_is_counted_per_line_exactly(three):
    lines = by_line(three)
    assert lines[DEF]["python"] == 1  # the call of step() itself, at its def line
    assert lines[LINE["LINE 1"]]["python"] == 2  # helper, twice
    assert "python" not in lines.get(LINE["LINE 2"], {})  # no call
    assert lines[LINE["LINE 3"]]["python"] == 1  # list.append
    assert lines[LINE["LINE 3"]]["host-alloc"] >= 1  # the list it keeps
    assert all(c.get("host-alloc", 0) >= 0 for c in lines.values())  # blocks kept by the line that made them
    assert "host-alloc" not in lines.get(LINE["LINE 1"], {})
    assert three.by_line_kinds == ["python", "host-alloc"]
    texts = {l.line: l.text for l in three.by_line}
    assert texts[LINE["LINE 1"]].startswith("y = helper(1) + helper(2)")
    assert all(l.file.endswith("counted_line_cases.py") for l in three.by_line if l.file != OUTSIDE)


def test_the_lines_sum_exactly_to_the_steps_counts(three):
    assert three.line_total("python") == three.total("python") == 4
    assert three.line_total("host-alloc") == three.placed_total("host-alloc")
    assert three.placed_total("host-alloc") == next(t.count for t in three.of("host-alloc") if t.name == "blocks kept (net)")
    assert not [m for m in three.missing if "per line" in m]


def test_per_line_counts_round_trip_and_old_records_load(three):
    again = Counts.from_json(json.loads(json.dumps(three.to_json())))
    assert again.by_line == three.by_line and again.by_line_kinds == three.by_line_kinds
    old = three.to_json()
    del old["by_line"], old["by_line_kinds"]
    loaded = Counts.from_json(old)
    assert loaded.by_line == [] and "by_line" not in loaded.to_json()  # a run recorded before writes as it did
    with pytest.raises(ValueError):
        Counts.from_json({**three.to_json(), "by_line": [{"file": "a.py", "line": "x"}]})


def test_a_step_without_lines_is_not_counted_per_line():
    import numpy as np

    a = np.ones(4)
    c = counting.count(a.sum, lambda: None, 16, "cpu")  # a builtin: no Python frame, no lines
    assert c.by_line == []


# --- CUPTI's records placed on lines, hand-built ------------------------------------------------------------

def window(steps: int, extra_sync: int = 0) -> tuple[list, list[ApiCall], list[GpuOp]]:
    """`steps` steps of a two-line step (def line 10, lines 11 and 12): line 11 makes 2 API calls, one a launch,
    line 12 makes 3 (one a launch of a kernel and a memset); the window's synchronisation (outside) is
    `extra_sync` calls on the same thread and a worker thread's call each step."""
    marks, api, gpu = [], [], []
    t, corr = 1000, 1
    for _ in range(steps):
        marks.append((t, 10)); t += 10
        marks.append((t, 11)); t += 5
        for launch in (True, False):
            api.append(ApiCall("cudaLaunchKernel" if launch else "cudaGetDevice", t, t + 3, corr, 7)); t += 4
            if launch:
                gpu.append(GpuOp("kernel", "k1", t + 1000, t + 1500, corr, 0, 7))
            corr += 1
        api.append(ApiCall("cuLaunchKernel", t, t + 1, corr, 99)); corr += 1  # another thread
        marks.append((t, 12)); t += 5
        for i in range(3):
            api.append(ApiCall("cudaMemsetAsync" if i == 2 else "cudaLaunchKernel", t, t + 3, corr, 7)); t += 4
            if i == 0:
                gpu.append(GpuOp("kernel", "k2", t + 2000, t + 2100, corr, 0, 7))
            if i == 2:
                gpu.append(GpuOp("memset", "memset", t + 2200, t + 2210, corr, 0, 7, 64))
            corr += 1
        marks.append((t, 0)); t += 5
    for _ in range(1 + extra_sync):
        api.append(ApiCall("cudaDeviceSynchronize", t, t + 50, corr, 7)); t += 60; corr += 1
    return marks, api, gpu


def test_records_are_placed_on_the_line_that_made_them():
    marks, api, gpu = window(1)
    got = steplines.place(marks, api, gpu, threads={7})
    assert got[(11, "api")] == 2 and got[(12, "api")] == 3 and got[(11, "kernel")] == 1
    assert got[(12, "kernel")] == 1 and got[(12, "memset")] == 1
    assert got[(0, "api")] == 2  # the other thread's call and the synchronisation: outside the lines
    assert steplines.line_at(marks, 0) == 0 and steplines.line_at(marks, marks[1][0]) == 11
    # a thread id CUPTI gives that matches none of ours: every call placed by time
    by_time = steplines.place(marks, api, gpu, threads={12345})
    assert by_time[(11, "api")] == 2 and by_time[(12, "api")] == 4  # the other thread's call began as line 12 did


def test_placed_counts_are_exact_and_sum_to_the_windows_difference():
    n = 16
    first, second = (steplines.place(*window(k), threads={7}) for k in (n, 2 * n))
    per = steplines.per_step(first, second, n)
    assert per == {(0, "api"): 1, (11, "api"): 2, (11, "kernel"): 1, (12, "api"): 3, (12, "kernel"): 1,
                   (12, "memset"): 1}
    # the step's count (every record of the window, as counting.Window counts them) is the lines' sum
    for kind in ("api", "kernel", "memset"):
        total = Fraction(sum(1 for _ in window(2 * n)[1 if kind == "api" else 2]
                             if kind == "api" or _.kind == kind) - sum(1 for _ in window(n)[1 if kind == "api" else 2]
                                                                      if kind == "api" or _.kind == kind), n)
        assert sum(v for (l, k), v in per.items() if k == kind) == total
    # the synchronisation at the window's edge cancels even when it differs in size from the steps
    per2 = steplines.per_step(steplines.place(*window(n, 3), threads={7}), steplines.place(*window(2 * n, 3), threads={7}), n)
    assert per2 == per


def test_counters_are_credited_to_the_running_line():
    import types

    counter = [0]

    def loop(step, n):
        for _ in range(n):
            step()

    def step():
        counter[0] += 1
        counter[0] += 2
        return None

    marks = steplines.StepLines(loop.__code__, counters=lambda: (counter[0],))
    marks.start()
    loop(step, 3)
    marks.stop()
    got = steplines.credited(marks, ["device-alloc"])
    first = step.__code__.co_firstlineno
    assert got[(first + 1, "device-alloc")] == 3 and got[(first + 2, "device-alloc")] == 6
    assert sum(got.values()) == 9 and isinstance(step.__code__, types.CodeType)


def test_host_blocks_alive_are_placed_on_the_step_line_that_allocated_them():
    """tracemalloc's tracebacks (oldest frame first), hand-built: a block is the line of step() the counted loop's
    frame called, a callee's at its caller's line; the loop's own, a block made outside any step or one whose
    traceback was cut short of the loop is OUTSIDE; the measurement's own files are left out."""
    def step():
        c = [1]
        d = c * 2
        return d

    loop = counting._loop.__code__
    call = next(l for l in steplines.code_lines(loop) if "step()" in SOURCE_OF(loop, l))
    here, first = step.__code__.co_filename, step.__code__.co_firstlineno
    at_loop = (("main.py", 5), (loop.co_filename, call))
    blocks = [(at_loop + ((here, first + 1),), 3, 300),  # made at `c = [1]`
              (at_loop + ((here, first + 2), ("lib.py", 9)), 2, 20),  # in a callee of `d = c * 2`
              (at_loop, 1, 8),  # the loop's own (its range's int)
              ((("main.py", 5),), 4, 40),  # before the loop
              (at_loop + (("other.py", 3),), 1, 1),  # the loop called something else than this step
              (((here, first + 1),), 1, 1),  # cut short of the loop's frame: not placed
              (at_loop + (("tracemalloc.py", 1),), 7, 7)]  # the snapshot's own
    got, size = steplines.alive_by_line(blocks, loop, step.__code__, own=("tracemalloc.py",))
    assert got == {(first + 1, "host-alloc"): 3, (first + 2, "host-alloc"): 2, (steplines.OUTSIDE_LINE, "host-alloc"): 7}
    assert size == 300 + 20 + 8 + 40 + 1 + 1
    # a step with no code (step = a.sum) keeps all it keeps OUTSIDE
    assert steplines.alive_by_line(blocks[:2], loop, None)[0] == {(steplines.OUTSIDE_LINE, "host-alloc"): 5}
    # the defect this replaced: a counter read at each line charged the step's temporaries, freed after its last
    # line, to the lines (+1 each) and their frees to OUTSIDE (-2); by the allocating line, a block freed anywhere
    # is the line's again, so a window that made and freed them reads 0 everywhere
    before, _ = steplines.alive_by_line(blocks[:2], loop, step.__code__)
    after, _ = steplines.alive_by_line(blocks[:2], loop, step.__code__)
    kept = Counter(after)
    kept.subtract(before)
    assert not any(kept.values())


def SOURCE_OF(code, line: int) -> str:
    import linecache

    return linecache.getline(code.co_filename, line)


# --- one step's timeline and its trace ------------------------------------------------------------------------

def hand_trace() -> StepTrace:
    marks, api, gpu = window(3)
    trace = steplines.one_step("cupy", "case.py", marks, 10, api, gpu, 7, {11: "y = a @ b", 12: "<b>z</b>"})
    assert trace is not None
    return trace


def test_one_step_keeps_its_lines_calls_and_launched_work():
    t = hand_trace()
    assert [s.line for s in t.lines] == [10, 11, 12]
    assert all(a.start >= t.start and a.start < t.end for a in t.api) and len(t.api) == 6
    assert {g.correlation for g in t.gpu} <= {a.correlation for a in t.api} and len(t.gpu) == 3
    again = StepTrace.from_json(json.loads(json.dumps(t.to_json())), "x")
    assert again == t


def test_the_perfetto_trace_follows_the_trace_event_format():
    doc = json.loads(perfetto.PerfettoRenderer().render(timeline.Timelines(Path("run"), [hand_trace()])))
    events = doc["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert e["ph"] in ("X", "M", "s", "f") and isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert isinstance(e["name"], str)
        if e["ph"] in ("X", "s", "f"):
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
    xs = [e for e in events if e["ph"] == "X"]
    host = {e["tid"] for e in xs if e["cat"] == "cuda api"}
    gpu = {e["tid"] for e in xs if e["cat"] in ("kernel", "memset")}
    assert perfetto.HOST_TID in host and gpu and not gpu & {perfetto.HOST_TID}
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[perfetto.HOST_TID] == "host: calling thread" and any(v.startswith("GPU 0 stream 7") for v in names.values())
    # microseconds: the kernel k1 of the hand-built step lasts 500 ns
    assert {e["dur"] for e in xs if e["name"] == "k1"} == {0.5}
    # each flow starts at a launch and finishes at the GPU work of its correlation id
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys() and len(starts) == 3
    for i, s in starts.items():
        assert s["tid"] == perfetto.HOST_TID and ends[i]["tid"] in gpu and ends[i]["ts"] >= s["ts"]
    # the step's lines are slices on the host track enclosing the calls made while they ran
    lines = [e for e in xs if e["cat"] == "line"]
    assert [e["args"]["line"] for e in lines] == [10, 11, 12] and lines[2]["args"]["text"] == "<b>z</b>"
    for call in (e for e in xs if e["cat"] == "cuda api" and e["tid"] == perfetto.HOST_TID):
        assert any(l["ts"] <= call["ts"] < l["ts"] + l["dur"] for l in lines)


def test_each_case_s_flows_stay_in_its_own_process():
    """Two cases in one trace (export without --case) whose processes gave their calls the same correlation ids (two
    builds of one library make the same calls): every flow joins a launch and a kernel of one process. The ids were
    the correlation ids, and a flow's id is the trace's whatever its pid (perfetto keys a flow by id, category and
    name), so each launch pointed at both processes' kernels."""
    import dataclasses

    a, b = hand_trace(), dataclasses.replace(hand_trace(), label="cupy@pr")
    doc = json.loads(perfetto.PerfettoRenderer().render(timeline.Timelines(Path("run"), [a, b])))
    by_key: dict[tuple, list[dict]] = {}
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f"):
            by_key.setdefault((e["id"], e["cat"], e["name"]), []).append(e)
    assert len(by_key) == 2 * len({g.correlation for g in a.gpu})  # a flow per launch in each case
    for events in by_key.values():
        assert sorted(e["ph"] for e in events) == ["f", "s"] and len({e["pid"] for e in events}) == 1


def test_the_gpus_busy_share_and_idle_gaps():
    t = StepTrace("c", "case.py", 0, 100_000, 7, [LineSpan(10, 0, 100_000)], [],
                  [GpuOp("kernel", "a", 10_000, 20_000, 1), GpuOp("kernel", "b", 15_000, 30_000, 2),
                   GpuOp("memset", "m", 50_000, 60_000, 3), GpuOp("kernel", "late", 90_000, 120_000, 4)])
    b = timeline.busy(t)
    assert b.step_us == 100 and b.work_us == 20 + 10 + 10  # overlap once, the late kernel clipped at the step's end
    assert b.gaps == 2 and b.idle_us == 20 + 30 and b.longest_gap_us == 30 and b.kernels == 3
    assert b.share == pytest.approx(0.4) and b.words().startswith("GPU busy 40% of the step")


def test_a_damaged_timeline_is_one_error(tmp_path):
    from flametool.errors import RunDirError

    f = tmp_path / "c.timeline.json"
    f.write_text('{"version": 1, "label": "c", "file": "x", "start": 0, "end": 1, "thread": 0, "gpu": [{"kind": "x"}]}')
    with pytest.raises(RunDirError, match="gpu"):
        steptrace.load(f)
    assert steptrace.path_for(tmp_path / "cupy.prof").name == "cupy.timeline.json"


# --- differences per line -----------------------------------------------------------------------------------

def counts_of(file: str, lines: dict[int, dict[str, int]], text: dict[int, str] | None = None) -> Counts:
    rows = [LineCounts(file, l, {k: Fraction(v) for k, v in got.items()}, (text or {}).get(l)) for l, got in lines.items()]
    tallies = [Tally(k, "x", Fraction(sum(r.counts.get(k, 0) for r in rows))) for k in ("python", "api", "kernel")]
    return Counts(16, 16, tallies, tracer="cupti-python", by_line=rows, by_line_kinds=["python", "api", "kernel"])


def test_per_line_differences_match_by_file_and_line_then_by_step_order():
    base = counts_of("case.py", {19: {"python": 1}, 20: {"api": 12, "kernel": 1}, 21: {"api": 3}})
    head = counts_of("case.py", {19: {"python": 1}, 20: {"api": 36, "kernel": 2}, 21: {"api": 3}}, {20: "y = a @ b"})
    d = countdiff.diff_counts(base, head, "torch", "cupy")
    assert [(l.where, l.matched_by, l.delta("api"), l.delta("kernel")) for l in d.by_line] == [
        ("case.py:19", "file and line", 0, 0), ("case.py:20", "file and line", 24, 1), ("case.py:21", "file and line", 0, 0)]
    lines = countdiff.lines(d)
    assert "per step, line case.py:20 (y = a @ b): +24 CUDA API calls, +1 kernel" in lines
    doc = countdiff.to_json(d)
    assert [r["delta"] for r in doc["by_line"]] == [{}, {"api": "24", "kernel": "1"}, {}]
    # two different files (cupy's case against torch's): by the order of the step's lines
    other = counts_of("torch_case.py", {7: {"python": 1}, 8: {"api": 10}, 9: {"api": 4}})
    d2 = countdiff.diff_counts(base, other)
    assert [(l.where, l.matched_by) for l in d2.by_line] == [
        ("case.py:19 -> torch_case.py:7", "step order"), ("case.py:20 -> torch_case.py:8", "step order"),
        ("case.py:21 -> torch_case.py:9", "step order")]
    # no per-line counts on a side: no per-line rows, and the JSON as it was
    assert "by_line" not in countdiff.to_json(countdiff.diff_counts(Counts(16, 16), head))


def test_a_case_file_edited_between_two_runs_matches_its_lines_by_text_not_by_number():
    # run B's file has one line added above step(): every line is one further down, and the step does the same
    text_a = {19: "def step():", 20: "helper(100)", 21: "np.linalg.norm(a)"}
    base = counts_of("case.py", {19: {"python": 1}, 20: {"python": 1}, 21: {"python": 8}}, text_a)
    head = counts_of("case.py", {20: {"python": 1}, 21: {"python": 1}, 22: {"python": 8}},
                     {n + 1: t for n, t in text_a.items()})
    d = countdiff.diff_counts(base, head)
    assert [(l.where, l.matched_by) for l in d.by_line] == [
        ("case.py:19 -> case.py:20", "function and text"), ("case.py:20 -> case.py:21", "function and text"),
        ("case.py:21 -> case.py:22", "function and text")]
    assert not any(l.changed for l in d.by_line)  # the same calls on the same statements: no difference
    # two steps of one file that share no line (numpy's and torch's built-ins) are still not compared line by line,
    # though both begin with the same `def step()` text
    other = counts_of("case.py", {40: {"python": 1}, 41: {"python": 2}}, {40: "def step():", 41: "mm(a, b)"})
    assert countdiff.diff_counts(base, other).by_line == []


def test_the_per_line_table_is_shown_with_its_sum(three):
    t = counted_lines.table("three", three)
    assert t is not None and t.headers == ["line", "text", "Python calls", "host blocks kept (net)"]
    assert t.rows[-1][:3] == ["step()", "(the lines' sum)", "4"]
    hostile = counts_of("c.py", {3: {"python": 1}}, {3: "\x1b[31m" + "x" * 500})
    row = counted_lines.table("h", hostile).rows[0]
    assert "\x1b" not in row[1] and len(row[1]) <= counted_lines.MAX_TEXT


# --- a real CPU run: the per-line counts in run.json, the views, and the export that needs CUPTI ----------------

@pytest.fixture(scope="module")
def cpu_run(cli, tmp_path_factory):
    # made once in the session, by whichever worker asks first (tests/shared.py), and only read
    out, proc = flametool_once(tmp_path_factory, "counted-lines-cpu", "compare", "--device", "cpu", "--libs", "numpy",
                               "--case", f"{CASES}:three_lines", "--no-sample", "--processes", "1", "--repeats", "2",
                               "--iters", "50")
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_a_cpu_run_records_and_shows_its_per_line_counts(cli, cpu_run):
    out, proc = cpu_run
    doc = json.loads((out / "run.json").read_text())
    counts = Counts.from_json(doc["results"]["three_lines"]["profile"]["counts"])
    assert counts.line_total("python") == counts.total("python") == 4
    assert "counted per line of step()" in proc.stdout and "y = helper(1) + helper(2)" in proc.stdout
    report = cli("report", str(out), "-o", "-").stdout
    assert "counted per line of step()" in report and "helper(1)" in report
    summary = json.loads(cli("summary", str(out), "--format", "json").stdout)
    cases = summary["cases"]
    case = cases["three_lines"] if isinstance(cases, dict) else next(c for c in cases if c.get("label") == "three_lines")
    assert case["counts"]["by_line"]


def test_a_cpu_runs_host_blocks_per_line_are_what_each_line_keeps(cpu_run, tmp_path_factory):
    """A NumPy step's temporaries (`c = a @ b`, `d = c + 1`, freed after its last line) are kept by no line: each
    line reads 0 and so does what is outside them. A line hook reading a counter at each line read them +1 each and
    -2 outside step()'s lines (a free charged to where the interpreter was, not to the line that allocated)."""
    out, proc = flametool_once(tmp_path_factory, "counted-lines-temporaries", "compare", "--device", "cpu", "--libs",
                               "numpy", "--case", f"{CASES}:temporaries", "--no-sample", "--processes", "1",
                               "--repeats", "2", "--iters", "50")
    assert proc.returncode == 0, proc.stderr
    temporaries = Counts.from_json(json.loads((out / "run.json").read_text())["results"]["temporaries"]["profile"]["counts"])
    assert "host-alloc" in temporaries.by_line_kinds
    kept = {l.line: l.counts["host-alloc"] for l in temporaries.by_line if "host-alloc" in l.counts}
    assert kept == {} and temporaries.placed_total("host-alloc") == 0, kept
    out, _ = cpu_run
    three = Counts.from_json(json.loads((out / "run.json").read_text())["results"]["three_lines"]["profile"]["counts"])
    kept = {l.line: l.counts["host-alloc"] for l in three.by_line if "host-alloc" in l.counts}
    assert kept.get(LINE["LINE 3"], 0) >= 1 and all(v >= 0 for v in kept.values()), kept


def test_the_timeline_export_of_a_cpu_run_says_it_needs_cupti(cli, cpu_run):
    out, _ = cpu_run
    proc = cli("export", str(out), "--format", "perfetto")
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "needs cupti-python on a CUDA device" in proc.stderr


def test_a_cpu_runs_notes_on_what_was_not_counted_are_in_every_view(cli, cpu_run, tmp_path):
    """A CPU run says once that it cannot count CUDA work (GPU_COUNTS); each case's other notes (its counted loop
    failed, a kind left off its lines) stay, named by their case, in the terminal and the report as in summary."""
    from flametool.analyse import dispatch
    from flametool.render import format as fmt, show
    from flametool.render.base import Options

    out, _ = cpu_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    doc = json.loads((copy / "run.json").read_text())
    failed = "the counted loop failed: RuntimeError: boom"
    doc["results"]["three_lines"]["profile"]["counts"]["missing"].append(failed)
    (copy / "run.json").write_text(json.dumps(doc))
    terminal = show("terminal", dispatch.analyse_dir(copy), Options(width=300))
    assert f"counted: three_lines: {failed}" in terminal  # under the pair's headline
    assert f"\nthree_lines: {failed}" in terminal and fmt.GPU_COUNTS in terminal  # under the counts table
    assert "runs on the CPU (no CUDA API calls" not in terminal  # said once, as GPU_COUNTS
    report = cli("report", str(copy), "-o", "-").stdout
    assert report.count(f"three_lines: {failed}") == 2
    summary = cli("summary", str(copy)).stdout
    assert f"three_lines: {failed}" in summary
