"""values.uniform: the built-in cases' operand values, made in chunks by threads (values.Apart: in a process of
their own)."""

import os
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest

import faultkit as fk
from flametool.workload import builtins, inputs, values


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(values, "CHUNK", 1000)  # many chunks from a small array


def test_the_bytes_do_not_depend_on_the_threads(small_chunks):
    one = values.uniform(10_500, "float16", 7, threads=1)
    assert one.dtype == np.float16 and one.shape == (10_500,)
    for threads in (2, 3, 16):
        assert values.uniform(10_500, "float16", 7, threads=threads).tobytes() == one.tobytes()
    assert values.uniform(10_500, "float16", 8, threads=3).tobytes() != one.tobytes()


def test_a_shorter_array_is_the_start_of_a_longer_one(small_chunks):
    long = values.uniform((4, 2600), "float32", 0, threads=2)
    assert long.shape == (4, 2600)
    assert np.array_equal(values.uniform(2500, "float32", 0, threads=3), long.reshape(-1)[:2500])


def test_values_are_float32_uniform_rounded_to_the_dtype(small_chunks):
    f32 = values.uniform(5000, "float32", 3, threads=2)
    assert f32.dtype == np.float32 and 0 <= f32.min() and f32.max() < 1
    assert 0.45 < f32.mean() < 0.55 and len(np.unique(f32)) > 4900
    # each chunk is its own generator, a fresh one per chunk: not one value repeated from chunk to chunk
    assert not np.array_equal(f32[:1000], f32[1000:2000])
    for dtype in ("float16", "float64"):
        assert np.array_equal(values.uniform(5000, dtype, 3, threads=3), f32.astype(dtype))
    # numpy has no bfloat16: float32 for the library to round
    assert values.uniform(5000, "bfloat16", 3).tobytes() == f32.tobytes()


def test_host_operands_are_streams_0_and_1():
    a, b = inputs.host_operands(30, 20, 10, "float16")
    assert a.shape == (30, 20) and b.shape == (20, 10) and a.dtype == b.dtype == np.float16
    assert np.array_equal(a, values.uniform((30, 20), "float16", inputs.OPERAND_SEED, stream=0))
    assert np.array_equal(b, values.uniform((20, 10), "float16", inputs.OPERAND_SEED, stream=1))
    assert not np.array_equal(b.ravel(), a.ravel()[:200])
    assert inputs.host_operands(30, 20, 10, "float16")[0] is a  # kept for the cases built beside it
    inputs.prefetch_operands(8, 8, 8, "float32")  # made ahead in the background, then asked for
    a8, b8 = inputs.host_operands(8, 8, 8, "float32")
    assert np.array_equal(a8.ravel(), values.uniform(64, "float32", 0)) and np.array_equal(b8, values.uniform((8, 8), "float32", 0, 1))
    assert "SFC64" in inputs.operands_made("float16") and "rounded to float16" in inputs.operands_made("float16")


def test_a_child_starts_the_builtin_cases_operands_for_its_first_shape(monkeypatch):
    from flametool.measure.child import preload
    from flametool.workload.cases import CaseSpec
    from flametool.measure.protocol import JobCase, PlanItem, ProfileJob, SweepItem, SweepJob, TimeJob

    asked = []
    monkeypatch.setattr(inputs, "prefetch_operands", lambda *a: asked.append(a[:4]) or aparts.append(a[4]))
    aparts: list[bool] = []
    numpy, torch = (JobCase(l, builtins.builtin(l), d) for l, d in (("numpy", "float16"), ("torch", "bfloat16")))
    mine = JobCase("mine", CaseSpec("mine", "mine", file="/x/mine.py"), "float32")
    base = dict(device="cpu", iters=10, warmup=1, repeats=1)
    job = TimeJob(**base, cases=[mine, numpy, torch], plan=[PlanItem([8, 4, 2], None, "timing"), PlanItem([2, 2, 2], None, "x")])
    assert preload.start_operands(job) == ["numpy", "torch"] and asked == [(8, 4, 2, "float16")]
    assert preload.start_operands(ProfileJob(**base, case=torch, shape=[3, 3, 3])) == ["torch"]
    assert preload.start_operands(SweepJob(**base, cases=[torch], points=[SweepItem([5, 5, 5], None)])) == ["torch"]
    assert asked[1:] == [(3, 3, 3, "bfloat16"), (5, 5, 5, "bfloat16")]
    # a user's case: nothing made ahead, nothing to import
    assert preload.start_operands(TimeJob(**base, cases=[mine], plan=[PlanItem([8, 8, 8], None, "timing")])) == []
    assert len(asked) == 3
    # a fresh process (child.entry.begin) asks for them apart; a spare, its libraries imported, does not
    preload.start_operands(job, apart=True)
    assert aparts == [False, False, False, True]


