"""Where a pair's ratio interval comes from: the spread between processes against the noise within each.

    python benchmarks/noise.py samples/h200-hostbound-1024 [--base cupy --head torch]

Reads a run directory (no GPU needed) and prints, for a pair of cases timed in the same processes at the
sample shape: the loops per process and their length, each process's head/base ratio (the mean of its
rounds' log ratios), the standard deviation of those between processes, the standard error each process's
own rounds leave on its ratio (within), and the reach of the pair's 95% interval (t over processes, as
stats.pair makes it). Then the same from the first half and the first quarter of each process's rounds: what
a process timed for half as long would have given. Where `within` is much smaller than `between`, longer
timing per process buys nothing and more processes are what settle the ratio; where the two are alike, more
rounds per process (shorter loops in the same time) do.

With --by-tenth it also prints the ratio from each tenth of every process's rounds (the mean over processes
of each tenth's mean log ratio), and flametool's own ratio (each case's median loop per process, pooled) from
the first half of the rounds, the last half and all of them: a ratio that moves from the first tenth to the
last is a process still settling while it is timed, which no number of processes removes, and what a
shorter timing would read.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flametool.run import rundir  # noqa: E402
from flametool.run import stats  # noqa: E402
from flametool.run.stats import t975  # noqa: E402
from flametool.run.timing import Loops, Timing  # noqa: E402


def spread(base, head, fraction: float) -> tuple[float, float, float, float]:
    """(ratio, between-process sd, mean within-process se, reach) from the first `fraction` of each process's
    rounds, on the log scale (sd and se as fractions)."""
    per, within = [], []
    for pb, ph in zip(base.processes, head.processes):
        n = max(2, int(len(pb.cpu_us) * fraction))
        logs = [math.log(h / b) for b, h in zip(pb.cpu_us[:n], ph.cpu_us[:n])]
        per.append(statistics.fmean(logs))
        within.append(statistics.stdev(logs) / math.sqrt(len(logs)))
    between = statistics.stdev(per)
    reach = math.exp(t975(len(per) - 1) * between / math.sqrt(len(per))) - 1
    return math.exp(statistics.fmean(per)), between, statistics.fmean(within), reach


def by_tenth(base, head) -> list[float]:
    """The ratio from each tenth of the processes' rounds, first to last."""
    tenths: list[list[float]] = [[] for _ in range(10)]
    for pb, ph in zip(base.processes, head.processes):
        logs = [math.log(h / b) for b, h in zip(pb.cpu_us, ph.cpu_us)]
        for k in range(10):
            part = logs[k * len(logs) // 10:(k + 1) * len(logs) // 10]
            if part:
                tenths[k].append(statistics.fmean(part))
    return [math.exp(statistics.fmean(t)) for t in tenths if t]


def rounds_between(timing: Timing, lo: float, hi: float) -> Timing:
    """`timing` with only the rounds between fractions lo and hi of each process's (host times)."""
    def part(loops: Loops) -> Loops:
        i = int(len(loops.cpu_us) * lo)
        return Loops(cpu_us=loops.cpu_us[i:max(i + 1, int(len(loops.cpu_us) * hi))])
    return dataclasses.replace(timing, processes=[part(p) for p in timing.processes])


def median_ratio(base: Timing, head: Timing, lo: float, hi: float) -> float:
    """flametool's own paired ratio (stats.pair) from the rounds between fractions lo and hi of each process's."""
    return stats.pair("base", rounds_between(base, lo, hi), "head", rounds_between(head, lo, hi), True).ratio


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("run", type=Path)
    p.add_argument("--base", default=None, help="default: the run's first pair")
    p.add_argument("--head", default=None)
    p.add_argument("--by-tenth", action="store_true", help="the ratio of each tenth of the rounds, first to last")
    args = p.parse_args()
    run = rundir.load(args.run)
    base, head = (args.base, args.head) if args.base and args.head else run.pairs[0]
    b, h = run.results[base].at_sample_shape, run.results[head].at_sample_shape
    if b is None or h is None or len(b.processes) < 2 or not run.paired(base, head):
        print(f"{base} and {head}: not timed in the same processes, two or more of them")
        return 1
    rounds = [len(x.cpu_us) for x in b.processes]
    loop_ms = statistics.median(v for x in b.processes for v in x.cpu_us) * b.calls / 1e3
    print(f"{args.run}: {head} / {base} at {','.join(map(str, b.shape))}, {len(rounds)} processes, rounds per process "
          f"{min(rounds)}-{max(rounds)}, loops of {b.calls} calls ({loop_ms:.1f} ms of {base})")
    for fraction in (1.0, 0.5, 0.25):
        ratio, between, within, reach = spread(b, h, fraction)
        print(f"  {fraction:>4g} of the rounds: ratio {ratio:.4f}, between processes sd {between:.2%}, within a "
              f"process se {within:.2%}, 95% interval reach {reach:.2%}")
    if args.by_tenth:
        print("  by tenth of the rounds, first to last: " + " ".join(f"{r:.4f}" for r in by_tenth(b, h)))
        print(f"  flametool's ratio (medians) from the first half of the rounds {median_ratio(b, h, 0, 0.5):.4f}, the "
              f"last half {median_ratio(b, h, 0.5, 1):.4f}, all {median_ratio(b, h, 0, 1):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
