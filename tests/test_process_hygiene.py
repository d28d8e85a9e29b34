"""Processes and signals: what a case starts out of its child's process group, SIGHUP,
py-spy's temporary file, a step() that never returns, Ctrl-Z. flametool runs as from a terminal, in a
session of its own, and every process of the run is found by the tag they all inherit."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import faultkit as fk
from flametool.run import rundir

CASES3 = fk.CASES / "process_cases.py"
# the settings, "O"
O = ["--device", "cpu", "--shape", "16,16,16", "--iters", "200", "--warmup", "20", "--repeats", "1", "--processes", "1",
     "--sample-seconds", "2"]


def sleeping(tag: str) -> list:
    return [(pid, cmd) for pid, cmd in fk.tagged(tag) if cmd.startswith("sleep 60")]


def test_processes_that_leave_the_group_end_with_the_run(tmp_path):
    """Item 5: a factory's `Popen(["setsid", "sleep", "600"])`, or a double fork with os.setsid, ran on after
    the run ended (rc 0)."""
    environ = fk.env()
    out = tmp_path / "run"
    proc = fk.run(["compare", *O, "--no-sample", "--libs", "", "--case", f"{CASES3}:setsid_case", "--case",
                   f"{CASES3}:double_fork_case", "--out", str(out)], environ)
    assert proc.returncode == 0, proc.stderr
    assert all(r.timing.cpu_us_per_call > 0 for r in rundir.load(out).results.values())
    assert fk.none_left(environ[fk.TAG], within=5) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_processes_that_leave_the_group_end_when_the_run_is_stopped(tmp_path, sig):
    """Item 5, stopped: by Ctrl-C (to the terminal's process group), or flametool killed outright (its child
    is sent SIGTERM by the kernel, and its guardian stops what is marked as the case's)."""
    out = tmp_path / "run"
    bg = fk.Background(["compare", *O, "--no-sample", "--libs", "", "--case", f"{CASES3}:escaping_slow_case",
                        "--out", str(out)], fk.env())
    bg.wait_for("escaping_slow_case: setting up")
    bg.wait_until(lambda: sleeping(bg.tag), "the case's sleep 602")
    bg.signal(sig, group=sig == signal.SIGINT)
    code = bg.finish()
    assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL), bg.err
    assert fk.none_left(bg.tag, within=5) == []


