"""Faults of the machine, not of the tool: a missing or refused py-spy, one that hangs, crashes or falls
behind, libraries that are missing or built for another CUDA, out of GPU memory. Each ends in one clear
line and a non-zero exit, keeps what was measured, and leaves no process behind."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import faultkit as fk
from flametool.analyse import dispatch
from flametool.workload import builtins, cases
from flametool.run import rundir
from flametool.measure import machine, explain, runner, sampler
from flametool.errors import CaseError
from flametool.run.record import Run

USER = fk.CASES / "user_cases.py"
FAULTS = fk.CASES / "fault_cases.py"
QUICK = ["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--iters", "50", "--warmup", "5",
         "--processes", "1", "--sample-seconds", "0.5"]


# --- py-spy missing or refused ------------------------------------------------------------------------------

def test_pyspy_missing_fails_before_anything_starts(tmp_path):
    python, environ = fk.no_pyspy_python(tmp_path / "bin")
    out = tmp_path / "run"
    proc = fk.run([*QUICK, "--out", str(out)], environ, python=python)
    assert proc.returncode == 2
    line = fk.error_line(proc)
    assert line == "flametool: py-spy is not installed: pip install py-spy (or run with --no-sample)"
    assert not out.exists()  # nothing started


def test_no_sample_runs_timings_and_cprofile_without_pyspy(tmp_path):
    """--no-sample: timings and cProfile only, no py-spy run or needed (none is on the PATH here)."""
    python, environ = fk.no_pyspy_python(tmp_path / "bin")
    out = tmp_path / "run"
    proc = fk.run([*QUICK, "--no-sample", "--out", str(out)], environ, python=python)
    assert proc.returncode == 0, proc.stderr
    r = rundir.load(out).results["numpy"]
    assert r.timing.cpu_us_per_call > 0 and r.profile.cprofile_us_per_call > 0
    assert r.samples is None and r.sampling is None and r.profile.files == {"prof": "numpy.prof"}
    assert (out / "numpy.prof").is_file() and not (out / "numpy.folded").exists()


def test_flametool_pyspy_must_name_an_executable(tmp_path):
    proc = fk.run([*QUICK, "--out", str(tmp_path / "run")], fk.env(FLAMETOOL_PYSPY=str(tmp_path / "nope")))
    assert proc.returncode == 2
    assert fk.error_line(proc) == f"flametool: FLAMETOOL_PYSPY={tmp_path / 'nope'}: not an executable file"


def check_refused(proc: subprocess.CompletedProcess, out: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    line = fk.error_line(proc)
    assert line.startswith("flametool: case 'numpy': py-spy was not allowed to attach (ptrace refused): ")
    for fix in ("run as root", "/proc/sys/kernel/yama/ptrace_scope", "--no-sample"):
        assert fix in line
    data = rundir.load(out)
    # the case's timings and cProfile are kept; the run stopped there (every case would be refused): the
    # next case was timed beside it, but never profiled
    assert data.complete is False and list(data.results) == ["numpy", "add_case"]
    r = data.results["numpy"]
    assert r.timing.cpu_us_per_call > 0 and r.profile.cprofile_us_per_call > 0
    assert r.sampling.complete is False and r.sampling.refused is True
    assert "ptrace refused" in r.sampling.error
    later = data.results["add_case"]
    assert later.timing.cpu_us_per_call > 0 and later.profile is None and later.error is None


def test_pyspy_refused_by_the_kernel(tmp_path):
    """The real py-spy, run as another user than the child, so that the kernel really refuses ptrace."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run py-spy as another user")
    folder = Path(tempfile.mkdtemp(prefix="flametool-refused-"))  # tmp_path is not reachable for 'nobody'
    try:
        folder.chmod(0o755)
        copy = folder / "py-spy-real"
        shutil.copy2(fk.real_pyspy(), copy)
        copy.chmod(0o755)
        wrapper = folder / "py-spy"
        wrapper.write_text(f'#!/bin/sh\nexec {setpriv} --reuid=65534 --regid=65534 --clear-groups {copy} "$@"\n')
        wrapper.chmod(0o755)
        out = tmp_path / "run"
        proc = fk.run([*QUICK, "--case", f"{USER}:add_case", "--out", str(out)], fk.env(FLAMETOOL_PYSPY=str(wrapper)))
        check_refused(proc, out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_pyspy_refused_message_as_py_spy_prints_it(tmp_path):
    _, environ = fk.fake_pyspy(tmp_path / "fake", "refused")
    out = tmp_path / "run"
    proc = fk.run([*QUICK, "--case", f"{USER}:add_case", "--out", str(out)], fk.env(**environ))
    check_refused(proc, out)


# --- py-spy that hangs, crashes or falls behind -----------------------------------------------------------

def test_pyspy_that_hangs_is_stopped_and_the_run_kept(tmp_path):
    _, environ = fk.fake_pyspy(tmp_path / "fake", "hang")
    # 0.2 s past the sampling for py-spy to finish, then 0.2 s after its SIGINT: this py-spy never samples
    environ = fk.env(**environ, FLAMETOOL_PYSPY_TIMEOUT="0.2")
    out = tmp_path / "run"
    proc = fk.run([*QUICK, "--case", f"{USER}:add_case", "--sample-seconds", "0.5", "--out", str(out)], environ)
    assert proc.returncode == 1, proc.stderr
    data = rundir.load(out)
    assert data.complete is True and list(data.results) == ["numpy", "add_case"]
    for label, r in data.results.items():
        assert r.error is None and r.timing.cpu_us_per_call > 0 and r.profile.cprofile_us_per_call > 0
        assert r.sampling.complete is False and r.samples == 0
        assert r.sampling.error.startswith("py-spy did not finish within 1 s")  # 1 s of sampling and 0.2 s
    errors = [l for l in proc.stderr.splitlines() if l.startswith("flametool: ")]
    assert errors == [f"flametool: case '{l}': sampling incomplete: {data.results[l].sampling.error}"
                      for l in ("numpy", "add_case")]
    assert "numpy: sampling incomplete: py-spy did not finish" in proc.stdout.replace("\n", "")
    # it ignored SIGINT and SIGTERM: it was killed, with nothing left
    assert fk.none_left(environ[fk.TAG]) == []


def test_pyspy_that_crashes_keeps_what_it_wrote(tmp_path):
    _, environ = fk.fake_pyspy(tmp_path / "fake", "crash")
    out = tmp_path / "run"
    proc = fk.run([*QUICK, "--libs", "", "--case", f"{USER}:add_case", "--sample-seconds", "0.5", "--out", str(out)],
                  fk.env(**environ))
    assert proc.returncode == 1, proc.stderr
    r = rundir.load(out).results["add_case"]
    s = r.sampling
    assert s.complete is False and s.exit_code == 139
    assert s.error == "py-spy crashed (SIGSEGV, exit code 139); kept the 9 samples it wrote"
    # the line cut short is dropped; the whole ones are kept and filtered as usual
    assert r.samples == 7 and s.loop_samples == 2
    assert (out / "add_case.folded").read_text() == "step (tests/cases/user_cases.py:14);add (numpy/_core/umath.so) 7\n"
    assert fk.error_line(proc).startswith("flametool: case 'add_case': sampling incomplete: py-spy crashed (SIGSEGV")


def test_pyspy_that_falls_behind_is_flagged(tmp_path):
    _, environ = fk.fake_pyspy(tmp_path / "fake", "behind")
    out = tmp_path / "run"
    proc = fk.run([*QUICK, "--sample-seconds", "0.5", "--out", str(out)], fk.env(**environ))
    assert proc.returncode == 0, proc.stderr
    r = rundir.load(out).results["numpy"]
    s = r.sampling
    # flagged, then sampled again at half the rate, which kept up; the first attempt is on record
    assert "py-spy fell 1.5 s behind at 100 Hz; sampling again at 50 Hz" in proc.stderr
    assert s.rate_hz == 50 and s.complete is True and s.behind is False and s.behind_seconds == 0 and r.samples > 0
    [first] = s.earlier
    assert first.rate_hz == 100 and first.behind_seconds == 1.52  # it fell behind
    assert json.loads((out / "run.json").read_text())["results"]["numpy"]["profile"]["sampling"]["earlier_attempts"] == [
        first.to_json()]


def test_pyspy_timeout_setting_is_checked(tmp_path):
    proc = fk.run([*QUICK, "--out", str(tmp_path / "run")], fk.env(FLAMETOOL_PYSPY_TIMEOUT="soon"))
    assert proc.returncode == 2
    assert fk.error_line(proc) == "flametool: FLAMETOOL_PYSPY_TIMEOUT='soon': expected seconds"
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("lines, code, words", [
    (["Error: Permission Denied: Try running again with elevated permissions by going 'sudo env \"PATH=$PATH\" !!'"], 1,
     "not allowed to attach (ptrace refused)"),
    (["Error: Operation not permitted (os error 1)"], 1, "not allowed to attach"),
    ([], -11, "py-spy crashed (SIGSEGV, exit code -11)"),
    (["thread 'main' panicked"], 134, "py-spy crashed (SIGABRT, exit code 134): thread 'main' panicked"),
    (["Error: Failed to find python version from target process"], 1,
     "py-spy exited with code 1: Error: Failed to find python version from target process"),
    # RUST_BACKTRACE=1: a backtrace follows the error, whose last line ('7: main') was taken for py-spy's last words
    (["py-spy> Sampling process 100 times a second for 2 seconds. Press Control-C to exit.", "",
      "Error: No space left on device (os error 28)", "", "Stack backtrace:",
      "   0: anyhow::error::<impl core::convert::From<E> for anyhow::Error>::from",
      "   1: py_spy::flamegraph::Flamegraph::write_raw", "   6: std::rt::lang_start_internal", "   7: main"], 1,
     "py-spy exited with code 1: Error: No space left on device (os error 28) (py-spy writes its stacks in the "
     "temporary directory, "),
    (["Error: Failed to open process", "", "Caused by:", "    No such process (os error 3)", "",
      "Stack backtrace:", "   0: main"], 1,
     "py-spy exited with code 1: Error: Failed to open process Caused by: No such process (os error 3)"),
])
def test_explain_pyspy_failures(lines, code, words):
    assert words in sampler.explain_failure(lines, code)


# --- libraries and devices ---------------------------------------------------------------------------------

def test_no_such_cuda_device(capsys, tmp_path):
    from flametool.commands import main

    gpus = machine.cuda_device_count()
    out = tmp_path / "run"
    assert main.main(["compare", "--device", f"cuda:{gpus}", "--libs", "torch", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"flametool: --device cuda:{gpus}: " + (f"only {gpus} CUDA device(s) found" if gpus else "no CUDA device found")
    assert not out.exists()


def run_direct(tmp_path: Path, labels: list[str], device: str = "cuda:0", keep_going: bool = True,
               user: list[str] = ("add_case",), user_file: Path = USER, processes: int = 1, **config) -> Run:
    """The runner itself, past the command line's own device check: what a child says when its library
    cannot run on this machine."""
    specs = [builtins.builtin(l) for l in labels] + [cases.user_case(f"{user_file}:{f}") for f in user]
    cfg = runner.Config(cases=specs, device=device, shape=[8, 8, 8], dtypes={s.label: "float32" for s in specs},
                        iters=20, warmup=2, repeats=1, sample=False, keep_going=keep_going, out=tmp_path / "run",
                        processes=processes, max_processes=processes, **config)
    _, data = runner.compare(cfg, ["flametool", "test"], lambda *a: None)
    return data


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="cupy is installed here")
def test_cupy_not_installed_and_keep_going(tmp_path):
    data = run_direct(tmp_path, ["cupy"])
    assert data.results["cupy"].error == "cupy is not installed (pip install flametool[cuda12] or [cuda13])"
    assert data.results["add_case"].timing.cpu_us_per_call > 0 and data.complete is True
    assert data.results["add_case"].profile is not None  # the other case ran to the end


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="cupy is installed here")
def test_cupy_not_installed_stops_the_run_without_keep_going(tmp_path):
    with pytest.raises(CaseError) as caught:
        run_direct(tmp_path, ["cupy"], keep_going=False)
    assert str(caught.value).startswith("case 'cupy': cupy is not installed (pip install flametool[cuda12] or [cuda13])")
    assert caught.value.exit_code == 1
    data = rundir.load(tmp_path / "run")
    # the run stopped after the timing: the other case, timed beside it, was never profiled
    assert data.complete is False and data.results["add_case"].profile is None


def fake_cupy(folder: Path, body: str) -> dict[str, str]:
    """A 'cupy' package that fails as a CuPy for another CUDA does; put first on the child's path."""
    (folder / "cupy").mkdir(parents=True)
    (folder / "cupy" / "__init__.py").write_text(body)
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)}


