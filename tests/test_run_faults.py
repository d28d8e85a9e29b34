"""Faults of a run as users meet them: Ctrl-C late in a long sampling phase, two runs on one --out, processes a case
starts, a full disk, standard output that fails, a case that writes to the message pipe, absurd inputs.
Each is reproduced as a user meets it: signals to the process group, simultaneous starts, a tiny tmpfs, a
closed pipe, /dev/full; py-spy is the real one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from checks import one_line_error

import faultkit as fk
from flametool.run import rundir

CASES2 = fk.CASES / "run_fault_cases.py"
USER_CASES = fk.CASES / "user_cases.py"
SAMPLES = fk.ROOT / "samples"
# the settings, "F"
F = ["--device", "cpu", "--shape", "16,16,16", "--iters", "200", "--warmup", "20", "--repeats", "1", "--processes", "1",
     "--sample-seconds", "0.5"]


def interrupted(bg: fk.Background, out: Path, code: int | None = None) -> dict:
    code = bg.finish() if code is None else code
    left = fk.none_left(bg.tag)
    assert left == [], f"processes left behind: {left}"
    assert code == 130, (code, bg.err)
    assert "Traceback" not in "\n".join(bg.err)
    assert bg.err[-1] == f"flametool: interrupted; what finished is kept in {out / 'run.json'} (complete: false)"
    data = rundir.load(out)
    assert data.complete is False and data.finished
    return data


# --- 1: Ctrl-C during a long sampling phase ------------------------------------------------------------------

class SetsidInScript(fk.Background):
    """`setsid flametool ... &` from a shell script (no job control): the shell starts a background command
    with SIGINT ignored, and setsid makes flametool the leader of its own process group. stderr and the
    exit code come through the shell, which waits for it; `pid` is flametool's (its group's id)."""

    def __init__(self, args: list[str], environ: dict[str, str]) -> None:
        self.tag = environ[fk.TAG]
        script = 'setsid "$@" & echo "$!"; wait "$!"'
        self.proc = subprocess.Popen(["sh", "-c", script, "sh", sys.executable, "-m", "flametool", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ,
                                     cwd=fk.ROOT, start_new_session=True)
        self.pid = int(self.proc.stdout.readline())
        self._collect()


@pytest.mark.parametrize("start", ["setsid-in-a-script", "terminal"])
def test_ctrl_c_well_into_a_long_sampling_phase(tmp_path, start):
    """The issue: `setsid flametool compare ... --sample-seconds 60 &`, then `kill -INT -- -PGID` while numpy
    is being sampled. flametool was started with SIGINT ignored (by the shell) and went on sampling."""
    out = tmp_path / "run"
    # one timing process, one round, one thread per pool: the default timing phase before the sampling (5 to 12
    # processes, torch's pool at 2 threads beside other jobs) took 90 to 150 s of the test suite on the loaded
    # 2-core machine, and what is tested comes after it. numpy, then a case of the tests' (add_case) to be profiled
    # after it: not torch, whose import cost the timing process 1-1.5 s of this test
    args = ["compare", "--device", "cpu", "--libs", "numpy", "--case", f"{USER_CASES}:add_case", "--iters", "2000",
            "--warmup", "100", "--sample-seconds", "60", "--processes", "1", "--repeats", "1", "--pool-threads", "1",
            "--out", str(out)]
    bg = SetsidInScript(args, fk.env()) if start == "setsid-in-a-script" else fk.Background(args, fk.env())
    bg.wait_for("numpy: sampling with py-spy", timeout=300)
    bg.wait_until(lambda: any("py-spy" in cmd and "record" in cmd for _, cmd in fk.tagged(bg.tag)), "py-spy running")
    # into the sampling phase (py-spy is recording, waited for above), as in the issue: half a second of its 60,
    # not the 2 s it was (what is tested is that SIGINT stops it, however far in)
    time.sleep(0.5)
    t0 = time.monotonic()
    bg.signal(signal.SIGINT, group=True)
    code = bg.finish(timeout=60)
    assert time.monotonic() - t0 < 20, "Ctrl-C did not stop the sampling phase"
    data = interrupted(bg, out, code)
    # the paired timings finished; numpy was being sampled (its profile had not finished) and add_case's never began
    assert all(r.profile is None for r in data.results.values()) and data.results["numpy"].timing
    assert not any(line.startswith("add_case:") for line in bg.err)  # its own (profiled) process never started


# --- 2: two runs on one --out --------------------------------------------------------------------------------

def test_two_runs_started_at_once_on_one_out(tmp_path):
    """`flametool compare F --libs numpy --out R & flametool compare F --case add_case --out R`: exactly one
    gets R, the other is refused in one line, and R holds the winner's result. (One race of whole runs: the
    claim itself is raced by eight processes at once in test_claiming_a_run_directory_is_atomic.) The second
    run's case is the tests' add_case, not torch, whose import cost each of its processes 1-1.5 s."""
    out = tmp_path / "run"
    environ = fk.env()
    cases = {"numpy": ["--libs", "numpy"], "add_case": ["--libs", "", "--case", f"{USER_CASES}:add_case"]}
    procs = [subprocess.Popen([sys.executable, "-m", "flametool", "compare", *F, *cases[label], "--out", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ, cwd=fk.ROOT)
             for label in cases]
    done = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    codes = [c for c, _, _ in done]
    assert sorted(codes) == [0, 2], done
    winner = list(cases)[codes.index(0)]
    loser_err = done[codes.index(2)][2]
    assert "Traceback" not in loser_err
    assert [l for l in loser_err.splitlines() if l.startswith("flametool:")] == [
        f"flametool: {out}: already exists and is not empty; choose another --out"]
    data = rundir.load(out)
    assert data.complete is True and list(data.results) == [winner]
    assert fk.none_left(environ[fk.TAG]) == []


def _claim(out: str, go, results) -> None:
    go.wait()
    try:
        results.put(str(rundir.create(Path(out))))
    except Exception as exc:  # noqa: BLE001
        results.put(f"refused: {exc}")


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing-empty-folder"])
def test_claiming_a_run_directory_is_atomic(tmp_path, existing):
    """Eight processes claim one directory at the same instant: exactly one gets it."""
    import multiprocessing as mp

    out = tmp_path / "run"
    if existing:
        out.mkdir()
    ctx = mp.get_context("fork")
    go, results = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_claim, args=(str(out), go, results)) for _ in range(8)]
    for w in workers:
        w.start()
    time.sleep(0.5)
    go.set()
    got = sorted(results.get(timeout=30) for _ in workers)
    for w in workers:
        w.join(timeout=30)
    assert got.count(str(out)) == 1, got
    assert all(g.startswith("refused: ") and "already exists" in g for g in got if g != str(out)), got
    assert [p.name for p in out.iterdir()] == ["run.json"] and rundir.load(out).results == {}


def test_default_out_takes_a_suffix_when_its_name_is_taken(tmp_path):
    """The default --out has one-second resolution: a run started in a second another run already took gets
    <timestamp>-2 rather than being refused."""
    now = datetime.now()
    for s in range(0, 40):  # every name this run could get in the next 40 s is taken
        taken = tmp_path / "flametool-runs" / (now + timedelta(seconds=s)).strftime("%Y%m%d-%H%M%S")
        taken.mkdir(parents=True)
        (taken / "run.json").write_text("{}")
    environ = fk.env()
    proc = subprocess.run([sys.executable, "-m", "flametool", "compare", *F, "--libs", "numpy", "--no-sample"],
                          capture_output=True, text=True, env=environ, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    made = [p for p in (tmp_path / "flametool-runs").iterdir() if p.name.endswith("-2")]
    assert len(made) == 1, sorted(p.name for p in (tmp_path / "flametool-runs").iterdir())
    data = rundir.load(made[0])
    assert data.complete is True and data.config.recorded["out"] == str(Path("flametool-runs") / made[0].name)


def test_default_out_of_two_runs_in_one_second(tmp_path):
    """Two runs with the default --out started together: both run, each in a directory of its own."""
    environ = fk.env()
    procs = [subprocess.Popen([sys.executable, "-m", "flametool", "compare", *F, "--libs", "numpy", "--no-sample"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ, cwd=tmp_path)
             for _ in range(2)]
    done = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert [c for c, _ in done] == [0, 0], done
    runs = sorted((tmp_path / "flametool-runs").iterdir())
    assert len(runs) == 2 and all(rundir.load(r).complete for r in runs)


# --- 4: processes a case starts ------------------------------------------------------------------------------

def sleeping(tag: str) -> list:
    return [(pid, cmd) for pid, cmd in fk.tagged(tag) if cmd.startswith("sleep 777")]


def test_a_process_the_case_started_ends_with_the_run(tmp_path):
    environ = fk.env()
    out = tmp_path / "run"
    proc = fk.run(["compare", *F, "--libs", "", "--case", f"{CASES2}:spawning_case", "--out", str(out)], environ)
    assert proc.returncode == 0, proc.stderr
    assert rundir.load(out).results["spawning_case"].timing.cpu_us_per_call > 0
    assert fk.none_left(environ[fk.TAG]) == []


@pytest.mark.parametrize("sig, group", [(signal.SIGINT, True), (signal.SIGTERM, False), (signal.SIGKILL, False)],
                         ids=["ctrl-c", "sigterm", "sigkill"])
def test_a_process_the_case_started_ends_when_the_run_is_stopped(tmp_path, sig, group):
    out = tmp_path / "run"
    bg = fk.Background(["compare", *F, "--libs", "numpy", "--no-sample", "--case", f"{CASES2}:spawning_slow_case",
                        "--out", str(out)], fk.env())
    # the case in its set-up: its child's sleep (a log's progress is a line per phase, not each step of one)
    bg.wait_until(lambda: sleeping(bg.tag), "the case's sleep 777", timeout=120)
    time.sleep(0.5)
    bg.signal(sig, group)
    if sig == signal.SIGKILL:
        assert bg.finish() == -signal.SIGKILL
        assert fk.none_left(bg.tag) == []
        assert all(r.timing is None for r in rundir.load(out).results.values())  # stopped in the shared set-up
        return
    data = interrupted(bg, out)
    assert all(r.timing is None for r in data.results.values())


# --- 5: a full disk ------------------------------------------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path):
    """A tmpfs of a few KB (as root), unmounted afterwards."""
    mounted: list[Path] = []

    def make(size: str) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}); needs root")
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.mark.parametrize("size, extra, file", [
    # numpy and the tests' add_case, not the default numpy and torch: torch's import cost each of these runs' timing
    # processes 2 s, and neither case is what is tested
    # the issue's: sampled stacks do not fit. The first case's stacks come before its .prof and the run's next save:
    # 4 pages (tmpfs rounds to them) hold run.json after the timing, not 3 s of stacks at 100 Hz (about 36 KB; at
    # 1 s, 12 KB, numpy.folded fitted in 20k and run.json did not, 2026-12-04)
    ("16k", ["--libs", "numpy", "--case", f"{USER_CASES}:add_case", "--sample-seconds", "3"], "numpy.folded"),
    ("20k", ["--no-sample", "--libs", "numpy", "--case", f"{USER_CASES}:add_case"], "run.json"),  # both cases measured, the last save does not fit
    ("20k", ["--no-sample", "--libs", "numpy"], "report.html"),
    ("4k", ["--no-sample", "--libs", "numpy"], "run.json"),  # no room for anything beyond the first page
    ("20k", ["--no-sample", "--libs", "", "--case", f"{CASES2}:loud_case"], None),  # the case's log fills it
], ids=["folded", "run.json", "report", "nothing-fits", "log"])
def test_full_disk_is_one_line(tiny_disk, size, extra, file):
    disk = tiny_disk(size)
    out = disk / "R"
    environ = fk.env()
    proc = fk.run(["compare", *F, *extra, "--out", str(out)], environ)
    line = fk.error_line(proc)  # one line, no traceback
    assert proc.returncode != 0
    assert "cannot be written (No space left on device)" in line, line
    if file is not None:
        assert line.startswith(f"flametool: {out / file}: cannot be written"), line
    else:
        assert "loud_case.log: cannot be written" in line or "run.json: cannot be written" in line, line
    assert fk.none_left(environ[fk.TAG]) == []
    data = rundir.load(out)  # what was written is kept, and valid
    if file == "report.html":
        assert data.complete is True and data.results["numpy"].timing.cpu_us_per_call > 0
    if "--no-sample" in extra and file == "run.json" and size == "20k":
        assert set(data.results) == {"numpy", "add_case"}  # both cases kept
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_profile_that_does_not_fit(tiny_disk):
    """Room for run.json, none for the case's profile: one line naming the .prof, nothing half written."""
    disk = tiny_disk("8k")
    out = disk / "R"
    environ = fk.env()
    proc = fk.run(["compare", *F, "--no-sample", "--libs", "", "--case", f"{CASES2}:many_functions_case",
                   "--out", str(out)], environ)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1
    # the profile is lost, not the timings (issue 41): the run goes on, and the report does not fit either
    lines = [l for l in proc.stderr.splitlines() if l.startswith("flametool: ")]
    line = lines[-1]
    assert line.startswith(f"flametool: case 'many_functions_case': profiling alone at 16,16,16: "
                           f"{out / 'many_functions_case.prof'}: "
                           "cannot be written (No space left on device); its profile is lost"), line
    assert all("No space left on device" in l for l in lines), lines
    assert not (out / "many_functions_case.prof").exists()
    assert fk.none_left(environ[fk.TAG]) == []
    rundir.load(out)