def test_a_device_copy_is_found_by_the_host_bytes_it_holds_until_the_next_shape():
    """inputs.keep_on_device / on_device: found by where the host's bytes are (a view of other bytes, or the same
    bytes in another shape, is not it), per device, and forgotten when another shape's values are asked for."""
    a, b = inputs.host_operands(6, 5, 4, "float32")
    copy = object()
    inputs.keep_on_device(a, "cuda:0", copy)
    assert inputs.on_device(a, "cuda:0") is copy
    assert inputs.on_device(a[:0], "cuda:0") is None and inputs.on_device(a.reshape(-1), "cuda:0") is None
    assert inputs.on_device(a, "cuda:1") is None and inputs.on_device(b, "cuda:0") is None
    inputs.host_operands(6, 5, 4, "float32")  # the same values: kept
    assert inputs.on_device(a, "cuda:0") is copy
    inputs.host_operands(3, 5, 4, "float32")
    assert inputs.on_device(a, "cuda:0") is None


def test_small_operands_are_made_by_the_thread_that_asks_and_large_ones_ahead(monkeypatch):
    """Below a chunk of values no thread of their own (it would still be exiting as a profiled process's loops
    begin); at a chunk or more a background thread makes them while the process imports. The same bytes either way."""
    import threading

    made_in: list[str] = []
    real = inputs._make

    def make(*args):
        made_in.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(inputs, "_make", make)
    monkeypatch.setattr(values, "CHUNK", 1 << 12)
    inputs.prefetch_operands(16, 16, 16, "float32")  # 512 values
    assert made_in == []  # nothing made until asked
    small = inputs.host_operands(16, 16, 16, "float32")
    assert made_in == ["MainThread"]
    inputs.prefetch_operands(64, 64, 64, "float32")  # 8192 values: two chunks
    big = inputs.host_operands(64, 64, 64, "float32")
    assert made_in == ["MainThread", "flametool-values-ahead"]
    assert np.array_equal(big[1], values.uniform((64, 64), "float32", 0, stream=1))
    assert np.array_equal(small[0], values.uniform((16, 16), "float32", 0, stream=0))


def test_values_made_apart_are_the_same_bytes_and_their_process_is_reaped():
    specs = [((300, 500), "float16", 0, 0), ((500, 7), "float16", 0, 1), ((40,), "bfloat16", 3, 2)]
    apart = values.Apart(specs)
    got = apart.get()
    for array, (shape, dtype, seed, stream) in zip(got, specs):
        assert array.shape == shape and np.array_equal(array, values.uniform(shape, dtype, seed, stream))
    assert got[2].dtype == np.float32  # bfloat16: float32 for the library to round, as uniform gives it
    assert apart.get() is got
    with pytest.raises(ChildProcessError):  # waited for: no zombie left
        os.waitpid(apart._pid, os.WNOHANG)


def test_a_failure_in_the_values_process_is_said_where_they_are_asked_for():
    with pytest.raises(RuntimeError, match=r"the process making the operand values failed \(ValueError: expected non-negative"):
        values.Apart([((10,), "float16", -1, 0)]).get()


