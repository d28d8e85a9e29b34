"""The report's Fairness section: what to be careful about in a compare run, each as a short tag and its text
(unlike cases, failed or unpaired ones, few samples, a loop slowed by sampling or cProfile, processes that differ)."""

from __future__ import annotations

from dataclasses import dataclass

from . import format as fmt
from ..run import perturbation
from ..analyse.compare import Analysis
from ..analyse.attribution import CaseCosts
from ..run.profiled import Sampling
from .report_headline import ok_results

us = fmt.us


FEW_SAMPLES = 200
SLOWDOWN_WARN = 1.5
CPROFILE_WARN = 1.5
SPREAD_WARN = 1.5  # slowest / fastest timed repeat


@dataclass
class Caveat:
    kind: str  # short tag shown before the text
    text: str


def _threads(sampling: Sampling) -> str:
    if sampling.threads == 1:  # a CPU run's process: not 'all 1 threads'
        return "the process's one thread"
    return f"all {sampling.threads} threads of the process" if sampling.threads is not None else "the whole process"


def warnings(a: Analysis, analysed: dict[str, CaseCosts]) -> list[Caveat]:
    run = a.run
    out: list[Caveat] = []
    ok = ok_results(run)
    if not run.complete:
        out.append(Caveat("run incomplete", "run.json is marked incomplete (the run was interrupted or a case failed): "
                                             "what is shown is what finished."))
    for label, r in run.results.items():
        if r.error:
            out.append(Caveat("case failed", f"{label}: {r.error}"))
    out += [Caveat(what, line + ".") for what, line in fmt.cautions(a, run)]
    for label, r in ok.items():
        group = run.group_of(label)
        if group is not None and not group.paired and len(run.results) > 1:
            out.append(Caveat("not paired", f"{label}: {group.reason}. Its comparison with the other cases carries "
                                             "each process's own speed (a fresh process can run the same loop tens of "
                                             "percent faster or slower)."))
        if r.timing and r.timing.host_bound is False:
            out.append(Caveat("not host-bound", f"{label}: {r.timing.bound_note or 'the timed loop was not host-bound'}. "
                                                 f"{fmt.sampled_at(r.shape, r.sample_shape, r.sample_shape_reason)}."))
        samples = r.sampling.analysed_samples if r.sampling else None  # counted as every view counts them
        if samples is not None and samples < FEW_SAMPLES:
            out.append(Caveat("few samples", f"{label}: {fmt.many(samples, 'sample')} in the loop (fewer than {FEW_SAMPLES}): "
                                              "small figures carry large uncertainty; sample longer (--sample-seconds)."))
        sampling = r.sampling
        if sampling:
            assert r.profile is not None  # sampling is its
            slowdown = r.profile.slowdown
            # what would help, as the terminal says it
            advice = perturbation.perturbation_advice(sampling, slowdown, run.config.pool_threads,
                                                 run.config.sample_seconds or sampling.seconds)
            if slowdown is not None and slowdown > SLOWDOWN_WARN:
                out.append(Caveat("sampling slowed the loop", f"{label}: the loop ran {slowdown:.2f}× slower while py-spy "
                                   f"sampled it (each native sample stops {_threads(sampling)}). Shares stay fair; times come from "
                                   "the unsampled loops." + (f" {advice}." if advice else "")))
            if not sampling.complete or sampling.error:
                out.append(Caveat("sampling incomplete", f"{label}: {sampling.error or 'py-spy did not finish'}."))
            if sampling.behind:
                out.append(Caveat("sampler behind", f"{label}: py-spy fell {sampling.behind_seconds:.1f} s "
                                                     f"behind; {advice or 'try a lower --rate'}."))
        inflation = r.profile.cprofile_inflation if r.profile else None
        if inflation is not None and inflation > CPROFILE_WARN:
            out.append(Caveat("cProfile inflation", f"{label}: the loop ran {inflation:.2f}× slower under cProfile: "
                               "its table says which Python functions run, not how long C code takes."))
        t = a.timings.get(label)
        if t and t.processes > 1:
            assert r.timing is not None  # t is made from it
            meds = r.timing.process_medians
            if len(meds) > 1 and max(meds) / min(meds) > SPREAD_WARN:
                out.append(Caveat("processes differ", f"{label}: its timing processes ran at {us(min(meds))} to "
                                                       f"{us(max(meds))} per call. Paired comparisons cancel that; "
                                                       "its own figure is at the median process's speed."))
        elif t and len(t.loops) > 1 and max(t.loops) / min(t.loops) > SPREAD_WARN:
            out.append(Caveat("noisy timing", f"{label}: the timed loops ranged from {us(min(t.loops))} to {us(max(t.loops))} "
                                               "per call; the median is shown. Was the machine busy?"))
    for label, x in analysed.items():
        c = x.closure
        if not c.within_tolerance and c.ratio is not None:
            out.append(Caveat("samples lost", f"{label}: layers sum to {c.ratio:.0%} of the measured time per call "
                                               "(stacks went missing between the sampler and the analysis)."))
    return out
