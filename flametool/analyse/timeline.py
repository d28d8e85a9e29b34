"""One step's timeline (run/steptrace.py, the counted loop's CUPTI records of one step): how busy the GPU is
while the host runs the step, and how long it waits between kernels (issue 40); and what `export --format
perfetto` renders (Timelines).

busy: the GPU's work (kernels, copies, memsets; overlapping ones counted once) inside the step's span, over the
step's span, both on CUPTI's clock. A host-bound step reads low: the GPU waits for the host's next launch. idle:
the gaps between one piece of GPU work's end and the next one's start, inside the step's span.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import FlametoolError
from ..run import rundir, steptrace
from ..run.record import Run
from ..run.steptrace import StepTrace

NEEDS_CUPTI = ("{where}: no timeline to export: a step's timeline comes from CUPTI's records of the counted loop, "
               "which needs cupti-python on a CUDA device (pip install 'flametool[cupti]')")


@dataclass(frozen=True)
class Busy:
    """The GPU during one step: `work_us` of kernels, copies and memsets within the step's `step_us`, and the
    `gaps` between them (their total `idle_us`, the longest `longest_gap_us`)."""

    step_us: float
    work_us: float
    idle_us: float
    gaps: int
    longest_gap_us: float
    kernels: int

    @property
    def share(self) -> float:
        return self.work_us / self.step_us if self.step_us > 0 else 0.0

    def words(self) -> str:
        """'GPU busy 23% of the step (11.20 us of GPU work in a 48.50 us step); idle between kernels 30.10 us in 4
        gaps (longest 12.30 us)'."""
        return (f"GPU busy {self.share:.0%} of the step ({self.work_us:,.2f} us of GPU work in a {self.step_us:,.2f} us "
                f"step, {self.kernels} kernel{'s' if self.kernels != 1 else ''}); idle between kernels "
                f"{self.idle_us:,.2f} us in {self.gaps} gap{'s' if self.gaps != 1 else ''}"
                + (f" (longest {self.longest_gap_us:,.2f} us)" if self.gaps else ""))


def busy(t: StepTrace) -> Busy:
    """Busy and idle time of the GPU within the step's span (see the module's note)."""
    spans = sorted((max(g.start, t.start), min(g.end, t.end)) for g in t.gpu)
    spans = [(a, b) for a, b in spans if b > a]
    work = 0
    gaps: list[int] = []
    end = None
    for a, b in spans:
        if end is not None and a > end:
            gaps.append(a - end)
        if end is None or a > end:
            work += b - a
        elif b > end:
            work += b - end
        end = b if end is None else max(end, b)
    return Busy((t.end - t.start) / 1e3, work / 1e3, sum(gaps) / 1e3, len(gaps), max(gaps, default=0) / 1e3,
                sum(1 for g in t.gpu if g.kind == "kernel"))


def timeline_file(run_dir: Path, run: Run, label: str) -> Path | None:
    """A case's timeline file as run.json names it (files["timeline"]), None where it has none."""
    r = run.results.get(label)
    prof = r.profile if r is not None else None
    name = prof.files.get("timeline") if prof is not None else None
    return Path(run_dir) / name if name is not None and rundir.is_file_name(name) else None


def busy_by_case(run_dir: Path, run: Run) -> dict[str, Busy]:
    """Each case with a timeline: its GPU's busy and idle time (a damaged file is left out of the report)."""
    out = {}
    for label in run.results:
        file = timeline_file(run_dir, run, label)
        if file is None:
            continue
        try:
            out[label] = busy(steptrace.load(file))
        except FlametoolError:  # `export --format perfetto` says what is wrong with it
            continue
    return out


@dataclass
class Timelines:
    """What `export --format perfetto` writes: the timelines of the cases chosen."""

    run_dir: Path
    traces: list[StepTrace]


def timelines(run_dir: Path, run: Run, case: str | None = None) -> Timelines:
    """Every case's timeline, or one case's; none at all (a CPU run, no cupti-python) is one error (exit 2)."""
    labels = [case] if case is not None else list(run.results)
    if case is not None and case not in run.results:
        raise FlametoolError(f"{run_dir}: no case {case!r} (cases: {', '.join(run.results)})")
    files = [(l, timeline_file(run_dir, run, l)) for l in labels]
    traces = [steptrace.load(f) for _l, f in files if f is not None]
    if not traces:
        raise FlametoolError(NEEDS_CUPTI.format(where=f"{run_dir}" + (f" ({case})" if case else "")))
    return Timelines(Path(run_dir), traces)