def test_the_values_process_ends_with_the_process_it_makes_them_for():
    """A timing process killed while its values are made (SIGKILL, the OOM killer) leaves no values process on: it
    gets the parent-death signal."""
    tag = uuid.uuid4().hex
    code = ("import os, sys\nsys.path.insert(0, os.getcwd())\nfrom flametool.workload import values\n"
            "values.Apart([((30000, 30000), 'float16', 0, 0)])\nos._exit(0)\n")
    # no pipes: run() returns when the process ends, not when all that holds its output does
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=fk.env(**{fk.TAG: tag}), cwd=fk.ROOT, timeout=60)
    assert proc.returncode == 0
    assert fk.none_left(tag, within=2.0) == []  # 9 x 10^8 values: seconds more, were it left to make them


def test_a_fresh_process_makes_many_values_apart_and_else_in_its_own_threads(monkeypatch):
    """inputs.prefetch_operands(apart=True): at APART_VALUES or more, a process of their own; fewer, or where this
    process has another thread (a fork would copy none of them, whatever lock they hold), its own thread. The same
    bytes either way."""
    monkeypatch.setattr(inputs, "APART_VALUES", 1000)
    monkeypatch.setattr(values.Apart, "can_fork", staticmethod(lambda: True))
    inputs.prefetch_operands(40, 30, 20, "float16", apart=True)
    assert isinstance(inputs._made[(40, 30, 20, "float16")], values.Apart)
    a, b = inputs.host_operands(40, 30, 20, "float16")
    assert np.array_equal(a, values.uniform((40, 30), "float16", 0, 0))
    assert np.array_equal(b, values.uniform((30, 20), "float16", 0, 1))
    inputs.prefetch_operands(400, 300, 200, "float16", apart=True)
    first = inputs._made[(400, 300, 200, "float16")]
    assert isinstance(first, values.Apart)
    pid = first._pid
    inputs.prefetch_operands(10, 10, 10, "float16", apart=True)  # 200 values: not apart; the values not asked for
    with pytest.raises(ChildProcessError):  # are stopped and reaped
        os.waitpid(pid, os.WNOHANG)
    with pytest.raises(RuntimeError, match="discarded"):
        first.get()
    assert isinstance(inputs._made[(10, 10, 10, "float16")], values.Ahead)
    inputs.prefetch_operands(41, 30, 20, "float16")  # not asked
    assert isinstance(inputs._made[(41, 30, 20, "float16")], values.Ahead)
    monkeypatch.undo()
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert values.Apart.can_fork() is False
    finally:
        release.set()
        other.join()


@pytest.mark.parametrize("pool, forks", [("1", True), ("2", False)])
def test_a_fresh_process_forks_for_its_values_only_if_numpys_import_started_no_thread(pool, forks):
    """can_fork() counts the threads after numpy's import, which Apart needs: OpenBLAS starts its pool there (one
    thread a CPU unless held to one, as --pool-threads 1 holds it), and a fork would copy none of them."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("OpenBLAS starts no thread of its own on one CPU")
    code = ("import os, sys\nsys.path.insert(0, os.getcwd())\nfrom flametool.workload import values\n"
            "assert 'numpy' not in sys.modules\nprint(values.Apart.can_fork())\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env["OPENBLAS_NUM_THREADS"] = pool
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=fk.ROOT,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(forks)


def test_the_values_process_runs_nicer_than_the_process_it_makes_them_for():
    """Apart's process yields the CPU to the imports beside it (values.NICE)."""
    made = values.Apart([((20000, 20000), "float16", 0, 0)])
    try:
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        deadline = time.monotonic() + 10
        seen = mine
        while time.monotonic() < deadline and seen == mine:  # nice() comes right after the fork
            seen = os.getpriority(os.PRIO_PROCESS, made._pid)
        assert seen == min(19, mine + values.NICE)
    finally:
        made.discard()
