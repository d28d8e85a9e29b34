"""The built-in ops (--op): each library's result against numpy's, the same operand values in every library,
shapes and sizes per op, and the case protocol's two factory signatures."""

import json
from pathlib import Path

import numpy as np
import pytest

from flametool.workload import builtins, cases, inputs, libraries, ops
from flametool.commands import main, options, settings
from flametool.run import record
from flametool.analyse import sweep
from flametool.errors import FlametoolError
from checks import error_of

CASES = Path(__file__).parent / "cases" / "op_cases.py"


def reference(op: str, shape: list[int], dtype: str):
    """numpy's result of `op` on the built-in cases' values (values.uniform: a stream 0, b stream 1), computed
    here without the code under test."""
    from flametool.workload import values

    count = int(np.prod(shape))
    a = values.uniform(count, dtype, inputs.OPERAND_SEED, stream=0)
    b = values.uniform(count, dtype, inputs.OPERAND_SEED, stream=1)
    if op == "copy":
        r, c = ops.as_matrix(shape)
        return np.ascontiguousarray(a.reshape(r, c).T)
    a, b = a.reshape(shape), b.reshape(shape)
    if op == "add":
        return a + b
    if op == "scale":
        return a * 2.0
    if op == "sum":
        return np.asarray(a.sum(dtype=np.float64))
    if op == "fft":
        return np.fft.fft(a.astype(np.complex128) + 1j * b.astype(np.complex128))
    raise AssertionError(op)


def result_of(step):
    value = step()
    if value is None:
        value = step.out
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


ELEMENT_OPS = [o for o in ops.OPS if o != "matmul"]


@pytest.mark.parametrize("library", ["numpy", "torch"])
@pytest.mark.parametrize("op", ELEMENT_OPS)
@pytest.mark.parametrize("shape", [[120], [6, 20]])
def test_each_op_computes_what_numpy_does(library, op, shape):
    factory = builtins.factories()[builtins.factory_name(library, op)]
    step, sync = cases.call_factory(factory, shape, "float32", "cpu")
    got = result_of(step)
    sync()
    want = reference(op, shape, "float32")
    assert got.shape == want.shape
    assert np.allclose(got, want, rtol=2e-5, atol=1e-4), (library, op)
    if op == "copy":
        assert got.flags.c_contiguous and got.shape == ops.as_matrix(shape)[::-1]


def test_matmul_through_the_old_factories_is_still_the_product():
    step, _ = cases.call_factory(libraries.numpy_matmul, [4, 5, 3], "float64", "cpu")
    step()
    a, b = step.operands
    assert np.allclose(step.out, a @ b)


def fortran_place(host, dtype, device):
    """A made-up library's placement: numpy's arrays laid out in Fortran order."""
    if device != "cpu":
        raise ValueError("numpy-f runs on the CPU only")
    return np, tuple(np.asfortranarray(x) for x in host), lambda: None


def test_a_new_library_is_its_row_alone():
    """A row of libraries.py is all a library's built-in needs: its case of every op (matmul too, through the op
    row, where it has no matmul factory of its own) computes what numpy does, and each row of LIBRARIES is a
    built-in case with a factory LIBRARY_OP for each of its ops."""
    row = libraries.Library("numpy-f", "numpy", False, "numpy", fortran_place)
    made = builtins.of_library(row)
    assert made.op_names == tuple(ops.OPS) and made.factory == "numpy-f_matmul" and made.library == "numpy"
    step, _ = made.ops("matmul", (4, 5, 3), "float64", "cpu")
    step()
    a, b = step.operands
    assert a.flags.f_contiguous and step.out.shape == (4, 3) and np.allclose(step.out, a @ b)
    for op in ELEMENT_OPS:
        step, _ = made.ops(op, (6, 20), "float32", "cpu")
        assert np.allclose(result_of(step), reference(op, [6, 20], "float32"), rtol=2e-5, atol=1e-4), op
    for label in libraries.LIBRARIES:
        assert label in builtins.BUILTIN and builtins.BUILTIN[label].op_names
        for op in builtins.BUILTIN[label].op_names:
            assert builtins.factory_name(label, op) in builtins.factories()
    lacking = builtins.of_library(libraries.Library("numpy-f", "numpy", False, "numpy", fortran_place,
                                                    calls={"fft": None}))
    assert "fft" not in lacking.op_names