def test_a_step_that_never_returns_is_stopped_by_the_watchdog(tmp_path):
    """Item 7: a step() that never returns (time.sleep(1e9)) kept compare in warm-up for ever, saying nothing.
    The watchdog stops the child after FLAMETOOL_STEP_TIMEOUT seconds of silence and names the case and phase."""
    environ = fk.env(FLAMETOOL_STEP_TIMEOUT="1.5")
    out = tmp_path / "run"
    started = time.monotonic()
    proc = fk.run(["compare", *O, "--no-sample", "--libs", "", "--case", f"{CASES3}:never_returns", "--out", str(out)],
                  environ, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert fk.error_line(proc).startswith(
        "flametool: case 'never_returns': no word from its process for 1.5 s in never_returns: warm-up (20 calls) "
        "(a step() that never returns?); stopped it (FLAMETOOL_STEP_TIMEOUT=SECONDS allows longer)")
    assert time.monotonic() - started < 30
    assert rundir.load(out).results["never_returns"].error.startswith("no word from its process for 1.5 s")
    assert fk.none_left(environ[fk.TAG], within=5) == []


def test_a_bad_watchdog_setting_is_refused_before_anything_starts(tmp_path):
    proc = fk.run(["compare", *O, "--no-sample", "--out", str(tmp_path / "run")], fk.env(FLAMETOOL_STEP_TIMEOUT="soon"))
    assert proc.returncode == 2
    assert fk.error_line(proc) == "flametool: FLAMETOOL_STEP_TIMEOUT='soon': expected seconds"
    assert not (tmp_path / "run").exists()


def test_a_segfault_names_the_signal_not_an_empty_log(tmp_path):
    """Item 14: a child killed by SIGSEGV was reported as 'exited with code -11 ... (see LOG)', an empty log."""
    proc = fk.run(["compare", *O, "--no-sample", "--libs", "", "--case", f"{CASES3}:segfault_case", "--out",
                   str(tmp_path / "run")])
    assert proc.returncode == 1
    line = fk.error_line(proc)
    assert "the child process was killed by SIGSEGV (exit code -11) before reporting" in line, line
    assert ".log" not in line.split("before reporting")[1].split("(finished cases")[0], line


def pyspy_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("flametool-pyspy-"))


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGKILL], ids=["sighup", "sigkill"])
def test_a_closed_terminal_or_sigkill_while_py_spy_samples(tmp_path, sig):
    """Item 6: SIGHUP (a closed terminal, an ssh drop, sent to the process group as the terminal does) exited 129
    with no `flametool:` line and left py-spy's temporary output file behind; SIGKILL left the same file.
    SIGHUP now ends the run as SIGTERM does (exit 129); py-spy's file never has a name in the temp dir."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    out = tmp_path / "run"
    bg = fk.Background(["compare", *O[:-1], "60", "--libs", "numpy", "--out", str(out)], fk.env(TMPDIR=str(temp)))
    bg.wait_for("sampling with py-spy")
    bg.wait_until(lambda: any("py-spy" in cmd and "record" in cmd for _, cmd in fk.tagged(bg.tag)), "py-spy running")
    time.sleep(1)
    assert pyspy_files(temp) == []  # while py-spy writes, too
    bg.signal(sig, group=sig == signal.SIGHUP)
    code = bg.finish()
    assert fk.none_left(bg.tag, within=10) == []
    assert pyspy_files(temp) == [] and list(temp.iterdir()) == []
    if sig == signal.SIGKILL:
        assert code == -signal.SIGKILL
        return
    assert code == 129, bg.err
    assert "Traceback" not in "\n".join(bg.err)
    assert bg.err[-1] == f"flametool: interrupted; what finished is kept in {out / 'run.json'} (complete: false)"
    assert rundir.load(out).complete is False


def test_nohup_keeps_sighup_ignored(tmp_path):
    """`nohup flametool ...`: SIGHUP was ignored when flametool started, and it stays ignored."""
    out = tmp_path / "run"
    script = ("import signal, sys\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\nfrom flametool.commands import main\n"
              "sys.exit(main.main(sys.argv[1:]))\n")
    import subprocess
    import sys

    environ = fk.env()
    proc = subprocess.Popen([sys.executable, "-c", script, "compare", *O, "--no-sample", "--libs", "numpy", "--case",
                             f"{CASES3}:escaping_slow_case", "--keep-going", "--out", str(out)], cwd=fk.ROOT, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not sleeping(environ[fk.TAG]) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGHUP)
    time.sleep(0.5)
    assert proc.poll() is None  # still running
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert fk.none_left(environ[fk.TAG], within=5) == []


def test_the_factorys_own_failed_allocation_is_not_blamed_on_the_shape(tmp_path):
    """Item 14: a factory's own failed allocation was reported as 'a, b and out need 0.0 GiB ... try a smaller
    --shape'."""
    proc = fk.run(["compare", *O, "--no-sample", "--libs", "", "--case", f"{CASES3}:allocates_too_much", "--out",
                   str(tmp_path / "run")])
    assert proc.returncode == 1
    line = fk.error_line(proc)
    assert line.startswith("flametool: case 'allocates_too_much': out of memory: an allocation of 1.0 EiB failed in "
                           "the case's own code (Unable to allocate 1.00 EiB for an array"), line
    assert "a, b and out at shape 16,16,16 float32 need only 3.0 KiB, so the shape is not what ran out" in line
    assert "smaller --shape" not in line