# --- 8: standard output that fails ---------------------------------------------------------------------------

def test_export_to_a_full_device():
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "flametool", "export", str(SAMPLES / "h200-seed-fp16"),
                               "--format", "speedscope"], stdout=full, stderr=subprocess.PIPE, text=True,
                              cwd=fk.ROOT, timeout=120)
    assert proc.returncode == 2
    assert fk.error_line(proc) == "flametool: standard output: cannot be written (No space left on device)"
    assert proc.stderr.count("\n") == 1  # nothing else, not Python's "Exception ignored" at exit


@pytest.mark.parametrize("command", [
    ["diff", str(SAMPLES / "h200-seed-fp16"), str(SAMPLES / "h200-seed-as-reported")],
    ["export", str(SAMPLES / "h200-seed-fp16"), "--format", "folded"],
], ids=["diff", "export"])
def test_a_reader_that_stops_reading_is_not_a_fault(command):
    """`flametool diff A B | head -1`: head has gone when flametool writes; flametool stops quietly with its
    own exit code (0: the diff passed), not 1 ("a case failed") with nothing said."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    proc = subprocess.run([sys.executable, "-m", "flametool", *command], stdout=write, stderr=subprocess.PIPE,
                          text=True, cwd=fk.ROOT, timeout=120)
    os.close(write)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_head_reads_one_line_of_a_diff():
    """The issue's pipeline as a shell runs it."""
    a, b = SAMPLES / "h200-seed-fp16", SAMPLES / "h200-seed-as-reported"
    proc = subprocess.run(["bash", "-c", f'"{sys.executable}" -m flametool diff {a} {b} --top 1000 | head -1; '
                                         'echo "exit ${PIPESTATUS[0]}" >&2'],
                          capture_output=True, text=True, cwd=fk.ROOT, timeout=120)
    assert proc.stdout.count("\n") == 1
    assert proc.stderr == "exit 0\n"


