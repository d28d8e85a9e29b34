"""Each case alone: the loop under cProfile, py-spy --native on it and the counted loop (compare: at the sample
shape; sweep --sample: at each host-bound size), into the run directory's .prof and .folded files; and the text
of the source lines its samples name (measure/sources.py), kept in the Measurement until sources.json is saved.

The loop's unsampled time per call (the "alone" figure that cProfile's and py-spy's are read against) comes from
the sampled loop itself, from its chunks after py-spy's window (unsampled): the same loop, in the same process,
right after it was sampled. It used to come from timed loops of its own before the cProfile loop (a second of
them a case on the H200, repeating what the paired timing measures). A case not sampled still times its own.

compare profiles its cases in turn (profile_all); on a GPU host, where each case's process was started ahead and
has imported its libraries (spawn.Spares), the next case's process is given its job while py-spy samples this one:
it sets up and warms up meanwhile and waits, py-spy attached to it once it waits (readied.py: py-spy's own start-up
then runs inside this case's window), and when this case's sampled loop is told to stop the next one is told GO and
its sampling begins at once, while this one runs its cProfile and counted loops (a case's come after its sampled loop: child.work.profile_case). The last case, given ahead, runs its cProfile and counted
loops before it waits (ProfileJob.count_first: beside the sampling of the case before it, as each counted loop
runs beside the sampling of the case after it), so nothing waits for a set-up, a cProfile or a counted loop
(on the H200 the last counted loop was 0.9-1.6 s after the last sampling, and each cProfile loop 0.5 s before its
case's, 2026-12-04).
Nothing runs beside a paired timing process: profiling starts after the last one. With --no-sample and
--processes-at-once N (the default 2 with --env on a GPU) the cases' processes run N at a time: nothing is sampled."""

from __future__ import annotations

import functools
import time
from pathlib import Path

from . import sampler, sidebyside, sources
from .readied import Readied
from .spawn import During, Progress, Started, child_sample_grace, first_child, run_child
from .jobs import job_base, job_case
from .measurement import Measurement, stop_if_refused
from ..errors import RunDirError
from ..run import casenames, folded, rundir, steptrace
from ..run import sources as rec
from ..workload.cases import CaseSpec
from .protocol import GO, CaseProfiled, ProfileJob
from ..run.profiled import ProfileProcess, Sampling
from ..run.timing import Loops, host_bound

# What a profiled case's progress says while its window waits for the timing's unused processes to end (Spares.settle;
# benchmarks/compare_floor.py reads it as a phase)
ENDING = "waiting for the timing's unused processes to end"
# After py-spy's window the sampled loop runs on unsampled for at least this long before it is told to stop: its
# chunks there are the case's unsampled time per call (about 100 chunks of 2.5 ms at 1024^3 on the H200).
ALONE_SECONDS = 0.25
# The last case runs its cProfile and counted loops before its turn (ProfileJob.count_first) only where the window
# of the case before it is at least this long: they must be done before that window ends and its unsampled stretch
# (ALONE_SECONDS) begins, which nothing may run beside. On the H200 the set-up, cProfile and counted loops took
# about 2 s at 1024^3 (2026-12-04); the GPU's default window is 16 s.
COUNT_FIRST_SECONDS = 5


def profile_all(m: Measurement, cases: list[CaseSpec]) -> None:
    """compare's profiling: each case in turn (profile), the next one's process readied while this one is sampled
    (see the module's docstring); run.json saved after each. A case whose py-spy the kernel refused stops the run
    (stop_if_refused) once the cases begun are done: it would refuse every one alike."""
    todo = [c for c in cases if m.run.results[c.label].error is None and c.label in m.steps]
    if not todo:  # every case failed (--keep-going, a workload's run): nothing to profile, their errors are said
        return
    if not m.config.sample:  # no window to wait for them before: the timing's unused spares gone before any loop
        m.spares.settle()
    if not m.config.sample and m.config.at_once > 1:
        _unsampled_at_once(m, todo)
    else:
        _profile_from(m, todo, 0, None)


def _unsampled_at_once(m: Measurement, todo: list[CaseSpec]) -> None:
    """--no-sample with --processes-at-once N: the cases' cProfile and counted loops, N processes at a time (nothing
    is sampled, so none has to run alone; their timings, N at a time too, are done); run.json saved after each."""
    config, say = m.config, sidebyside.locked(m.progress)

    def start(case: CaseSpec) -> Started:
        r = m.run.results[case.label]
        assert r.sample_shape is not None  # the case's timing chose it
        job = _job(m, case, r.sample_shape, m.steps[case.label], case.label)
        log = m.out / f"{case.label}.log"
        return first_child(job, config, case.label, log, say, m.spares.take(log, [case.label]), None)

    for k in range(0, len(todo), config.at_once):
        batch = todo[k:k + config.at_once]
        children = sidebyside.started_all([functools.partial(start, case) for case in batch], Started.discard)
        try:
            sidebyside.run_all(children, [functools.partial(profile, m, case, child, progress=say)
                                          for case, child in zip(batch, children)])
        finally:
            m.save()