def test_an_interrupted_parallel_report_stops_at_once_in_one_line(tmp_path):
    """Item 8: an interrupted large report (the parallel path) printed worker tracebacks, and with many cases
    printed `InvalidStateError: CANCELLED` and stayed alive until a second signal. The parallel path is taken
    here for a run of small cases (PARALLEL_BYTES 0), interrupted by Ctrl-C to the process group."""
    import subprocess
    import sys

    from runbuild import make_run

    text = "".join(f"step (case.py:1);f{i} (mod{i}.py:{i});g (lib.so) {i + 1}\n" for i in range(200))
    run = make_run(tmp_path / "run", {f"c{i}": (text, 10.0 + i % 7, 0) for i in range(300)})
    script = ("import sys\nfrom flametool.commands import main\nfrom flametool.analyse import reading\nreading.PARALLEL_BYTES = 0\n"
              "sys.exit(main.main(sys.argv[1:]))\n")
    environ = fk.env()
    proc = subprocess.Popen([sys.executable, "-c", script, "report", str(run)], cwd=fk.ROOT, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(fk.tagged(environ[fk.TAG])) < 3 and time.monotonic() < deadline:  # flametool and two workers
        time.sleep(0.05)
    time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)
    stopped = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - stopped < 5
    assert proc.returncode == 130 and err == "flametool: interrupted\n", err
    assert fk.none_left(environ[fk.TAG], within=5) == []
    assert not (run / "report.html").exists()


def test_fork_map_keeps_order_and_raises_the_first_failure_in_order():
    from flametool import pool

    assert pool.fork_map(lambda x: x * x, list(range(50)), 3) == [x * x for x in range(50)]

    def failing(x):
        if x in (7, 30):
            raise ValueError(f"item {x}")
        return x

    with pytest.raises(ValueError, match="item 7"):
        pool.fork_map(failing, list(range(40)), 2)
    with pytest.raises(pool.WorkerDied):
        pool.fork_map(lambda x: os._exit(3) if x == 5 else x, list(range(10)), 2)


STOPPED = ("T", "t")  # stopped by a signal, or by its tracer


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


# A stand-in for an interactive shell: the session's leader, with flametool a job in a process group of its
# own. (A process group whose parent is in no other group of the session, flametool started with setsid, is
# orphaned: the kernel discards a stop signal's default action there, as no terminal could resume it.)
SHELL = ("import os, subprocess, sys\n"
         "proc = subprocess.Popen(sys.argv[1:], process_group=0)\n"
         "print(proc.pid, flush=True)\n"
         "sys.exit(os.waitstatus_to_exitcode(os.waitpid(proc.pid, 0)[1]))\n")


