"""The CUDA cases on a real GPU (skipped where there is none): cupy and torch, timed and sampled."""

import pytest

from flametool.analyse import dispatch
from flametool.run import folded, rundir
from flametool.run import perturbation
from runbuild import real_compare

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_run(cli, tmp_path_factory):
    return real_compare(cli, tmp_path_factory, "gpu", "--libs", "cupy,torch", "--shape", "1024,1024,1024", "--iters",
                        "1000", "--repeats", "2", "--processes", "2", "--sample-seconds", "5", "--rate", "100")


def test_cuda_cases_measure_host_and_device(gpu_run):
    out, data = gpu_run
    assert data.complete and data.config.device == "cuda:0"
    for label in ("cupy", "torch"):
        r = data.results[label]
        assert r.error is None
        assert r.timing.cpu_us_per_call > 0 and r.timing.gpu_us_per_call > 0
        # CUDA events around every timed loop (--repeats of them at least), in both processes
        assert len(r.timing.processes) == 2
        assert all(len(p.gpu_us) == len(p.cpu_us) >= 2 for p in r.timing.processes)
        assert r.device_name  # the GPU actually used, named by the CUDA library loaded in its process
        assert r.device_info.cuda_runtime
        # one thread per CPU pool on CUDA: the main thread and the driver's few, not one per core
        assert data.config.pool_threads == 1 and r.sampling.threads <= 8, r.sampling.threads
    # both libraries built in each process, their loops interleaved: the ratio is paired
    (group,) = data.groups
    assert group.cases == ["cupy", "torch"] and group.paired and group.processes == 2
    (pair,) = dispatch.analyse_dir(out).pairs
    assert pair.timing.paired and pair.timing.units == 2 and pair.timing.ratio > 0


def test_cuda_stacks_reach_cublas(gpu_run):
    out, data = gpu_run
    for label in ("cupy", "torch"):
        assert data.results[label].samples > 50
        text = (out / f"{label}.folded").read_text()
        assert "cublas" in text.lower(), label
        for s in folded.read(out / f"{label}.folded"):
            assert "synchronize" not in folded.frame_function(s.frames[0])


def test_the_last_case_counts_before_its_turn_and_cupti_stays_out_of_its_stacks(gpu_run):
    """torch, the last case profiled, was given its job while cupy was sampled (a 5 s window: profiling.
    COUNT_FIRST_SECONDS) and ran its cProfile and counted loops before its turn (the order itself is
    tests/test_spares.py's, on the CPU): its counts are whole, and CUPTI, detached after them, put no frame in the
    stacks sampled after it (left attached with its tracing off, it did: libcupti in torch's launch path, the H200,
    2026-12-04), nor in cupy's, whose count came after its sampling."""
    out, data = gpu_run
    for label in ("cupy", "torch"):
        counts = data.results[label].profile.counts
        assert counts is not None and counts.tracer and counts.tracer.startswith("cupti-python"), label
        # one kernel and one launch a step, whichever order the process counted in
        assert counts.total("kernel") == 1 and counts.total("api") >= 1, (label, counts.tallies)
        assert not any("detached" in line for line in counts.missing), counts.missing
        assert "cupti" not in (out / f"{label}.folded").read_text().lower(), label


