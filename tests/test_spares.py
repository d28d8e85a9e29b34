"""runner: children started ahead of their jobs (spares, as on a GPU): the timing processes, those run until the
ratios settle (spawn.Spares.ahead) and each case's profiled process."""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

import faultkit as fk
from flametool.run import rundir
from flametool.workload import builtins, cases
from flametool.measure import paired, profiling, runner, spawn

USER = Path(__file__).parent / "cases" / "user_cases.py"


def test_processes_past_the_asked_ones_are_spares_and_the_unused_ones_are_stopped(tmp_path, monkeypatch):
    """--processes 2, up to 4 while unsettled: the ratio 'settles' after process 3. Process 2 and each case's
    profiled process are the spares started with the run, process 3 the one started ahead while process 2 ran;
    the run is whole, and the spare for process 4 is stopped: no process or log of any spare is left."""
    monkeypatch.setenv(fk.TAG, uuid.uuid4().hex)
    taken, checks, started, opened = [], [], [], []
    take, start, open_ = spawn.Spare.take, spawn.Spare.start, spawn.Spare.open
    logs: dict[int, str] = {}

    def counted(spare: spawn.Spare, job):
        got = take(spare, job)
        taken.append((job.kind, got is not None))
        return got

    def starting(cls, specs, config, log):
        started.append(log.name)
        spare = start(specs, config, log)
        logs[id(spare)] = log.name
        return spare

    def opening(spare: spawn.Spare):
        opened.append(logs[id(spare)])
        return open_(spare)

    def settled(m, live, most):
        checks.append(len(m.run.results["numpy"].at_sample_shape.processes))
        return len(checks) > 1  # unsettled after 2 processes, settled after 3

    monkeypatch.setattr(spawn.Spare, "take", counted)
    monkeypatch.setattr(spawn.Spare, "start", classmethod(starting))
    monkeypatch.setattr(spawn.Spare, "open", opening)
    monkeypatch.setattr(paired, "settled", settled)
    specs = [builtins.builtin("numpy"), cases.user_case(f"{USER}:add_case")]
    config = runner.Config(cases=specs, device="cpu", shape=[16, 16, 16], dtypes={s.label: "float32" for s in specs},
                           iters=50, warmup=5, repeats=1, extend_rounds=False, processes=2, max_processes=4,
                           extra_seconds=600, rate_hz=50, sample_seconds=0.5, out=tmp_path / "run", spares=True,
                           fork_server=False)  # --fresh-processes: the timing processes are spares too
    out, run = runner.compare(config, ["flametool", "test"], lambda *_: None)
    assert checks == [2, 3]
    assert run.complete and run.groups[0].processes == 3
    for r in run.results.values():
        assert r.error is None and len(r.timing.processes) == 3
        assert r.profile.sampling.complete and r.profile.sampling.kept_samples > 0
    name = "numpy+add_case-timing"
    # process 2 and the profiled ones from the start; 3 and 4 when process 2 started
    assert started == [f"{name}-2.log", "numpy.log", "add_case.log", f"{name}-3.log", f"{name}-4.log"]
    assert [job for job, got in taken if got] == ["time", "time", "profile", "profile"]
    # told to open their CUDA context (a no-op on the CPU) only when next: process 2 and the first case profiled with
    # the run, each later process as the one before it starts; never every spare at once (an idle context holds
    # device memory)
    assert opened == [f"{name}-2.log", "numpy.log", f"{name}-3.log", f"{name}-4.log"]
    assert list(out.glob("*.log")) == []
    assert fk.none_left(os.environ[fk.TAG]) == []


