"""`flametool compare --device cpu`, for real: child processes, cProfile and py-spy --native."""

import json
import os
import pstats
import statistics
from pathlib import Path

import pytest

from flametool import rundir, runner, stacks

CASES = Path(__file__).parent / "cases" / "user_cases.py"


@pytest.fixture(scope="module")
def run(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "cpu"
    proc = cli("compare", "--device", "cpu", "--case", f"{CASES}:add_case", "--iters", "200", "--repeats", "2",
               "--sample-seconds", "2", "--rate", "200", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, proc, json.loads((out / "run.json").read_text())


def test_run_json_contract(run):
    out, _, data = run
    assert data["schema"] == rundir.SCHEMA and data["complete"] is True
    assert list(data["results"]) == ["numpy", "torch", "add_case"]
    cfg = data["config"]
    assert cfg["device"] == "cpu" and cfg["shape"] == [64, 64, 64] and cfg["iters"] == 200 and cfg["repeats"] == 2
    assert cfg["dtypes"] == {"numpy": "float32", "torch": "float32", "add_case": "float32"}
    env = data["env"]
    for key in ("python", "os", "cpu", "gpu", "versions"):
        assert key in env
    assert env["versions"]["torch"] and env["versions"]["numpy"] and env["versions"]["py-spy"]
    for label, r in data["results"].items():
        assert r["error"] is None
        assert r["cpu_us_per_call"] > 0 and r["gpu_us_per_call"] is None
        assert len(r["cpu_us_per_call_repeats"]) == 2
        assert sorted(r["cpu_us_per_call_repeats"])[0] <= r["cpu_us_per_call"] <= sorted(r["cpu_us_per_call_repeats"])[-1]
        assert r["host_bound"] is True and r["dtype"] == "float32" and r["shape"] == [64, 64, 64]
        assert r["sample_shape"] == [64, 64, 64] and r["sample_shape_reason"]
        assert r["cprofile_us_per_call"] > 0 and r["cprofile_calls"] >= 200
        assert r["rate_hz"] == 200 and r["sampled_us_per_call"] > 0
        assert r["sampling"]["complete"] is True and r["sampling"]["exit_code"] == 0
        # the child's threads when py-spy attached: the main thread at least, and torch starts its pool
        assert r["sampling"]["threads"] >= 1


def test_pool_threads_reach_the_child(cli, tmp_path, run):
    # by default on the CPU the pools are left as the environment says (they do the work there)
    assert run[2]["config"]["pool_threads"] is None
    out = tmp_path / "pools"
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--pool-threads", "1", "--iters", "50",
               "--repeats", "1", "--sample-seconds", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "run.json").read_text())
    assert data["config"]["pool_threads"] == 1
    # numpy's BLAS pool of one is the main thread itself: py-spy stops one thread per sample
    assert data["results"]["numpy"]["sampling"]["threads"] == 1


def test_processes_pool_the_timed_loops(cli, tmp_path):
    out = tmp_path / "three"
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--processes", "3", "--repeats", "2", "--iters", "100",
               "--no-sample", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "median of 3 processes' timed loops" in proc.stderr + proc.stdout
    r = json.loads((out / "run.json").read_text())["results"]["numpy"]
    assert r["processes"] == 3 and len(r["cpu_us_per_call_processes"]) == 3
    # every loop of every process is one reading; the figure is their median, at both shapes
    assert len(r["cpu_us_per_call_repeats"]) == 6 and r["cpu_us_per_call"] == statistics.median(r["cpu_us_per_call_repeats"])
    assert len(r["sample_timing"]["cpu_us_per_call_repeats"]) == 6
    # the first process's own median is among them, and only it profiled
    assert r["cpu_us_per_call_processes"][0] == statistics.median(r["cpu_us_per_call_repeats"][:2])
    assert sorted(p.name for p in out.iterdir()) == ["numpy.prof", "report.html", "run.json"]
    assert pstats.Stats(str(out / "numpy.prof")).total_calls > 0


def test_child_env_sets_every_pool():
    env = runner.child_env(2)
    assert all(env[v] == "2" for v in runner.POOL_THREAD_VARS)
    assert all(runner.child_env(None).get(v) == os.environ.get(v) for v in runner.POOL_THREAD_VARS)


def test_prof_files_load_in_pstats(run):
    out, _, data = run
    for label in data["results"]:
        stats = pstats.Stats(str(out / f"{label}.prof"))
        functions = {name for (_, _, name) in stats.stats}
        assert "active_loop" in functions and "step" in functions
        # only the active loop was profiled: no set-up, no factory, no sync
        assert not any("factory" in f or f in ("torch_mm", "numpy_matmul", "add_case") for f in functions)


def test_folded_holds_only_stacks_inside_step(run):
    out, _, data = run
    for label, r in data["results"].items():
        parsed = stacks.read(out / f"{label}.folded")
        assert sum(s.count for s in parsed) == r["samples"] == r["sampling"]["kept_samples"]
        # 2 s at 200 Hz: py-spy on this machine keeps up, so most of ~400 samples land in the loop
        assert r["samples"] > 100
        total = r["sampling"]["total_samples"]
        assert total == r["samples"] + r["sampling"]["loop_samples"] + r["sampling"]["outside_samples"]
        # the step() frame opens the stack; py-spy now and then catches the interpreter making the call,
        # an unsymbolized address (`0x7f.. (libc.so.6)`) between the loop and step(), or alone
        addresses_only = 0
        for s in parsed:
            names = [stacks.frame_function(f) for f in s.frames]
            if all(n.startswith("0x") for n in names):
                addresses_only += s.count
                continue
            assert names[0].endswith("step") or (names[0].startswith("0x") and names[1].endswith("step")), s.frames[:2]
            assert not any(n in ("<module>", "active_loop", "sampled_phase", "run") for n in names)
        assert addresses_only <= 0.05 * r["samples"], (label, addresses_only)


def test_native_frames_are_sampled(run):
    out, _, _ = run
    text = (out / "torch.folded").read_text()
    assert "THPVariable_mm" in text and "libtorch" in text


def test_summary_printed(run):
    out, proc, _ = run
    assert "numpy" in proc.stdout and "torch" in proc.stdout and "add_case" in proc.stdout
    assert f"run directory: {out}" in proc.stdout.replace("\n", "")


def test_existing_run_is_never_overwritten(run, cli):
    out, _, _ = run
    before = (out / "run.json").read_bytes()
    proc = cli("compare", "--device", "cpu", "--out", str(out))
    assert proc.returncode == 2
    assert "already exists" in proc.stderr and "Traceback" not in proc.stderr
    assert (out / "run.json").read_bytes() == before


def test_no_sample_runs_timings_and_cprofile_only(cli, tmp_path):
    out = tmp_path / "nosample"
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--no-sample", "--repeats", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "run.json").read_text())["results"]["numpy"]
    assert r["samples"] is None and r["sampling"] is None and r["cpu_us_per_call"] > 0
    assert (out / "numpy.prof").exists() and not (out / "numpy.folded").exists()
