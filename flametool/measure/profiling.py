"""Each case alone: its own loops, the loop under cProfile, and py-spy --native on it (compare: at the sample
shape; sweep --sample: at each host-bound size), into the run directory's .prof and .folded files; and the text
of the source lines its samples name (measure/sources.py), kept in the Measurement until sources.json is saved."""

from __future__ import annotations

from pathlib import Path

from . import sampler, sources
from .spawn import child_sample_grace, run_child
from .jobs import job_base, job_case
from .measurement import Measurement, stop_if_refused
from ..errors import RunDirError
from ..run import folded, rundir, steptrace
from ..run import sources as rec
from ..workload.cases import CaseSpec
from .protocol import ProfileJob
from ..run.profiled import ProfileProcess
from ..run.record import size_name
from ..run.timing import host_bound


def profile(m: Measurement, case: CaseSpec) -> None:
    """The case alone at the sample shape: its own loops, cProfile, and py-spy."""
    r = m.run.results[case.label]
    assert r.sample_shape is not None  # the case's timing chose it
    got = profiled(m, case, r.sample_shape, m.steps[case.label], case.label)
    if isinstance(got, str):  # its timings stand (the verdict is theirs); only the profile is lost
        r.profile_error = (f"profiling alone at {','.join(map(str, r.sample_shape))}: {got}; its profile is lost, its "
                           "timings are kept")
    else:
        r.profile = got
        if got.counts is not None and got.counts.corrupted:
            r.warnings.append(f"its counts are corrupted ({got.counts.corrupted}): kept in run.json, left out of "
                              "every comparison")


def profile_points(m: Measurement, case: CaseSpec) -> None:
    """A sweep's --sample: the case alone at each size where its timed loops were host-bound, into
    LABEL@SIZE.prof and LABEL@SIZE.folded; run.json saved after each."""
    r = m.run.results[case.label]
    for t in r.points:
        if t.error or not host_bound(t):
            continue
        got = profiled(m, case, t.shape, max(1, t.calls // r.ops_per_step), f"{case.label}@{size_name(t.shape)}")
        if isinstance(got, str):
            t.error = f"profiling alone: {got}"
        else:
            t.profile = got
        m.save()
        if not isinstance(got, str):
            stop_if_refused(case.label, got, m.out)


def profiled(m: Measurement, case: CaseSpec, shape: list[int], steps: int, name: str) -> ProfileProcess | str:
    """The case alone at `shape`, `steps` calls a loop: its own loops, cProfile and py-spy, into NAME.prof
    and NAME.folded. Returns what it measured, or why it could not."""
    config = m.config
    job = ProfileJob(**job_base(config), case=job_case(case, config), shape=shape, steps=steps, sample=config.sample,
                     count=config.count,
                     prof_path=str(rundir.prof_path(m.out, name).resolve()),
                     max_sample_seconds=config.sample_seconds + child_sample_grace())
    log = m.out / f"{name}.log"
    got, error, sampling = run_child(job, config, name, log, m.progress, rundir.folded_path(m.out, name),
                                     spare=m.spares.take(log, [case.label]))
    if got is None:
        assert error is not None  # without a result run_child gives an error
        return error
    files = {"prof": rundir.prof_path(m.out, name).name}
    timeline = steptrace.path_for(rundir.prof_path(m.out, name))
    if timeline.is_file():  # the counted loop's one step, where cupti-python traced it (run/steptrace.py)
        files["timeline"] = timeline.name
    if sampling is not None:
        files["folded"] = rundir.folded_path(m.out, name).name
        m.sources.append(line_texts(rundir.folded_path(m.out, name), case, got.sys_path, m.config.source_roots))
        if sampling.other_samples:
            files["threads"] = rundir.threads_path(rundir.folded_path(m.out, name)).name
        sampling.calls_per_chunk = got.calls_per_chunk
        sampling.chunks = len(got.chunks or [])
        sampling.sampled_us_per_call = sampler.sampled_us_per_call(got.chunks or [], got.calls_per_chunk or 1,
                                                                   sampling.window)
    return ProfileProcess(own=got.own, calls=got.calls, cprofile_us_per_call=got.cprofile_us_per_call,
                          cprofile_calls=got.cprofile_calls, sampling=sampling, files=files,
                          counts=got.counts)


# A function's lines between its first and last sampled line are kept too, when it spans at most this many, so a
# listing of it shows the lines without samples (greyed) with their text; a longer span keeps its sampled lines.
FUNCTION_SPAN = 60


def wanted_lines(stacks: list[folded.Stack]) -> dict[str, set[int]]:
    """The file:lines the stacks name (sources.locations), with each short function's lines in between."""
    wanted = sources.locations(stacks)
    by_function: dict[tuple[str, str], set[int]] = {}
    for s in stacks:
        for frame in s.frames:
            loc = rec.location(frame)
            if loc is not None:
                by_function.setdefault((folded.frame_function(frame), loc[0]), set()).add(loc[1])
    for (_, file), lines in by_function.items():
        if max(lines) - min(lines) < FUNCTION_SPAN:
            wanted[file].update(range(min(lines), max(lines) + 1))
    return wanted


def line_texts(stacks_file: Path, case: CaseSpec, sys_path: list[str], source_roots: list[str]) -> rec.Sources:
    """The record of the lines a case's stacks name, read where it ran (its folder, its sys.path, --source);
    a stack file that cannot be read gives an empty one (its lines show as file:line alone)."""
    try:
        stacks = folded.read(stacks_file)
    except RunDirError:
        return rec.Sources()
    roots = sources.Roots(Path(case.file) if case.file else None, tuple(Path(p) for p in sys_path),
                          tuple(Path(p) for p in source_roots))
    return sources.collect(wanted_lines(stacks), roots)