def test_the_unused_timing_spares_are_stopped_beside_the_profiling_and_gone_before_its_first_window(tmp_path,
                                                                                                  monkeypatch):
    """The spares past the last timing process (here those for processes 3 and 4: the ratio settles at 2) are
    stopped in a thread of their own (on a GPU one that made its CUDA context takes tenths of a second to end), while
    the first case's profiled process sets up; py-spy's first window begins only once they are gone, and nothing
    of theirs is left."""
    monkeypatch.setenv(fk.TAG, uuid.uuid4().hex)
    events: list[tuple[str, str]] = []
    threads: set[int] = set()
    stop_spare, record = spawn._stop_spare, spawn.sampler.record_keeping_up

    def stopping(log, spare):
        time.sleep(1.0)  # as slow to end as a spare with a CUDA context, and slower: the window must wait for it
        stop_spare(log, spare)
        events.append((f"stopped {log.name}", threading.current_thread().name))
        threads.add(threading.get_ident())

    def sampling(*args, **kwargs):
        events.append(("window", threading.current_thread().name))
        return record(*args, **kwargs)

    monkeypatch.setattr(spawn, "_stop_spare", stopping)
    monkeypatch.setattr(spawn.sampler, "record_keeping_up", sampling)
    monkeypatch.setattr(paired, "settled", lambda m, live, most: True)
    specs = [builtins.builtin("numpy"), cases.user_case(f"{USER}:add_case")]
    config = runner.Config(cases=specs, device="cpu", shape=[16, 16, 16], dtypes={s.label: "float32" for s in specs},
                           iters=50, warmup=5, repeats=1, extend_rounds=False, processes=2, max_processes=4,
                           extra_seconds=600, rate_hz=50, sample_seconds=0.5, out=tmp_path / "run", spares=True,
                           fork_server=False, count=False)
    lines: list[tuple[str, str]] = []
    out, run = runner.compare(config, ["flametool", "test"], lambda label, what: lines.append((label, what)))
    assert run.complete and run.groups[0].processes == 2
    said = [what for label, what in lines if label == "numpy"]  # the first case profiled: its window waited, and said so
    assert said.index(profiling.ENDING) == said.index(next(w for w in said if w.startswith("sampling with py-spy"))) - 1
    name = "numpy+add_case-timing"
    # each in a thread of its own: their ends overlap (a second each here, two seconds one after the other)
    assert sorted(events[:2]) == [(f"stopped {name}-3.log", "flametool-stop-spares"),
                                  (f"stopped {name}-4.log", "flametool-stop-spares")]
    assert [what for what, _ in events[2:]] == ["window", "window"]
    assert len(threads) == 2
    assert list(out.glob("*.log")) == []
    assert fk.none_left(os.environ[fk.TAG]) == []


