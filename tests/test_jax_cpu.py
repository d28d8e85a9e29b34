"""JAX on the CPU: the built-in jax case and a workload's jax case run on jax's CPU backend, and what the views
say of it. The logic is tested on small hand-built inputs that need no jax (CI has none); the runs are skipped
where jax is not importable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flametool.analyse import compare, dispatch
from flametool.render import format as fmt
from flametool.run import rundir
from flametool.run.profiled import ProfileProcess, Sampling
from flametool.run.record import CaseResult
from flametool.run.timing import Loops
from flametool.workload import libraries, workloads
from shared import WORKLOAD_CASES, flametool_once


def sampled_case(kept: int, us_per_call: float) -> CaseResult:
    """A case whose caller py-spy sampled `kept` times in its loop, at `us_per_call` per call while sampled."""
    sampling = Sampling(command=["py-spy"], rate_hz=100, seconds=5, complete=True, kept_samples=kept,
                        sampled_us_per_call=us_per_call)
    return CaseResult("jax", "flametool.cases:jax_matmul", "jax", "cpu", "float32", [64, 64, 64],
                      profile=ProfileProcess(own=Loops([38.6]), calls=250, sampling=sampling))


def test_busy_threads_py_spy_never_sampled_are_said_to_be_native_not_between_samples():
    """A jax run on the CPU: XLA's workers spent 15.86 us a call beside a caller of 38.6 us a call sampled 273
    times, so py-spy would have caught them about 112 times; it caught none, since it samples only threads that
    run Python. The row said 'they ran between py-spy's samples', which is not why."""
    result = sampled_case(273, 38.6)
    threads = compare.OtherThreads(15.86, expected_samples=compare.expected_samples(result, 15.86))
    assert threads.native and round(threads.expected_samples or 0) == 112
    said = fmt.threads_unsampled(result, threads)
    assert "py-spy samples only threads that run Python" in said and "about 112" in said
    assert "between py-spy's samples" not in said


def test_threads_too_idle_to_be_sampled_ran_between_the_samples():
    """numpy's other threads: 0.02 us a call beside 8.4 us, about 1 sample expected: none is no surprise."""
    result = sampled_case(516, 8.4)
    threads = compare.OtherThreads(0.02, expected_samples=compare.expected_samples(result, 0.02))
    assert not threads.native
    assert fmt.threads_unsampled(result, threads) == "no samples of them (they ran between py-spy's samples)"
    unsampled = CaseResult("numpy", "f", "numpy", "cpu", "float32", [8])
    assert fmt.threads_unsampled(unsampled, compare.OtherThreads(3.0)) == "not sampled"


def test_jax_is_a_built_in_for_the_cpu_too_and_has_a_device_clock_only_on_a_gpu():
    """`compare --libs numpy,jax --device cpu` was refused ('case jax needs a CUDA device') while `--workload mlp
    --libs numpy,jax` ran jax on its CPU backend; and on the CPU jax's wall time to its sync was recorded as its
    GPU time (a 'GPU / call' of 17.86 us for a run the report said had no GPU)."""
    from flametool.workload import builtins, libraries

    assert not builtins.BUILTIN["jax"].needs_cuda

    def step() -> None:
        return None

    libraries.wall_clock_on(step, "cpu")
    assert not hasattr(step, "device_clock")
    libraries.wall_clock_on(step, "cuda:0")
    assert getattr(step, "device_clock") == "wall"


@pytest.fixture(scope="module")
def jax_run(tmp_path_factory):
    pytest.importorskip("jax")
    return flametool_once(tmp_path_factory, "jax-cpu", "compare", "--device", "cpu", "--libs", "numpy,jax",
                          "--processes", "1", "--repeats", "3", "--sample-seconds", "1")


def test_a_cpu_run_of_jax_has_no_gpu_time_and_says_why_its_workers_have_no_samples(jax_run):
    out, proc = jax_run
    assert proc.returncode == 0, proc.stderr
    assert "GPU / call" not in proc.stdout
    run = rundir.load(out)
    jax = run.results["jax"]
    assert jax.error is None and jax.device == "cpu"
    assert jax.timing is not None and not any(p.gpu_us for p in jax.timing.processes)
    a = dispatch.analyse_dir(out)
    threads = a.threads["jax"]  # XLA's CPU workers run the jitted matmul beside the caller
    assert threads.us_per_call > 0 and threads.profile is None and threads.native
    assert "py-spy samples only threads that run Python" in " ".join(proc.stdout.split())


def test_a_jitted_call_is_named_among_the_calls_cprofile_does_not_see():
    """`compare --libs numpy,jax` counted 'numpy and jax: the one Python call is step() itself (cProfile does not
    see a call made through a C type, such as a NumPy ufunc like numpy.matmul)': jax's step calls no ufunc, it
    calls the function jax.jit compiled, jaxlib's PjitFunction, which is that C type on its side."""
    from fractions import Fraction

    from flametool.analyse import countdiff
    from flametool.run.counts import Counts, Tally

    def step_alone() -> Counts:
        return Counts(steps=256, python_steps=256, tallies=[Tally("python", "step()", Fraction(1))])

    d = countdiff.diff_counts(step_alone(), step_alone(), "numpy", "jax")
    (said,) = [l for l in countdiff.lines(d) if "the one Python call" in l]
    assert said.startswith("numpy and jax: the one Python call is step() itself")
    assert "numpy.matmul" in said and "jax.jit" in said and "PjitFunction" in said


