"""runner.Measurement's decisions, on hand-built timings: when more timing processes can still help."""

from __future__ import annotations

from flametool import runner
from flametool.record import CaseResult, Group, Loops, Timing
from runbuild import new_run


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
    assert not m._settled(["a", "b"], 12)
    assert m._settled(["a", "b"], 5)  # at most five: five like these are what it has


def test_no_more_processes_where_twelve_would_still_disagree():
    # ratios 0.56 to 0.69 (as the H200 read across processes): twelve like them still reach past ±2%
    m = measurement([10.0] * 5, [5.6, 6.9, 6.2, 6.6, 5.9])
    assert m._settled(["a", "b"], 12)


def test_a_settled_ratio_needs_no_more():
    m = measurement([10.0] * 5, [6.50, 6.51, 6.49, 6.50, 6.50])
    assert m._settled(["a", "b"], 12)


def test_a_sweep_says_which_size_and_how_much_is_left(monkeypatch):
    """Two processes of three sizes, the last size taking most of a process: after the first process the time
    left is read off what each size took there."""
    clock = [100.0]
    monkeypatch.setattr(runner.time, "monotonic", lambda: clock[0])
    left = runner.SweepLeft([[8, 8, 8], [16, 16, 16], [64, 64, 32]], processes=2)
    assert left.line(1) == "0/6 sizes timed; size 1/3 (8) in process 1/2"
    for seconds in (1.0, 1.0, 8.0):  # the first process: 10 s
        clock[0] += seconds
        left.step()
    assert left.line(2) == "3/6 sizes timed, about 10 s left; size 1/3 (8) in process 2/2"
    clock[0] += 1.0
    left.step()
    assert left.line(2) == "4/6 sizes timed, about 9 s left; size 2/3 (16) in process 2/2"
    clock[0] += 1.0
    left.step()
    assert left.line(2).startswith("5/6 sizes timed, about 8 s left; size 3/3 (64x64x32)")
