"""The statistics of paired timing, on hand-made loops: pooling within processes, the intervals, the
interleaving order and the calls per loop that make the paired loops one length."""

from __future__ import annotations

import math
import statistics

import pytest

from flametool.run import stats
from flametool.measure.child.loops import round_order
from flametool.run.record import DeviceInfo
from flametool.run.timing import BALANCED_ROUNDS, MAX_LOOP_CALLS, Loops, Timing, balanced_calls


def timing(*processes: list[float]) -> Timing:
    return Timing([64, 64, 64], 250, [Loops(list(p)) for p in processes], True)


def test_a_process_speed_cancels_out_of_the_paired_ratio():
    # three processes at speeds 1, 1.5 and 0.8 that multiply both cases alike: head is 1.5x base in each
    speeds = [1.0, 1.5, 0.8]
    base = timing(*[[10 * s, 10.2 * s, 9.9 * s] for s in speeds])
    head = timing(*[[15 * s, 15.3 * s, 14.85 * s] for s in speeds])
    f = stats.pair("a", base, "b", head, paired=True)
    assert f.paired and f.units == 3 and f.unit_name == "processes"
    assert f.per_process_ratio == pytest.approx([1.5, 1.5, 1.5])
    assert f.ratio == pytest.approx(1.5) and f.ratio_interval.low == pytest.approx(1.5) == f.ratio_interval.high
    # the difference is taken at the median process's speed (1.0 here): base's pooled 10 us times (1.5 - 1),
    # not the mean of the per-process differences (5.5), which carries each process's speed
    assert f.base_us == pytest.approx(10.0) and f.diff_us == pytest.approx(5.0)
    # unpaired, the same loops give a ratio of pooled medians with a far wider interval
    u = stats.pair("a", base, "b", head, paired=False)
    assert not u.paired and u.ratio_interval.high - u.ratio_interval.low > 0.2


def test_paired_interval_is_student_t_over_processes():
    ratios = [1.50, 1.55, 1.45, 1.52, 1.48]
    base = timing(*[[10.0] for _ in ratios])
    head = timing(*[[10.0 * r] for r in ratios])
    f = stats.pair("a", base, "b", head, paired=True)
    logs = [math.log(r) for r in ratios]
    half = 2.776 * statistics.stdev(logs) / math.sqrt(5)  # t(0.975, 4 df)
    assert f.ratio == pytest.approx(math.exp(statistics.fmean(logs)))
    assert f.ratio_interval.low == pytest.approx(math.exp(statistics.fmean(logs) - half))
    assert f.ratio_interval.high == pytest.approx(math.exp(statistics.fmean(logs) + half))
    assert "Student t" in f.ratio_interval.method and not f.wide  # ±2.5%: within WIDE


def test_one_process_pools_its_rounds_and_a_wide_interval_is_flagged():
    base = timing([10.0, 10.0, 10.0, 10.0])
    head = timing([12.0, 15.0, 11.0, 16.0])  # round by round
    f = stats.pair("a", base, "b", head, paired=True)
    assert f.units == 4 and f.unit_name == "rounds of one process"
    assert f.ratio_interval.low < f.ratio < f.ratio_interval.high and f.wide
    assert stats.pair("a", timing([10.0]), "b", timing([12.0]), True).ratio_interval is None  # one round: none


def test_t_quantiles_are_conservative_between_rows():
    assert stats.t975(4) == 2.776 and stats.t975(22) == stats.T975[20] and stats.t975(5000) == 1.960


@pytest.mark.parametrize("n", [2, 3, 4])
def test_round_order_puts_each_case_once_a_round_and_first_equally(n):
    labels = [chr(ord("a") + i) for i in range(n)]
    rounds = [round_order(labels, r) for r in range(4 * n)]
    assert all(sorted(r) == labels for r in rounds)
    firsts = [r[0] for r in rounds]
    assert all(firsts.count(l) == firsts.count(labels[0]) for l in labels)
    assert round_order(labels, 0) != round_order(labels, 1)
    assert rounds[:4] == [["a", "b"], ["b", "a"], ["b", "a"], ["a", "b"]] if n == 2 else True


class _Event:
    def record(self) -> None:
        pass


class _Phases:
    def phase(self, *args, **kwargs) -> None:
        pass


