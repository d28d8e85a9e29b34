"""Workloads (workload/workloads.py): a step written once against the array API, run as one case per library.
Two real CPU runs, each made once a session (tests/shared.py): a compare of a workload of this file's own on numpy
and torch, and an atlas of the four built-ins (numpy: each built-in's torch case is built and checked here, in
process); the rest is checked in process: the cases' results against numpy, the one-line faults."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import checks
from shared import flametool_once, workload_compare

from flametool.commands import main, options
from flametool.errors import FlametoolError
from flametool.measure.child import building
from flametool.measure.protocol import JobCase
from flametool.run import rundir
from flametool.workload import builtin_workloads, workloads
from flametool.workload.cases import CaseSpec

CASES = Path(__file__).parent / "cases" / "workload_cases.py"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out, proc = workload_compare(tmp_path_factory)
    assert proc.returncode == 0, proc.stderr
    return out


def test_a_workload_runs_as_one_case_per_library(compared):
    run = rundir.load(compared)
    assert list(run.results) == ["numpy", "torch"]
    data = json.loads((compared / rundir.RUN_FILE).read_text())
    assert data["config"]["op"] == "workload_cases.py:scaled_exp_sum"
    assert [c["xp"] for c in data["config"]["cases"]] == ["numpy", "torch"]
    for label, r in run.results.items():
        assert r.error is None and r.library == label and r.factory == f"{CASES}:scaled_exp_sum"
        assert r.timing is not None and r.timing.cpu_us_per_call > 0
    # both read the same bytes (the fingerprint of their operands), cast to float32
    prints = {l: [o.fingerprint for o in r.operands] for l, r in run.results.items()}
    assert prints["numpy"] and prints["numpy"] == prints["torch"], prints
    # fn writes nothing it reads: its operands hashed after the timed loops were the same bytes (no `after`)
    assert all(o.after is None for r in run.results.values() for o in r.operands)
    assert '"after"' not in data["results"]["numpy"]["operands"][0]


def test_both_libraries_stacks_carry_the_same_lines_of_fn(compared):
    source = CASES.read_text().splitlines()
    body = {i + 1 for i, l in enumerate(source) if re.match(r"\s+(c|d|e) = |\s+return e \+ 1.0", l)}
    run = rundir.load(compared)
    lines = {}
    for label in ("numpy", "torch"):
        folded = (compared / f"{label}.folded").read_text()
        lines[label] = {int(n) for n in re.findall(r"scaled_exp_sum\.<locals>\.fn \(workload_cases\.py:(\d+)\)", folded)}
        # fn's frame is the step's own (called through functools.partial, no frame above it), in every library
        assert "flametool/workload/workloads.py" not in folded
        counted = run.results[label].profile.counts
        assert {l.line for l in counted.by_line if l.line} <= body | {min(body) - 1}  # fn's def line: its call
    assert lines["numpy"] and lines["torch"], lines
    def_line = {min(body) - 1}  # fn's def line: sampled as fn is entered
    assert lines["numpy"] <= body | def_line and lines["torch"] <= body | def_line, (lines, body)
    assert lines["numpy"] & lines["torch"]


@pytest.fixture(scope="module")
def atlas_of_builtins(tmp_path_factory):
    # each built-in sampled (and counted) as an atlas does, for 0.2 s: nothing here reads how many samples, and each
    # of the four sampled loops kept a core busy for its window (the test alone: 7.1 s of CPU at 0.5 s, 5.7 s at 0.2 s;
    # 5 to 13 samples a built-in at 0.1 s, 100 Hz)
    out, proc = flametool_once(tmp_path_factory, "workload-atlas", "atlas", "--workloads", "mlp,softmax,layernorm,adam",
                               "--libs", "numpy", "--device", "cpu", "--pool-threads", "1", "--iters", "50",
                               "--warmup", "5", "--repeats", "1", "--processes", "1", "--sample-seconds", "0.2")
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


def test_the_four_builtins_run_in_an_atlas(atlas_of_builtins):
    out, stdout = atlas_of_builtins
    run = rundir.load(out)
    assert run.kind == "atlas" and run.complete and [p.op for p in run.parts] == list(builtin_workloads.WORKLOADS)
    for part in run.parts:
        op_run = rundir.load(out / part.dir)
        assert op_run.config.operation == part.op
        assert op_run.results["numpy"].error is None and op_run.results["numpy"].timing.cpu_us_per_call > 0
        assert part.op in stdout
    # the page's headline on the CPU says host time: there is no launch there (it said "Launch cost by op"); and
    # its rows are workloads, not ops (the header said "each op's host-bound size", the column "op")
    page = (out / rundir.REPORT_FILE).read_text()
    assert "<h2>Host time by workload, on the CPU</h2>" in page and "Launch cost" not in page
    assert "<th>workload</th>" in page and "Each workload is its own compare run" in page and "<th>op</th>" not in page
    title = " ".join(stdout.split("┏", 1)[0].split())
    assert "at each workload's size" in title and "op's" not in title


def test_an_atlas_says_each_library_a_workload_failed_on_and_exits_1(cli, tmp_path):
    # a workload's run keeps going (its part has no error of its own): the atlas exited 0 without a word, and a
    # workload no library could run read "no library was timed", its cases' errors left in its folder
    out = tmp_path / "run"
    proc = cli("atlas", "--workloads", f"{CASES}:numpy_only,{CASES}:fails_everywhere", "--libs", "numpy,torch",
               "--device", "cpu", "--pool-threads", "1", "--iters", "20", "--warmup", "2", "--repeats", "1",
               "--processes", "1", "--sample-seconds", "0.5", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.startswith("flametool: ")]
    assert lines[0].startswith("flametool: workload workload_cases.py:numpy_only: case 'torch': torch cannot run fn: "
                               "AttributeError"), lines
    assert lines[1].startswith("flametool: workload workload_cases.py:fails_everywhere: no library was timed: numpy: numpy "
                               "cannot run fn: ValueError: no library runs this step"), lines
    assert "torch: torch cannot run fn: ValueError" in lines[1] and len(lines) == 2, lines
    assert rundir.load(out / "workload-numpy_only").results["numpy"].error is None
    # the terminal's table says 'failed (below)' in the cell and the reason whole under the table (folded over ten
    # lines of a narrow cell, it was)
    assert "failed (below)" in proc.stdout, proc.stdout
    assert "\nfailed: workload_cases.py:numpy_only torch: torch cannot run fn: AttributeError" in proc.stdout, proc.stdout
    # the atlas page says why a cell failed under its table (it was only in the cell's tooltip)
    import html

    page = html.unescape((out / "report.html").read_text())
    assert "failed: workload_cases.py:numpy_only torch: torch cannot run fn: AttributeError" in page

def reference(name: str, inputs: list[np.ndarray]):
    """Each built-in's result in float64 numpy, written apart from it."""
    if name == "mlp":
        x, w, b = inputs
        return np.maximum(x @ w + b, 0).sum()
    if name == "softmax":
        (x,) = inputs
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    if name == "layernorm":
        x, g, b = inputs
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    n = len(inputs) // 4
    p, g, m, v = (inputs[i * n:(i + 1) * n] for i in range(4))
    out = []
    for pi, gi, mi, vi in zip(p, g, m, v):
        mi, vi = 0.9 * mi + 0.1 * gi, 0.999 * vi + 0.001 * gi * gi
        out.append((pi - 1e-3 * (mi / 0.1) / (np.sqrt(vi / 0.001) + 1e-8), mi, vi))
    return out