def test_diff_over_fail_above_keeps_its_exit_code_when_the_reader_is_gone():
    read, write = os.pipe()
    os.close(read)
    proc = subprocess.run([sys.executable, "-m", "flametool", "diff", str(SAMPLES / "h200-hostbound-1024"),
                           str(SAMPLES / "h200-seed-fp16"), "--case", "cupy", "--fail-above", "0"],
                          stdout=write, stderr=subprocess.PIPE, text=True, cwd=fk.ROOT, timeout=120)
    os.close(write)
    assert proc.returncode in (0, 3, 4) and "Traceback" not in proc.stderr  # 4: inconclusive (the interval holds 0%)
    if proc.returncode in (3, 4):
        assert fk.error_line(proc).startswith("flametool: cupy: ")


# --- 9: a case writing to the message pipe -------------------------------------------------------------------

def test_a_case_writing_junk_to_the_message_pipe(tmp_path):
    environ = fk.env()
    out = tmp_path / "run"
    proc = fk.run(["compare", *F, "--libs", "", "--case", f"{CASES2}:junk_on_the_named_fd",
                   "--case", f"{CASES2}:junk_on_every_pipe", "--out", str(out)], environ)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    results = rundir.load(out).results
    for label in ("junk_on_the_named_fd", "junk_on_every_pipe"):
        assert results[label].timing.cpu_us_per_call > 0 and results[label].samples > 0, results[label]
    assert fk.none_left(environ[fk.TAG]) == []