# what `import cupy` raises when the wheel's CUDA libraries cannot be loaded (cupy/__init__.py's banner)
CUPY_BANNER = '''raise ImportError("""
================================================================
Failed to import CuPy.

If you installed CuPy via wheels (cupy-cudaXXX or cupy-rocm-X-X), make sure that the package matches with the version of CUDA or ROCm installed.

Original error:
  ImportError: libcudart.so.12: cannot open shared object file: No such file or directory
================================================================
""")
'''
# what CuPy's runtime raises when the driver is older than the CUDA the wheel was built for
OLD_DRIVER = '''
class CUDARuntimeError(RuntimeError):
    pass


class cuda:
    class Device:
        def __init__(self, index):
            pass

        def use(self):
            raise CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
'''


@pytest.mark.parametrize("body, expected", [
    (CUPY_BANNER, "cupy cannot be loaded (ImportError: libcudart.so.12: cannot open shared object file: No such file or "
                  "directory): the installed CuPy is probably built for another CUDA; install the one for the CUDA "
                  "version nvidia-smi shows (pip install flametool[cuda12] or [cuda13])"),
    (OLD_DRIVER, "the NVIDIA driver is older than the CUDA that cupy was built for (cudaErrorInsufficientDriver: CUDA "
                 "driver version is insufficient for CUDA runtime version): install a cupy build for the CUDA version "
                 "nvidia-smi shows (pip install flametool[cuda12] or [cuda13]), or update the driver"),
])
def test_cupy_for_another_cuda(tmp_path, monkeypatch, body, expected):
    for key, value in fake_cupy(tmp_path / "fake", body).items():
        monkeypatch.setenv(key, value)
    data = run_direct(tmp_path, ["cupy"])
    assert data.results["cupy"].error == expected
    assert data.results["add_case"].error is None and data.results["add_case"].timing.cpu_us_per_call > 0