@pytest.mark.parametrize("op", ELEMENT_OPS)
def test_numpy_and_torch_read_the_same_values(op):
    from flametool.measure.child import building

    prints = []
    for library in ("numpy", "torch"):
        step, _ = cases.call_factory(builtins.factories()[builtins.factory_name(library, op)], [64], "float32", "cpu")
        prints.append(building.fingerprint(step, [64]).fingerprint)
    assert prints[0] == prints[1]


def test_the_factory_signature_decides_how_it_is_called():
    import importlib.util

    spec = importlib.util.spec_from_file_location("op_cases", CASES)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert cases.factory_style(mod.add_one) == "shape" and cases.factory_style(mod.old_matmul) == "mnk"
    assert cases.factory_style(lambda *args: None) == "mnk"
    step, _ = cases.call_factory(mod.add_one, [3, 4], "float32", "cpu")
    step()
    assert step.out.shape == (3, 4) and np.allclose(step.out, step.operands[0] + 1)
    step, _ = cases.call_factory(mod.old_matmul, [2, 3, 4], "float32", "cpu")
    step()
    assert np.all(step.out == 3)
    with pytest.raises(cases.FactoryMisfit, match="write it as FACTORY\\(shape, dtype, device\\)"):
        cases.call_factory(mod.old_matmul, [1024], "float32", "cpu")
    with pytest.raises(cases.FactoryMisfit, match="takes 4 positional parameters"):
        cases.call_factory(mod.four_params, [1024], "float32", "cpu")


def test_shapes_and_sizes_per_op():
    assert options.parse_shape("1048576", "--shape", "add") == [1048576]
    assert options.parse_shape("64,32", "--shape", "copy") == [64, 32]
    for bad, op in (("64,64,64", "add"), ("64", "matmul"), ("0", "sum")):
        with pytest.raises(FlametoolError):
            options.parse_shape(bad, "--shape", op)
    assert options.parse_sizes("64,256,...,16384", "sum") == [[64], [256], [1024], [4096], [16384]]
    assert options.parse_sizes("64x64,4096", "copy") == [[64, 64], [4096]]
    assert options.parse_sizes("64", "matmul") == [[64, 64, 64]]
    assert options.default_sizes("cpu", "add")[0] == [64] and options.default_sizes("cuda:0", "fft")[-1] == [2**26]
    assert record.size_name([4096], "add") == "4096" and record.size_name([64, 32], "copy") == "64x32"
    assert sweep.edge([4096]) == 4096 and sweep.edge([8, 8, 8]) == pytest.approx(8)
    assert ops.as_matrix([2**20]) == (1024, 1024) and ops.as_matrix([13]) == (1, 13) and ops.as_matrix([3, 5]) == (3, 5)
    with pytest.raises(FlametoolError, match="is a matmul floor"):
        builtins.builtin("cublas", "add")


def test_a_floor_with_another_op_and_an_unknown_op_are_one_line(capsys, tmp_path):
    for argv, said in ((["compare", "--op", "add", "--libs", "cublas", "--device", "cpu"], "matmul floor"),
                       (["compare", "--op", "gemv"], "--op 'gemv'"),
                       (["sweep", "--op", "add", "--sizes", "64x64x64"], "N or RxC for --op add"),
                       (["compare", "--op", "copy", "--shape", "1,2,3"], "N (elements) or R,C")):
        assert main.main(argv + ["--out", str(tmp_path / "x")]) == 2
        assert said in error_of(capsys.readouterr().err, progress_first=True), argv
        assert not (tmp_path / "x").exists()