def host(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


@pytest.mark.parametrize("name", list(builtin_workloads.WORKLOADS))
@pytest.mark.parametrize("xp", ["numpy", "torch"])
def test_each_builtin_computes_its_step_on_each_cpu_library(name, xp):
    func = getattr(builtin_workloads, name)
    shape = {"mlp": (4, 8, 6), "softmax": (3, 5), "layernorm": (3, 5), "adam": (5, 16)}[name]
    step, sync = workloads.case_factory(func, xp)(shape, "float64", "cpu")
    step()
    sync()
    got, want = step.last[0], reference(name, [x.astype(np.float64) for x in func(np, shape)[1]])
    if name == "adam":
        assert len(got) == 5 and [t[0].shape[0] for t in got] == [16, 8, 4, 2, 16]
        for g, w in zip(got, want):
            for a, b in zip(g, w):
                np.testing.assert_allclose(host(a), b, rtol=1e-12)
    else:
        np.testing.assert_allclose(host(got), want, rtol=1e-12)
    assert len(step.operands) == len(func(np, shape)[1])


def test_floating_inputs_take_the_case_dtype_from_the_same_bytes():
    func = workloads.load("scaled_exp_sum", None, str(CASES))
    steps = {xp: workloads.case_factory(func, xp)((4, 3), "float16", "cpu")[0] for xp in ("numpy", "torch")}
    a_np, a_torch = steps["numpy"].operands[0], steps["torch"].operands[0]
    assert a_np.dtype == np.float16 and str(a_torch.dtype) == "torch.float16"
    assert a_np.tobytes() == a_torch.numpy().tobytes()


def test_a_library_fn_does_not_port_to_fails_its_case_naming_the_library_and_line():
    func = workloads.load("numpy_only", None, str(CASES))
    workloads.case_factory(func, "numpy")((8,), "float32", "cpu")  # numpy has polyval
    line = next(i + 1 for i, l in enumerate(CASES.read_text().splitlines()) if "xp.polyval" in l)
    with pytest.raises(building.CaseUnavailable) as got:
        building.set_up(workloads.case_factory(func, "torch"), [8], "float32", "cpu")
    said = str(got.value)
    assert said.startswith("torch cannot run fn: AttributeError") and f"{CASES}:{line}" in said
    assert "\n" not in said


def test_an_fn_with_no_code_of_its_own_that_fails_names_the_line_too():
    """fn a functools.partial of a helper in the workload's file (an object's __call__ alike): torch's failure said
    'torch cannot run fn: AttributeError: ... no attribute 'polyval'' and no line, as fn has no __code__."""
    func = workloads.load("partial_numpy_only", None, str(CASES))
    line = next(i + 1 for i, l in enumerate(CASES.read_text().splitlines()) if "xp.polyval(a, b)" in l)
    with pytest.raises(building.CaseUnavailable) as got:
        building.set_up(workloads.case_factory(func, "torch"), [8], "float32", "cpu")
    said = str(got.value)
    assert said.startswith("torch cannot run fn: AttributeError") and "\n" not in said
    assert said.endswith(f" at {CASES}:{line} (return xp.polyval(a, b)  # a helper fn calls through functools.partial)")


def test_a_workloads_cases_go_on_when_one_fails():
    from flametool.commands.main import build_parser
    from flametool.commands.settings import compare_config

    args = build_parser().parse_args(["compare", "--workload", f"{CASES}:numpy_only", "--device", "cpu"])
    config = compare_config(args, lambda text: None)
    assert config.keep_going and [c.label for c in config.cases] == ["numpy", "torch"]
    assert config.op == "workload_cases.py:numpy_only" and config.shape == [8]


def test_a_workload_fn_fails_on_every_library_is_a_line_per_case(cli, tmp_path):
    # every case failed in its set-up (keep-going, as a workload's run is): profiling had no case and read todo[0],
    # an internal error (IndexError) where each case's one line belongs. numpy's case, failing in fn: which library
    # fails is not what is tested, and torch's import (the case that did, numpy_only on torch) cost its timing
    # process about a second of CPU
    out = tmp_path / "run"
    proc = cli("compare", "--workload", f"{CASES}:fails_everywhere", "--libs", "numpy", "--device", "cpu",
               "--processes", "1", "--iters", "20", "--warmup", "2", "--pool-threads", "1", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    assert "flametool: case 'numpy': numpy cannot run fn: ValueError: no library runs this step" in proc.stderr, \
        proc.stderr
    run = rundir.load(out)
    assert run.results["numpy"].error and run.finished is not None
    assert (out / rundir.REPORT_FILE).exists()


def test_a_case_spec_of_a_workload_travels_to_the_child():
    spec = CaseSpec("torch", "mlp", module=workloads.BUILTIN_MODULE, xp="torch")
    back = JobCase.from_json(json.loads(json.dumps({"label": "torch", "case": spec.to_json(), "dtype": "float32"})))
    assert back.case == spec
    assert "xp" not in CaseSpec("numpy", "numpy_matmul", module="flametool.cases").to_json()
    factory = building.load_factory(back.case)
    assert factory.__name__ == "torch_mlp"


@pytest.mark.parametrize("argv, words", [
    ([f"{CASES}:lists_not_arrays"], "inputs[0] is builtins.list, not a NumPy array"),
    ([f"{CASES}:no_shape"], "cannot be called as no_shape(xp, shape)"),
    # the signature as written: it read 'shape_keyword_only(xp, shape) cannot be called as shape_keyword_only(xp, shape)'
    ([f"{CASES}:shape_keyword_only"], "shape_keyword_only(xp, *, shape=(4,)) cannot be called as "
                                      "shape_keyword_only(xp, shape)"),
    ([f"{CASES}:fn_alone"], "returned function; a workload returns (fn, inputs)"),
    # fn's signature is checked before anything runs: each library's set-up failed with two lines each (exit 1)
    ([f"{CASES}:fn_wants_a_keyword"], "returned fn fn(a, *, scale), which cannot be called with the 1 input "
                                      "returned (missing a required argument: 'scale'); each step calls fn(*inputs)"),
    ([f"{CASES}:fn_takes_fewer"], "returned fn fn(a), which cannot be called with the 2 inputs returned"),
    ([f"{CASES}:raises"], "raised RuntimeError: cannot make the inputs at "),
    ([f"{CASES}:exits"], "raised SystemExit: 3 at "),
    ([f"{CASES}:needs_a_shape"], "has no default; give --shape"),
    # a scalar default said 'is not positive integers' (it is one), and named the whole path where 'has no default'
    # named the file: both name it as the workload's name
    ([f"{CASES}:scalar_shape"], "--workload workload_cases.py:scalar_shape: the default shape 16 is a number, not a "
                                "shape; a shape is a tuple of positive integers: shape=(16,)"),
    ([f"{CASES}:zero_in_shape"], "--workload workload_cases.py:zero_in_shape: the default shape (16, 0) is not a "
                                 "tuple of positive integers"),
    ([f"{CASES}:needs_a_shape"], "--workload workload_cases.py:needs_a_shape: needs_a_shape's shape has no default"),
    ([f"{CASES}:needs_a_shape", "--shape", "0,2"], "positive integers"),
    ([f"{CASES}:missing"], "defines no missing"),
    (["nope"], "expected FILE.py:FUNC or a built-in workload: mlp, softmax, layernorm, adam"),
    (["mlp", "--shape", "3,4"], "expected 3 positive integers"),
    # given empty (a script's unset $SHAPE) they ran at the default shape, silently
    (["mlp", "--shape", ""], "--shape '': expected 3 positive integers"),
    (["mlp", "--sample-shape", ""], "--sample-shape '': expected 3 positive integers"),
    (["mlp", "--libs", "numpy,cupy"], "--libs cupy: cupy is not installed"),
    (["mlp", "--libs", "numpy,mxnet"], "--libs mxnet: a workload runs on numpy, cupy, torch, jax, jax-eager"),
    (["mlp", "--op", "add"], "a workload is its own step"),
])
def test_bad_workloads_are_one_line(capsys, tmp_path, argv, words):
    out = tmp_path / "run"
    line = checks.one_line_error(capsys, ["compare", "--device", "cpu", "--workload", *argv, "--out", str(out)], 2,
                                 progress_first=True)
    assert words in line, line
    assert not out.exists()


def test_a_library_not_installed_and_no_array_api_compat_are_one_line(capsys, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("jax", "array_api_compat")
                        else real(name, *a))
    base = ["compare", "--device", "cpu", "--workload", "mlp", "--out", str(tmp_path / "run")]
    line = checks.one_line_error(capsys, [*base, "--libs", "numpy,jax"], 2, progress_first=True)
    assert "--libs jax: jax is not installed" in line
    line = checks.one_line_error(capsys, base, 2, progress_first=True)
    assert "array-api-compat" in line and "pip install 'flametool[workloads]'" in line


def test_atlas_workloads_are_checked_before_anything_runs(capsys, tmp_path):
    base = ["atlas", "--device", "cpu", "--out", str(tmp_path / "run")]
    for argv, words in ((["--workloads", "mlp,mlp"], "each workload once"),
                        (["--workloads", "mlp", "--ops", "add"], "give one of them"),
                        (["--workloads", f"{CASES}:fn_alone"], "a workload returns (fn, inputs)"),
                        # given empty, they ran the atlas of every op
                        (["--ops", ""], "--ops '': give one or more"), (["--workloads", " "], "--workloads ' ': give"),
                        # an atlas has no --shape to give: it said "give --shape"
                        (["--workloads", f"{CASES}:needs_a_shape"], "has no default; give FUNC a default shape")):
        assert words in checks.one_line_error(capsys, [*base, *argv], 2, progress_first=True)
    assert not (tmp_path / "run").exists()


# --- a sweep's ladder of a workload's shapes, written with '...' ----------------------------------------------------
# --sizes of a workload sweep go through the parser every sweep's do (options.parse_sizes); its '...' read only
# squares and element counts, so a workload's shape of two or more figures could not be written as a ladder.
WORKLOAD = "workload_cases.py:scaled_exp_sum"


@pytest.mark.parametrize("text, rank, sizes", [
    # the figures that change grow by one step, the others stay: a batch grown at a fixed width
    ("16x32,32x32,...,256x32", 2, [[16, 32], [32, 32], [64, 32], [128, 32], [256, 32]]),
    ("8x64x64,16x64x64,...,64x64x64", 3, [[n, 64, 64] for n in (8, 16, 32, 64)]),
    ("8x64,8x256,...,8x16384", 2, [[8, 4**k] for k in range(3, 8)]),  # adam's: S, the second figure, grows 4x
    ("4x8,8x16,...,64x128", 2, [[4 * 2**k, 8 * 2**k] for k in range(5)]),  # two figures, one step
    ("10x3,30x3,...,200x3", 2, [[10, 3], [30, 3], [90, 3], [200, 3]]),  # the last need not be on the ladder
    ("16,32;32,32;...;128,32", 2, [[n, 32] for n in (16, 32, 64, 128)]),  # with ';', figures written with ','
    ("8,16,...,64", 1, [[8], [16], [32], [64]]),
    ("8x2,16x2,...,64x2", None, [[8, 2], [16, 2], [32, 2], [64, 2]]),  # a FUNC of no default shape
])
def test_a_workload_ladder_is_written_with_dots(text, rank, sizes):
    assert options.parse_sizes(text, WORKLOAD, rank) == sizes


@pytest.mark.parametrize("text, rank, words", [
    ("16x32,32x32,...,256x64", 2, "'...' needs growing sizes on one line"),  # a figure that stayed changes last
    ("16x32,32x64,...,256x32", 2, "'...' needs growing sizes on one line"),  # the last out of proportion
    ("16x32,32x48,...,256x96", 2, "'...' needs growing sizes on one line"),  # two figures, two steps
    ("32x32,16x32,...,256x32", 2, "'...' needs growing sizes on one line"),  # shrinking
    ("16x32,32x32,...,16x32", 2, "'...' needs growing sizes on one line"),  # the last not beyond
    ("16x32,32x32,...,256", None, "'...' needs sizes of as many figures before and after it, e.g. 8x256,16x256"),
    ("16x32,32x32,...", 2, "'...' needs two sizes before it and one after, e.g. 8x256,16x256,...,512x256"),
    ("16x32,...,256x32", 2, "'...' needs two sizes before it and one after"),
    ("32x32,8x32,16x32,...,64x32", 2, "'...' runs through 32x32, which is given before it"),
    ("16x32,32x32,...,64", 2, "'64' is not a size; give 2 figures"),
    ("1000x1,1001x1,...,100000000x1", 2, "at most 64 sizes"),  # stopped, not made to the end
])
def test_a_bad_workload_ladder_is_refused(text, rank, words):
    with pytest.raises(FlametoolError) as caught:
        options.parse_sizes(text, WORKLOAD, rank)
    assert str(caught.value).startswith(f"--sizes {text!r}: ") and words in str(caught.value), caught.value


def test_a_workload_sweep_runs_a_ladder_written_with_dots(cli, tmp_path, capsys):
    out = tmp_path / "run"
    proc = cli("sweep", "--workload", f"{CASES}:scaled_exp_sum", "--libs", "numpy", "--device", "cpu", "--sizes",
               "16x32,32x32,...,128x32", "--processes", "1", "--iters", "20", "--warmup", "2", "--pool-threads", "1",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / rundir.RUN_FILE).read_text())
    ladder = [[16, 32], [32, 32], [64, 32], [128, 32]]
    assert data["config"]["sizes"] == ladder
    assert [p["shape"] for p in data["results"]["numpy"]["points"]] == ladder
    # the plot's axis is the workload's shape, not "elements per operand" (an op's): its figures are FUNC's own
    page = (out / rundir.REPORT_FILE).read_text()
    assert "size: the workload&#39;s shape (log scale)" in page or "size: the workload's shape (log scale)" in page
    assert "elements per operand" not in page
    # a built-in's (mlp: B,I,O) refused in one line, before anything starts
    bad = tmp_path / "bad"
    line = checks.one_line_error(capsys, ["sweep", "--workload", "mlp", "--libs", "numpy", "--device", "cpu",
                                          "--sizes", "8x64x64,16x32x64,...,64x64x64", "--out", str(bad)], 2,
                                 progress_first=True)
    assert "'...' needs growing sizes on one line" in line and "e.g. 8x256x256,16x256x256" in line, line
    assert not bad.exists()


DATACLASS_FILE = '''from __future__ import annotations
from dataclasses import dataclass
import numpy as np


@dataclass
class Config:
    scale: float = 2.0


def scaled(xp, shape=(4,)):
    def fn(x):
        return x * Config().scale
    return fn, [np.ones(shape, dtype=np.float32)]


def mine(shape, dtype, device):
    a = np.ones(4) * Config().scale
    return (lambda: np.add(a, 1)), (lambda: None)
'''


def test_a_user_s_file_with_a_dataclass_under_postponed_annotations_imports(tmp_path):
    """A --case or --workload file with `from __future__ import annotations` and a @dataclass failed to import
    ("AttributeError: 'NoneType' object has no attribute '__dict__'": dataclasses looks the class's module up in
    sys.modules, where the file was not) in the parent's workload check, the child's case loader and --env's
    import check alike."""
    from flametool.measure import importcheck

    file = tmp_path / "steps_dc.py"
    file.write_text(DATACLASS_FILE)
    # first: the child's loader would leave a module of the same name in sys.modules, where dataclasses would find it
    checked = importcheck.probe([{"label": "mine", "factory": "mine", "file": str(file)}])
    assert checked["error"] is None, checked["error"]
    fn, inputs = workloads.load("scaled", None, str(file))(np)
    assert float(fn(*inputs)[0]) == 2.0
    step, _ = building.load_factory(CaseSpec("mine", "mine", file=str(file)))([4], "float32", "cpu")
    assert float(step()[0]) == 3.0


def test_a_step_that_writes_what_it_reads_is_told_apart(tmp_path, capsys):
    """An fn that updates its input in place (`a *= 0.5`: numpy's and torch's arrays are written by the step)
    ran every loop on other values than the last (here down to subnormals and 0, slow on some CPUs), and each
    library on others than the other's, with nothing said. The child hashes the operands again after the timed
    loops (building.read_again): where they differ, run.json keeps the new hash (Operands.after), and every view
    says so among the cautions; an fn that writes into a new array is left as it was."""
    import torch

    from flametool.analyse import dispatch
    from flametool.analyse.operands import wrote_operands
    from flametool.run.record import Operands
    from runbuild import make_run

    def halve(xp, shape=(64,)):
        def fn(a, b):
            a *= 0.5
            return a + b
        return fn, [np.ones(shape, dtype=np.float32), np.ones(shape, dtype=np.float32)]

    def fixed(xp, shape=(64,)):
        return (lambda a, b: a * 0.5 + b), [np.ones(shape, dtype=np.float32), np.ones(shape, dtype=np.float32)]

    for xp in ("numpy", "torch"):
        made = {name: workloads.case_factory(func, xp)([64], "float32", "cpu") for name, func in
                (("halve", halve), ("fixed", fixed))}
        operands = {name: building.fingerprint(step, [64]) for name, (step, _) in made.items()}
        for step, _ in made.values():
            for _ in range(3):
                step()
        building.read_again(made, operands, {})  # type: ignore[arg-type]
        assert operands["fixed"].after is None, xp  # type: ignore[union-attr]
        assert operands["halve"].after not in (None, operands["halve"].fingerprint), xp  # type: ignore[union-attr]
        assert isinstance(made["halve"][0].operands[0], torch.Tensor if xp == "torch" else np.ndarray)
    # what the parent keeps and every view says
    run_dir = make_run(tmp_path / "r", {"numpy": ("case.step (case.py:1) 40\n", 6.0, 40),
                                        "torch": ("case.step (case.py:1) 40\n", 9.0, 40)})
    data = json.loads((run_dir / "run.json").read_text())
    for label in ("numpy", "torch"):
        data["results"][label]["operands"] = [{"shape": [64], "fingerprint": "aaaaaaaaaaaa", "made": "inputs",
                                               "hashed": "every byte", **({"after": "bbbbbbbbbbbb"} if label == "torch"
                                                                          else {})}]
    (run_dir / "run.json").write_text(json.dumps(data))
    run = rundir.load(run_dir)
    assert wrote_operands(run) == ["torch"] and run.results["numpy"].operands[0].after is None
    assert run.results["torch"].operands[0].to_json()["after"] == "bbbbbbbbbbbb"
    assert "after" not in run.results["numpy"].operands[0].to_json()
    assert dispatch.analyse_dir(run_dir).rewritten == ["torch"]
    code, out, _ = (main.main(["summary", str(run_dir)]), *capsys.readouterr())
    assert code == 0 and "operands written: torch: step() wrote the values it reads" in out, out
    assert main.main(["report", str(run_dir)]) == 0
    assert "torch: step() wrote the values it reads" in (run_dir / "report.html").read_text()


def test_two_files_of_one_factory_name_are_two_modules(tmp_path):
    """`--case v1/c.py:make --case v2/c.py:make` in one child: both were imported as flametool_case_make, the second
    replacing the first in sys.modules, so what looks the first's module up later (a dataclass's, pickle's) found
    the second's. Each file's module now has a name of its own."""
    import sys

    from flametool.workload.cases import import_file

    made = []
    for version in ("v1", "v2"):
        (tmp_path / version).mkdir()
        file = tmp_path / version / "c.py"
        file.write_text(f"VERSION = {version!r}\n")
        made.append(import_file("flametool_case_make", str(file)))
    assert made[0].__name__ != made[1].__name__
    assert [sys.modules[m.__name__].VERSION for m in made] == ["v1", "v2"]
