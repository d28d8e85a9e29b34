"""Counted per line of step() and one step's timeline on a real GPU with cupti-python (skipped without a CUDA
device): each line's kernels and API calls, summing exactly to the step's, and `export --format perfetto`
of a two-op step (a host track, a GPU track, flows paired by correlation id)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flametool.run import rundir, steptrace
from flametool.run.counts import Counts

pytestmark = pytest.mark.gpu
CASES = Path(__file__).parent / "cases" / "gpu_line_cases.py"
SOURCE = CASES.read_text().splitlines()


def op_line(factory: str, tag: str) -> int:
    start = next(i for i, t in enumerate(SOURCE) if t.startswith(f"def {factory}("))
    return next(i + 1 for i, t in enumerate(SOURCE) if i > start and f"# {tag}" in t)


@pytest.fixture(scope="module")
def gpu_lines_run(cli, tmp_path_factory):
    pytest.importorskip("cupti")
    out = tmp_path_factory.mktemp("gpu-lines") / "run"
    cases = [arg for lib in ("torch", "cupy") if _has(lib) for arg in ("--case", f"{CASES}:{lib}_two_ops")]
    if not cases:
        pytest.skip("neither torch nor cupy is installed")
    proc = cli("compare", "--device", "cuda:0", "--libs", "torch", *cases, "--no-sample", "--processes", "1", "--repeats", "2",
               "--iters", "200", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, rundir.load(out), proc


def _has(lib: str) -> bool:
    try:
        __import__(lib)
        return True
    except ImportError:
        return False


def counted(run, label: str) -> Counts:
    c = run.results[label].profile.counts
    assert c is not None and c.tracer and c.tracer.startswith("cupti-python"), c
    return c


def test_each_line_holds_its_own_kernels_and_api_calls_summing_to_the_steps(gpu_lines_run):
    _out, run, _proc = gpu_lines_run
    for label in run.results:
        if label not in ("torch_two_ops", "cupy_two_ops"):
            continue
        c = counted(run, label)
        assert {"api", "kernel"} <= set(c.by_line_kinds)
        for kind in c.by_line_kinds:  # every kind listed per line sums exactly to the step's
            assert c.line_total(kind) == c.placed_total(kind), (label, kind)
        # Python calls are listed per line only where the profile hook and cProfile agree (on the H200, cupy's
        # Cython calls Python that the two count apart): else a line says so and they are left out of the lines
        per_line = [m for m in c.missing if "per line" in m]
        assert ("python" in c.by_line_kinds) != bool(per_line), (c.by_line_kinds, c.missing)
        assert all("Python calls" in m for m in per_line), per_line
        lines = {l.line: l.counts for l in c.by_line}
        factory = label
        for tag in ("OP 1", "OP 2"):
            got = lines[op_line(factory, tag)]
            assert got.get("kernel", 0) >= 1 and got.get("api", 0) >= 1, (label, tag, got)


def test_a_two_op_steps_timeline_exports_for_perfetto(cli, gpu_lines_run):
    out, run, _ = gpu_lines_run
    label = next(l for l in ("torch_two_ops", "cupy_two_ops") if l in run.results)
    assert run.results[label].profile.files.get("timeline")
    trace = steptrace.load(out / run.results[label].profile.files["timeline"])
    assert trace.api and trace.gpu and trace.lines
    proc = cli("export", str(out), "--format", "perfetto", "--case", label)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    events = doc["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    host = [e for e in xs if e["cat"] == "cuda api"]
    gpu = [e for e in xs if e["cat"] in ("kernel", "copy", "memset")]
    assert host and gpu and {e["tid"] for e in host}.isdisjoint({e["tid"] for e in gpu})
    assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in xs)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    # a flow's id is the trace's own (numbered per case and correlation id, not the correlation id: 2e0c323; this
    # test, run on a GPU only, still compared the ids with the correlations and failed on the H100, 2026-12-05):
    # each flow joins the launch and the GPU op of one correlation id, and every GPU op has its flow
    at = lambda e: (e["pid"], e["tid"], e["ts"])  # noqa: E731
    launch = {at(e): e["args"]["correlation"] for e in host}
    op = {at(e): e["args"]["correlation"] for e in gpu}
    assert all(launch[at(starts[i])] == op[at(ends[i])] for i in starts)
    assert {op[at(e)] for e in ends.values()} == {e["args"]["correlation"] for e in gpu}
    assert sum(1 for e in gpu if e["cat"] == "kernel") >= 2  # the two ops' kernels
    assert [e for e in xs if e["cat"] == "line"]  # the step's lines above the calls


def test_the_report_says_how_busy_the_gpu_is(cli, gpu_lines_run):
    out, run, _ = gpu_lines_run
    report = cli("report", str(out), "-o", "-").stdout
    assert "GPU busy" in report and "idle between kernels" in report
    assert "counted per line of step()" in report
