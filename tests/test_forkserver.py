"""compare's timing processes forked from a fork server per environment (measure/forking.py, child/forkserver.py):
real CPU runs as a user makes them. The forked children are the server's (each case says who its parent is), a
signal that kills one reads as that signal, a server killed mid-run leaves the run whole (fresh processes from
then on), --fresh-processes starts no server, and a stopped run leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import faultkit as fk
from flametool.errors import RunDirError
from flametool.measure.protocol import FORKSERVER
from flametool.run import rundir

WHO = fk.CASES / "fork_cases.py"
PLAIN = ["--device", "cpu", "--shape", "16,16,16", "--iters", "100", "--warmup", "5", "--no-sample", "--no-count"]
SMALL = [*PLAIN, "--fork-processes"]  # forking is an opt-in (the H200's calibration: docs/calibration.md)


def sides(who: Path) -> list[tuple[int, int, str, str]]:
    """(pid, parent's pid, $FLAMETOOL_TEST_SIDE, parent's command line) of every process that built a fork_cases
    case."""
    return [(int(pid), int(ppid), side, command) for pid, ppid, side, command in
            (line.split(" ", 3) for line in who.read_text().splitlines())]


def parents(who: Path) -> list[tuple[int, int, str]]:
    """(pid, parent's pid, parent's command line) of every process that built a fork_cases case."""
    return [(pid, ppid, command) for pid, ppid, _, command in sides(who)]


def started(out: Path) -> dict[str, list[str | None]]:
    """How each process of each case's timed loops was started, as run.json says."""
    run = rundir.load(out)
    return {label: [p.started for p in r.at_sample_shape.processes] for label, r in run.results.items()
            if r.at_sample_shape is not None}


def ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def servers(bg: fk.Background) -> list[int]:
    """The run's fork servers (its forked children carry the server's command line, but not flametool as parent)."""
    return [pid for pid, cmd in fk.tagged(bg.tag) if FORKSERVER in cmd.split() and ppid(pid) == bg.pid]


@pytest.fixture(scope="module")
def forked_run(tmp_path_factory):
    """numpy, the tests' add_case and `who` timed together in 3 processes, forked by default. (Not torch: its
    import cost the fork server and the profiled process 2 s each, and no library is what is tested.)"""
    folder = tmp_path_factory.mktemp("forked")
    out, who = folder / "run", folder / "who.txt"
    proc = fk.run(["compare", *SMALL, "--libs", "numpy", "--case", f"{fk.CASES / 'user_cases.py'}:add_case",
                   "--case", f"{WHO}:who", "--processes", "3",
                   "--out", str(out)], fk.env(FLAMETOOL_TEST_WHO=str(who)))
    assert proc.returncode == 0, proc.stderr
    return out, who


def test_the_timing_processes_are_forked_by_one_server_and_measure(forked_run):
    out, who = forked_run
    run = rundir.load(out)
    assert run.complete and run.groups[0].processes == 3 and run.groups[0].lost == []
    for r in run.results.values():
        assert r.error is None and len(r.timing.processes) == 3 and r.timing.cpu_us_per_call > 0
        assert r.profile is not None and r.profile.cprofile_calls > 0
    assert started(out) == {label: ["forked"] * 3 for label in ("numpy", "add_case", "who")}
    # `who` built in 3 timing processes, each a child of one fork server, and in its profiled process (fresh)
    seen = parents(who)
    forked = [(pid, parent) for pid, parent, command in seen if FORKSERVER in command.split()]
    fresh = [pid for pid, _, command in seen if FORKSERVER not in command.split()]
    assert len(forked) == 3 and len({pid for pid, _ in forked}) == 3 and len({parent for _, parent in forked}) == 1
    assert len(fresh) == 1
    (server,) = {parent for _, parent in forked}
    assert {p.forked_from for r in run.results.values() for p in r.timing.processes} == {server}
    assert not list(out.glob("*.log"))  # the server's log and the children's, empty, are not kept


def test_how_a_process_started_is_checked_when_read_and_optional(forked_run, tmp_path):
    out, _ = forked_run
    doc = json.loads((out / "run.json").read_text())
    for r in doc["results"].values():  # a run from before it: nothing said
        for p in r["timing"]["processes"]:
            del p["started"], p["forked_from"]
    old = tmp_path / "old"
    old.mkdir()
    (old / "run.json").write_text(json.dumps(doc))
    assert set(sum(started(old).values(), [])) == {None}
    doc["results"]["numpy"]["timing"]["processes"][1]["started"] = "spawned"
    (old / "run.json").write_text(json.dumps(doc))
    with pytest.raises(RunDirError, match=r"results\.numpy\.timing\.processes\[1\]\.started"):
        rundir.load(old)


