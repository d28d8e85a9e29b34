"""`flametool compare --device cpu`, for real: child processes, cProfile and py-spy --native."""

import json
import os
import pstats
import statistics
from pathlib import Path

import pytest

from flametool.analyse import dispatch
from flametool.measure.child import loops as child_loops
from flametool.measure import profiling, spawn
from flametool.run import folded, rundir
from flametool.measure.config import CPU
from shared import CPU_COMPARE, cpu_compare

CASES = Path(__file__).parent / "cases" / "user_cases.py"
PROCESSES, REPEATS = CPU_COMPARE["processes"], CPU_COMPARE["repeats"]


def rounds_of(loops: list) -> int:
    """Rounds a process ran: --repeats, or more for host-bound loops (until each case has had
    the CPU's timed_seconds of timed loops, at most loops.MAX_ROUNDS); every case of the process one loop each."""
    n = len(loops[0].cpu_us)
    assert REPEATS <= n <= child_loops.MAX_ROUNDS and all(len(l.cpu_us) == len(l.slots) == n for l in loops)
    return n


def interleaved_rounds(results: dict, labels: list[str], i: int) -> list[list[str]]:
    """The order the cases' loops ran in process i, round by round, read back from their slots."""
    rounds = rounds_of([results[l].timing.processes[i] for l in labels])
    by_slot = sorted((slot, l) for l in labels for slot in results[l].timing.processes[i].slots)
    # one sequence of loops in the process, every case's loops in it, none shared
    assert [slot for slot, _ in by_slot] == list(range(len(labels) * rounds))
    return [[l for _, l in by_slot[r * len(labels):(r + 1) * len(labels)]] for r in range(rounds)]


@pytest.fixture(scope="module")
def run(cli, tmp_path_factory):
    # made once in the session, by whichever worker asks first (tests/shared.py), and only read
    out, proc = cpu_compare(tmp_path_factory)  # the report, snakeviz and browser tests read it too
    assert proc.returncode == 0, proc.stderr
    return out, proc, json.loads((out / "run.json").read_text())


def test_run_json_contract(run):
    out, _, data = run
    assert data["schema"] == rundir.SCHEMA and data["complete"] is True
    assert "analysis" not in data and "diff" not in data  # derived, never stored
    assert list(data["results"]) == ["numpy", "torch", "add_case"]
    cfg = data["config"]
    assert cfg["device"] == "cpu" and cfg["shape"] == [64, 64, 64] and cfg["iters"] == 200 and cfg["repeats"] == 2
    assert cfg["processes"] == PROCESSES and cfg["isolate"] is False
    # --sample-seconds 0.5: a fraction of a second, as given, in the config and each case's sampling
    assert cfg["sample_seconds"] == 0.5 and all(r["profile"]["sampling"]["seconds"] == 0.5
                                                for r in data["results"].values())
    assert cfg["dtypes"] == {"numpy": "float32", "torch": "float32", "add_case": "float32"}
    env = data["env"]
    for key in ("python", "os", "cpu", "gpu", "versions"):
        assert key in env
    assert env["versions"]["torch"] and env["versions"]["numpy"] and env["versions"]["py-spy"]
    for label, r in rundir.load(out).results.items():
        assert r.error is None
        t = r.timing
        assert t.cpu_us_per_call > 0 and t.gpu_us_per_call is None and t.gpu_loops == []
        # every process ran (at least) --repeats loops of every case; the figure is the median of all of them
        assert len(t.processes) == PROCESSES and all(rounds_of([p]) for p in t.processes)
        assert min(t.cpu_loops) <= t.cpu_us_per_call <= max(t.cpu_loops)
        assert t.host_bound is True and r.dtype == "float32" and r.shape == [64, 64, 64]
        assert t.shape == [64, 64, 64] and t.calls == 200
        # host-bound: sampled at the requested shape, so there is no second timing
        assert r.sample_shape == [64, 64, 64] and r.sample_shape_reason and r.sample_timing is None
        assert r.at_sample_shape is t
        prof = r.profile
        assert prof.cprofile_us_per_call > 0 and prof.cprofile_calls >= 200 and prof.cprofile_inflation > 0
        # a sampled case's unsampled time per call is its sampled loop's after py-spy's window (profiling.unsampled):
        # a figure a chunk of `calls`, the loop run on unsampled for ALONE_SECONDS before it was told to stop; the
        # profiled process times no loops of its own
        own = prof.own
        assert own.cpu_us and own.slots == list(range(len(own.cpu_us))) and own.wall_us == own.cpu_us
        assert own.gpu_us == [] and sum(own.cpu_us) * prof.calls / 1e6 >= profiling.ALONE_SECONDS / 2
        assert len(own.cpu_us) < r.sampling.chunks
        # the profiled loop runs the calls of the timing processes after the first (balanced: test below)
        assert prof.own_us_per_call > 0 and prof.calls == (t.processes[-1].calls or 200)
        assert prof.files == {"prof": f"{label}.prof", "folded": f"{label}.folded"}
        s = r.sampling
        # --rate 200, or half of it where py-spy fell behind (a loaded machine) and sampled again, the first
        # attempt kept (sampler.record_keeping_up)
        assert s.rate_hz == 200 or (s.rate_hz == 100 and [e.rate_hz for e in s.earlier] == [200]), s
        assert s.sampled_us_per_call > 0 and prof.slowdown > 0
        assert s.complete is True and s.exit_code == 0
        # the child's threads when py-spy attached: the main thread at least, and torch starts its pool
        assert s.threads >= 1


