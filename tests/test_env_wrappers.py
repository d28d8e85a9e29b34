"""`compare --env NAME=PYTHON` with interpreters that are not plain Pythons: a program that prints bytes that
are no text, and wrapper scripts that run Python without `exec` (the shell stays as its parent)."""

from __future__ import annotations

import os
import signal
import sys
import uuid

import pytest

import faultkit as fk
from checks import one_line_error
from flametool.errors import FlametoolError, Interrupted
from flametool.measure import environments
from flametool.run.record import Environment
from flametool.workload import builtins


def script(path, body: str):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_an_interpreter_that_prints_garbage_cannot_be_run_as_python(capsys, tmp_path):
    garbage = script(tmp_path / "garbage", f"exec {sys.executable} -c \"import sys; "
                                           "sys.stdout.buffer.write(bytes(range(256)) * 12); "
                                           "sys.stderr.buffer.write(bytes(range(255, -1, -1)) * 12)\"\n")
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--env", f"a={sys.executable}",
                                   "--env", f"b={garbage}", "--out", str(tmp_path / "run")])
    assert line.startswith(f"flametool: --env 'b={garbage}': could not be run as Python")
    assert not (tmp_path / "run").exists()


def no_exec_wrapper(folder, site_body: str = ""):
    """A PYTHON for --env that runs this interpreter as a child of its shell (no `exec`), with a sitecustomize
    of `site_body` on its path."""
    (folder / "site").mkdir(parents=True, exist_ok=True)
    (folder / "site" / "sitecustomize.py").write_text(site_body)
    return script(folder / "python", f'PYTHONPATH="{folder / "site"}${{PYTHONPATH:+:$PYTHONPATH}}" {sys.executable} "$@"\n')


def test_a_wrapper_that_does_not_exec_is_refused_with_what_to_write(capsys, tmp_path):
    """Its Python is the shell's child: the interpreter check passed, then every case's process failed
    ("exited with code 1 before reporting"). It is refused before anything runs, saying to use exec."""
    wrapper = no_exec_wrapper(tmp_path)
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--env", f"a={sys.executable}",
                                   "--env", f"b={wrapper}", "--no-sample", "--out", str(tmp_path / "run")])
    assert line.startswith(f"flametool: --env 'b={wrapper}': {wrapper} runs Python as a child of its own")
    assert 'exec /path/to/python "$@"' in line
    assert not (tmp_path / "run").exists()
    # with exec it is an environment like any other
    script(tmp_path / "python", f'exec {sys.executable} "$@"\n')
    specs = [builtins.builtin("numpy")]
    (found,) = environments.probe([Environment("b", str(tmp_path / "python"))], specs)
    assert found.versions["numpy"]


SLOW_SITE = "import time\ntime.sleep(120)\n"
# The two tests below are not serial: the wrapper's Python sleeps 120 s in its site hook, so the import check
# is still running when the test stops it, and always past 2 s, however loaded the machine; what they check is
# the processes left behind (none), which they wait for with seconds to spare.


def test_the_import_check_stopped_by_sigterm_leaves_no_python_behind(tmp_path):
    """A wrapper without exec whose Python imports slowly: SIGTERM to flametool during the import check left the
    wrapper's Python running (10 minutes later still there)."""
    wrapper = no_exec_wrapper(tmp_path, SLOW_SITE)
    environ = fk.env()
    bg = fk.Background(["compare", "--device", "cpu", "--libs", "numpy", "--env", f"a={sys.executable}",
                        "--env", f"b={wrapper}", "--no-sample", "--out", str(tmp_path / "run")], environ)
    try:
        bg.wait_until(lambda: sum("importcheck" in cmd for _, cmd in fk.tagged(bg.tag)) >= 3, "the import check")
        bg.signal(signal.SIGTERM, group=False)
        assert bg.finish() == 130
        assert fk.none_left(bg.tag) == []
    finally:
        bg.kill()


def test_the_import_check_that_runs_out_of_time_stops_the_wrapper_s_python(tmp_path, monkeypatch):
    wrapper = no_exec_wrapper(tmp_path, SLOW_SITE)
    monkeypatch.setenv(fk.TAG, tag := uuid.uuid4().hex)
    monkeypatch.setattr(environments, "PROBE_SECONDS", 2.0)
    try:
        with pytest.raises(FlametoolError, match="importing the cases took more than 2 s"):
            environments.probe([Environment("b", str(wrapper))], [builtins.builtin("numpy")])
        assert fk.none_left(tag) == []
    finally:
        fk.kill_tagged(tag)


