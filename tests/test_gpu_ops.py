"""The built-in ops on a real GPU (skipped where there is none): cupy, torch and jax compute what numpy does,
and a sampled compare of all three runs, jax timed to block_until_ready and its frames in its layers."""

import numpy as np
import pytest

from flametool.analyse import dispatch
from flametool.workload import builtins, cases, ops
from runbuild import real_compare
from test_ops import reference

pytestmark = pytest.mark.gpu


def host(value):
    if hasattr(value, "get"):  # cupy
        return value.get()
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


@pytest.mark.parametrize("library", ["cupy", "torch", "jax"])
@pytest.mark.parametrize("op", list(ops.OPS))
def test_each_gpu_op_computes_what_numpy_does(library, op):
    shape = [48, 40, 24] if op == "matmul" else [4096]
    factory = builtins.factories()[builtins.factory_name(library, op)]
    step, sync = cases.call_factory(factory, shape, "float32", "cuda:0")
    value = step()
    sync()
    if library == "jax":
        value = step.last[0]
        assert step.device_clock == "wall"
    elif value is None:
        value = step.out
    got = host(value)
    if op == "matmul":
        a, b = (host(x) for x in step.operands)
        want = a.astype(np.float64) @ b.astype(np.float64)
    else:
        want = reference(op, shape, "float32")
    assert got.shape == want.shape, (library, op)
    # TF32 and reduced-precision reductions on the GPU: a looser bound than the CPU test's
    assert np.allclose(got, want, rtol=2e-3, atol=2e-2), (library, op)


@pytest.fixture(scope="module")
def three_libraries(cli, tmp_path_factory):
    return real_compare(cli, tmp_path_factory, "gpuops", "--op", "add", "--libs", "cupy,torch,jax", "--iters", "1000",
                        "--repeats", "2", "--processes", "2", "--sample-seconds", "3", "--rate", "50")


def test_three_libraries_add_on_the_gpu(three_libraries):
    out, run = three_libraries
    assert run.config.operation == "add" and run.config.shape == ops.host_bound_shape("add", "cuda:0")
    (group,) = run.groups
    assert group.paired and group.cases == ["cupy", "torch", "jax"]
    prints = {r.operands[0].fingerprint for r in run.results.values()}
    assert len(prints) == 1  # the same bytes in every library
    for label, r in run.results.items():
        assert r.error is None, (label, r.error)
        t = r.at_sample_shape
        assert t.cpu_us_per_call > 0 and t.gpu_us_per_call > 0, label
        assert all(p.all_threads_us for p in t.processes), label
        print(label, "threads when sampled:", r.sampling.threads, "slowdown:", r.profile.slowdown,
              "host us:", t.cpu_us_per_call, "all threads us:", t.median("all_threads_us"))
    # jax's device time is its wall time to block_until_ready: never below its host time
    jax = run.results["jax"].at_sample_shape
    assert jax.median("gpu_us") >= jax.median("cpu_us") * 0.99
    assert run.results["jax"].device_name


def test_jax_frames_fall_in_the_jax_layers(three_libraries):
    out, run = three_libraries
    a = dispatch.analyse_dir(out)
    layers = {layer: f.us_per_call for layer, f in a.cases["jax"].layers.items()}
    print("jax layers:", layers)
    assert layers.get("JAX binding", 0) > 0 and layers.get("XLA/PjRt runtime", 0) > 0
