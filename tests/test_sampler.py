"""The sampler's filtering and timing logic on hand-built inputs, and its window on a real py-spy."""

import subprocess
import sys
import time

from flametool.measure import sampler
from flametool.run import perturbation
from flametool.run.profiled import Sampling
from flametool.run.folded import Stack

LOOP = "active_loop (flametool/measure/child/loops.py:44)"


def test_keep_inside_cuts_everything_above_the_loop():
    raw = [
        Stack(("0x7f (libc.so.6)", "<module> (flametool/measure/child/entry.py:300)",
               "run (flametool/measure/child/entry.py:250)", LOOP,
               "step (flametool/cases.py:87)", "THPVariable_mm (libtorch_python.so)"), 5),
        Stack(("0x7f (libc.so.6)", "<module> (flametool/measure/child/entry.py:300)", LOOP,
               "step (flametool/cases.py:87)", "THPVariable_mm (libtorch_python.so)"), 2),
        Stack(("<module> (flametool/measure/child/entry.py:300)", LOOP), 3),  # between calls
        Stack(("<module> (flametool/measure/child/entry.py:300)",
               "sampled_phase (flametool/measure/child/loops.py:200)",
               "synchronize (torch/cuda/__init__.py:1152)"), 7),  # sync: outside
        Stack(("<module> (x.py:1)", "active_loop (user/other.py:3)", "f (user/other.py:9)"), 1),  # not ours
    ]
    kept, loop_only, outside = sampler.keep_inside(raw, "active_loop")
    assert kept == [Stack(("step (flametool/cases.py:87)", "THPVariable_mm (libtorch_python.so)"), 7)]
    assert loop_only == 3 and outside == 8


def test_sampled_time_uses_chunks_inside_the_window():
    chunks = [[0.0, 1.0], [1.1, 2.1], [2.2, 4.2], [4.3, 5.3]]
    # window covers the 2nd and 3rd chunk: 1 s + 2 s over 2 chunks of 1000 calls = 1500 us per call
    assert sampler.sampled_us_per_call(chunks, 1000, (1.05, 4.25)) == 1500.0
    # a window shorter than every chunk falls back to chunks it mostly overlaps
    assert sampler.sampled_us_per_call([[0.0, 10.0]], 10, (1.0, 9.0)) == 1e6
    assert sampler.sampled_us_per_call([], 10, (0, 1)) is None


def test_only_the_child_s_own_wait_is_taken_for_it():
    assert sampler.is_waiting("wait_go (flametool/measure/child/loops.py:249)")
    assert not sampler.is_waiting("wait_go (mine/step.py:3)") and not sampler.is_waiting(LOOP)


def test_explain_ptrace_refusal():
    msg = sampler.explain_failure(["Error: Permission denied (os error 13)"], 1)
    assert "--no-sample" in msg and "ptrace" in msg


def test_suggest_rate_aims_at_the_target_slowdown():
    # 100 Hz slowed the loop 1.6x: each sample stops it 6 ms; 1.25x needs about 41 Hz
    assert perturbation.suggest_rate(100, 1.6, False) == 41
    assert perturbation.suggest_rate(100, 1.2, False) is None  # fine as it was
    assert perturbation.suggest_rate(100, 1.2, True) == 50  # behind: at least halve
    assert perturbation.suggest_rate(100, 4.0, True) == 8
    # a GPU-bound loop (a CUDA graph replay) where 10 of 400 samples land in the loop: a lower rate would
    # leave fewer still, so none is suggested for its slowdown; falling behind still halves it
    assert perturbation.suggest_rate(25, 4.0, False, share=10 / 400) is None
    assert perturbation.suggest_rate(25, 4.0, True, share=10 / 400) == 12


def test_a_rate_run_json_did_not_record_gets_no_advice():
    """A sampling whose rate_hz is 0 (a schema-1 run that did not record it, read as 0; or run.json edited): `report`
    failed with an internal error (ZeroDivisionError) where sampling had slowed the loop past 1.5x."""
    assert perturbation.suggest_rate(0, 4.0, False) is None
    assert perturbation.suggest_rate(0, 1.2, True) is None
    s = Sampling(command=[], rate_hz=0, seconds=5, complete=True, threads=1, total_samples=100, kept_samples=90)
    assert perturbation.perturbation_advice(s, 2.5, 1, 5) is None


def test_at_one_hertz_no_lower_rate_is_advised():
    """--rate 1 that slowed the loop past 1.5x (a short loop's noise, or the one sample): there is no lower rate,
    and compare printed '--rate 1 --sample-seconds 200 would perturb it less' of a run made at --rate 1."""
    s = Sampling(command=[], rate_hz=1, seconds=0.5, complete=True, threads=1, total_samples=1, kept_samples=1)
    assert perturbation.perturbation_advice(s, 1.63, 1, 0.5) is None
    # at 2 Hz, 1 Hz is lower: still advised
    s = Sampling(command=[], rate_hz=2, seconds=0.5, complete=True, threads=1, total_samples=1, kept_samples=1)
    assert perturbation.perturbation_advice(s, 1.63, 1, 0.5) == (
        "--rate 1 --sample-seconds 200 would perturb it less and still give about 200 samples")


def test_loop_share():
    s = Sampling(command=[], rate_hz=25, seconds=16, total_samples=400, kept_samples=380, loop_samples=10)
    assert perturbation.loop_share(s) == 390 / 400
    assert perturbation.loop_share(Sampling(command=[], rate_hz=25, seconds=16)) is None


