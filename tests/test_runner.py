"""runner: the child processes run the parent's flametool, whatever the current directory holds; and
the measurement's decisions (measure/paired), on hand-built timings: when more timing processes can still help."""

from __future__ import annotations

import json
import os
import pstats
import subprocess
import sys
import time
import uuid
from pathlib import Path

import faultkit as fk
import flametool
from flametool.workload import builtins, cases
from flametool.run import rundir
from flametool.run import anchoring, stats
from flametool.measure import paired, runner, sweeping
from flametool.measure import config
from flametool.measure.config import CPU, CUDA
from flametool.run.record import CaseResult, Group
from flametool.run.timing import Loops, Timing
from runbuild import new_run

USER = Path(__file__).parent / "cases" / "user_cases.py"
ROOT = Path(flametool.__file__).resolve().parent.parent
# a flametool package in the directory the run starts from, as in a checkout beside an installed flametool
DECOY = """import pathlib, sys
pathlib.Path(__file__).with_name("imported").write_text(sys.argv[0])
raise SystemExit("the decoy flametool was imported")
"""


def test_children_import_the_parents_flametool(tmp_path):
    decoy = tmp_path / "flametool"
    decoy.mkdir()
    (decoy / "__init__.py").write_text(DECOY)
    (decoy / "child.py").write_text(DECOY)
    out = tmp_path / "run"
    # the parent imports this checkout's flametool explicitly (not from the current directory)
    boot = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from flametool.commands.entry import main_entry; main_entry()"
    proc = subprocess.run([sys.executable, "-c", boot, "compare", "--device", "cpu", "--libs", "numpy", "--case",
                           f"{USER}:add_case",
                           "--no-sample", "--processes", "1", "--repeats", "1", "--iters", "10", "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not (decoy / "imported").exists()
    data = json.loads((out / "run.json").read_text())
    assert all(r["error"] is None for r in data["results"].values())
    # cProfile saw the child's active_loop in the parent's flametool, not in the decoy
    files = {f for f, _, name in pstats.Stats(str(out / "numpy.prof")).stats if name == "active_loop"}
    assert files == {str(ROOT / "flametool" / "measure" / "child" / "loops.py")}


def measurement(base: list[float], head: list[float]) -> runner.Measurement:
    """Two cases paired over processes whose loops read `base` and `head` (one figure a process)."""
    run = new_run()
    run.groups.append(Group(["a", "b"], True, "hand-built", len(base)))
    for label, figures in (("a", base), ("b", head)):
        run.results[label] = CaseResult(label=label, factory=f"test:{label}", library=None, device="cpu",
                                        dtype="float32", shape=[64, 64, 64], group=0,
                                        timing=Timing([64, 64, 64], 250, [Loops([v]) for v in figures], True))
    return runner.Measurement(runner.Config(cases=[], device="cpu", shape=[64, 64, 64], dtypes={}), run,
                              lambda *_: None)


def test_more_processes_while_twelve_could_settle_the_ratio():
    # ratios 0.63 to 0.67 over five processes: about ±3%, not settled, and twelve would make it about ±1.6%
    m = measurement([10.0] * 5, [6.3, 6.7, 6.5, 6.4, 6.6])
    assert not paired.settled(m, ["a", "b"], 12)
    assert paired.settled(m, ["a", "b"], 5)  # at most five: five like these are what it has


def test_no_more_processes_where_twelve_would_still_disagree():
    # ratios 0.56 to 0.69 (as the H200 read across processes): twelve like them still reach past ±2%
    m = measurement([10.0] * 5, [5.6, 6.9, 6.2, 6.6, 5.9])
    assert paired.settled(m, ["a", "b"], 12)


def test_a_settled_ratio_needs_no_more():
    m = measurement([10.0] * 5, [6.50, 6.51, 6.49, 6.50, 6.50])
    assert paired.settled(m, ["a", "b"], 12)


def test_a_sweep_says_which_size_and_how_much_is_left(monkeypatch):
    """Two processes of three sizes, the last size taking most of a process: after the first process the time
    left is read off what each size took there."""
    clock = [100.0]
    monkeypatch.setattr(sweeping.time, "monotonic", lambda: clock[0])
    left = sweeping.SweepLeft([[8, 8, 8], [16, 16, 16], [64, 64, 32]], processes=2, op="matmul")
    assert left.line(1) == "0/6 timed (3 sizes in each of 2 processes); size 1/3 (8) in process 1/2"
    for seconds in (1.0, 1.0, 8.0):  # the first process: 10 s
        clock[0] += seconds
        left.step()
    assert left.line(2) == "3/6 timed (3 sizes in each of 2 processes), about 10 s left; size 1/3 (8) in process 2/2"
    clock[0] += 1.0
    left.step()
    assert left.line(2) == "4/6 timed (3 sizes in each of 2 processes), about 9 s left; size 2/3 (16) in process 2/2"
    clock[0] += 1.0
    left.step()
    assert left.line(2).startswith("5/6 timed (3 sizes in each of 2 processes), about 8 s left; size 3/3 (64x64x32)")



def test_a_sweep_of_one_process_or_one_size_says_so_in_the_singular():
    """`sweep --processes 1` read '(5 sizes in each of 1 processes)'."""
    assert sweeping.SweepLeft([[8, 8, 8], [16, 16, 16]], processes=1, op="matmul").line(1) == \
        "0/2 timed (2 sizes in 1 process); size 1/2 (8) in process 1/1"
    assert sweeping.SweepLeft([[8, 8, 8]], processes=3, op="matmul").line(1) == \
        "0/3 timed (1 size in each of 3 processes); size 1/1 (8) in process 1/3"

def spare_config(out: Path, processes: int = 3) -> runner.Config:
    specs = [builtins.builtin("numpy"), cases.user_case(f"{USER}:add_case")]
    return runner.Config(cases=specs, device="cpu", shape=[16, 16, 16], dtypes={s.label: "float32" for s in specs},
                         iters=50, warmup=5, repeats=1, extend_rounds=False, processes=processes,
                         max_processes=processes, rate_hz=50, sample_seconds=0.5, out=out, spares=True,
                         fork_server=False)  # the spares of --fresh-processes


def test_spares_no_job_took_are_stopped_without_a_trace(tmp_path, monkeypatch):
    monkeypatch.setenv(fk.TAG, uuid.uuid4().hex)
    config = spare_config(rundir.create(tmp_path / "run"))
    m = runner.Measurement(config, new_run(), lambda *_: None)
    m.spares.start_for_compare(m.case_groups())
    assert len(m.spares.started) == 4 and all(log.exists() for log in m.spares.started)
    assert fk.tagged(os.environ[fk.TAG])  # they run
    m.spares.stop()
    assert m.spares.started == {} and list(config.out.glob("*.log")) == []
    assert fk.none_left(os.environ[fk.TAG]) == []


def env_measurement(ratios_a: list[float], ratios_b: list[float]) -> runner.Measurement:
    """numpy in environments a and b (compare --env), torch the anchor beside it in each: one figure a process,
    numpy / torch = the ratios given, torch at 10 us in every process."""
    run = new_run({"anchor": "torch", "pairs": [["numpy@a", "numpy@b"]]})
    for g, (env, ratios) in enumerate((("a", ratios_a), ("b", ratios_b))):
        run.groups.append(Group([f"numpy@{env}", f"torch@{env}"], True, "hand-built", len(ratios)))
        for case, figures in (("numpy", [10.0 * r for r in ratios]), ("torch", [10.0] * len(ratios))):
            label = f"{case}@{env}"
            run.results[label] = CaseResult(label=label, factory=f"test:{case}", library=case, device="cpu",
                                            dtype="float32", shape=[64, 64, 64], group=g, env=env,
                                            timing=Timing([64, 64, 64], 250, [Loops([v]) for v in figures], True))
    return runner.Measurement(runner.Config(cases=[], device="cpu", shape=[64, 64, 64], dtypes={}), run,
                              lambda *_: None)


SPREAD = [1.0, 1.03, 0.97, 1.02, 0.98, 1.025, 0.975, 1.0]
LIVE = ["numpy@a", "torch@a", "numpy@b", "torch@b"]


def sides(k: float) -> runner.Measurement:
    """Eight processes a side, numpy / torch 0.60 in a and 0.63 in b, spread as SPREAD scaled by k (b's in reverse)."""
    scaled = [1 + (v - 1) * k for v in SPREAD]
    return env_measurement([0.60 * v for v in scaled], [0.63 * v for v in scaled[::-1]])


def test_two_environments_settle_at_a_tighter_reach_than_a_pair():
    # eight processes a side whose anchored ratio reaches about ±1.9%: settled for a pair of one process
    # (±2%), not for a build against another (±1.75%: a microsecond resolved at up to 28 us a call)
    m = sides(0.73)
    assert config.ENV_SETTLED < anchoring.anchored_pair(m.run, "numpy@a", "numpy@b").reach < config.SETTLED
    assert not paired.settled(m, LIVE, 24)
    assert paired.settled(m, LIVE, 8)  # no more than these eight: nothing more to gain
    tight = sides(0.5)
    assert anchoring.anchored_pair(tight.run, "numpy@a", "numpy@b").reach < config.ENV_SETTLED
    assert paired.settled(tight, LIVE, 24)


def test_on_a_gpu_two_environments_settle_at_the_gpu_s_reach():
    """compare --env on a GPU settles at Defaults.env_settle (+-1%, calibrated on the H200), not the CPU's +-1.75%:
    the same processes that settle a CPU's A/B do not settle a GPU's while more would narrow them."""
    env = sides(0.5)
    figures = anchoring.anchored_pair(env.run, "numpy@a", "numpy@b")
    assert CUDA.env_settle < figures.reach < CPU.env_settle == config.ENV_SETTLED
    assert env.config.env_settle == CPU.env_settle and paired.settled(env, LIVE, 60)
    env.config.env_settle = CUDA.env_settle
    assert figures.reach_with(60) < CUDA.env_settle and not paired.settled(env, LIVE, 60)
    assert paired.settled(env, LIVE, 8)  # no more than these eight would narrow it: nothing more to gain


def test_run_json_records_the_gpu_s_reach_for_two_environments_only():
    """Config.to_json: a run of two environments on a GPU records env_settle (0.01), read back as it was; a run
    of one environment, or one at the CPU's reach, records the options as before (no env_settle)."""
    from flametool.measure.config import Config
    from flametool.measure.environments import Environment
    from flametool.run.record import RunConfig

    envs = [Environment("a", sys.executable), Environment("b", sys.executable)]
    gpu = Config(cases=[], device="cuda:0", shape=[8, 8, 8], dtypes={}, environments=envs, env_settle=CUDA.env_settle)
    assert gpu.to_json()["env_settle"] == 0.01 == RunConfig.of(gpu.to_json()).recorded["env_settle"]
    assert "env_settle" not in Config(cases=[], device="cpu", shape=[8, 8, 8], dtypes={}, environments=envs).to_json()
    assert "env_settle" not in Config(cases=[], device="cuda:0", shape=[8, 8, 8], dtypes={},
                                      env_settle=CUDA.env_settle).to_json()


def test_settle_moves_the_reach_a_ratio_settles_at():
    """--settle PCT: the pair of one process and the pair of two environments settle when their interval reaches no
    further than PCT%, not SETTLED or ENV_SETTLED: the same processes are settled or not by what was asked."""
    m = measurement([10.0] * 5, [6.3, 6.7, 6.5, 6.4, 6.6])  # about +-3%: not settled at the default +-2%
    assert not paired.settled(m, ["a", "b"], 12)
    m.config.settle = 0.04
    assert paired.settled(m, ["a", "b"], 12)
    env = sides(0.5)
    reach = anchoring.anchored_pair(env.run, "numpy@a", "numpy@b").reach
    assert reach < config.ENV_SETTLED and paired.settled(env, LIVE, 60)  # settled at the default
    env.config.settle = reach * 0.8  # asked for a narrower interval, one that 60 processes a side would give
    assert anchoring.anchored_pair(env.run, "numpy@a", "numpy@b").reach_with(60) < env.config.settle
    assert not paired.settled(env, LIVE, 60)


def test_with_fail_above_more_processes_until_the_verdict_is_decided():
    """compare --env --fail-above: a pair is settled when its verdict is decided, whatever `most` says."""
    spread = [1.0, 1.003, 0.997, 1.002, 0.998, 1.0]
    live = ["numpy@a", "torch@a", "numpy@b", "torch@b"]
    null = env_measurement([0.60 * v for v in spread], [0.60 * v for v in spread[::-1]])
    null.config.fail_above = 3.0
    assert paired.settled(null, live, 6)  # its interval lies wholly at or below +3%: passed, decided
    near = env_measurement([0.60 * v for v in spread], [0.618 * v for v in spread[::-1]])  # +3%: the interval holds it
    near.config.fail_above = 3.0
    assert not paired.settled(near, live, 6) and not paired.settled(near, live, 100)
    assert paired.decided(stats.Interval(1.031, 1.05, ""), 3.0) and not paired.decided(None, 3.0)


def test_the_budget_stops_adding_processes_before_a_step_would_overrun_it(monkeypatch):
    """Each step (one process per environment) takes 20 s on this clock; a 50 s budget from the first timing
    process's start takes the step that ends at 40 s, not the one that would end at 60 s."""
    clock = [0.0]
    steps = []
    monkeypatch.setattr(paired.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(paired, "settled", lambda m, live, most: False)  # never settled: the budget stops it
    monkeypatch.setattr(paired, "_live", lambda m, g: list(g.cases))

    def at_once(m, tasks):  # one process at a time (the default --processes-at-once 1)
        for group, i in tasks:
            steps.append((group.cases[0], i))
            clock[0] += 10.0

    monkeypatch.setattr(paired, "_at_once", at_once)
    m = env_measurement([0.6] * 2, [0.6] * 2)
    m.config.processes, m.config.max_processes, m.config.budget = 1, 60, 50.0
    m.timing_started = 0.0
    paired._processes_after_the_first(m, m.run.groups)
    assert [i for _, i in steps] == [2, 2, 3, 3] and clock[0] == 40.0


def test_a_stop_before_the_interval_settled_is_recorded_with_why(monkeypatch, tmp_path):
    """run.timing_stop says which pair had not settled when compare stopped adding processes, and why: "spread" where
    the projection gave up (twelve processes spread as these would still reach past ±2%), "budget" where the time for
    more was spent, "most" where the most processes allowed ran; nothing where every pair settled, or with
    --processes N alone (N exactly, as asked). It is read back from run.json as written, and its line says it."""
    from flametool.render import format as fmt
    from flametool.run.record import TimingStop

    monkeypatch.setattr(paired, "_at_once", lambda m, tasks: None)  # no process runs: the figures stay as built
    monkeypatch.setattr(paired, "_live", lambda m, g: list(g.cases))

    def stop(head: list[float], processes: int, most: int, budget: float | None = None) -> TimingStop | None:
        m = measurement([10.0] * 5, head)
        m.config.processes, m.config.max_processes, m.config.budget = processes, most, budget
        m.out = rundir.create(tmp_path / f"run{len(list(tmp_path.iterdir()))}")
        m.timing_started = time.monotonic() - (100.0 if budget else 0.0)
        paired._processes_after_the_first(m, m.run.groups)
        assert rundir.load(m.out).timing_stop == m.run.timing_stop  # written, read back alike
        return m.run.timing_stop

    wide = [5.6, 6.9, 6.2, 6.6, 5.9]  # +-7%: twelve like them still reach past +-2%
    got = stop(wide, 5, 12)
    assert got is not None and (got.reason, got.base, got.head, got.limit, got.most) == ("spread", "a", "b", 0.02, 12)
    assert stop([6.3, 6.7, 6.5, 6.4, 6.6], 5, 5) is None  # --processes 5 alone: five exactly, as asked
    with monkeypatch.context() as patch:  # more would always settle it, as far as it can tell: five were the most
        patch.setattr(paired, "settled", lambda m, live, most: False)
        assert stop([6.3, 6.7, 6.5, 6.4, 6.6], 3, 5).reason == "most"
    assert stop(wide, 5, 12, budget=50.0).reason == "budget"
    assert stop([6.50, 6.51, 6.49, 6.50, 6.50], 5, 12) is None  # settled
    run = measurement([10.0] * 5, wide).run
    reach = stats.pair("a", run.results["a"].timing, "b", run.results["b"].timing, True).reach
    assert got.applies("a", "b", reach) and fmt.stop_note(got, False, reach) == (
        f"b / a: compare stopped adding processes with its interval at ±{reach:.1%}, wider than the ±2% it settles at: "
        "its processes disagreed so much that up to 12 would not have settled it at that spread (a quieter stretch of "
        "the host may; --settle PCT asks for less)")
    assert not got.applies("b", "a", reach)  # another pair: settled
    assert not got.applies("a", "b", 0.019)  # an analysis that reads it settled says nothing of it
    assert "up to 12 a side would not" in fmt.stop_note(got, True, reach)  # --env: processes a side