def test_torch_without_cuda(tmp_path):
    import torch

    if torch.version.cuda is not None:
        pytest.skip("this torch is built with CUDA")
    data = run_direct(tmp_path, ["torch"])
    assert data.results["torch"].error == (
        f"torch {torch.__version__} is built without CUDA: install a CUDA build of torch "
        "(https://pytorch.org/get-started/locally/), or use --device cpu")
    assert data.results["add_case"].timing.cpu_us_per_call > 0


def test_out_of_gpu_memory_names_the_shape_and_the_memory(tmp_path):
    specs = [cases.user_case(f"{FAULTS}:oom_case")]
    cfg = runner.Config(cases=specs, device="cuda:0", shape=[65536, 24576, 12288], dtypes={"oom_case": "float16"},
                        iters=20, warmup=2, repeats=1, processes=1, max_processes=1, sample=False, out=tmp_path / "run")
    with pytest.raises(CaseError) as caught:
        runner.compare(cfg, ["flametool", "test"], lambda *a: None)
    message = str(caught.value)
    assert message.startswith(
        "case 'oom_case': out of GPU memory at shape 65536,24576,12288 float16: a, b and out need 5.1 GiB "
        "(CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 139.81 GiB of which "
        "1.23 GiB is free); try a smaller shape (--shape; a sweep's --sizes), or free the GPU (nvidia-smi lists what holds its memory)")
    assert "\n" not in message