def loop_seconds(t, i: int) -> float:
    """A process's median loop of a case, in seconds (its own calls where it ran other than the Timing's)."""
    p = t.processes[i]
    return statistics.median(p.cpu_us) * (p.calls or t.calls) / 1e6


def test_the_processes_after_the_first_time_loops_of_one_length(cli, tmp_path):
    """A host-bound requested shape: the processes after the first time it again, each case's calls per loop
    balanced by the first process's times per call (timing.balanced_calls), so that their loops take about as long
    and the rounds end when each has had its second; a faster case runs more calls, none fewer than --iters, and
    run.json says so per process (Loops.calls). Without it numpy's 64^3 product and add_case's 64x64 add, 200 calls
    each, differ some 10x in length."""
    out = tmp_path / "run"
    # 0.3 s of rounds a case (not 1 s): what is read is the loops' lengths, not their figures
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--case", f"{CASES}:add_case", "--shape", "64,64,64",
               "--processes", "2", "--no-sample", "--no-count", "--iters", "200", "--timed-seconds", "0.3",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    results = rundir.load(out).results
    numpy, add = results["numpy"].timing, results["add_case"].timing
    assert numpy.calls == add.calls == 200 and numpy.processes[0].calls is None is add.processes[0].calls
    assert numpy.processes[1].calls is None and add.processes[1].calls > 200  # the add is the faster: more calls
    before, after = (loop_seconds(numpy, i) / loop_seconds(add, i) for i in (0, 1))
    assert before > 3, before
    # from the first process's medians, so a loaded machine can move it; the first process's own ratio is 10x
    assert 0.5 < after < 2, (before, after)


def test_timing_is_paired_and_interleaved(run):
    """By default every case is built in each of --processes processes and their loops interleaved there,
    in loops.round_order: the comparison is made within each process."""
    out, _, _ = run
    data = rundir.load(out)
    labels = ["numpy", "torch", "add_case"]
    (group,) = data.groups
    assert group.cases == labels and group.paired is True and group.processes == PROCESSES
    assert group.reason.startswith("paired")
    assert all(data.results[l].group == 0 and data.group_of(l) is group for l in labels)
    for i in range(PROCESSES):
        rounds = interleaved_rounds(data.results, labels, i)
        assert rounds == [child_loops.round_order(labels, r) for r in range(len(rounds))]
    assert child_loops.round_order(["a", "b"], 0) == ["a", "b"]
    assert child_loops.round_order(["a", "b"], 1) == ["b", "a"]
    a = dispatch.analyse_dir(out)
    # the two library cases, and the case of one's own against the first built-in one
    assert [(p.base, p.head) for p in a.pairs] == [("numpy", "torch"), ("numpy", "add_case")]
    pair = a.pairs[0]
    f = pair.timing
    assert f.paired is True and f.units == PROCESSES and len(f.per_process_ratio) == PROCESSES
    assert f.ratio > 0 and f.ratio_interval is not None and f.ratio_interval.low <= f.ratio <= f.ratio_interval.high
    assert pair.sample is None  # the sample shape is the requested one
    t = a.timings["numpy"]
    assert t.processes == PROCESSES and t.loops == data.results["numpy"].timing.cpu_loops
    assert len(t.loops) >= PROCESSES * REPEATS
    assert t.interval is not None and f"over {PROCESSES} processes" in t.interval.method