def test_coverage():
    s = Sampling(command=[], rate_hz=100, seconds=2, window=(10.0, 12.0), total_samples=150)
    assert perturbation.coverage(s) == 0.75


def test_advice_names_the_lever_that_slowed_the_loop():
    # three threads stopped at each sample, pools as the environment says: fewer threads, not a lower rate
    s = Sampling(command=[], rate_hz=25, seconds=5, complete=True, threads=3, total_samples=100, kept_samples=90)
    assert perturbation.perturbation_advice(s, 1.9, None, 5) == (
        "--pool-threads 1 would perturb it less (each native sample stopped all 3 threads)")
    # pools held to one thread already (CUDA's own threads remain): a lower rate, with seconds enough for
    # ENOUGH_SAMPLES at it (4 Hz for 5 s would be 20 samples)
    advice = perturbation.perturbation_advice(s, 2.5, 1, 5)
    rate = perturbation.suggest_rate(25, 2.5, False)
    assert rate == 4 and advice == f"--rate 4 --sample-seconds 50 would perturb it less and still give about 200 samples"
    assert perturbation.ENOUGH_SAMPLES <= 4 * 50
    # a lower rate that still gives enough samples in --sample-seconds is advised alone
    s = Sampling(command=[], rate_hz=100, seconds=16, complete=True, threads=1, total_samples=100, kept_samples=90)
    assert perturbation.perturbation_advice(s, 1.6, 1, 16) == "--rate 41 would perturb it less"
    # nothing to advise when sampling barely slowed the loop
    assert perturbation.perturbation_advice(s, 1.2, 1, 16) is None


BUSY = "import time\ndef {name}():\n    while True:\n        sum(range(1000))\nprint('ready', flush=True)\n{name}()\n"


def busy_child(name: str) -> subprocess.Popen:
    """A child busy in a Python function `name` (py-spy reports a busy thread; one blocked in a read may be idle),
    its code named as the child's loops are (flametool/measure/child/loops.py), where the child's own wait is."""
    run = f"exec(compile({BUSY.format(name=name)!r}, {sampler.ACTIVE_LOOP_FILE!r}, 'exec'))"
    child = subprocess.Popen([sys.executable, "-c", run], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    return child


def test_a_window_is_seconds_of_the_clock_not_a_count_of_samples(tmp_path):
    """py-spy runs until SIGINT, sent when the window's seconds are over (its --duration would count samples, which it
    spaces at random): the window is 1 s of the clock from its first sample, and holds about rate x seconds."""
    child = busy_child("spin")
    try:
        started = time.monotonic()
        s = sampler.record(child.pid, 100, 1, "active_loop", tmp_path / "spin.folded")
        assert s.complete and s.error is None and s.exit_code == 0, s.output_tail
        assert "--duration" not in s.command
        assert s.window is not None and started <= s.window[0] and 1.0 <= s.window[1] - s.window[0] <= 3.0
        assert 40 <= (s.pyspy_samples or 0) <= 200 and s.total_samples > 0
    finally:
        child.kill()
        child.wait()


def test_a_spy_attached_ahead_keeps_nothing_of_the_wait_and_windows_from_since(tmp_path):
    """A py-spy attached ahead (readied.py) samples the process while it waits for its turn (loops.wait_go): none of
    those stacks is kept, and the window starts at `since` (the loop's start), not at py-spy's first sample. A Spy
    discarded twice closes its file once."""
    child = busy_child(sampler.WAIT_FUNCTION)
    try:
        spy = sampler.Spy.attach(child.pid, 100, 1)
        time.sleep(0.5)  # it samples the wait meanwhile
        since = time.monotonic()
        s = sampler.record(child.pid, 100, 1, "active_loop", tmp_path / "wait.folded", spy=spy, since=since)
        assert s.complete and s.error is None, s.output_tail
        assert (s.pyspy_samples or 0) > 40 and s.total_samples == 0 and s.kept_samples == 0
        assert s.window is not None and s.window[0] == since and s.window[1] - since >= 1.0
        assert spy.fd == -1
        spy.discard()  # again: nothing left to close
    finally:
        child.kill()
        child.wait()


def test_a_window_py_spy_took_no_sample_in_is_sampled_once_more(tmp_path):
    """A window py-spy sampled through without a sample (its start-up, reading the native libraries' symbols, can
    take a short window whole on a loaded machine) is tried once more while the loop runs, the empty attempt kept in
    `earlier`; a window with samples is not. py-spy spaces its samples at random (exponential gaps, mean 1/rate): at
    1 Hz the first comes after the 0.1 s window about 9 times in 10, so each attempt is checked for the branch it
    took, and the test asks for at least one empty window in six attempts (all six sampled: about 1 in a million)."""
    child = busy_child("spin")
    try:
        retried = 0
        for attempt in range(6):
            said: list[str] = []
            s = sampler.record_keeping_up(child.pid, 1, 0.1, "active_loop", tmp_path / f"none{attempt}.folded",
                                          said.append)
            assert s.complete, s.output_tail
            if s.earlier:
                assert said == ["py-spy took no samples in its 0.1 s window (its start-up ran through it); sampling "
                                "again"]
                assert [(e.pyspy_samples, e.complete) for e in s.earlier] == [(0, True)]
                retried += 1
                break
            assert said == [] and (s.pyspy_samples or 0) > 0  # sampled in its window: not tried again
        assert retried == 1
        said.clear()
        s = sampler.record_keeping_up(child.pid, 100, 0.5, "active_loop", tmp_path / "some.folded", said.append)
        assert said == [] and s.earlier == [] and (s.pyspy_samples or 0) > 0
    finally:
        child.kill()
        child.wait()