def test_out_of_memory_through_the_command_line(tmp_path):
    proc = fk.run(["compare", "--device", "cpu", "--libs", "", "--no-sample", "--shape", "16384,16384,16384",
                   "--processes", "1", "--case", f"{FAULTS}:oom_case", "--out", str(tmp_path / "run")])
    assert proc.returncode == 1
    line = fk.error_line(proc)
    assert line.startswith("flametool: case 'oom_case': out of memory at shape 16384,16384,16384 float32: "
                           "a, b and out need 3.0 GiB (CUDA out of memory. Tried to allocate 1.50 GiB")
    assert line.endswith("; try a smaller shape (--shape; a sweep's --sizes) (finished cases kept in " + str(tmp_path / "run") + ")")


@pytest.mark.parametrize("exc, device, expected", [
    (MemoryError(), "cpu", "out of memory: an allocation failed in the case's own code (MemoryError); a, b and out "
                           "at shape 2,3,4 float64 need only 208 bytes, so the shape is not what ran out"),
    (MemoryError("Unable to allocate 1.00 EiB for an array with shape (1152921504606846976,) and data type uint8"),
     "cpu", "out of memory: an allocation of 1.0 EiB failed in the case's own code (Unable to allocate 1.00 EiB"),
    (RuntimeError("Out of memory allocating 6,442,450,944 bytes (allocated so far: 0 bytes)."), "cuda:0",
     "out of GPU memory: an allocation of 6.0 GiB failed in the case's own code"),
    (ModuleNotFoundError("No module named 'torch'", name="torch"), "cpu", "torch is not installed (pip install torch)"),
    (ModuleNotFoundError("No module named 'cupy_backends.cuda'", name="cupy_backends.cuda"), "cuda:0",
     "cupy is not installed (pip install flametool[cuda12] or [cuda13])"),
    (ModuleNotFoundError("No module named 'jax'", name="jax"), "cpu",
     'jax is not installed (pip install jax; on CUDA "jax[cuda13]" or "jax[cuda12]")'),
    (ModuleNotFoundError("No module named 'mylib'", name="mylib"), "cpu",
     "module 'mylib' is not installed (the case imports it)"),
    (RuntimeError("CUDA error: no CUDA-capable device is detected"), "cuda:1", "sees no CUDA device cuda:1"),
    (ValueError("shapes (2,3) and (4,5) not aligned"), "cpu", None),
])
def test_known_faults(exc, device, expected):
    got = explain.known_fault(exc, [2, 3, 4], "float64", device)
    assert got == expected if expected is None or not got else expected in got