def test_gpu_bound_shape_samples_at_a_host_bound_shape(cli, tmp_path):
    out = tmp_path / "big"
    proc = cli("compare", "--libs", "torch", "--shape", "8192,8192,8192", "--iters", "50", "--warmup", "5",
               "--repeats", "1", "--processes", "2", "--no-sample", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    r = rundir.load(out).results["torch"]
    assert r.timing.host_bound is False and r.timing.gpu_us_per_call > r.timing.cpu_us_per_call
    assert r.sample_shape == [1024, 1024, 1024] and "not host-bound" in r.sample_shape_reason
    assert r.sample_timing.shape == [1024, 1024, 1024] and r.at_sample_shape is r.sample_timing
    assert r.sample_timing.cpu_us_per_call > 0 and r.sample_timing.calls >= 50
    # the slow GPU-bound loop is timed in the first process only; every process times the sample shape
    assert len(r.timing.processes) == 1 and len(r.sample_timing.processes) == 2
    assert r.profile.calls == r.sample_timing.calls  # the profiled loop runs as many calls as the timed one


@pytest.mark.parametrize("label", ["cupy", "torch", "cublas", "torch-graph", "cupy-graph"])
def test_builtin_gpu_cases_compute_the_product(label):
    """Each CUDA case, floors included, really computes out = a @ b (float32, so the check is tight)."""
    import numpy as np

    from flametool.workload import builtins

    factory = builtins.factories()[builtins.BUILTIN[label].factory]
    step, sync = factory(96, 64, 32, "float32", "cuda:0")
    (a, b), out = step.operands, step.out
    out.fill_(0) if hasattr(out, "fill_") else out.fill(0)
    step()
    sync()
    host = (lambda x: x.cpu().numpy()) if hasattr(out, "cpu") else (lambda x: x.get())
    assert np.allclose(host(out), host(a) @ host(b), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("order", [("cupy", "torch"), ("torch", "cupy")])
def test_second_library_copies_the_first_ones_operands_on_the_device(order):
    """Built one after the other in a process, the second library copies the operands from the first's device copy
    (inputs.on_device), and each holds the host's bytes exactly; a new shape forgets the copies."""
    import numpy as np

    from flametool.measure.child.building import _cupy_strided_get, fingerprint
    from flametool.workload import builtins, inputs

    factories = builtins.factories()
    made = {}
    for label in order:
        made[label] = factories[builtins.BUILTIN[label].factory](48, 40, 24, "float16", "cuda:0")
    host_a, host_b = inputs.host_operands(48, 40, 24, "float16")
    for label, (step, _) in made.items():
        a, b = step.operands
        for dev, host in ((a, host_a), (b, host_b)):
            got = dev.cpu().numpy() if hasattr(dev, "cpu") else dev.get()
            assert got.tobytes() == host.tobytes(), label
    first_a = made[order[0]][0].operands[0]
    assert inputs.on_device(host_a, "cuda:0") is first_a  # the first one's copy is the one kept
    assert fingerprint(made["cupy"][0]).fingerprint == fingerprint(made["torch"][0]).fingerprint
    # the strided read of a cupy array (cudaMemcpy2D) reads what cupy's own strided copy reads
    cupy_a = made["cupy"][0].operands[0]
    for stride in (1, 7, 1000, 1920, 5000):
        assert _cupy_strided_get(cupy_a, stride).tobytes() == cupy_a.reshape(-1)[::stride].get().tobytes(), stride
    # to_cupy (a user's case, a workload) may write what it is given: nothing it makes is shared
    from flametool.workload import libraries

    other = np.arange(12, dtype=np.float16)
    libraries.to_cupy(other)
    assert inputs.on_device(other, "cuda:0") is None
    inputs.host_operands(8, 8, 8, "float16")
    assert inputs.on_device(host_a, "cuda:0") is None
    assert np.array_equal(host_a, inputs._make(48, 40, 24, "float16")[0])


def test_floors_run_as_cases(cli, tmp_path):
    out = tmp_path / "floors"
    proc = cli("compare", "--libs", "cublas,torch-graph,cupy-graph", "--shape", "1024,1024,1024", "--iters", "1000",
               "--repeats", "2", "--processes", "2", "--sample-seconds", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    results = rundir.load(out).results
    assert results["torch-graph"].ops_per_step == results["cupy-graph"].ops_per_step == 100
    assert results["cublas"].ops_per_step == 1
    for r in results.values():
        assert r.error is None and r.timing.cpu_us_per_call > 0 and r.timing.gpu_us_per_call > 0
        assert r.at_sample_shape.calls >= 1000 and r.profile.calls >= 1000
        assert r.sampling.complete and r.sampling.total_samples > 0
    # a replayed graph leaves the host idle in sync() (few samples land in step()); cublas is all host work
    assert results["cublas"].samples > 0.5 * results["cublas"].sampling.total_samples
    for label in ("torch-graph", "cupy-graph"):
        s = results[label].sampling
        # no lower rate for a GPU-bound loop (what the summary would suggest)
        assert perturbation.suggest_rate(s.rate_hz, results[label].profile.slowdown, s.behind, perturbation.loop_share(s)) is None


def test_second_device_is_used_and_named(cli, tmp_path):
    from flametool.measure import machine

    if machine.cuda_device_count() < 2:
        pytest.skip("needs two CUDA devices")
    runs = {}
    for device in ("cuda:0", "cuda:1"):
        out = tmp_path / device.replace(":", "")
        proc = cli("compare", "--device", device, "--libs", "cupy,torch", "--shape", "1024,1024,1024",
                   "--iters", "500", "--repeats", "1", "--processes", "1", "--no-sample", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        runs[device] = rundir.load(out)
    for label in ("cupy", "torch"):
        r0, r1 = runs["cuda:0"].results[label], runs["cuda:1"].results[label]
        assert r1.device == "cuda:1" and r1.device_info.device_index == 1 and r1.device_name
        assert r1.timing.gpu_us_per_call > 0
        assert r0.device_info.pci_bus_id != r1.device_info.pci_bus_id  # a different physical GPU, not device 0 twice


def test_sweep_on_the_gpu_finds_each_crossover(cli, tmp_path):
    """cupy and torch from a size the launch dwarfs to one the GPU needs milliseconds for: host-bound at the
    smallest, GPU-bound at the largest, so each has a crossover between; the wall time follows the GPU there."""
    out = tmp_path / "sweep"
    proc = cli("sweep", "--libs", "cupy,torch", "--sizes", "64,1024,8192", "--processes", "2", "--repeats", "2",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    a = dispatch.analyse_dir(out)
    for label in ("cupy", "torch"):
        small, _, large = a.curves[label]
        assert all(p.cpu_us and p.gpu_us and p.wall_us and p.processes == 2 for p in a.curves[label])
        assert small.host_bound and not large.host_bound
        assert 64 < a.crossovers[label].size < 8192, a.crossovers[label].text
        assert large.wall_us >= 0.9 * large.gpu_us  # a program running these back to back waits on the GPU
    (pair,) = a.pairs
    assert pair.paired and all(p.wall.units == 2 for p in pair.points)
    # at 8192^3 both wait on the same GEMM: their wall times agree within 10%
    assert 0.9 < pair.points[-1].wall.ratio < 1.1
    assert "<polyline" in (out / "report.html").read_text()


def test_a_spare_opens_its_cuda_context_before_its_job_when_told(tmp_path):
    """A spare for cupy and torch, told to open (Spare.open: it runs next) but given no job, has its CUDA context on
    the device once its imports are done (child/preload.open_device): the GPU lists its pid among its compute
    processes. (Which spares are told is tests/test_spares.py's, on the CPU; the seconds it saves a timing process
    are benchmarks/setup_split.py's and compare_floor.py's to say.)"""
    import shutil
    import subprocess
    import time

    from flametool.measure import runner, spawn
    from flametool.workload import builtins

    if shutil.which("nvidia-smi") is None:
        pytest.skip("needs nvidia-smi to list the GPU's processes")
    specs = [builtins.builtin("cupy"), builtins.builtin("torch")]
    config = runner.Config(cases=specs, device="cuda:0", shape=[1024, 1024, 1024],
                           dtypes={s.label: "float16" for s in specs}, out=tmp_path, spares=True)
    spare = spawn.Spare.start(specs, config, tmp_path / "spare.log")
    spare.open()
    try:
        pids: list[str] = []
        deadline = time.monotonic() + 90  # torch's import took 4-6 s on the H200 host; a loaded host more
        while time.monotonic() < deadline and str(spare.proc.pid) not in pids:
            assert spare.proc.poll() is None, (tmp_path / "spare.log").read_text()
            listed = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                                    capture_output=True, text=True, timeout=30)
            pids = listed.stdout.split()
            time.sleep(0.5)
        assert str(spare.proc.pid) in pids, pids
    finally:
        spare.stop()