def test_the_outputs_sentence_agrees_with_how_many_libraries_it_names():
    """`compare --libs numpy,jax,torch` said 'jax return a new output buffer every call ..., where numpy, torch
    write matmul's result into a preallocated out'."""
    from flametool.analyse.operands import NewOutputs

    said = fmt.outputs_sentence(NewOutputs("matmul", ["jax"], ["numpy", "torch"]))
    assert said.startswith("jax returns a new output buffer every call (JAX has no out=), where numpy and torch "
                           "write matmul's result")
    assert "cupy, numpy and torch write" in fmt.outputs_sentence(NewOutputs("add", ["jax"], ["cupy", "numpy", "torch"]))


def test_a_caller_off_the_cpu_much_of_its_host_time_is_said_in_the_fairness_list():
    """jax on the CPU: its caller's host time was 30.8 us a call, of which it ran on the CPU for 13.9 us and waited
    for XLA's workers the rest, while the table said 'bound: host, the loop's time is the host's own work'. A case
    whose median loop's caller was on the CPU for under 70% of its clock time is now said in the fairness list;
    one on the CPU throughout (numpy, or torch with one pool thread: 1.00 of it) is not, nor one preempted in a few
    loops of a loaded machine (the median loop's share)."""
    from flametool.run.record import Run
    from flametool.run.timing import Timing

    def case(label: str, host: list[float], own: list[float], other: float) -> CaseResult:
        loops = Loops(host, all_threads_us=[o + other for o in own], other_threads_us=[other] * len(own))
        return CaseResult(label, f"flametool.cases:{label}_matmul", label, "cpu", "float32", [64, 64, 64],
                          timing=Timing([64, 64, 64], 250, [loops]))

    run = Run(3, True, "", None, [], {"device": "cpu"}, {}, results={
        "numpy": case("numpy", [5.6] * 5, [5.6, 5.6, 1.5, 5.5, 5.6], 0.0),  # one loop preempted
        "jax": case("jax", [30.8] * 5, [13.9] * 5, 17.2)})
    found = compare.off_cpu(run)
    assert [(o.label, round(o.own_share, 2)) for o in found] == [("jax", 0.45)]
    said = fmt.off_cpu_sentence(found[0])
    assert said.startswith("jax's calling thread was on the CPU for 45% of its host time per call") and "55%" in said
    a = compare.Analysis(Path("."), run, off_cpu=found)
    assert ("host time is not all work", said) in fmt.fairness(a, run)


def test_a_64_bit_type_jax_would_narrow_is_said_not_run_as_32_bits():
    """`compare --workload w.py:step --libs numpy,jax --dtype float64` ran jax in float32 (JAX has no 64-bit types
    unless jax_enable_x64 is on) under the label float64, and int64 inputs as int32: the only sign was a caution that
    jax 'read different values'."""
    said = libraries.jax_narrowed("float64", "float64", "float32")
    assert said and said.startswith("jax makes float64 arrays float32") and "JAX_ENABLE_X64=1" in said
    assert libraries.jax_narrowed("int64", "float32", "int32").startswith("jax makes int64 arrays int32")
    assert libraries.jax_narrowed("float32", "bfloat16", "bfloat16") is None  # rounded by jax, as asked
    assert libraries.jax_narrowed("float64", "float32", "float32") is None  # cast on the host first
    assert libraries.jax_narrowed("complex64", "float32", "complex64") is None
    assert libraries.jax_narrowed("int64", "float32", "int64") is None  # with jax_enable_x64


def test_a_workload_s_jax_case_fails_on_an_input_jax_narrows_naming_it():
    jax = pytest.importorskip("jax")
    if jax.config.jax_enable_x64:
        pytest.skip("JAX_ENABLE_X64 is set: jax keeps float64")
    from flametool.measure.child import building

    func = workloads.load("scaled_exp_sum", None, str(WORKLOAD_CASES))
    with pytest.raises(building.CaseUnavailable) as got:
        building.set_up(workloads.case_factory(func, "jax-eager"), [4, 3], "float64", "cpu")
    said = str(got.value)
    assert said.startswith("jax-eager cannot take inputs[0] (float64, shape (4, 3)): ValueError: jax makes float64 "
                           "arrays float32") and "\n" not in said
    step, _ = building.set_up(workloads.case_factory(func, "jax-eager"), [4, 3], "float32", "cpu")
    assert [str(x.dtype) for x in step.operands] == ["float32", "float32"]


def test_integers_that_fit_32_bits_go_to_jax_as_int32_and_others_are_refused():
    """int64 inputs (np.arange's, rng.integers') were refused on jax without JAX_ENABLE_X64, every gather's jax case
    failing: where every value fits 32 bits they are the same values in int32; one that does not fit is still
    refused, and an ml_dtypes bfloat16 input (not a NumPy floating type) is taken as it is."""
    jax = pytest.importorskip("jax")
    if jax.config.jax_enable_x64:
        pytest.skip("JAX_ENABLE_X64 is set: jax keeps int64")
    dev = libraries.jax_device("cpu")
    got = libraries.jax_put(np.arange(5, dtype=np.int64), dev, "float32")
    assert str(got.dtype) == "int32" and list(np.asarray(got)) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="jax makes int64 arrays int32"):
        libraries.jax_put(np.array([0, 2**40], dtype=np.int64), dev, "float32")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    half = np.ones(3, dtype=ml_dtypes.bfloat16)
    assert str(libraries.jax_put(half, dev, "float32").dtype) == "bfloat16"