@pytest.mark.parametrize("count_first", [False, True])
def test_the_next_profiled_process_is_readied_while_one_is_sampled_and_samples_while_it_counts(tmp_path, monkeypatch,
                                                                                               count_first):
    """compare's profiling on a host with spares (profiling.profile_all): the second case's process is given its job
    as the first one's py-spy is about to attach; it sets up, warms up and says it is ready; once the first one's
    sampled loop is told to stop, the second gets GO: its sampling runs while the first runs its cProfile and
    counted loops (its result comes after the second's). Neither times loops of its own: each one's
    unsampled time per call is its sampled loop's after py-spy's window. Where the window is at least
    profiling.COUNT_FIRST_SECONDS (the GPU's 16 s; 1 s here with count_first), the second, the last case, runs its
    cProfile and counted loops before it says it is ready, so its result comes as its sampling ends. py-spy attaches
    to the second once it is ready, while the first is still sampled (readied.py): one py-spy for each, and what
    it sampled while the second waited for its turn is not in its stacks."""
    monkeypatch.setenv(fk.TAG, uuid.uuid4().hex)
    if count_first:
        monkeypatch.setattr(profiling, "COUNT_FIRST_SECONDS", 1)
    events: list[tuple[str, str]] = []  # (who, what), in the order the parent saw them
    take, record, attach = spawn.Spare.take, spawn.sampler.record_keeping_up, spawn.sampler.Spy.attach
    attached: list[tuple[int, bool]] = []  # (pid, whether it was attached ahead, by readied.py's thread, and when
    # the first case's py-spy was still sampling)

    def attaching(cls, pid, *args):
        attached.append((pid, threading.current_thread().name == "flametool-readied"
                         and events[-1][1] == "py-spy begins"))
        return attach(pid, *args)

    def taking(spare: spawn.Spare, job):
        events.append((spare.labels[0], f"take {job.kind}{' ahead' if getattr(job, 'ahead', False) else ''}"))
        return take(spare, job)

    def recording(pid, *args, **kwargs):
        events.append((str(pid), "py-spy begins"))
        got = record(pid, *args, **kwargs)
        events.append((str(pid), "py-spy ends"))
        return got

    monkeypatch.setattr(spawn.Spare, "take", taking)
    monkeypatch.setattr(spawn.sampler, "record_keeping_up", recording)
    monkeypatch.setattr(spawn.sampler.Spy, "attach", classmethod(attaching))
    specs = [builtins.builtin("numpy"), cases.user_case(f"{USER}:add_case")]
    config = runner.Config(cases=specs, device="cpu", shape=[16, 16, 16], dtypes={s.label: "float32" for s in specs},
                           iters=50, warmup=5, repeats=1, extend_rounds=False, processes=1, rate_hz=50,
                           sample_seconds=2, out=tmp_path / "run", spares=True,
                           fork_server=False)  # the profiled spares alone: no fork server and its log
    out, run = runner.compare(config, ["flametool", "test"],
                              lambda label, what: events.append((label, what)))
    assert run.complete
    pids = {who for who, what in events if what == "py-spy begins"}
    assert len(pids) == 2
    # numpy's py-spy when its turn came; add_case's while numpy's was sampling, its only one
    assert [ahead for _, ahead in attached] == [False, True] and {pid for pid, _ in attached} == {int(p) for p in pids}
    seen = [(("py-spy" if who in pids else who), what) for who, what in events if not who.startswith("timing ")]
    first, second = seen.index(("add_case", "take profile ahead")), seen.index(("py-spy", "py-spy begins"))
    # given its job just before the first case's py-spy begins (numpy's own turn began with its spare's job), and
    # before the line that says it begins (what its window waits for first is a phase of its own: profiling.ENDING)
    assert seen[:first] == [("numpy", "take profile"), ("numpy", "setting up at 16,16,16"),
                            ("numpy", "warm-up (5 calls)")]
    assert seen[first + 1] == ("numpy", "sampling with py-spy --native at 50 Hz for 2 s")
    assert second == first + 2 and seen[second + 1] == ("py-spy", "py-spy ends")
    rest = seen[second + 2:]
    # the second case's lines, read after the first one's stop: set up ahead, then its turn; the first one's
    # counted loop and result come after the second one's sampling
    ready = ("add_case", "ready (set up ahead), waiting for its turn")
    sampling = [("add_case", "sampling with py-spy --native at 50 Hz for 2 s"), ("py-spy", "py-spy begins"),
                ("py-spy", "py-spy ends")]
    set_up = [("add_case", "setting up at 16,16,16"), ("add_case", "warm-up (5 calls)")]
    # numpy's cProfile and counted loops after its sampled loop, beside the second one's turn
    numpy_after = [("numpy", "cProfile loop"), ("numpy", "count"), ("numpy", spawn.RESULT_IN)]
    if count_first:
        assert rest == set_up + [("add_case", "cProfile loop"), ("add_case", "count"), ready] + sampling + [
            ("add_case", spawn.RESULT_IN)] + numpy_after
    else:
        assert rest == set_up + [ready] + sampling + [("add_case", "cProfile loop"), ("add_case", "count"),
                                                      ("add_case", spawn.RESULT_IN)] + numpy_after
    for r in run.results.values():
        p = r.profile
        assert p.sampling.complete and p.sampling.kept_samples > 0 and p.counts is not None
        assert p.own.cpu_us and p.own_us_per_call > 0 and p.slowdown > 0
        # 2 s at 50 Hz: about 100 samples, py-spy spacing them at random; none of the wait before the window
        assert 50 <= p.sampling.total_samples <= 200 and p.sampling.pyspy_samples >= p.sampling.total_samples
        assert "wait_go" not in rundir.folded_path(out, r.label).read_text()
    assert list(out.glob("*.log")) == []
    assert fk.none_left(os.environ[fk.TAG]) == []