def test_each_environment_forks_from_a_server_of_its_own_interpreter(tmp_path):
    """--env a=PYTHON --env b=WRAPPER (the same interpreter, started by a script that sets a variable): b's
    timing processes are forked from a server the script started, a's from one of its own."""
    who, out = tmp_path / "who.txt", tmp_path / "run"
    wrapper = tmp_path / "python-b"
    wrapper.write_text(f'#!/bin/sh\nFLAMETOOL_TEST_SIDE=b exec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    proc = fk.run(["compare", *SMALL, "--libs", "numpy", "--case", f"{WHO}:who", "--anchor", "numpy",
                   "--env", f"a={sys.executable}", "--env", f"b={wrapper}", "--processes", "2", "--out", str(out)],
                  fk.env(FLAMETOOL_TEST_WHO=str(who)))
    assert proc.returncode == 0, proc.stderr
    assert set(sum(started(out).values(), [])) == {"forked"}
    forked = [(parent, side) for _, parent, side, command in sides(who) if FORKSERVER in command.split()]
    assert sorted(side for _, side in forked) == ["-", "-", "b", "b"]
    assert len({parent for parent, _ in forked}) == 2  # two servers
    assert all(len({side for p, side in forked if p == parent}) == 1 for parent, _ in forked)


def test_forks_per_server_draws_new_servers(tmp_path):
    """--forks-per-server 2, 5 processes: three servers in turn (2, 2, 1), each process's loops naming its own."""
    who, out = tmp_path / "who.txt", tmp_path / "run"
    proc = fk.run(["compare", *SMALL, "--libs", "numpy", "--case", f"{WHO}:who", "--processes", "5",
                   "--forks-per-server", "2", "--timed-seconds", "0.2", "--out", str(out)],
                  fk.env(FLAMETOOL_TEST_WHO=str(who)))
    assert proc.returncode == 0, proc.stderr
    servers_of = [p.forked_from for p in rundir.load(out).results["numpy"].timing.processes]
    assert len(servers_of) == 5 and None not in servers_of
    assert [servers_of.count(s) for s in dict.fromkeys(servers_of)] == [2, 2, 1]
    forked = [parent for _, parent, command in parents(who) if FORKSERVER in command.split()]
    assert forked == servers_of  # `who` says the same of its parent, process by process
    refused = fk.run(["compare", *SMALL, "--libs", "numpy", "--forks-per-server", "0", "--out", str(tmp_path / "r2")])
    assert refused.returncode != 0 and "--forks-per-server 0" in fk.error_line(refused)
    alone = fk.run(["compare", *PLAIN, "--libs", "numpy", "--forks-per-server", "2", "--out", str(tmp_path / "r3")])
    assert alone.returncode != 0 and "needs --fork-processes" in fk.error_line(alone)
    both = fk.run(["compare", *SMALL, "--libs", "numpy", "--fresh-processes", "--out", str(tmp_path / "r4")])
    assert both.returncode != 0 and "give one of them" in fk.error_line(both)


def test_a_forked_child_killed_by_a_signal_reads_as_that_signal(tmp_path):
    who = tmp_path / "who.txt"
    proc = fk.run(["compare", *SMALL, "--libs", "", "--case", f"{WHO}:who_then_segfault", "--processes", "1",
                   "--out", str(tmp_path / "run")], fk.env(FLAMETOOL_TEST_WHO=str(who)))
    assert proc.returncode == 1
    line = fk.error_line(proc)
    assert "the child process was killed by SIGSEGV (exit code -11) before reporting" in line, line
    seen = parents(who)
    assert seen and all(FORKSERVER in command.split() for _, _, command in seen)  # forked, each of them


def test_a_server_killed_mid_run_leaves_the_run_whole_with_fresh_processes(tmp_path):
    who, out = tmp_path / "who.txt", tmp_path / "run"
    bg = fk.Background(["compare", *SMALL, "--libs", "numpy", "--case", f"{WHO}:who", "--processes", "6",
                        "--timed-seconds", "0.3", "--out", str(out)], fk.env(FLAMETOOL_TEST_WHO=str(who)))
    bg.wait_for("process 3/6")
    (server,) = servers(bg)
    os.kill(server, signal.SIGKILL)
    assert bg.finish() == 0, bg.err
    assert fk.none_left(bg.tag) == []
    run = rundir.load(out)
    assert run.complete and run.groups[0].processes == 6 and run.groups[0].lost == []  # nothing lost
    how = started(out)
    assert how["numpy"] == how["who"]
    first_fresh = how["numpy"].index("fresh")
    assert 2 <= first_fresh and set(how["numpy"][:first_fresh]) == {"forked"} and set(how["numpy"][first_fresh:]) == {"fresh"}
    notes = [log for log in out.glob("*-timing-*.log") if "this process was started fresh instead" in log.read_text()]
    assert notes, "no log says the process was started fresh"
    seen = parents(who)  # the server's children until it died, then flametool's own
    assert any(parent == server for _, parent, _ in seen) and any(parent == bg.pid for _, parent, _ in seen)