def _profile_from(m: Measurement, todo: list[CaseSpec], i: int, started: Started | None) -> None:
    """todo[i] profiled (its process `started` already when it was readied ahead), todo[i + 1] readied during its
    sampling and profiled from inside it (after its sampled loop was told to stop), and so on."""
    case, later = todo[i], todo[i + 1:]
    ahead: Readied | None = None  # the next case's child, once given its job
    done = False  # the next case was profiled from inside this one's run

    def during(what: str, sampling: Sampling | None) -> None:
        nonlocal ahead, done
        if what == "sampling":  # py-spy is about to attach: the timing's unused spares gone before its window
            if m.spares.ending():
                m.progress(case.label, ENDING)
            m.spares.settle()
            if later:  # the next case sets up and warms up now
                readied = _ready_ahead(m, later[0], last=len(later) == 1)
                if readied is not None:
                    ahead = readied
        elif what == "sampled":  # unsampled chunks after the window: the loop's time per call alone (unsampled)
            _alone_after(what, sampling)
        elif what == "stopped" and ahead is not None:
            child, ahead = ahead.done(), None
            if sampling is not None and sampling.refused:  # the next would be refused alike: the run stops
                child.discard()
                return
            try:
                assert child.proc.stdin is not None  # start_child gives every child a pipe on its stdin
                child.proc.stdin.write(GO)
                child.proc.stdin.flush()
            except OSError:
                pass  # it is gone: run_child reads its end and says why
            done = True
            _profile_from(m, todo, i + 1, child)

    try:
        profile(m, case, started, during)
    finally:
        if ahead is not None:  # readied, but this case's sampling never reached its stop (it died, or the run stops)
            ahead.discard()
    m.save()
    r = m.run.results[case.label]
    if r.profile is not None:
        stop_if_refused(case.label, r.profile, m.out)
    if later and not done:
        _profile_from(m, todo, i + 1, None)


def _ready_ahead(m: Measurement, case: CaseSpec, last: bool) -> Readied | None:
    """The case's spare (started with the run, its libraries imported) given its job now, to set up, warm up and
    wait for GO (the `last` case profiled: its cProfile and counted loops first, ProfileJob.count_first), watched
    until it waits, when py-spy attaches to it (readied.py); None where it has no spare (the CPU, --isolate) or the
    spare is gone: it starts in its turn."""
    r = m.run.results[case.label]
    if r.sample_shape is None:
        return None
    log = m.out / f"{case.label}.log"
    spare = m.spares.take(log, [case.label])
    if spare is None:
        return None
    config = m.config
    first = last and config.sample_seconds >= COUNT_FIRST_SECONDS
    child = spare.take(_job(m, case, r.sample_shape, m.steps[case.label], case.label, ahead=True, count_first=first))
    return Readied(child, config.rate_hz if config.sample else None, config.sample_seconds) if child else None


