"""Ctrl-C and SIGTERM at any phase: exit 130, run.json kept with what finished and "complete": false, and
no child process or py-spy left. Each test runs flametool as a user does, in a session of its own, and
finds every process the run started by a tag they all inherit in their environment."""

from __future__ import annotations

import json
import signal
import sys
import time

import pytest

import faultkit as fk
from flametool.run import rundir
from flametool.run.record import Run

SLOW = fk.CASES / "fault_cases.py"
# a case whose calls sleep: a process that must still be timing when it is stopped lasts on the clock, not on a
# core the suite's other workers need
NAPPING = f"{fk.CASES / 'user_cases.py'}:napping_case"


def kept(out) -> list[int] | None:
    """The processes run.json keeps for each size of a sweep's case so far (None: not readable yet)."""
    try:
        return [len(p.processes) for p in rundir.load(out).results["napping_case"].points]
    except Exception:  # noqa: BLE001 - not written yet, or being replaced
        return None


def finished(bg: fk.Background, out) -> Run:
    code = bg.finish()
    left = fk.none_left(bg.tag)
    assert left == [], f"processes left behind: {left}"
    assert code == 130, (code, bg.err)
    assert "Traceback" not in "\n".join(bg.err)
    data = rundir.load(out)
    assert data.complete is False and data.finished
    assert bg.err[-1] == f"flametool: interrupted; what finished is kept in {out / 'run.json'} (complete: false)"
    # a log is for a case that printed or failed: a child stopped before it printed anything leaves none
    assert not [p.name for p in out.glob("*.log") if p.stat().st_size == 0]
    return data


@pytest.mark.parametrize("sig, group", [(signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c", "sigterm"])
def test_stop_during_a_later_case_keeps_the_finished_one(tmp_path, sig, group):
    """Both cases timed (in one shared process), numpy profiled, then stopped while the second case's own
    process sets up: what finished is kept, the second case's profile is not there."""
    out = tmp_path / "run"
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--processes", "1",
                        "--no-sample", "--case", f"{SLOW}:slow_second_build", "--progress", "all", "--out", str(out)],
                       fk.env(FLAMETOOL_TEST_BUILDS=str(tmp_path / "builds")))
    # its own profiled process (the timing process's progress lines start "timing ...")
    bg.wait_until(lambda: any(l.startswith("slow_second_build: setting up") for l in bg.err), "the second case set up")
    bg.wait_until(lambda: any("flametool.measure.child" in cmd and "slow_second_build" in cmd for _, cmd in fk.tagged(bg.tag)),
                  "the second case's child")
    time.sleep(0.5)  # inside the factory's sleep
    bg.signal(sig, group)
    data = finished(bg, out)
    assert list(data.results) == ["numpy", "slow_second_build"]
    numpy = data.results["numpy"]
    assert numpy.error is None and numpy.timing.cpu_us_per_call > 0 and numpy.profile.cprofile_calls > 0
    assert (out / "numpy.prof").is_file()
    later = data.results["slow_second_build"]
    assert later.timing.cpu_us_per_call > 0  # timed beside numpy before the stop
    assert later.profile is None and not (out / "slow_second_build.prof").exists()


@pytest.mark.parametrize("sig, group", [(signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c", "sigterm"])
def test_stop_while_py_spy_samples(tmp_path, sig, group):
    out = tmp_path / "run"
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--processes", "1",
                        "--sample-seconds", "60", "--progress", "all", "--out", str(out)], fk.env())
    bg.wait_for("sampling with py-spy")
    bg.wait_until(lambda: any("py-spy" in cmd and "record" in cmd for _, cmd in fk.tagged(bg.tag)), "py-spy running")
    time.sleep(0.5)
    bg.signal(sig, group)
    data = finished(bg, out)
    # its timing finished and is kept; the profiled process being sampled had not finished
    r = data.results["numpy"]
    assert r.timing.cpu_us_per_call > 0 and r.profile is None


def test_parent_killed_outright_takes_its_child_along(tmp_path):
    """SIGKILL leaves the parent no chance to clean up: the kernel stops the child (PR_SET_PDEATHSIG)."""
    out = tmp_path / "run"
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "", "--no-sample", "--processes", "1", "--case",
                        f"{SLOW}:slow_setup_case", "--out", str(out)], fk.env())
    bg.wait_for("slow_setup_case: setting up")  # its timing process (forked: its command line is its fork server's)
    time.sleep(0.5)  # inside the factory's sleep
    bg.signal(signal.SIGKILL, group=False)
    assert bg.finish() == -signal.SIGKILL
    assert fk.none_left(bg.tag) == []
    assert json.loads((out / "run.json").read_text())["complete"] is False