@pytest.mark.serial  # each process's state read in turn: a second worker beside it slows them past the waits
def test_ctrl_z_stops_the_children_and_py_spy_and_fg_resumes_them(tmp_path):
    """Item 15: Ctrl-Z stopped flametool but not its children (they lead process groups of their own): the timed
    loop and py-spy ran on while the terminal showed the job stopped. SIGTSTP and SIGCONT go to flametool's
    process group, as a terminal's Ctrl-Z and the shell's `fg` send them."""
    import subprocess
    import sys

    out = tmp_path / "run"
    environ = fk.env()
    # 3 s of sampling: py-spy is seen within a poll or two of its start, so the stop lands inside them with time to
    # spare; stopped, they are read again after half a second (a process that was not stopped has run on by then)
    shell = subprocess.Popen([sys.executable, "-c", SHELL, sys.executable, "-m", "flametool", "compare", *O[:-1], "3",
                              "--libs", "numpy", "--no-count", "--out", str(out)], cwd=fk.ROOT, env=environ, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    job = int(shell.stdout.readline())
    try:
        deadline = time.monotonic() + 120
        while not any("py-spy" in cmd and "record" in cmd for _, cmd in fk.tagged(environ[fk.TAG])):
            assert time.monotonic() < deadline and shell.poll() is None
            time.sleep(0.05)
        pyspy = next(pid for pid, cmd in fk.tagged(environ[fk.TAG]) if "py-spy" in cmd and "record" in cmd)
        child = int(Path(f"/proc/{pyspy}/cmdline").read_bytes().split(b"\0")[3])  # py-spy record --pid PID
        os.killpg(job, signal.SIGTSTP)
        deadline = time.monotonic() + 10
        # the child may be caught mid-sample, stopped by its tracer (py-spy, itself stopped): 't'
        while not all(state(p) in STOPPED for p in (job, pyspy, child)):
            assert time.monotonic() < deadline, [state(p) for p in (job, pyspy, child)]
            time.sleep(0.05)
        time.sleep(0.5)
        assert all(state(p) in STOPPED for p in (job, pyspy, child)), [state(p) for p in (job, pyspy, child)]
        os.killpg(job, signal.SIGCONT)
        # each runs again: seen running or asleep within the deadline (the sampled child is in 't' for a moment at
        # each of py-spy's samples, so one look 0.3 s after SIGCONT could catch it there; CI once did)
        deadline = time.monotonic() + 10
        for p in (job, pyspy, child):
            while state(p) not in ("R", "S", "D", "gone"):
                assert time.monotonic() < deadline, [state(p) for p in (job, pyspy, child)]
                time.sleep(0.01)
        assert shell.wait(timeout=120) == 0
    finally:  # a failure above leaves nothing stopped or running behind
        if shell.poll() is None:
            fk.kill_tagged(environ[fk.TAG])
    data = rundir.load(out)
    assert data.complete and data.results["numpy"].sampling.complete
    assert fk.none_left(environ[fk.TAG], within=5) == []



@pytest.mark.parametrize("keep", ["none", "past the three", "a standard one"])
def test_close_inherited_closes_every_descriptor_past_the_standard_three_but_the_one_kept(tmp_path, keep):
    """procs.close_inherited, in a forked child as values.Apart and the guardian call it: every descriptor past
    0, 1 and 2 closed but `keep`; a `keep` among the standard three (a pipe opened where one was closed at start)
    leaves the others of them open as well."""
    from flametool import procs

    a, b = os.pipe()
    extra = os.open(os.devnull, os.O_RDONLY)
    kept = {"none": None, "past the three": b, "a standard one": 1}[keep]
    said = tmp_path / "open"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            procs.close_inherited(keep=kept)
            still = [fd for fd in (0, 1, 2, a, b, extra) if _is_open(fd)]
            said.write_text(" ".join(map(str, still)))  # a descriptor opened after the closing
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    for fd in (a, b, extra):
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    assert set(map(int, said.read_text().split())) == {0, 1, 2} | ({b} if keep == "past the three" else set())


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_child_that_died_before_reporting_says_the_exception_its_log_ends_with(tmp_path):
    """exit_story: the cause in the one line (a shape too large for memory said only 'exited with code 1 (see
    LOG)', its OverflowError in the log); a log that ends otherwise, or is empty, is pointed at as before."""
    from flametool.measure import spawn

    log = tmp_path / "numpy-timing.log"
    log.write_text("Traceback (most recent call last):\n  File \"values.py\", line 148, in make\n"
                   "OverflowError: cannot fit 'int' into an index-sized integer\n\n")
    assert spawn.exit_story(1, log) == ("the child process exited with code 1 before reporting (OverflowError: "
                                        f"cannot fit 'int' into an index-sized integer; see {log})")
    log.write_text("x" * 10_000 + "\nmy.module.BadThingError: " + "y" * 500 + "\n")
    said = spawn.exit_story(-9, log)
    assert said.startswith("the child process was killed by SIGKILL (exit code -9) before reporting (my.module.BadThingError: y")
    assert "…; see" in said and len(said) - len(str(log)) < 320
    log.write_text("hello from the factory\n")
    assert spawn.exit_story(1, log) == f"the child process exited with code 1 before reporting (see {log})"
    log.write_text("")
    assert spawn.exit_story(1, log).endswith("(it wrote nothing to its log)")
