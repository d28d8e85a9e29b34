"""The CUDA cases on a real GPU (skipped where there is none): cupy and torch, timed and sampled."""

import json

import pytest

from flametool import stacks

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_run(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu") / "run"
    proc = cli("compare", "--libs", "cupy,torch", "--shape", "1024,1024,1024", "--iters", "1000", "--repeats", "2",
               "--sample-seconds", "3", "--rate", "100", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "run.json").read_text())


def test_cuda_cases_measure_host_and_device(gpu_run):
    _, data = gpu_run
    assert data["complete"] and data["config"]["device"] == "cuda:0"
    for label in ("cupy", "torch"):
        r = data["results"][label]
        assert r["error"] is None
        assert r["cpu_us_per_call"] > 0 and r["gpu_us_per_call"] > 0
        assert len(r["gpu_us_per_call_repeats"]) == 2
        assert r["device_name"]  # the GPU actually used, named by the case's own library
        assert r["cuda_runtime"]
        # one thread per CPU pool on CUDA: the main thread and the driver's few, not one per core
        assert data["config"]["pool_threads"] == 1 and r["sampling"]["threads"] <= 8, r["sampling"]["threads"]


def test_cuda_stacks_reach_cublas(gpu_run):
    out, data = gpu_run
    for label in ("cupy", "torch"):
        assert data["results"][label]["samples"] > 50
        text = (out / f"{label}.folded").read_text()
        assert "cublas" in text.lower(), label
        for s in stacks.read(out / f"{label}.folded"):
            assert "synchronize" not in stacks.frame_function(s.frames[0])


def test_gpu_bound_shape_samples_at_a_host_bound_shape(cli, tmp_path):
    out = tmp_path / "big"
    proc = cli("compare", "--libs", "torch", "--shape", "8192,8192,8192", "--iters", "50", "--warmup", "5",
               "--repeats", "1", "--no-sample", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "run.json").read_text())["results"]["torch"]
    assert r["host_bound"] is False and r["gpu_us_per_call"] > r["cpu_us_per_call"]
    assert r["sample_shape"] == [1024, 1024, 1024] and "not host-bound" in r["sample_shape_reason"]
    assert r["sample_timing"]["cpu_us_per_call"] > 0 and r["sample_timing"]["iters"] >= 50


@pytest.mark.parametrize("label", ["cupy", "torch", "cublas", "torch-graph", "cupy-graph"])
def test_builtin_gpu_cases_compute_the_product(label):
    """Each CUDA case, floors included, really computes out = a @ b (float32, so the check is tight)."""
    import numpy as np

    from flametool import cases

    factory = getattr(cases, cases.BUILTIN[label][0])
    step, sync = factory(96, 64, 32, "float32", "cuda:0")
    a, b, out = step.operands
    out.fill_(0) if hasattr(out, "fill_") else out.fill(0)
    step()
    sync()
    host = (lambda x: x.cpu().numpy()) if hasattr(out, "cpu") else (lambda x: x.get())
    assert np.allclose(host(out), host(a) @ host(b), rtol=1e-3, atol=1e-3)


def test_floors_run_as_cases(cli, tmp_path):
    out = tmp_path / "floors"
    proc = cli("compare", "--libs", "cublas,torch-graph,cupy-graph", "--shape", "1024,1024,1024", "--iters", "1000",
               "--repeats", "2", "--sample-seconds", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "run.json").read_text())["results"]
    assert results["torch-graph"]["ops_per_step"] == results["cupy-graph"]["ops_per_step"] == 100
    assert results["cublas"]["ops_per_step"] == 1
    for r in results.values():
        assert r["error"] is None and r["cpu_us_per_call"] > 0 and r["gpu_us_per_call"] > 0
        assert r["sample_timing"]["iters"] >= 1000 and r["sampling"]["complete"] and r["sampling"]["total_samples"] > 0
    # a replayed graph leaves the host idle in sync() (few samples land in step()); cublas is all host work
    assert results["cublas"]["samples"] > 0.5 * results["cublas"]["sampling"]["total_samples"]
    for label in ("torch-graph", "cupy-graph"):
        assert results[label]["sampling"]["suggested_rate_hz"] is None  # no lower rate for a GPU-bound loop


def test_second_device_is_used_and_named(cli, tmp_path):
    from flametool import envinfo

    if envinfo.cuda_device_count() < 2:
        pytest.skip("needs two CUDA devices")
    runs = {}
    for device in ("cuda:0", "cuda:1"):
        out = tmp_path / device.replace(":", "")
        proc = cli("compare", "--device", device, "--libs", "cupy,torch", "--shape", "1024,1024,1024",
                   "--iters", "500", "--repeats", "1", "--no-sample", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        runs[device] = json.loads((out / "run.json").read_text())
    for label in ("cupy", "torch"):
        r0, r1 = runs["cuda:0"]["results"][label], runs["cuda:1"]["results"][label]
        assert r1["device"] == "cuda:1" and r1["device_index"] == 1 and r1["device_name"]
        assert r1["gpu_us_per_call"] > 0
        assert r0["pci_bus_id"] != r1["pci_bus_id"]  # a different physical GPU, not device 0 twice