@pytest.mark.parametrize("phase", ["first process", "second process", "sampling"])
def test_ctrl_c_during_a_sweep_keeps_what_finished(tmp_path, phase):
    """Ctrl-C (SIGINT to the whole process group) in a sweep: in the first process at its second size, in the
    second process, and while py-spy samples a size with --sample: exit 130, every size a process finished
    kept in run.json, nothing left running."""
    out = tmp_path / "run"
    # loops of about 0.1 s, 20 rounds a size: a process is still timing a size when it is stopped. Calls that
    # sleep (NAPPING), not numpy's: its 100,000 calls a loop kept a core busy for each of those seconds (4.6 s of
    # CPU in the second process's case, for what the clock alone decides)
    timing = ["--processes", "3", "--iters", "200", "--repeats", "20"] if phase != "sampling" else \
        ["--processes", "1", "--iters", "20", "--repeats", "2"]
    bg = fk.Background(["sweep", "--device", "cpu", "--libs", "", "--case", NAPPING, "--sizes", "8,16", *timing,
                        "--sample", "--sample-seconds", "60", "--out", str(out)], fk.env())
    # where the sweep is, from what run.json keeps (a log's progress is a line per phase, not every loop): the
    # first process past its first size, or the first process done and the second started
    if phase == "first process":
        bg.wait_until(lambda: kept(out) == [1, 0], "the first size of the first process kept", timeout=120)
    elif phase == "second process":
        bg.wait_until(lambda: kept(out) == [1, 1], "the first process's sizes kept", timeout=120)
    else:
        bg.wait_for("sampling with py-spy")
        bg.wait_until(lambda: any("py-spy" in cmd and "record" in cmd for _, cmd in fk.tagged(bg.tag)), "py-spy running")
    time.sleep(0.5)
    bg.signal(signal.SIGINT, True)
    data = finished(bg, out)
    assert data.kind == "sweep"
    points = data.results["napping_case"].points
    # the first process's first size was kept as soon as it was measured, before the process finished
    expected = {"first process": [1, 0], "second process": [1, 1], "sampling": [1, 1]}[phase]
    assert [len(p.processes) for p in points] == expected
    # the processes whose sizes it kept are said to have run (the page said "processes run 0" of the first)
    assert data.groups[0].processes == max(expected)
    assert all(p.profile is None for p in points)  # py-spy was stopped before a size's profile finished


# A sitecustomize for flametool's own process (`python -m flametool`; its children run `python -c`): compare's
# CPU defaults with the spares on, as on a GPU host, so that each case's profiled process is started with the run
# and the next one is given its job ahead while the one before is sampled (profiling.profile_all).
SPARES_ON = """import sys
if sys.argv[:1] == ["-m"]:
    import dataclasses
    from flametool.measure import config
    config.CPU = dataclasses.replace(config.CPU, spares=True)
"""


@pytest.mark.parametrize("second", ["counted_build", "slow_second_build"], ids=["waits for its turn", "sets up"])
def test_ctrl_c_while_the_next_profiled_process_is_readied_ahead(tmp_path, second):
    """Profiling with spares (the CPU's defaults given spares, as a GPU host's are): Ctrl-C (SIGINT to the whole
    process group) while numpy's profiled process is sampled and the second case's, given its job ahead, waits
    for its GO set up and warmed up (py-spy attached to it ahead), or is still setting up: exit 130, run.json kept
    with both cases' timings, neither profile, and nothing left running (the readied process, its spare's pipe, both
    py-spys)."""
    out, builds = tmp_path / "run", tmp_path / "builds"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SPARES_ON)
    environ = fk.env(FLAMETOOL_TEST_BUILDS=str(builds))
    environ["PYTHONPATH"] = ":".join([str(site), str(fk.ROOT), *filter(None, [environ.get("PYTHONPATH")])])
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--processes", "1",
                        "--sample-seconds", "60", "--case", f"{SLOW}:{second}", "--progress", "all", "--out", str(out)],
                       environ)
    bg.wait_for("numpy: sampling with py-spy")
    # its second build is its profiled process's, given its job as numpy's py-spy attached: ahead of its turn
    bg.wait_until(lambda: builds.exists() and builds.read_text() == "2", "the second case's process readied ahead")
    time.sleep(0.5)  # set up and warmed up, waiting for GO (counted_build); inside the factory's sleep (slow_second_build)

    def spies() -> int:
        return sum("py-spy" in cmd and "record" in cmd for _, cmd in fk.tagged(bg.tag))

    assert spies() >= 1  # numpy still being sampled
    if second == "counted_build":  # and, once it waits for its GO, a py-spy attached to it ahead (readied.py)
        bg.wait_until(lambda: spies() == 2, "py-spy attached ahead to the process waiting for its turn")
    bg.signal(signal.SIGINT, True)
    data = finished(bg, out)
    assert list(data.results) == ["numpy", second]
    for r in data.results.values():
        assert r.error is None and r.timing.cpu_us_per_call > 0  # timed together before the stop, kept
        assert r.profile is None  # numpy's sampling and the second's turn were stopped
    # its turn never came; the last case's cProfile and counted loops run before it (ProfileJob.count_first, at
    # this 60 s window), so a process that had set up may have written its .prof, which run.json does not name
    assert second == "counted_build" or not (out / f"{second}.prof").exists()


