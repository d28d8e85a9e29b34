"""runner: children started ahead of their jobs (spares, as on a GPU): the timing processes, those run until the
ratios settle (spawn.Spares.ahead) and each case's profiled process."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import faultkit as fk
from flametool.workload import builtins, cases
from flametool.measure import spawn, paired, runner

USER = Path(__file__).parent / "cases" / "user_cases.py"


def test_processes_past_the_asked_ones_are_spares_and_the_unused_ones_are_stopped(tmp_path, monkeypatch):
    """--processes 2, up to 4 while unsettled: the ratio 'settles' after process 3. Process 2 and each case's
    profiled process are the spares started with the run, process 3 the one started ahead while process 2 ran;
    the run is whole, and the spare for process 4 is stopped: no process or log of any spare is left."""
    monkeypatch.setenv(fk.TAG, uuid.uuid4().hex)
    taken, checks, started = [], [], []
    take, start = spawn.Spare.take, spawn.Spare.start

    def counted(spare: spawn.Spare, job):
        got = take(spare, job)
        taken.append((job.kind, got is not None))
        return got

    def starting(cls, specs, config, log):
        started.append(log.name)
        return start(specs, config, log)

    def settled(m, live, most):
        checks.append(len(m.run.results["numpy"].at_sample_shape.processes))
        return len(checks) > 1  # unsettled after 2 processes, settled after 3

    monkeypatch.setattr(spawn.Spare, "take", counted)
    monkeypatch.setattr(spawn.Spare, "start", classmethod(starting))
    monkeypatch.setattr(paired, "settled", settled)
    specs = [builtins.builtin("numpy"), cases.user_case(f"{USER}:add_case")]
    config = runner.Config(cases=specs, device="cpu", shape=[16, 16, 16], dtypes={s.label: "float32" for s in specs},
                           iters=50, warmup=5, repeats=1, extend_rounds=False, processes=2, max_processes=4,
                           extra_seconds=600, rate_hz=50, sample_seconds=1, out=tmp_path / "run", spares=True,
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
    assert list(out.glob("*.log")) == []
    assert fk.none_left(os.environ[fk.TAG]) == []
