"""child's own pieces on hand-built steps (the real loops run in test_compare_cpu and test_sweep)."""

from __future__ import annotations

import gc
import time

from flametool.measure.child import loops


def test_warm_up_reads_the_rate_after_the_first_calls():
    """A step whose first call takes 0.5 s (a shape's set-up) and the others 1 ms: the rate the calls per
    loop are chosen from is the 1 ms one, not the average of all of them (50 ms). The bound leaves a loaded
    machine's 1 ms sleeps room (CI-like runs, 2026-12-04: 4.0 ms a call at four workers)."""
    calls = []

    def step():
        time.sleep(0.5 if not calls else 0.001)
        calls.append(1)

    per_call = loops.warm_up(step, lambda: None, 10)
    assert len(calls) == 10
    assert 0.001 <= per_call < 0.03, per_call


def test_warm_up_reads_the_rate_past_a_stall_in_its_timed_calls():
    """One call of the timed half stalls (the process lost a time slice to another): the rate is read off the
    part of the timed calls without it, not averaged with it (a third of 0.3 s a call in its part, 60 ms over
    the half)."""
    calls = []

    def step():
        calls.append(1)
        time.sleep(0.3 if len(calls) == 8 else 0.001)

    per_call = loops.warm_up(step, lambda: None, 10)
    assert len(calls) == 10
    assert 0.001 <= per_call < 0.03, per_call


def test_later_libraries_import_behind_the_first_and_a_case_waits_for_its_own(tmp_path):
    """preload_behind returns once the first library is imported; imported() waits for a later one, which is
    then whole (run in a fresh interpreter: the modules and the thread are the process's)."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "quickmod.py").write_text("DONE = True\n")
    (tmp_path / "slowmod.py").write_text("import time\ntime.sleep(0.6)\nDONE = True\n")
    script = f"""