def _events(gpu_ms_per_loop: float):
    from flametool.measure.child import clocks

    return clocks.Events(make=_Event, elapsed_ms=lambda s, e: gpu_ms_per_loop, device_info=DeviceInfo)


@pytest.mark.parametrize("gpu_ms, extend, rounds", [
    (1e6, True, 2),     # GPU-bound and long: AB BA, then stop
    (1e6, False, 3),    # --repeats given: run as given
    (0.0001, True, 3),  # host-bound: at least --repeats (and more until each had `extend`, here none)
])
def test_long_gpu_bound_loops_stop_after_two_rounds(monkeypatch, gpu_ms, extend, rounds):
    from flametool.measure.child import loops as child_loops

    monkeypatch.setattr(child_loops, "LONG_LOOP_SECONDS", 0.0)  # every loop counts as long
    step = (lambda: None, lambda: None)
    loops = child_loops.interleaved({"a": step, "b": step}, {"a": 10, "b": 10}, 3, _events(gpu_ms), _Phases(),
                                    [8, 8, 8], {}, 1e-9 if extend else 0.0)
    assert [len(loops[l].cpu_us) for l in ("a", "b")] == [rounds, rounds]
    assert len(loops["a"].gpu_us) == len(loops["a"].wall_us) == rounds


def test_host_bound_rounds_go_on_until_each_case_had_its_seconds(monkeypatch):
    """Past --repeats' 3 rounds, host-bound cases get rounds until each one's loops have had `extend` seconds (here
    1/32 s), and no more. The loops read a clock of the test's own, each call 1/512 s of it: with calls that slept
    2 ms of the real one the machine decided the count (a sleep woke 4-12 ms late beside busy loops on 2 cores:
    6-7 rounds where the test asked for more than 6.25, and one case's loops read 29 ms of the 50 its rounds had
    counted)."""
    from flametool.measure.child import loops as child_loops, ownclock

    now = [0.0]
    monkeypatch.setattr(ownclock, "perf_counter", lambda: now[0])

    def call() -> None:
        now[0] += 1 / 512  # a power of two: the sums are exact

    step = (call, lambda: None)
    loops = child_loops.interleaved({"a": step, "b": step}, {"a": 1, "b": 1}, 3, None, _Phases(), [8, 8, 8], {},
                                    1 / 32)
    # 16 loops of 1/512 s make each case's 1/32 s: 16 rounds, not --repeats' 3, nor one more
    assert [len(loops[l].cpu_us) for l in ("a", "b")] == [16, 16]
    assert {us for l in ("a", "b") for us in loops[l].cpu_us + loops[l].wall_us} == {1e6 / 512}
    # a case whose loops are twice as long has its seconds in 8 rounds; the rounds go on for the other one, both
    # cases timed in each (a round is of every host-bound case)
    def twice() -> None:
        call()
        call()

    loops = child_loops.interleaved({"a": step, "b": (twice, lambda: None)}, {"a": 1, "b": 1}, 3, None, _Phases(), [8, 8, 8], {},
                                    1 / 32)
    assert [len(loops[l].cpu_us) for l in ("a", "b")] == [16, 16]


def test_headline_prefers_processes_to_rounds_of_one_process():
    """The requested shape timed in one process (49 rounds) and the sample shape in three processes: the
    three processes lead, however many rounds the one process ran."""
    from flametool.analyse.compare import PairAnalysis

    one = stats.pair("a", Timing([8] * 3, 10, [Loops([1.0 + i / 100 for i in range(49)])]), "b",
                     Timing([8] * 3, 10, [Loops([2.0 + i / 100 for i in range(49)])]), True)
    three = stats.pair("a", Timing([8] * 3, 10, [Loops([1.0]), Loops([1.1]), Loops([0.9])]), "b",
                       Timing([8] * 3, 10, [Loops([1.5]), Loops([1.6]), Loops([1.4])]), True)
    assert (one.units, one.unit_name, three.units, three.unit_name) == (49, "rounds of one process", 3, "processes")
    assert PairAnalysis("a", "b", one, three).headline is three
    assert PairAnalysis("a", "b", one, None).headline is one