# --- 11: input limits and argparse errors --------------------------------------------------------------------

def one_line(capsys, argv) -> str:
    line = one_line_error(capsys, argv, quiet_stdout=True)
    assert " error: " not in line  # not argparse's 'flametool compare: error: ...'
    return line


@pytest.mark.parametrize("option, value, most", [
    ("--iters", str(10**12), "10,000,000"),
    ("--iters", str(10**400), "10,000,000"),
    ("--warmup", str(10**9), "10,000,000"),
    ("--repeats", "100000", "1,000"),
    ("--processes", "1000", "100"),
    ("--sample-seconds", "86400", "3,600"),
])
def test_absurd_counts_are_refused(tmp_path, option, value, most):
    """In a process of its own with a time limit: accepted, such a count would run for days."""
    out = tmp_path / "run"
    environ = fk.env()
    try:
        proc = fk.run(["compare", "--device", "cpu", "--libs", "numpy", option, value, "--out", str(out)], environ,
                      timeout=60)
    finally:
        fk.kill_tagged(environ[fk.TAG])
    assert proc.returncode == 2
    line = fk.error_line(proc)
    assert line.startswith(f"flametool: {option} ") and line.endswith(f"at most {most}"), line
    assert not out.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_fail_above_must_be_finite(capsys, value):
    line = one_line(capsys, ["diff", str(SAMPLES / "h200-seed-fp16"), str(SAMPLES / "h200-seed-fp16"),
                             f"--fail-above={value}"])
    assert line.startswith(f"flametool: --fail-above {float(value)}: must be a number")


