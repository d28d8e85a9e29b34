"""How much sampling perturbed a loop, and what would perturb it less: the rule the sampler applies while it
samples (a rate it cannot keep up with is halved) and the views apply when they advise a rate or --pool-threads."""

from __future__ import annotations

import math

from .profiled import Sampling


# Sampling that slows the loop more than this is flagged; a suggested rate aims at TARGET_SLOWDOWN.
MAX_SLOWDOWN = 1.5
TARGET_SLOWDOWN = 1.25
MIN_LOOP_SHARE = 0.5


def coverage(sampling: Sampling) -> float | None:
    """Samples py-spy wrote per sample it was asked for over its window: well under 1 means it fell behind."""
    if not sampling.window or sampling.window[1] <= sampling.window[0]:
        return None
    expected = sampling.rate_hz * (sampling.window[1] - sampling.window[0])
    return sampling.total_samples / expected if expected else None


def loop_share(sampling: Sampling) -> float | None:
    """The share of py-spy's samples that landed in the active loop (step() or the loop between calls)."""
    if not sampling.total_samples:
        return None
    return (sampling.kept_samples + sampling.loop_samples) / sampling.total_samples


def suggest_rate(rate_hz: int, slowdown: float | None, behind: bool, share: float | None = 1.0) -> int | None:
    """A lower rate when sampling perturbed the loop too much, or None when the rate was fine.

    Each native sample stops the process for a roughly fixed time c, so slowdown = 1 + rate * c; the rate
    that gives TARGET_SLOWDOWN follows from the measured slowdown. Falling behind halves the rate at least.
    A loop that holds under MIN_LOOP_SHARE of the samples (the rest wait in sync(): GPU-bound, like a CUDA
    graph replay) gets no lower rate for its slowdown: its few samples would become fewer still. A rate of 0 is
    one run.json did not record (a schema-1 run's, or one edited by hand): nothing lower to advise."""
    if rate_hz < 1:
        return None
    if slowdown is not None and slowdown > MAX_SLOWDOWN and (share or 0) >= MIN_LOOP_SHARE:
        stop_seconds = (slowdown - 1) / rate_hz
        return max(1, min(rate_hz // 2 if behind else rate_hz - 1, int((TARGET_SLOWDOWN - 1) / stop_seconds)))
    if behind:
        return max(1, rate_hz // 2)
    return None


# Fewer samples than this inside step() make small figures uncertain (the report's "few samples" caveat): a
# lower rate is advised with a --sample-seconds that still gives this many.
ENOUGH_SAMPLES = 200


def perturbation_advice(sampling: Sampling, slowdown: float | None, pool_threads: int | None,
                        sample_seconds: float) -> str | None:
    """What would perturb the loop less, in words, when sampling slowed it or fell behind; None when it did not.
    Each native sample stops every thread of the process: where it had more than one and its pools were not
    held to one thread, --pool-threads 1 is the lever (a lower rate only samples less). A lower rate comes with
    a --sample-seconds long enough for ENOUGH_SAMPLES at it."""
    rate = suggest_rate(sampling.rate_hz, slowdown, sampling.behind, loop_share(sampling))
    if rate is None:
        return None
    threads = sampling.threads
    if threads is not None and threads > 1 and pool_threads != 1:
        return f"--pool-threads 1 would perturb it less (each native sample stopped all {threads} threads)"
    if rate >= sampling.rate_hz:  # at --rate 1 there is no lower rate: '--rate 1 would perturb it less' was no advice
        return None
    seconds = max(sample_seconds, math.ceil(ENOUGH_SAMPLES / rate))
    if seconds > sample_seconds:
        return (f"--rate {rate} --sample-seconds {seconds} would perturb it less and still give about "
                f"{rate * seconds} samples")
    return f"--rate {rate} would perturb it less"