def spread_pair(n: int, spread: float) -> stats.PairFigures:
    """A paired ratio over n processes whose own ratios alternate 1 - spread, 1 + spread."""
    base = timing(*[[10.0, 10.0] for _ in range(n)])
    head = timing(*[[10.0 * (1 + spread * (-1) ** i)] * 2 for i in range(n)])
    return stats.pair("a", base, "b", head, paired=True)


def test_the_processes_advised_are_more_than_ran_and_settle_the_interval():
    from flametool.render import format as fmt

    for n in (10, 12):
        f = spread_pair(n, 0.12)
        assert f.wide and f.units == n
        need = stats.processes_for(f)
        assert need is not None and need > n
        # the advised number brings the same spread within WIDE
        assert not spread_pair(need + need % 2, 0.12).wide
        note = fmt.wide_note(f)
        assert f"--processes {need} would bring it to about ±5%" in note and f"over {n} processes" in note
        assert "--processes 10 " not in note.replace(f"--processes {need}", "")
    # a spread that even 100 processes would not settle: said so, no number advised
    f = spread_pair(6, 0.9)
    assert stats.processes_for(f) is None
    assert "more than more processes would settle" in fmt.wide_note(f) and "--processes" not in fmt.wide_note(f)
    # ... unless so few processes ran that their spread is itself unsettled
    assert "too few to tell" in fmt.wide_note(spread_pair(4, 0.9)) and "--processes 5" in fmt.wide_note(spread_pair(4, 0.9))
    # a settled ratio gets no note
    assert fmt.wide_note(spread_pair(10, 0.001)) is None


def test_reach_with_more_processes_follows_the_spread():
    """The reach a pair's interval would have over more processes: at the spread of the ratios so far, the
    Student t half-width shrinks with the count; at a wide spread twelve processes still reach far."""
    tight = stats.pair("a", timing([10.0], [10.0], [10.0]), "b", timing([6.4], [6.5], [6.45]), True)
    wide = stats.pair("a", timing([10.0], [10.0], [10.0]), "b", timing([5.6], [6.9], [6.2]), True)
    assert tight.reach_with(3) == pytest.approx(tight.reach, rel=1e-9)  # the same count: the interval it has
    assert tight.reach_with(12) < tight.reach_with(5) < tight.reach
    assert tight.reach_with(12) < 0.02 < wide.reach_with(12)
    assert stats.pair("a", timing([10.0]), "b", timing([6.0]), True).reach_with(12) is None  # one process: no spread


def test_balanced_calls_give_the_faster_case_loops_as_long_as_the_slower_ones():
    # the H200's seed pair at 1024^3: cupy 19 us a call, torch 12.5 us, 250 calls each
    got = balanced_calls({"cupy": 250, "torch": 250}, {"cupy": 19e-6, "torch": 12.5e-6}, 1.0)
    assert got == {"cupy": 250, "torch": 380}
    assert got["torch"] * 12.5e-6 == pytest.approx(got["cupy"] * 19e-6, rel=0.01)
    # never fewer calls than a case had, whichever case is listed first
    assert balanced_calls({"a": 100, "b": 1000}, {"a": 1e-6, "b": 1e-6}, 1.0) == {"a": 1000, "b": 1000}


def test_balanced_calls_leave_alone_what_they_cannot_balance():
    # one case, or no rate for the other: as they were
    assert balanced_calls({"a": 250}, {"a": 1e-5}, 1.0) == {"a": 250}
    assert balanced_calls({"a": 250, "b": 250}, {"a": 1e-5}, 1.0) == {"a": 250, "b": 250}
    assert balanced_calls({"a": 250, "b": 250}, {"a": 1e-5, "b": 0.0}, 1.0) == {"a": 250, "b": 250}
    # a long loop (a case GPU-bound at the sample shape) stretches the others only to seconds / BALANCED_ROUNDS
    got = balanced_calls({"slow": 250, "fast": 250}, {"slow": 1e-3, "fast": 1e-6}, 1.0)
    assert got == {"slow": 250, "fast": round(1.0 / BALANCED_ROUNDS / 1e-6)}
    # and never past MAX_LOOP_CALLS
    assert balanced_calls({"a": 10, "b": 10}, {"a": 1.0, "b": 1e-9}, 1e6)["b"] == MAX_LOOP_CALLS