def profile(m: Measurement, case: CaseSpec, started: Started | None = None, during: During | None = None,
            progress: Progress | None = None) -> None:
    """The case alone at the sample shape: cProfile, py-spy and the counted loop (`started`: its process, given
    its job ahead; `during`: run_child's, for what happens beside its sampling)."""
    r = m.run.results[case.label]
    assert r.sample_shape is not None  # the case's timing chose it
    got = profiled(m, case, r.sample_shape, m.steps[case.label], case.label, started, during, progress)
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
        name = casenames.sized(case.label, t.shape, m.config.op)  # the files' stem; run.json records their names
        got = profiled(m, case, t.shape, max(1, t.calls // r.ops_per_step), name)
        if isinstance(got, str):
            t.error = f"profiling alone: {got}"
        else:
            t.profile = got
        m.save()
        if not isinstance(got, str):
            stop_if_refused(case.label, got, m.out)


def _job(m: Measurement, case: CaseSpec, shape: list[int], steps: int, name: str, ahead: bool = False,
         count_first: bool = False) -> ProfileJob:
    config = m.config
    return ProfileJob(**job_base(config), case=job_case(case, config), shape=shape, steps=steps, sample=config.sample,
                      count=config.count, prof_path=str(rundir.prof_path(m.out, name).resolve()),
                      max_sample_seconds=config.sample_seconds + child_sample_grace(), ahead=ahead,
                      count_first=count_first)


def profiled(m: Measurement, case: CaseSpec, shape: list[int], steps: int, name: str, started: Started | None = None,
             during: During | None = None, progress: Progress | None = None) -> ProfileProcess | str:
    """The case alone at `shape`, `steps` calls a loop: cProfile, py-spy and the counted loop, into NAME.prof
    and NAME.folded (`started`: its process, given the job already). Returns what it measured, or why it could
    not."""
    config = m.config
    job = _job(m, case, shape, steps, name)
    log = m.out / f"{name}.log"
    if during is None:  # the sweep's: each size alone, the unsampled stretch after the window all the same
        during = _alone_after
    got, error, sampling = run_child(job, config, name, log, progress or m.progress, rundir.folded_path(m.out, name),
                                     spare=None if started else m.spares.take(log, [case.label]), started=started,
                                     during=during)
    if got is None:
        assert error is not None  # without a result run_child gives an error
        return error
    files = {"prof": rundir.prof_path(m.out, name).name}
    timeline = steptrace.path_for(rundir.prof_path(m.out, name))
    if timeline.is_file():  # the counted loop's one step, where cupti-python traced it (run/steptrace.py)
        files["timeline"] = timeline.name
    if sampling is not None:
        files["folded"] = rundir.folded_path(m.out, name).name
        m.sources[case.label, name] = line_texts(rundir.folded_path(m.out, name), case, got.sys_path,
                                                 m.config.source_roots)
        if sampling.other_samples:
            files["threads"] = rundir.threads_path(rundir.folded_path(m.out, name)).name
        sampling.calls_per_chunk = got.calls_per_chunk
        sampling.chunks = len(got.chunks or [])
        sampling.sampled_us_per_call = sampler.sampled_us_per_call(got.chunks or [], got.calls_per_chunk or 1,
                                                                   sampling.window)
    own = got.own if not job.sample else unsampled(got, sampling)
    return ProfileProcess(own=own, calls=got.calls, cprofile_us_per_call=got.cprofile_us_per_call,
                          cprofile_calls=got.cprofile_calls, sampling=sampling, files=files,
                          counts=got.counts)


def _alone_after(what: str, sampling: Sampling | None) -> None:
    """Once py-spy has sampled ("sampled"), the loop runs on unsampled for ALONE_SECONDS past the window before it
    is told to stop (unsampled() reads those chunks)."""
    if what == "sampled" and sampling is not None and sampling.window is not None:
        time.sleep(max(0.0, sampling.window[1] + ALONE_SECONDS - time.monotonic()))


def unsampled(got: CaseProfiled, sampling: Sampling | None) -> Loops:
    """The sampled loop's unsampled time per call, one figure a chunk, as the case's own loops: its chunks after
    py-spy's window (nothing sampled them, and nothing else ran: the next case's process was set up and waits);
    where none ran wholly after it, those before it; where py-spy never sampled (no window), every chunk."""
    chunks, calls = got.chunks or [], got.calls_per_chunk or 1
    window = sampling.window if sampling is not None else None
    if window is None:
        alone = chunks
    else:
        alone = [c for c in chunks if c[0] >= window[1]] or [c for c in chunks if c[1] <= window[0]]
    us = [round((t1 - t0) * 1e6 / calls, 4) for t0, t1 in alone if t1 > t0]
    return Loops(cpu_us=us, slots=list(range(len(us))), wall_us=list(us))


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


def step_functions(stacks: list[folded.Stack], own_file: str | None = None) -> dict[str, list[set[int]]]:
    """The functions a listing shows whole where they are short (sources.function_spans), file -> each one's
    sampled lines: the case's step() (each stack's root frame with a line, past the addresses py-spy may put
    above it) and every function of the case's own file (CaseSpec.own_file: a user's file, or a built-in
    workload's module; a workload's fn, which flametool's step calls, is not the root where that step is a
    function around it, as jax-eager's)."""
    by_function: dict[tuple[str, str], set[int]] = {}
    for s in stacks:
        root = True
        for frame in s.frames:
            loc = rec.location(frame)
            if loc is None:
                continue
            mine = own_file is not None and rec.same_file(own_file, loc[0])
            if root or mine:
                by_function.setdefault((folded.frame_function(frame), loc[0]), set()).add(loc[1])
            root = False
    out: dict[str, list[set[int]]] = {}
    for (_, file), lines in by_function.items():
        out.setdefault(file, []).append(lines)
    return out


def line_texts(stacks_file: Path, case: CaseSpec, sys_path: list[str], source_roots: list[str]) -> rec.Sources:
    """The record of the lines a case's stacks name, read where it ran (its folder, its sys.path, --source);
    a stack file that cannot be read gives an empty one (its lines show as file:line alone)."""
    try:
        stacks = folded.read(stacks_file)
    except RunDirError:
        return rec.Sources()
    roots = sources.Roots(Path(case.file) if case.file else None, tuple(Path(p) for p in sys_path),
                          tuple(Path(p) for p in source_roots))
    return sources.collect(wanted_lines(stacks), roots, step_functions(stacks, case.own_file))