# --- output and bad input ----------------------------------------------------------------------------------

def test_error_text_is_never_read_as_markup(tmp_path):
    proc = fk.run(["compare", "--device", "cpu", "--libs", "", "--no-sample", "--processes", "1",
                   "--case", f"{FAULTS}:markup_case", "--out", str(tmp_path / "run")])
    assert proc.returncode == 1
    assert "[/bold] <b>bold</b> [red]unclosed \"quoted\" 'x'" in fk.error_line(proc)


def test_out_that_cannot_be_created(tmp_path):
    (tmp_path / "file").write_text("")
    proc = fk.run([*QUICK, "--no-sample", "--out", str(tmp_path / "file" / "run")])
    assert proc.returncode == 2
    assert fk.error_line(proc).startswith(f"flametool: {tmp_path / 'file' / 'run'}: cannot create the run directory (")
    proc = fk.run([*QUICK, "--no-sample", "--out", str(tmp_path / "file")])
    assert proc.returncode == 2
    # a file is said to be one (issue 41), not "already exists and is not empty"
    assert fk.error_line(proc) == f"flametool: {tmp_path / 'file'}: a file, not a folder; choose another --out"


def test_out_that_is_an_empty_folder_is_used(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    proc = fk.run([*QUICK, "--no-sample", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert rundir.load(out).complete is True


# --- a case that cannot share a process ----------------------------------------------------------------------

def test_a_case_that_cannot_be_built_beside_the_others_is_timed_alone(tmp_path):
    """Paired timing builds every case in each process; a case that fails there but works alone is timed in
    processes of its own, run.json says why, and the run succeeds. The case that takes the process for itself is
    one of the tests' (claims_the_process, as torch can), not torch: its import cost each of six processes 1 s."""
    out = tmp_path / "run"
    proc = fk.run(["compare", "--device", "cpu", "--libs", "", "--case", f"{FAULTS}:claims_the_process",
                   "--case", f"{FAULTS}:not_beside_a_claim",
                   # what is checked is who was timed with whom: two rounds (--repeats), no counted loop
                   "--processes", "2", "--repeats", "2", "--iters", "50", "--warmup", "5", "--no-sample",
                   "--no-count", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert not [l for l in proc.stderr.splitlines() if l.startswith("flametool: ")] and "Traceback" not in proc.stderr
    data = rundir.load(out)
    assert data.complete is True
    shared, alone = data.groups
    assert alone.cases == ["not_beside_a_claim"] and alone.paired is False and alone.processes == 2
    assert alone.reason == ("could not be built or run beside claims_the_process (factory not_beside_a_claim failed: "
                            "RuntimeError: another case has claimed this process); timed alone")
    r = data.results["not_beside_a_claim"]
    assert r.error is None and data.group_of("not_beside_a_claim") is alone
    # timed alone in each of its own processes, then profiled
    assert len(r.timing.processes) == 2 and r.timing.cpu_us_per_call > 0
    assert all(len(p.cpu_us) >= 2 and p.slots == list(range(len(p.cpu_us))) for p in r.timing.processes)
    assert r.profile is not None and r.profile.cprofile_calls > 0
    # the claiming case kept the shared processes for itself: alone there too, so not paired, and not said to be
    t = data.results["claims_the_process"]
    assert shared.cases == ["claims_the_process"] and shared.processes == 2 and data.group_of("claims_the_process") is shared
    assert shared.paired is False and not shared.reason.startswith("paired"), shared.reason
    assert t.error is None and len(t.timing.processes) == 2
    assert all(len(p.cpu_us) >= 2 and p.slots == list(range(len(p.cpu_us))) for p in t.timing.processes)
    # the comparison is not paired, and the summary and the page say why
    (pair,) = dispatch.analyse_dir(out).pairs
    assert pair.timing.paired is False and pair.timing.per_process_ratio == []
    assert f"not_beside_a_claim: {alone.reason}" in proc.stdout.replace("\n", "")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "could not be built or run beside claims_the_process" in html and "not paired" in html


def test_a_shared_process_that_dies_times_every_case_alone(tmp_path):
    """The shared timing process dies (a case ends it): every case is timed again in processes of its own,
    run.json says why, and no group in it still claims a pairing that measured nothing."""
    out = tmp_path / "run"
    proc = fk.run(["compare", "--device", "cpu", "--libs", "", "--case", f"{FAULTS}:claims_the_process",
                   "--case", f"{FAULTS}:exits_beside_a_claim",
                   "--processes", "2", "--repeats", "1", "--iters", "50", "--warmup", "5", "--no-sample",
                   "--no-count", "--out", str(out)])  # as above: who was timed with whom
    assert proc.returncode == 0, proc.stderr
    data = rundir.load(out)
    assert data.complete is True
    for label, other in (("claims_the_process", "exits_beside_a_claim"), ("exits_beside_a_claim", "claims_the_process")):
        r, group = data.results[label], data.group_of(label)
        assert r.error is None and r.timing.cpu_us_per_call > 0 and len(r.timing.processes) == 2
        assert group.cases == [label] and group.paired is False and group.processes == 2
        assert group.reason.startswith(f"the process shared with {other} failed (the child process exited with code 3 ")
        assert group.reason.endswith("; timed alone")
    # every group of run.json is the group of the cases it lists, and none is paired
    for index, group in enumerate(data.groups):
        assert not group.paired, group
        assert all(data.results[label].group == index for label in group.cases), (index, group)
    (pair,) = dispatch.analyse_dir(out).pairs
    assert pair.timing.paired is False


# --- out of memory at the shape of an op other than matmul -------------------------------------------------

NUMPY_TOO_LARGE = MemoryError("Unable to allocate 3.64 TiB for an array with shape (1000000000000,) and data "
                              "type float32")


@pytest.mark.parametrize("shape, shown", [([1_000_000_000_000], "1000000000000"),
                                          ([1_000_000, 1_000_000], "1000000,1000000")])
def test_out_of_memory_at_an_elementwise_shape_names_it(shape, shown):
    """`--op add --shape 1000000000000`, `--op copy --shape 1000000,1000000` (and a sweep's size of an FFT):
    the explanation read a shape as M,K,N and failed (not enough values to unpack)."""
    got = explain.known_fault(NUMPY_TOO_LARGE, shape, "float32", "cpu")
    assert got == (f"out of memory at shape {shown} float32: its arrays (at most a, b and out) need 10.9 TiB "
                   "(Unable to allocate 3.64 TiB for an array with shape (1000000000000,) and data type float32); "
                   "try a smaller shape (--shape; a sweep's --sizes)")
    # its own allocation beside small operands is the factory's, at any shape
    assert "failed in the case's own code" in explain.known_fault(MemoryError(), [64], "float32", "cpu")
