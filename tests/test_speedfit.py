"""The speed-aware anchored estimate (run/speedfit) on hand-built per-process figures: a host with two
speeds, where the case/anchor ratio is not the same at both."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flametool.run import anchoring, speedfit
from flametool.run.timing import Loops, Timing

SLOPE = 0.12  # log(case / anchor) rises this much per unit of log(anchor time): slower processes read higher
FAST, SLOW = 12.0, 17.0  # the anchor's time per call (us) at the host's two speeds
JITTER = [0.004, -0.003, 0.001, -0.002, 0.003, -0.001, 0.002, -0.004]  # the per-process spread


def side(speeds: list[float], change: float = 1.0, offset: float = 0.42) -> tuple[np.ndarray, np.ndarray]:
    """Per-process (log(case / anchor), log(anchor)) for processes at `speeds` (anchor us per call)."""
    x = np.log(np.asarray(speeds))
    y = offset + SLOPE * (x - math.log(FAST)) + math.log(change) + np.asarray(JITTER[:len(speeds)])
    return y, x


def test_a_null_whose_sides_drew_different_speeds_reads_one():
    a = side([FAST] * 6 + [SLOW] * 2)  # mostly fast
    b = side([FAST] * 2 + [SLOW] * 6)  # mostly slow: the unadjusted figure leans
    f = speedfit.fit(*a, *b)
    assert f.adjusted and f.overlap
    assert f.unadjusted > 1.015 and not (f.unadjusted_low <= 1 <= f.unadjusted_high)  # the lean: a false change
    assert f.ratio == pytest.approx(1.0, abs=0.004) and f.low <= 1 <= f.high
    assert f.slope == pytest.approx(SLOPE, abs=0.02)
    assert f.base_range == pytest.approx((FAST, SLOW)) and f.head_range == pytest.approx((FAST, SLOW))


def test_a_plant_of_known_size_is_recovered_whatever_speeds_each_side_drew():
    a = side([FAST] * 5 + [SLOW] * 3)
    b = side([FAST] * 2 + [SLOW] * 6, change=1.086)
    f = speedfit.fit(*a, *b)
    assert f.ratio == pytest.approx(1.086, rel=0.004) and f.low < 1.086 < f.high and f.low > 1.05
    assert f.unadjusted > 1.086 * 1.01  # unadjusted, the plant reads high
    # head and base swapped: the reciprocal
    g = speedfit.fit(*b, *a)
    assert g.ratio == pytest.approx(1 / f.ratio) and g.slope == pytest.approx(f.slope)


def test_speeds_that_do_not_overlap_are_said_and_not_extrapolated():
    a, b = side([FAST, FAST * 1.02, FAST * 0.98]), side([SLOW, SLOW * 1.03, SLOW * 0.99])
    f = speedfit.fit(*a, *b)
    assert not f.overlap and not f.adjusted and f.slope is None
    assert f.ratio == f.unadjusted and f.low == f.unadjusted_low
    line = f.sentence("main", "pr")
    assert "do not overlap" in line and "11.8 to 12.2 us" in line and "16.8 to 17.5 us" in line


def test_the_line_says_what_the_adjustment_did():
    f = speedfit.fit(*side([FAST] * 4 + [SLOW] * 4), *side([FAST] * 3 + [SLOW] * 5, change=1.03))
    line = f.sentence("a", "b")
    assert f"slope {f.slope:+.3f}" in line and f"unadjusted {f.unadjusted:.4f}" in line
    assert f"adjusted {f.ratio:.4f}" in line and "12.0 to 17.0 us" in line
    assert f.to_json()["unadjusted"]["ratio"] == f.unadjusted and f.to_json()["overlap"] is True


def test_the_interval_comes_from_the_fit_and_shrinks_with_processes():
    a, b = side([FAST] * 4 + [SLOW] * 4), side([FAST] * 4 + [SLOW] * 4, change=1.02)
    f = speedfit.fit(*a, *b)
    assert f.df == 16 - 3 and f.reach == pytest.approx(math.exp(speedfit.t975(13) * f.se) - 1, rel=1e-6)
    assert f.reach_with(16) < f.reach_with(8)
    inside = f.ratio * (1 + f.reach / 2)  # a threshold inside today's interval: more processes would clear it
    n = f.processes_to_settle(inside)
    assert n is not None and n > 8 and f.reach_with(n) < inside / f.ratio - 1 < f.reach
    boot = speedfit.fit(*a, *b, interval="bootstrap")
    assert boot.ratio == f.ratio and boot.low < f.ratio < boot.high and "bootstrap" in boot.method


def test_per_process_figures_from_rounds():
    case = [[20.0, 22.0, 30.0], [10.0]]
    anchor = [[10.0, 11.0, 20.0], [0.0]]  # the second process has a zero: left out
    y, x = speedfit.per_process(case, anchor)
    assert len(y) == 1
    assert y[0] == pytest.approx(np.mean(np.log([2.0, 2.0, 1.5])))
    assert x[0] == pytest.approx(np.mean(np.log([10.0, 11.0, 20.0])))
    ym, xm = speedfit.per_process(case, anchor, "median")
    assert ym[0] == pytest.approx(math.log(22.0 / 11.0)) and xm[0] == pytest.approx(math.log(11.0))


def timings(case_us: float, speeds: list[float], change: float = 1.0) -> tuple[Timing, Timing]:
    """(the case's, the anchor's) loops in processes at `speeds` (anchor us per call), rounds interleaved: the
    case/anchor ratio rising with the anchor's log time at SLOPE, as on the H200."""
    case, anchor = [], []
    for k, s in enumerate(speeds):
        jitter = JITTER[k % len(JITTER)]
        ratio = case_us / FAST * (s / FAST) ** SLOPE * change * math.exp(jitter)
        anchor.append(Loops([s, s * 1.002, s * 0.998]))
        case.append(Loops([s * ratio, s * 1.002 * ratio, s * 0.998 * ratio]))
    return Timing([64, 64, 64], 200, case), Timing([64, 64, 64], 200, anchor)


def test_an_anchored_null_whose_sides_drew_different_speeds_does_not_read_as_a_change():
    base = timings(18.0, [FAST] * 6 + [SLOW] * 2)
    head = timings(18.0, [FAST] * 2 + [SLOW] * 6)
    f = anchoring.anchored("cupy", "torch", base, head)
    assert f.speed is not None and f.speed.adjusted
    assert f.ratio == pytest.approx(1.0, abs=0.004) and f.ratio_interval.low <= 1 <= f.ratio_interval.high
    assert not (f.speed.unadjusted_low <= 1 <= f.speed.unadjusted_high)  # unadjusted, it would read a change
    assert f.diff_us == pytest.approx(f.at_us * (f.ratio - 1)) and f.at_us == pytest.approx(f.speed.at_us)
    # the verdict reads the adjusted interval: a null passes --fail-above 2
    from flametool.analyse import diff

    change = diff.Change(f.ratio, f.ratio_interval, "relative to torch", f, f.absolute)
    assert diff.verdict(change, "cupy", 2.0).outcome == "passed"


def test_a_range_of_one_figure_at_its_precision_is_said_as_one():
    # every process on one side at one speed (to a tenth of a us): '12.0 us', not '12.0-12.0 us'
    a, b = side([FAST, FAST * 1.001, FAST]), side([SLOW, SLOW * 1.03, SLOW * 0.99])
    line = speedfit.fit(*a, *b).sentence("main", "pr")
    assert "took 12.0 us a call in main's processes" in line and "16.8 to 17.5 us in pr's" in line
