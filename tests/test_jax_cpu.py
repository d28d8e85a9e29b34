"""JAX on the CPU: the built-in jax case and a workload's jax case run on jax's CPU backend, and what the views
say of it. The logic is tested on small hand-built inputs that need no jax (CI has none); the runs are skipped
where jax is not importable."""

from __future__ import annotations

import pytest

from flametool.analyse import dispatch
from flametool.run import rundir
from shared import flametool_once


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


def test_a_cpu_run_of_jax_has_no_gpu_time(jax_run):
    out, proc = jax_run
    assert proc.returncode == 0, proc.stderr
    assert "GPU / call" not in proc.stdout
    run = rundir.load(out)
    jax = run.results["jax"]
    assert jax.error is None and jax.device == "cpu"
    assert jax.timing is not None and not any(p.gpu_us for p in jax.timing.processes)
    a = dispatch.analyse_dir(out)
    assert a.threads["jax"].us_per_call > 0  # XLA's CPU workers run the jitted matmul beside the caller