@pytest.mark.parametrize("argv, words", [
    (["compare", "--iters", "abc"], "argument --iters: invalid int value: 'abc' (see flametool compare --help)"),
    (["compare", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["export"], "the following arguments are required: RUN, --format"),
    (["diff", "only-one-run"], "diff: give two runs (RUN_A RUN_B), or one run with --base A --head B"),
    ([], "the following arguments are required: COMMAND (see flametool --help)"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_argparse_errors_are_one_line(capsys, argv, words):
    assert words in one_line(capsys, argv)


def test_argparse_error_from_the_command_line():
    proc = fk.run(["compare", "--iters", "1e3"])
    assert proc.returncode == 2
    assert proc.stderr == ("flametool: argument --iters: invalid int value: '1e3' "
                           "(see flametool compare --help)\n")


def test_a_factory_that_removes_the_run_directory_s_files_keeps_every_timing(tmp_path):
    """A case that cleans up after itself removed the run's logs, run.json and the other case's profile while
    the run went on: an internal error, and the other case's finished timing was lost from run.json."""
    out = tmp_path / "run"
    proc = fk.run(["compare", "--device", "cpu", "--libs", "numpy", "--case", f"{fk.CASES / 'fault_cases.py'}:wipes_the_run",
                   "--processes", "1", "--repeats", "1", "--iters", "50", "--warmup", "5", "--shape", "16,16,16",
                   "--no-sample", "--out", str(out)], fk.env(FLAMETOOL_TEST_WIPE=str(out)))
    assert proc.returncode == 1
    line = fk.error_line(proc)
    assert "numpy.prof removed while the run went on" in line and "every timing is kept" in line
    run = rundir.load(out)
    assert run.complete
    assert all(r.timing is not None and r.timing.cpu_loops for r in run.results.values()), run.results