def test_ctrl_c_while_two_timing_processes_run_at_once(tmp_path):
    """--processes-at-once 2: Ctrl-C while processes 2 and 3 both time their loops: exit 130, both stopped with
    everything they started, the first process's loops kept."""
    out = tmp_path / "run"
    # loops of about 2.4 s that sleep (NAPPING), as numpy's 400,000 products did on a core each
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "", "--case", NAPPING, "--processes", "3",
                        "--processes-at-once", "2", "--iters", "4000", "--repeats", "1", "--no-sample", "--progress",
                        "all", "--out", str(out)], fk.env())
    bg.wait_until(lambda: any(l.startswith("timing napping_case: process 1/3: result") for l in bg.err),
                  "process 1's result")
    bg.wait_until(lambda: all(any(l.startswith(f"timing napping_case: process {i}/3: timed loop") for l in bg.err)
                              for i in (2, 3)), "processes 2 and 3 timing at once")
    bg.signal(signal.SIGINT, True)
    data = finished(bg, out)
    assert len(data.results["napping_case"].timing.processes) == 1  # the first one's; 2 and 3 had not finished


def test_ctrl_c_while_the_environments_first_processes_run_at_once(tmp_path):
    """compare --env --processes-at-once 2 at the host-bound shape: Ctrl-C while both environments' first processes
    time their loops (paired.firsts_at_once): exit 130, both stopped with everything they started, nothing timed."""
    out = tmp_path / "run"
    # the anchor's calls sleep (NAPPING): loops of about 2.4 s on the clock, where numpy's and np.dot's 400,000
    # products each kept a core busy until the stop
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "numpy", "--case", NAPPING, "--anchor",
                        "napping_case", "--env", f"a={sys.executable}", "--env", f"b={sys.executable}", "--processes",
                        "2", "--processes-at-once", "2", "--iters", "4000", "--repeats", "1", "--no-sample", "--out",
                        str(out)], fk.env())
    bg.wait_until(lambda: all(any(l.startswith(f"timing numpy@{e}+napping_case@{e}: process 1/2: timed loop")
                                  for l in bg.err) for e in ("a", "b")), "both first processes timing at once")
    bg.signal(signal.SIGINT, True)
    data = finished(bg, out)
    assert all(r.timing is None for r in data.results.values())


def test_ctrl_c_before_the_command_runs_is_one_line_not_a_traceback(capsys, monkeypatch):
    """A Ctrl-C while the options are parsed or rich and the renderers imported (the first 0.2-0.4 s, before
    the command's own handling is set up) printed a traceback ending in KeyboardInterrupt; now the one line."""
    from flametool.commands import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(main, "build_parser", interrupted)
    assert main.main(["summary", "anything"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "flametool: interrupted\n" and captured.out == ""


def test_ctrl_c_once_measured_says_run_json_is_complete_and_how_to_get_the_report(capsys, monkeypatch, tmp_path):
    """A Ctrl-C while compare analyses what it measured (or prints it): run.json is whole, and the line says so
    and how to write the report (it said only 'flametool: interrupted', the report never written)."""
    from flametool.analyse import dispatch
    from flametool.commands import main
    from flametool.run import rundir

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(dispatch, "analyse", interrupted)
    out = tmp_path / "my run"  # the command it names is one a shell runs as written: the folder quoted
    code = main.main(["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--iters", "20",
                      "--warmup", "2", "--processes", "1", "--shape", "8,8,8", "--no-sample", "--no-count",
                      "--progress", "none", "--out", str(out)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 130
    assert f"flametool: interrupted; every timing is kept in {out / 'run.json'} (complete); flametool report '{out}' " \
           "writes the report" in err, err
    assert rundir.load(out).complete and not (out / "report.html").exists()