def test_a_stop_right_after_an_import_check_started_leaves_none_behind(tmp_path, monkeypatch):
    """SIGTERM can come while the checks are still being started (CI, 2026-12-04: with the second one just
    started, its shell and Python were left running). The stop is raised here right after the second start."""
    import subprocess

    wrapper = no_exec_wrapper(tmp_path, SLOW_SITE)
    monkeypatch.setenv(fk.TAG, tag := uuid.uuid4().hex)
    started = []

    class PopenThenStop(subprocess.Popen):  # a Popen still: the clean-up waits on Popens as such
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)
            if len(started) == 2:
                raise Interrupted()

    monkeypatch.setattr(subprocess, "Popen", PopenThenStop)
    try:
        with pytest.raises(Interrupted):
            environments.probe([Environment("a", sys.executable), Environment("b", str(wrapper))],
                               [builtins.builtin("numpy")])
        assert len(started) == 2 and fk.none_left(tag) == []
    finally:
        fk.kill_tagged(tag)


def test_an_anchor_whose_library_differs_between_environments_is_warned_about():
    specs = [builtins.builtin("numpy"), builtins.builtin("torch")]
    same = [Environment("a", "/a", versions={"numpy": "2.4", "torch": "2.13"}),
            Environment("b", "/b", versions={"numpy": "2.5", "torch": "2.13"})]
    assert environments.anchor_warning(same, specs, "torch") is None
    warning = environments.anchor_warning(same, specs, "numpy")
    assert warning.startswith("warning: the anchor numpy is numpy 2.4 in a, 2.5 in b: its own change is then the "
                              "host's speed and numpy's change together")


def test_two_wrapper_scripts_of_one_interpreter_read_as_two_environments():
    """Each environment's line names the PYTHON as given, then what it runs: two wrapper scripts (a build each, the
    README's recipe) of one interpreter printed as one '(/venv/bin/python)' in every view."""
    from flametool.render import format as fmt
    from flametool.run.record import Environment

    main = Environment("main", "/envs/main.sh", "/venv/bin/python", "3.11.7", {"numpy": "2.1.0"})
    pr = Environment("pr", "/envs/pr.sh", "/venv/bin/python", "3.11.7", {"numpy": "2.1.0"})
    lines = [fmt.environment_line(e) for e in (main, pr)]
    assert lines == ["environment main: Python 3.11.7 (/envs/main.sh, running /venv/bin/python), numpy 2.1.0",
                     "environment pr: Python 3.11.7 (/envs/pr.sh, running /venv/bin/python), numpy 2.1.0"]
    venv = Environment("a", "/venv/bin/python", "/venv/bin/python", "3.11.7")
    assert fmt.environment_line(venv) == "environment a: Python 3.11.7 (/venv/bin/python)"


def test_a_package_installed_beside_flametool_does_not_shadow_an_environment_s_own(tmp_path):
    """flametool installed in a site-packages that holds mylib 1.0, and --env B a venv with its own mylib 1.1: the
    child's PYTHONPATH (the folder flametool was imported from) came first on sys.path, so B's child imported mylib
    1.0 and B's change read as nothing (1.002x where it was 1.085x). The child's boot now puts that folder last
    once flametool is imported; the parent's flametool is still the one it runs."""
    import shutil
    import subprocess
    from pathlib import Path

    from flametool.measure import spawn

    site = tmp_path / "site"  # flametool installed, and mylib beside it
    shutil.copytree(Path(fk.ROOT) / "flametool", site / "flametool", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "mylib").mkdir()
    (site / "mylib" / "__init__.py").write_text("WHERE = 'beside flametool'\n")
    venv = tmp_path / "venv"  # the environment, with a mylib of its own
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    own = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()) / "mylib"
    own.mkdir(parents=True)
    (own / "__init__.py").write_text("WHERE = 'the environment'\n")
    # the child's boot up to its entry, run as the parent (flametool from `site`) runs it, with its child_env
    boot = spawn.CHILD_BOOT.split("from flametool.measure.child.entry")[0]
    parent = (f"import subprocess, sys; sys.path.insert(0, {str(site)!r}); from flametool.measure import spawn; "
              f"sys.exit(subprocess.run([{python!r}, '-c', {boot!r} + "
              "'import flametool, mylib; print(mylib.WHERE, flametool.__file__)'], env=spawn.child_env()).returncode)")
    got = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, check=True, cwd=tmp_path,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert got.stdout.split() == ["the", "environment", str(site / "flametool" / "__init__.py")], got