@pytest.mark.parametrize("flag", [[], ["--fresh-processes"]], ids=["default", "fresh-processes"])
def test_fresh_processes_start_no_server(tmp_path, flag):
    """Fresh processes are the default (and --fresh-processes says so): no server, each process flametool's child."""
    who, out = tmp_path / "who.txt", tmp_path / "run"
    bg = fk.Background(["compare", *PLAIN, "--libs", "numpy", "--case", f"{WHO}:who", "--processes", "3",
                        *flag, "--out", str(out)], fk.env(FLAMETOOL_TEST_WHO=str(who)))
    commands: set[str] = set()
    while bg.proc.poll() is None:
        commands |= {cmd for _, cmd in fk.tagged(bg.tag)}
        time.sleep(0.05)
    assert bg.finish() == 0, bg.err
    assert commands and not [c for c in commands if FORKSERVER in c.split()]
    assert started(out) == {"numpy": ["fresh"] * 3, "who": ["fresh"] * 3}
    assert {parent for _, parent, _ in parents(who)} == {bg.pid}


# Ctrl-C's moments (the progress line waited for, then seconds more): as a forked child starts, its run_child thread
# reading its first lines, and in the middle of a process's loops. The most its exit may take: about 0.2 s, where
# two threads reading the server's socket took 5 s about half the time (the one that missed the child's "exited"
# slept out its select), or hung.
CTRL_C_MOMENTS = [("process 2/6", 0.0), ("process 2/6", 0.1), ("process 3/6", 0.0), ("process 4/6", 0.05)]
CTRL_C_WITHIN = 3.0


@pytest.mark.parametrize("sig, group", [(signal.SIGINT, True), (signal.SIGKILL, False)], ids=["ctrl-c", "sigkill"])
def test_a_stopped_run_leaves_no_server_or_child(tmp_path, sig, group):
    """Ctrl-C (to the terminal's process group), or flametool killed outright: the server ends with flametool
    (its parent-death signal), the child it forked with the server. Ctrl-C ends it at once, whenever it comes
    (CTRL_C_MOMENTS), and keeps what finished."""
    for k, (line, after) in enumerate(CTRL_C_MOMENTS if sig == signal.SIGINT else [("process 2/6", 0.0)]):
        who, out = tmp_path / f"who-{k}.txt", tmp_path / f"run-{k}"
        bg = fk.Background(["compare", *SMALL, "--libs", "numpy", "--case", f"{WHO}:who", "--processes", "6",
                            "--out", str(out)], fk.env(FLAMETOOL_TEST_WHO=str(who)))
        bg.wait_for(line)
        time.sleep(after)
        assert servers(bg)
        bg.signal(sig, group)
        try:
            code = bg.proc.wait(timeout=CTRL_C_WITHIN)
        except subprocess.TimeoutExpired:
            bg.kill()  # not left behind for the tests after this one
            raise AssertionError(f"still running {CTRL_C_WITHIN:g} s after {sig!r} at {line!r} + {after:g} s")
        assert bg.finish() == code == (130 if sig == signal.SIGINT else -signal.SIGKILL), bg.err
        assert fk.none_left(bg.tag) == [], f"{line!r} + {after:g} s"
        assert json.loads((out / "run.json").read_text())["complete"] is False


def test_the_environments_firsts_side_by_side_are_forked_one_fork_a_server(tmp_path):
    """--env --processes-at-once 2 --forks-per-server 1 at the host-bound shape (64^3 on the CPU): the two first
    processes, started side by side, are each forked by a server of its environment, and every process of the run
    by a server of its own."""
    out = tmp_path / "run"
    env_cases = fk.CASES / "env_cases.py"
    proc = fk.run(["compare", *PLAIN, "--shape", "64,64,64", "--fork-processes", "--forks-per-server", "1",
                   "--libs", "numpy", "--case", f"{env_cases}:dot", "--anchor", "dot", "--env", f"a={sys.executable}",
                   "--env", f"b={sys.executable}", "--processes", "2", "--processes-at-once", "2", "--repeats", "2",
                   "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    run = rundir.load(out)
    firsts = [run.results[f"numpy@{e}"].timing.processes[0] for e in ("a", "b")]
    assert [p.started for p in firsts] == ["forked", "forked"]
    servers = [p.forked_from for r in run.results.values() if r.label.startswith("numpy") for p in r.timing.processes]
    assert len(servers) == 4 and None not in servers and len(set(servers)) == 4  # one fork a server