def test_isolate_times_each_case_in_processes_of_its_own(cli, tmp_path):
    out = tmp_path / "isolated"
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--case", f"{CASES}:add_case", "--isolate",
               "--processes", "2", "--repeats", "2", "--iters", "100", "--no-sample", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = rundir.load(out)
    assert data.config.recorded["isolate"] is True
    assert [(g.cases, g.paired, g.processes) for g in data.groups] == [(["numpy"], False, 2), (["add_case"], False, 2)]
    assert all(g.reason.startswith("--isolate") for g in data.groups)
    for index, label in enumerate(["numpy", "add_case"]):
        r = data.results[label]
        assert r.group == index and data.group_of(label) is data.groups[index]
        # alone in each of its processes: its loops are that process's whole sequence
        assert len(r.timing.processes) == 2
        assert all(p.slots == list(range(rounds_of([p]))) for p in r.timing.processes)
    (pair,) = dispatch.analyse_dir(out).pairs
    assert pair.timing.paired is False and pair.timing.per_process_ratio == [] and pair.timing.ratio > 0
    assert "not paired: each case in processes of its own" in proc.stdout.replace("\n", "")
    assert "paired over" not in proc.stdout
    # the timing table's title and keys say it too: it read 'as timed with the cases together', of cases never
    # in one process, and its key '(so two cases stand in their paired ratio)'
    words = " ".join(proc.stdout.split())
    assert "time per call, as timed in fresh processes, each case in processes of its own" in words
    assert "together" not in words.replace("why together and alone differ", ""), words
    assert "paired ratio" not in words


def test_pool_threads_reach_the_child(run):
    # by default on the CPU one thread per pool (two made torch bimodal on the 2-core machine)
    out, _, data = run
    assert data["config"]["pool_threads"] == 1 and rundir.load(out).config.pool_threads == 1
    # numpy's BLAS pool of one is the main thread itself: py-spy stops one thread per sample (numpy is profiled
    # in a process of its own, which builds no other case)
    assert rundir.load(out).results["numpy"].sampling.threads == 1  # the run's environment asked for two (shared.py)


def test_processes_pool_the_timed_loops(cli, tmp_path):
    out = tmp_path / "three"
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--processes", "3", "--repeats", "2", "--iters", "100",
               "--no-sample", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = rundir.load(out)
    r = data.results["numpy"]
    # the summary says how many loops of how many processes
    assert f"{len(r.timing.cpu_loops)} in 3 proc" in proc.stdout
    # one case has nothing to be paired with: no line claims it was paired, or warns that it was not
    assert "numpy: paired" not in proc.stdout and "numpy: not paired" not in proc.stdout
    assert data.group_of("numpy").processes == 3 and len(r.timing.processes) == 3
    # every loop of every process is one reading; the figure is their median (at the sample shape too: the same loops)
    assert r.timing.cpu_loops == [v for p in r.timing.processes for v in p.cpu_us]
    assert all(rounds_of([p]) for p in r.timing.processes)
    assert r.timing.cpu_us_per_call == statistics.median(r.timing.cpu_loops)
    assert r.sample_timing is None and r.at_sample_shape is r.timing
    # each process's own median is kept, the first among them
    assert r.timing.process_medians[0] == statistics.median(r.timing.processes[0].cpu_us)
    assert len(r.timing.process_medians) == 3
    t = dispatch.analyse_dir(out).timings["numpy"]
    # the analysis's figure is pooled over the processes (stats.pooled): a case alone, the median process's
    assert t.processes == 3 and t.loops == r.timing.cpu_loops and t.cpu_us == statistics.median(r.timing.process_medians)
    assert t.interval is not None and "over 3 processes" in t.interval.method
    # only the case's own profiled process ran cProfile; no log is left behind
    assert rounds_of([r.profile.own]) and r.profile.cprofile_calls > 0
    assert sorted(p.name for p in out.iterdir()) == ["numpy.prof", "report.html", "run.json"]
    assert pstats.Stats(str(out / "numpy.prof")).total_calls > 0


def test_child_env_sets_every_pool():
    env = spawn.child_env(2)
    assert all(env[v] == "2" for v in spawn.POOL_THREAD_VARS)
    assert all(spawn.child_env(None).get(v) == os.environ.get(v) for v in spawn.POOL_THREAD_VARS)


def test_prof_files_load_in_pstats(run):
    out, _, data = run
    for label in data["results"]:
        stats = pstats.Stats(str(out / f"{label}.prof"))
        functions = {name for (_, _, name) in stats.stats}
        assert "active_loop" in functions and "step" in functions
        # only the active loop was profiled: no set-up, no factory, no sync
        assert not any("factory" in f or f in ("torch_mm", "numpy_matmul", "add_case") for f in functions)