def test_an_old_run_without_op_loads_as_matmul(tmp_path):
    from runbuild import make_run
    from flametool.run import rundir

    run = make_run(tmp_path / "old", {"a": ("step;x 5\n", 1.0, 0)})
    data = json.loads((run / "run.json").read_text())
    data["config"].pop("op", None)
    (run / "run.json").write_text(json.dumps(data))
    assert rundir.load(run).config.operation == "matmul"


def test_the_fairness_list_says_jax_makes_a_new_output_each_call(tmp_path):
    from runbuild import case_result, new_run
    from flametool.analyse import dispatch, operands
    from flametool import render
    from flametool.run import rundir
    from flametool.render.base import Options

    run = new_run({"op": "add"})
    for label, library in (("cupy", "cupy"), ("jax", "jax")):
        r = case_result(label, 10.0, 0, shape=(4096,), library=library, device="cuda:0")
        r.factory, r.profile = f"flametool.cases:{label}_add", None
        run.results[label] = r
    found = operands.new_outputs(run)
    assert found.new == ["jax"] and found.into_out == ["cupy"]
    run.config = type(run.config).of({"op": "scale"})  # every library makes a new array: nothing to say
    assert operands.new_outputs(run) is None
    run.config = type(run.config).of({"op": "add"})
    rundir.save(tmp_path, run)
    a = dispatch.analyse_dir(tmp_path)
    # one library a side: 'jax returns ... where cupy writes', not 'jax return ... where cupy write'
    assert "outputs differ: jax returns a new output buffer every call (JAX has no out=), where cupy writes add's" \
        in " ".join(render.show("terminal", a, Options()).split())
    assert "JAX has no out=" in render.show("html", a)


def test_a_sweep_of_an_op_runs_its_element_counts(tmp_path):
    import subprocess
    import sys

    from flametool.run import rundir

    out = tmp_path / "sweep"
    # --libs numpy, not the default numpy and torch: what is tested is the op's element counts, and torch's import
    # cost its timing process 2 s
    proc = subprocess.run([sys.executable, "-m", "flametool", "sweep", "--op", "sum", "--libs", "numpy", "--sizes",
                           "64,4096", "--iters", "20", "--warmup", "2", "--repeats", "1", "--processes", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    run = rundir.load(out)
    assert run.config.operation == "sum" and run.config.sizes == [[64], [4096]]
    for r in run.results.values():
        assert [p.shape for p in r.points] == [[64], [4096]] and all(p.cpu_loops for p in r.points)
    assert proc.stdout.startswith("sum: ") and "elements per operand" in (out / "report.html").read_text()


def test_a_run_with_jax_pins_its_children_to_two_cpus(monkeypatch):
    """XLA sizes its thread pools by the CPUs a process may use: a run with a jax case asks for 2 (config.cpus),
    the runner hands each child CPUs in turn, and the child pins itself before it imports anything."""
    import os
    import subprocess
    import sys

    from flametool.measure import config
    from flametool.measure import spawn, machine

    monkeypatch.setattr(machine, "cuda_device_count", lambda: 1)
    made = settings.compare_config(main.build_parser().parse_args(["compare", "--libs", "torch,jax", "--op", "add"]),
                              lambda text: None)
    assert made.cpus == config.JAX_CPUS == 2 and made.to_json()["cpus"] == 2
    plain = settings.compare_config(main.build_parser().parse_args(["compare", "--libs", "torch"]), lambda text: None)
    assert plain.cpus is None
    allowed = sorted(os.sched_getaffinity(0))
    turns = [spawn.next_cpus(2) for _ in range(3)]
    assert all(len(t) == min(2, len(allowed)) and set(t) <= set(allowed) for t in turns)
    if len(allowed) >= 4:  # children alive at once get CPUs of their own while there are enough
        assert set(turns[0]).isdisjoint(turns[1])
    env = dict(os.environ, FLAMETOOL_CPUS=str(allowed[-1]))
    got = subprocess.run([sys.executable, "-c", "import os; from flametool.measure.child.entry import pin_cpus; "
                          "pin_cpus(); print(sorted(os.sched_getaffinity(0)))"], env=env, capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent, timeout=60)
    assert got.stdout.strip() == str([allowed[-1]]), got.stderr