import sys, time
sys.path[:0] = [{str(tmp_path)!r}, {str(Path(__file__).resolve().parent.parent)!r}]
from flametool.measure.child import preload
t0 = time.perf_counter()
preload.preload_behind(["quickmod", "slowmod"])
back = time.perf_counter() - t0
assert sys.modules["quickmod"].DONE
assert not getattr(sys.modules.get("slowmod"), "DONE", False), "slowmod imported before preload_behind returned"
preload.imported(["quickmod"])  # the first: no wait
assert time.perf_counter() - t0 < 0.4
preload.imported(["slowmod"])
waited = time.perf_counter() - t0
import slowmod
assert slowmod.DONE and waited >= 0.55, waited
print(f"{{back:.3f}} {{waited:.3f}}")
"""
    got = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    back, waited = map(float, got.stdout.split())
    assert back < 0.3 and waited >= 0.55


def test_a_built_in_case_is_known_as_built_in_to_the_child(monkeypatch):
    """The child starts a built-in case's operands and its library's import ahead (start_operands): a built-in
    case is one whose module is the one run.json names (flametool.cases), whichever module holds the code."""
    from flametool.measure.child import preload
    from flametool.measure.protocol import JobCase, ProfileJob
    from flametool.workload import builtins, inputs

    asked = []
    monkeypatch.setattr(inputs, "prefetch_shape", lambda shape, dtype, apart=False: asked.append((shape, dtype)))
    job = ProfileJob(device="cpu", iters=10, warmup=1, repeats=1, case=JobCase("numpy", builtins.builtin("numpy"), "float32"),
                     shape=[8, 8, 8])
    assert preload.start_operands(job) == ["numpy"] and asked == [([8, 8, 8], "float32")]


def test_a_spares_job_and_the_go_after_it_read_alike_when_they_come_in_one_read():
    """A spare reads its job as the first line of its stdin (entry.read_job); what came with it in the same read (the
    GO a child given its job ahead waits for, even the STOP of its sampled loop) is kept for the loops that read
    stdin next (loops.wait_go, the sampled loop's stop check), not lost with the job's line."""
    import subprocess
    import sys

    from flametool.measure.protocol import GO, STOP, JobCase, ProfileJob, encode_job
    from flametool.workload import builtins

    job = ProfileJob(device="cpu", iters=10, warmup=1, repeats=1, case=JobCase("numpy", builtins.builtin("numpy"),
                     "float32"), shape=[4, 4, 4], prof_path="x.prof", ahead=True)
    code = ("from flametool.measure.child import entry, loops; job = entry.read_job(); "
            "print(type(job).__name__, job.ahead, loops.wait_go(), loops._stop_requested())")
    got = subprocess.run([sys.executable, "-c", code], input=encode_job(job).encode() + b"\n" + GO + STOP,
                         capture_output=True, timeout=60, env=child_env())
    assert got.stdout.decode().split() == ["ProfileJob", "True", "True", "True"], got.stderr.decode()
    # a parent that closes the pipe instead of GO: no turn
    code = "from flametool.measure.child import entry, loops; entry.read_job(); print(loops.wait_go())"
    got = subprocess.run([sys.executable, "-c", code], input=encode_job(job).encode() + b"\n", capture_output=True,
                         timeout=60, env=child_env())
    assert got.stdout.decode().split() == ["False"], got.stderr.decode()


def test_a_spare_told_to_open_its_device_reads_its_job_after_it():
    """OPEN lines before a spare's job (spawn.Spare.open: make the CUDA context now) call read_job's on_open, each
    one; the job and the GO after it are read as without them; a parent that closes the pipe after OPEN gives no
    job."""
    import subprocess
    import sys

    from flametool.measure.protocol import GO, OPEN, JobCase, ProfileJob, encode_job
    from flametool.workload import builtins

    job = ProfileJob(device="cpu", iters=10, warmup=1, repeats=1, case=JobCase("numpy", builtins.builtin("numpy"),
                     "float32"), shape=[4, 4, 4], prof_path="x.prof", ahead=True)
    code = ("from flametool.measure.child import entry, loops; opened = []; "
            "job = entry.read_job(lambda: opened.append(1)); print(len(opened), type(job).__name__, loops.wait_go())")
    for given in (OPEN + encode_job(job).encode() + b"\n" + GO, OPEN + OPEN + encode_job(job).encode() + b"\n" + GO):
        got = subprocess.run([sys.executable, "-c", code], input=given, capture_output=True, timeout=60, env=child_env())
        assert got.stdout.decode().split() == [str(given.count(OPEN)), "ProfileJob", "True"], got.stderr.decode()
    got = subprocess.run([sys.executable, "-c", code], input=OPEN, capture_output=True, timeout=60, env=child_env())
    assert got.stdout.decode().split() == ["1", "NoneType", "False"], got.stderr.decode()


def child_env() -> dict:
    import os

    from flametool.measure import spawn

    return spawn.child_env() | {"PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}


class _Finalized:
    """Garbage in a cycle with a finalizer: collecting it calls Python (__del__)."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        pass


def test_the_cprofile_loop_counts_the_step_s_calls_not_the_garbage_left_before_it(tmp_path):
    """Cyclic garbage with finalizers left by what ran before the cProfile loop (a set-up, another case) is
    collected before the loop starts, so its __del__ calls are not in the step's counts: the step calls helper
    twice a call, and the table says 2, with no __del__ in it."""
    def helper() -> None:
        pass

    kept: list[list] = []

    def step() -> None:
        helper()
        helper()
        kept.append([])  # an object the collector tracks, kept: enough of them start a collection in the loop

    gc.collect()
    left = [_Finalized() for _ in range(500)]  # fewer than a collection's threshold (700): left for later
    del left
    _, calls, table, corrupted = loops.cprofile_phase(step, lambda: None, 200, str(tmp_path / "p.prof"))
    assert corrupted is None
    per_call = {func[2]: stat[1] / calls for func, stat in table.items()}
    assert per_call["helper"] == 2 and per_call["step"] == 1
    assert "__del__" not in per_call


def test_a_spare_opening_a_device_it_cannot_is_no_failure():
    """open_device is best effort, as the imports are: on a machine without CUDA (this one's torch is the CPU build)
    it returns, and the case's factory is the one to say what is wrong; on the CPU it touches no library."""
    import sys

    from flametool.measure.child import preload

    before = set(sys.modules)
    preload.open_device(["cupy", "torch"], "cpu")
    assert "cupy" not in set(sys.modules) - before and "torch" not in set(sys.modules) - before
    preload.open_device(["torch", "not_a_library_flametool_knows"], "cuda:0")  # raises nothing


def test_a_timing_process_collects_its_garbage_between_shapes_not_after_the_last(monkeypatch):
    """time_cases frees a shape's operands (gc.collect) before the next shape's, which may need their memory (the
    seed's three copies of 3.8 GB on the GPU), and not after the last: the process then reports and ends, and a
    collection there (50-70 ms with numpy and torch imported) would only delay the next process's turn."""
    import os

    from flametool.measure.child import work
    from flametool.measure.child.reporter import Reporter
    from flametool.measure.config import Config
    from flametool.measure.jobs import job_base, job_case
    from flametool.measure.protocol import PlanItem, TimeJob
    from flametool.workload import builtins

    spec = builtins.builtin("numpy")
    config = Config(cases=[spec], device="cpu", shape=[8, 8, 8], dtypes={"numpy": "float32"}, iters=20, warmup=2,
                    repeats=2, extend_rounds=False)
    collected = []
    monkeypatch.setattr(work.gc, "collect", lambda *a: collected.append(1) or 0)
    read, write = os.pipe()
    report = Reporter(write)
    try:
        for sample_shape, between in ((None, 0), ([4, 4, 4], 1)):  # host-bound: sampled where timed, or elsewhere
            collected.clear()
            job = TimeJob(**job_base(config), cases=[job_case(spec, config)], sample_shape=sample_shape,
                          plan=[PlanItem([8, 8, 8], None, "timing", decide=True)])
            got = work.time_cases(job, report)
            assert got.cases["numpy"].timing is not None and not got.errors
            assert (got.cases["numpy"].sample_timing is not None) == bool(between)
            assert len(collected) == between
    finally:
        report.out.close()
        os.close(read)