def test_processes_at_once_run_side_by_side_and_all_are_kept(tmp_path, monkeypatch):
    """--processes-at-once 2: processes 2 and 3 (spares, given their jobs together) run at once, their messages
    read side by side (process 3 sets up before process 2's result is in), and both processes' loops are recorded,
    in their order; with --no-sample the profiled processes run two at once as well; nothing is left behind."""
    monkeypatch.setenv(fk.TAG, uuid.uuid4().hex)
    events: list[tuple[str, str]] = []
    specs = [builtins.builtin("numpy"), cases.user_case(f"{USER}:add_case")]
    # loops of 30000 calls (tens of ms each), so that process 2 still times when process 3 sets up, however loaded
    # the machine: with 50 calls process 2's loops took microseconds and its result came first once (a full suite
    # on four workers), as the side-by-side firsts test found with its own (ITERS_FIRSTS)
    config = runner.Config(cases=specs, device="cpu", shape=[16, 16, 16], dtypes={s.label: "float32" for s in specs},
                           iters=30000, warmup=5, repeats=2, extend_rounds=False, processes=3, sample=False,
                           count=False, out=tmp_path / "run", spares=True, fork_server=False, at_once=2)
    out, run = runner.compare(config, ["flametool", "test"], lambda label, what: events.append((label, what)))
    assert run.complete and run.groups[0].processes == 3
    for r in run.results.values():
        assert r.error is None and len(r.timing.processes) == 3
        assert all(len(p.cpu_us) == 2 for p in r.timing.processes)
    timing = [what for label, what in events if label.startswith("timing ")]
    second_in = timing.index(f"process 2/3: {spawn.RESULT_IN}")
    third_set_up = timing.index("process 3/3: numpy: setting up at 16,16,16")
    assert timing.index("process 1/3: " + spawn.RESULT_IN) < third_set_up < second_in
    assert run.to_json()["config"]["at_once"] == 2
    # not sampled: the two cases' profiled processes (cProfile) at once too, each one's profile kept
    alone = [(label, what) for label, what in events if not label.startswith("timing ")]
    assert alone.index(("add_case", "setting up at 16,16,16")) < alone.index(("numpy", spawn.RESULT_IN))
    assert all(r.profile is not None and r.profile.cprofile_calls > 0 for r in run.results.values())
    assert list(out.glob("*.log")) == []
    assert fk.none_left(os.environ[fk.TAG]) == []


def test_the_later_environments_first_processes_are_spares_too(tmp_path, monkeypatch):
    """compare --env (spare_firsts): the first timing process of each environment after the first is started with
    the run, beside processes 2..N of each and the profiled ones; the first environment's is not (it starts at once)."""
    started: list[str] = []
    monkeypatch.setattr(spawn.Spare, "start", classmethod(lambda cls, specs, config, log: started.append(log.name)))
    groups = [[cases.CaseSpec(f"{lib}@{env}", "", env=env) for lib in ("cupy", "torch")] for env in ("a", "b")]
    config = runner.Config(cases=[c for g in groups for c in g], device="cuda", shape=[1024] * 3, dtypes={},
                           processes=2, out=tmp_path, spares=True)
    spawn.Spares(config, tmp_path).start_for_compare(groups, firsts=True)
    assert started == ["cupy@a+torch@a-timing-2.log", "cupy@b+torch@b-timing.log", "cupy@b+torch@b-timing-2.log",
                       "cupy@a.log", "torch@a.log", "cupy@b.log", "torch@b.log"]


def test_processes_at_once_defaults_and_bad_values():
    """--processes-at-once: by default 2 with --env on a GPU (as calibrated there), else 1; 0 or past the limit is a
    one-line error, exit 2, before anything runs."""
    import argparse

    from flametool.commands import settings
    from flametool.measure.config import CPU, CUDA

    given = lambda n: argparse.Namespace(processes_at_once=n)  # noqa: E731
    assert settings.processes_at_once(given(None), CUDA.env_at_once) == 2
    assert settings.processes_at_once(given(None), CPU.env_at_once) == 1
    assert settings.processes_at_once(given(3), 1) == 3
    for bad in ("0", "17"):
        refused = fk.run(["compare", "--device", "cpu", "--processes-at-once", bad, "--out", "/nonexistent/run"])
        assert refused.returncode == 2 and fk.error_line(refused).startswith(f"flametool: --processes-at-once {bad}")
        assert "Traceback" not in refused.stderr


def test_settle_bad_values_are_one_line_before_anything_runs():
    """--settle PCT: more than 0 and at most 50 (an interval half the ratio wide answers nothing), checked before
    anything runs: one line, exit 2."""
    for bad in ("0", "51", "nan", "-1"):
        refused = fk.run(["compare", "--device", "cpu", "--settle", bad, "--out", "/nonexistent/run"])
        assert refused.returncode == 2 and fk.error_line(refused).startswith(f"flametool: --settle {float(bad):g}")
        assert "Traceback" not in refused.stderr


# a's first process times its loops for about 1.2 s, so that b, started side by side with it, has set up before
# a's result is in even when b's interpreter starts slowly (a loaded CI machine): with --iters 50 a's loops took
# milliseconds and b's set-up came after a's result in one run of many. The anchor's calls sleep (napping_case,
# 0.5 ms): 1000 of them a loop last on the clock, where the 30,000 of np.dot's 64^3 product (6 us a call) that made
# a's 0.7 s kept a core busy in each of the four timing and four profiled processes (5 s of the test's 7.5 s of
# CPU), and a loaded machine stretched them no less than b's start. One after another (the other shape) b's set-up
# follows a's result however short a's loops are: 50 there
ITERS_FIRSTS = {True: "1000", False: "50"}