def test_folded_holds_only_stacks_inside_step(run):
    out, _, _ = run
    for label, r in rundir.load(out).results.items():
        parsed = folded.read(out / f"{label}.folded")
        assert sum(s.count for s in parsed) == r.samples == r.sampling.kept_samples
        total = r.sampling.total_samples
        # the window is the half second asked for (py-spy stopped when it was over), not a whole one: at 200 Hz about
        # 100 samples (py-spy spaces them at random), where a second gave ~200
        assert total <= 150, (label, total)
        # how many py-spy takes is the machine's: on CI, beside three busy workers, it got 37 of torch's in a second
        # (a native sample of every thread costs it CPU it does not always get). So the stacks are checked against
        # py-spy's own count (one stack of the caller's thread a sample at most), and the share kept inside step()
        # against what it took (88-98% idle), not against the rate asked (CI's 37 a second would be some 18 here)
        assert r.sampling.pyspy_samples is not None and 5 <= total <= r.sampling.pyspy_samples, (label, total)
        assert r.samples >= 0.6 * total, (label, r.samples, total)
        assert total == r.samples + r.sampling.loop_samples + r.sampling.outside_samples
        # the step() frame opens the stack; py-spy now and then catches the interpreter making the call,
        # an unsymbolized address (`0x7f.. (libc.so.6)`) between the loop and step(), or alone
        addresses_only = 0
        for s in parsed:
            names = [folded.frame_function(f) for f in s.frames]
            if all(n.startswith("0x") for n in names):
                addresses_only += s.count
                continue
            assert names[0].endswith("step") or (names[0].startswith("0x") and names[1].endswith("step")), s.frames[:2]
            assert not any(n in ("<module>", "active_loop", "sampled_phase", "run") for n in names)
        assert addresses_only <= 0.05 * r.samples, (label, addresses_only)


def test_native_frames_are_sampled(run):
    out, _, _ = run
    text = (out / "torch.folded").read_text()
    assert "THPVariable_mm" in text and "libtorch" in text


def test_summary_printed(run):
    out, proc, _ = run
    assert "numpy" in proc.stdout and "torch" in proc.stdout and "add_case" in proc.stdout
    # it leads with the first pair's paired ratio and difference, then what a call of each does, counted (exact)
    lines = proc.stdout.splitlines()
    first = lines[0]
    assert first.startswith("torch / numpy = ") and f"paired over {PROCESSES} processes" in first, first
    assert "  counted: torch makes 1 call of torch.mm per step; numpy makes none of it" in lines[1:4]
    assert "  counted: numpy: 1 Python call per step; torch: 2 Python calls per step" in lines[1:5]
    # a CPU run: no CUDA columns, no CUPTI, no table of other threads that did nothing
    assert "CUDA API calls  " not in proc.stdout and "CUPTI" not in proc.stdout, proc.stdout
    assert "not sampled" not in proc.stdout
    # the progress lines name what runs: the shared timing processes, then each case alone; standard error is
    # not a terminal, so a line per phase of each process (a CI log), not one per step of it
    progress = proc.stderr.splitlines()
    assert any(l.startswith(f"timing numpy+torch+add_case: process {PROCESSES}/{PROCESSES}: ") for l in progress)
    for line in ("torch: sampling with py-spy --native at 200 Hz for 0.5 s", "add_case: cProfile loop"):
        assert line in progress, line
    assert not any("warm-up" in l or "timed loop" in l for l in progress), progress
    assert len(progress) <= 25, progress
    assert f"run directory: {out}" in proc.stdout.replace("\n", "")


def test_existing_run_is_never_overwritten(run, cli):
    out, _, _ = run
    before = (out / "run.json").read_bytes()
    proc = cli("compare", "--device", "cpu", "--out", str(out))
    assert proc.returncode == 2
    assert "already exists" in proc.stderr and "Traceback" not in proc.stderr
    assert (out / "run.json").read_bytes() == before


def test_builtin_cases_record_the_same_operands(run):
    out, proc, data = run
    assert data["config"]["operand_seed"] == 0
    results = rundir.load(out).results
    numpy_ops, torch_ops = results["numpy"].operands, results["torch"].operands
    assert [o.shape for o in numpy_ops] == [[64, 64, 64]] and len(numpy_ops[0].fingerprint) == 12
    assert numpy_ops == torch_ops
    assert results["add_case"].operands == []  # its step sets no operands: none recorded, nothing flagged
    assert "operands differ" not in proc.stdout