@pytest.mark.parametrize("shape, side_by_side", [("64,64,64", True), ("32,32,32", False)])
def test_the_environments_first_processes_run_side_by_side_at_the_host_bound_shape(tmp_path, shape, side_by_side):
    """compare --env --processes-at-once 2: at the op's host-bound shape (64^3 on the CPU), which every process
    after the firsts times side by side anyway, the two environments' first processes run at once (b's sets up
    before a's result is in); at another shape one after another (a first times the requested shape, which two
    side by side would share the device for). Either way both are recorded, each in its environment's group."""
    out = tmp_path / "run"
    proc = fk.run(["compare", "--device", "cpu", "--libs", "numpy", "--case", f"{USER}:napping_case", "--anchor",
                   "napping_case", "--env", f"a={sys.executable}", "--env", f"b={sys.executable}", "--shape", shape,
                   "--processes", "2", "--processes-at-once", "2", "--repeats", "2", "--iters", ITERS_FIRSTS[side_by_side],
                   "--no-sample", "--no-count", "--progress", "all", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    a_in = lines.index(f"timing numpy@a+napping_case@a: process 1/2: {spawn.RESULT_IN}")
    b_set_up = next(i for i, l in enumerate(lines) if l.startswith("timing numpy@b+napping_case@b: process 1/2: ")
                    and "setting up" in l)
    assert (b_set_up < a_in) == side_by_side
    run = rundir.load(out)
    assert [g.cases for g in run.groups] == [["numpy@a", "napping_case@a"], ["numpy@b", "napping_case@b"]]
    assert all(run.results[l].group == k for k, g in enumerate(run.groups) for l in g.cases)
    assert all(r.error is None and len(r.timing.processes) == 2 for r in run.results.values())


def test_at_a_shape_whose_values_take_seconds_the_later_spares_start_once_the_first_process_is_set_up(tmp_path,
                                                                                                     monkeypatch):
    """At a requested shape of many operand values (the seed's: paired.defer_spares), process 2's spare starts with
    the run, the others once the first process warms up: six spares importing beside it slowed its imports by
    0.2-0.75 s on the H200. Every one is still taken, and the run is whole."""
    monkeypatch.setenv(fk.TAG, uuid.uuid4().hex)
    monkeypatch.setattr(paired, "FRESH_FIRST_VALUES", 1)  # 16^3 counts as many values here
    events: list[tuple[str, str]] = []
    start = spawn.Spare.start

    def starting(cls, specs, config, log):
        events.append(("spare starts", log.name))
        return start(specs, config, log)

    monkeypatch.setattr(spawn.Spare, "start", classmethod(starting))
    specs = [builtins.builtin("numpy"), cases.user_case(f"{USER}:add_case")]
    config = runner.Config(cases=specs, device="cpu", shape=[16, 16, 16], dtypes={s.label: "float32" for s in specs},
                           iters=50, warmup=5, repeats=1, extend_rounds=False, processes=3, rate_hz=50,
                           sample_seconds=0.5, out=tmp_path / "run", spares=True, fork_server=False)
    out, run = runner.compare(config, ["flametool", "test"], lambda label, what: events.append((label, what)))
    assert run.complete and run.groups[0].processes == 3
    name = "numpy+add_case-timing"
    starts = [log for who, log in events if who == "spare starts"]
    assert starts == [f"{name}-2.log", f"{name}-3.log", "numpy.log", "add_case.log"]
    timing = [(k, what) for k, (who, what) in enumerate(events) if who.startswith("timing ")]
    set_up = next(k for k, what in timing if "setting up" in what)
    warm = next(k for k, what in timing if "warm-up" in what)
    # process 2's spare before the first process's first line; the rest as its warm-up message came (before its line)
    at = [events.index(("spare starts", log)) for log in starts]
    assert at[0] < timing[0][0] and set_up < at[1] < at[2] < at[3] < warm
    for r in run.results.values():
        assert r.error is None and len(r.timing.processes) == 3 and r.profile.sampling.complete
    assert list(out.glob("*.log")) == []
    assert fk.none_left(os.environ[fk.TAG]) == []