@pytest.mark.parametrize("repeats", [None, 3])
def test_loops_at_another_sample_shape_are_short_and_many(cli, tmp_path, repeats):
    """At a sample shape other than the requested one a loop runs --iters operations, and at least
    1/MAX_ROUNDS of the CPU's timed_seconds, so that the rounds (up to timed_seconds) are many; with
    --repeats (no rounds added) each loop runs at least loops.MIN_LOOP_SECONDS."""
    out = tmp_path / "run"
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--case", f"{CASES}:add_case", "--shape", "64,64,64",
               "--sample-shape", "16,16,16", "--processes", "1", "--no-sample", "--no-count", "--iters", "200",
               *(["--repeats", str(repeats)] if repeats else []), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    results = rundir.load(out).results
    t = results["numpy"].sample_timing
    add = results["add_case"].sample_timing
    if repeats is None:
        # the two cases' loops balanced there (timing.balanced_calls): the faster one, the add, runs more calls,
        # so that their loops take about as long at the rates they were chosen from, the warm-up's faster part: their
        # quickest loops (CI, 2026-12-05: numpy's loops read 0.96-2.70 us a call in one process, its median loop
        # 2.1 times the add's, its quickest 1.05 times)
        quickest = [min(x.processes[0].cpu_us) * x.calls for x in (t, add)]
        assert add.calls > t.calls and 0.5 < quickest[0] / quickest[1] < 2, (t.calls, add.calls, quickest)
    (loops,) = t.processes
    loop_s = statistics.median(loops.cpu_us) * t.calls / 1e6
    if repeats is None:
        short = CPU.timed_seconds / child_loops.MAX_ROUNDS
        # the calls are chosen from the warm-up's time a call, which a loaded machine can double (CI, 2026-12-04:
        # 1167 calls, 1.19 ms a loop against the 2.5 ms they were chosen for); --iters' 200 calls are 0.2 ms
        assert t.calls > 200 and 0.25 * short < loop_s < 4 * short, (t.calls, loop_s)
        # many rounds, not --repeats' 3: they go on until the case's loops had timed_seconds of the clock, some
        # hundreds of rounds of loops about `short` long (MAX_ROUNDS at most). A loaded machine stretches the loops'
        # clock time (the process waits for a core, the loops' medians unmoved) and so ends the rounds sooner: with
        # two busy loops beside four workers 87 rounds filled the second, and beside four busy loops 42-49 in 4
        # runs of 12 (their loops' wall time 1.0-1.06 s). Where there are fewer than MAX_ROUNDS / 8, they must have
        # had their second of the clock (half of it, for the bookkeeping around each loop that `spent` counts too)
        wall_s = sum(loops.wall_us) * t.calls / 1e6
        assert len(loops.cpu_us) > child_loops.MAX_ROUNDS / 8 or wall_s >= 0.5 * CPU.timed_seconds, (
            len(loops.cpu_us), wall_s)
    else:
        assert loop_s > 0.5 * child_loops.MIN_LOOP_SECONDS and len(loops.cpu_us) == repeats, (t.calls, loop_s)


def test_compare_s_fail_above_verdicts_are_one_line_each_in_a_log(tmp_path):
    """compare --fail-above's verdict lines on a standard output that is not a terminal (a CI log, 160 columns):
    each was wrapped there, its tail '--fail-above 5%' on a line of its own, read as the start of the next pair's
    verdict. One line each, however long, as diff and summary print theirs."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from flametool.commands.compare import decided_verdict
    from runbuild import env_run_dir

    analysed = dispatch.analyse_dir(env_run_dir(tmp_path / "r", [0.60, 0.61, 0.59, 0.60], [0.66, 0.67, 0.65, 0.66]))
    log = io.StringIO()
    out = Console(file=log, width=160)  # as commands/main makes standard output when it is not a terminal
    config = SimpleNamespace(fail_above=5.0, budget=180.0, max_processes=60, processes=8)
    code = decided_verdict(analysed, config, 79.0, out)
    (line,) = log.getvalue().splitlines()
    assert code == 3 and len(line) > 160, line
    assert line.startswith("--fail-above 5%: slower (decided) over 4 + 4 processes in 79 s: numpy@b vs numpy@a: +10.0%")
    assert line.endswith("relative to torch: slower by more than --fail-above 5%"), line
