"""`compare --env NAME=PYTHON`, for real on the CPU: environment b is this interpreter with a directory on
PYTHONPATH whose sitecustomize.py wraps numpy.matmul with a 5 us busy-wait (a wrapper script is the PYTHON).
One shared run (module fixture); the checks before anything runs need no run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from checks import one_line_error
from flametool.analyse import diff, dispatch
from flametool.run import rundir

# a planted cost found and resolved: a second worker beside it moves the figures it checks. Only
# the tests of the measured run (env_run) are serial; the checks before anything runs measure nothing
serial = pytest.mark.serial

CASES = Path(__file__).parent / "cases" / "env_cases.py"
PLANTED_US = 5.0
SITECUSTOMIZE = f'''
import time
import numpy as _np

_orig, _clock = _np.matmul, time.perf_counter


def matmul(*args, **kwargs):
    end = _clock() + {PLANTED_US}e-6
    while _clock() < end:
        pass
    return _orig(*args, **kwargs)


matmul.__wrapped__ = _orig
_np.matmul = matmul
'''


def wrapper(directory: Path, pythonpath: Path) -> Path:
    """A PYTHON for --env: this interpreter with `pythonpath` first on its path."""
    script = directory / "python"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{pythonpath}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    script.chmod(0o755)
    return script


@pytest.fixture(scope="module")
def env_b(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("env_b")
    (d / "site").mkdir()
    (d / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return wrapper(d, d / "site")


@pytest.fixture(scope="module")
def env_run(cli, tmp_path_factory, env_b):
    out = tmp_path_factory.mktemp("envs") / "run"
    # the anchor: numpy's product through np.dot (a user case), the same in both environments and the same BLAS
    # call as the case (torch, on the CPU, moves less like it and costs each process 2 s of import)
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--case", f"{CASES}:dot", "--anchor", "dot",
               "--env", f"a={sys.executable}", "--env", f"b={env_b}",
               "--processes", "3", "--repeats", "12", "--iters", "200", "--sample-seconds", "1", "--rate", "200",
               "--no-count", "--out", str(out))  # no counted loop: nothing here reads the counts
    assert proc.returncode == 0, proc.stderr
    return out, proc


@serial
def test_the_planted_cost_is_found(env_run):
    out, proc = env_run
    a = dispatch.analyse_dir(out)
    (pair,) = a.pairs
    assert (pair.base, pair.head) == ("numpy@a", "numpy@b")
    f = pair.anchored
    assert f is not None and f.anchor == "dot" and (f.base_units, f.head_units) == (3, 3)
    # the wrapper costs its 5 us busy-wait plus its own call (0.5-1.6 us here): found, and resolved (an interval
    # at most half as wide again as the plant, above half of it: in CI, 2026-12-04, a loaded machine's 3 + 3
    # processes gave 4.2-9.4 us, wider than the plant by 3%). How close a run reads a plant, and whether its
    # intervals hold it as often as they say, is benchmarks/calibrate.py's (nulls and plants, the plant measured
    # in the run's own processes): held against a yardstick timed in processes of its own, this test failed in 4
    # of some 40 serial runs here, the yardstick reading 5.5 us where the run's processes paid 6.2-6.3 (or 6.6
    # against 5.5)
    assert PLANTED_US * 0.9 <= f.diff_us <= PLANTED_US * 1.5, (f.diff_us, f.diff_interval)
    assert f.diff_interval.low <= f.diff_us <= f.diff_interval.high
    assert f.diff_interval.low > PLANTED_US / 2 and f.diff_interval.high - f.diff_interval.low < 1.5 * PLANTED_US
    # the difference is the base's time at the common speed times (ratio - 1): the two say one thing; the base's
    # own pooled time is the absolute figures' base
    assert f.diff_us == pytest.approx(f.at_us * (f.ratio - 1))
    assert f.absolute.base_us == pytest.approx(a.timings["numpy@a"].cpu_us)
    # the anchor's own change is the host's speed between the environments' processes, which no test may
    # assume: what flametool computes of it is the anchor's pooled time, b's over a's
    assert f.anchor_change == pytest.approx(a.sample_timings["dot@b"].cpu_us / a.sample_timings["dot@a"].cpu_us)
    assert f"dot's own change {f.anchor_change:.3f}×" in " ".join(proc.stdout.split())
    assert "numpy@b / numpy@a relative to dot = " in proc.stdout and "anchored on dot over 3 + 3 processes" in proc.stdout
    assert "not anchored: numpy@a" in proc.stdout and "dot's own change" in proc.stdout


@serial
def test_the_pair_s_layers_and_frames_come_from_each_environment_s_samples(env_run):
    out, proc = env_run
    a = dispatch.analyse_dir(out)
    (pair,) = a.pairs
    d = pair.diff
    assert d is not None and (d.base, d.head) == ("numpy@a", "numpy@b")
    # both sides' samples at their common speed: the diff's total is the anchored difference the pair leads with
    assert d.delta_us_per_call == pytest.approx(pair.anchored.diff_us)
    assert sum(r.delta_us_per_call for r in d.layers) == pytest.approx(d.delta_us_per_call)
    # the planted wrapper (sitecustomize's matmul, b only) is where the difference is
    planted = [r for r in d.frames if r.frame.endswith("sitecustomize.matmul")]
    assert planted and planted[0].base_total_us_per_call == 0
    assert planted[0].delta_total_us_per_call > 0.5 * PLANTED_US
    assert "frames that differ most (numpy@b - numpy@a" in proc.stdout
    # the layer table says at which speed its pair column is; `flametool diff RUN --base --head` shows the same
    assert re.search(r"numpy@b - numpy@a: both at the common speed of their 3 \+ 3 processes: numpy@a \d+\.\d\d us "
                     r"\(\d+\.\d\d in its own\), numpy@b \d+\.\d\d us x \d\.\d{3} relative to dot = \d+\.\d\d us per call "
                     r"\(\d+\.\d\d in its own\)", " ".join(proc.stdout.split())), proc.stdout
    again = diff.diff_cases(out, "numpy@a", "numpy@b").figures
    assert again.delta_us_per_call == pytest.approx(d.delta_us_per_call) and again.at_speed == d.at_speed


@serial
def test_environments_are_recorded_and_shown(env_run, env_b):
    out, proc = env_run
    data = json.loads((out / "run.json").read_text())
    assert data["schema"] == rundir.SCHEMA
    assert list(data["results"]) == ["numpy@a", "dot@a", "numpy@b", "dot@b"]
    assert [data["results"][l]["env"] for l in data["results"]] == ["a", "a", "b", "b"]
    assert data["config"]["anchor"] == "dot" and data["config"]["pairs"] == [["numpy@a", "numpy@b"]]
    assert data["config"]["envs"] == [{"name": "a", "python": sys.executable}, {"name": "b", "python": str(env_b)}]
    run = rundir.load(out)
    a, b = run.environments
    assert (a.name, b.name) == ("a", "b") and a.executable == b.executable == sys.executable
    import numpy

    assert a.versions == b.versions == {"numpy": numpy.__version__}  # a user case has no version of its own
    assert a.python_version == f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    for e in ("a", "b"):
        assert f"environment {e}: Python {a.python_version}" in proc.stdout and f"numpy {numpy.__version__}" in proc.stdout
    # each environment's cases shared their processes; the two environments did not
    assert run.paired("numpy@a", "dot@a") and run.paired("numpy@b", "dot@b") and not run.paired("numpy@a", "numpy@b")
    assert run.anchor_beside("numpy@b") == "dot@b" and run.anchor_beside("dot@a") is None
    # the report has the anchored sentence and the environments
    page = (out / "report.html").read_text()
    assert "relative to dot" in page and "environment b</th><td>Python" in page


@serial
def test_the_environments_take_turns(env_run):
    """A B, B A, A B: the processes' order, read off the progress lines."""
    _, proc = env_run
    seen = []
    for line in proc.stderr.splitlines():
        m = re.match(r"timing (\S+): process (\d+)/3", line)
        if m and (m[1], m[2]) not in seen:
            seen.append((m[1], m[2]))
    a, b = "numpy@a+dot@a", "numpy@b+dot@b"
    assert seen == [(a, "1"), (b, "1"), (b, "2"), (a, "2"), (a, "3"), (b, "3")]


def test_the_default_anchor_has_one_version_everywhere():
    from flametool.workload import builtins
    from flametool.measure import environments
    from flametool.run.record import Environment

    specs = [builtins.builtin("cupy"), builtins.builtin("torch"), builtins.builtin("cublas")]
    env = lambda name, cupy: Environment(name, "python", versions={"cupy": cupy, "torch": "2.11.0"})  # noqa: E731
    # cupy rebuilt: torch is the only library with one version, though cublas comes later in --libs
    assert environments.choose_anchor([env("main", "14.2.0"), env("pr", "14.3.0.dev0")], specs, None) == "torch"
    # nothing rebuilt (the same cupy): the last such case
    assert environments.choose_anchor([env("main", "14.2.0"), env("pr", "14.2.0")], specs, None) == "cublas"
    assert environments.expand(specs[:2], [env("main", "1"), env("pr", "2")])[3].label == "torch@pr"
    assert environments.default_pairs(specs[:2], [env("main", "1"), env("pr", "2")], "torch") == [["cupy@main", "cupy@pr"]]


def test_a_missing_interpreter_is_one_line(capsys, tmp_path):
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--env", f"a={sys.executable}", "--env",
                                   f"b={tmp_path / 'nope' / 'python'}", "--out", str(tmp_path / "run")])
    assert "--env 'b=" in line and "no such interpreter" in line
    assert not (tmp_path / "run").exists()


def test_an_interpreter_that_cannot_import_the_case_is_one_line(capsys, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "torch.py").write_text("raise ImportError('torch is not in this environment')\n")
    python = wrapper(tmp_path, tmp_path / "site")
    # a's torch is a stand-in that imports (an empty module), not the real one: what is tested is b's failed import,
    # and the real torch's import cost a's probe 2 s
    (tmp_path / "a" / "site").mkdir(parents=True)
    (tmp_path / "a" / "site" / "torch.py").write_text("")
    a = wrapper(tmp_path / "a", tmp_path / "a" / "site")
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy,torch", "--env", f"a={a}",
                                   "--env", f"b={python}", "--out", str(tmp_path / "run")])
    assert line.startswith(f"flametool: --env 'b={python}': cannot import torch (ImportError: torch is not in this")
    assert not (tmp_path / "run").exists()
    # one without numpy cannot run flametool's child at all (the built-in cases' operands are numpy's)
    (tmp_path / "site" / "numpy.py").write_text("raise ImportError('no numpy here')\n")
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--env", f"a={sys.executable}",
                                   "--env", f"b={python}", "--out", str(tmp_path / "run")])
    assert "cannot run flametool's child (ImportError: no numpy here)" in line


@pytest.mark.parametrize("argv, words", [
    (["--env", "a=python3"], "give two environments or more"),
    (["--env", "a", "--env", "b=python3"], "expected NAME=PYTHON"),
    (["--env", "a b=python3", "--env", "c=python3"], "the name must be"),
    (["--env", "a=python3", "--env", "a=python3"], "given twice"),
    (["--anchor", "torch"], "--anchor: only with --env"),
    (["--env", "a=python3", "--env", "b=python3", "--isolate"], "leave out --isolate"),
    (["--budget", "0"], "--budget 0.0: must be a number of seconds, more than 0"),
    (["--fail-above", "nan"], "--fail-above nan: must be a number"),
    (["--timed-seconds", "61"], "--timed-seconds 61.0: must be more than 0 and at most 60"),
])
def test_bad_env_options_are_one_line(capsys, tmp_path, argv, words):
    assert words in one_line_error(capsys, ["compare", "--device", "cpu", *argv, "--out", str(tmp_path / "r")])


def test_anchor_must_be_a_case_of_the_run(capsys, tmp_path):
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--env", f"a={sys.executable}",
                                   "--env", f"b={sys.executable}", "--anchor", "torch", "--out", str(tmp_path / "r")])
    assert "--anchor 'torch': no case named 'torch'" in line
    # one case alone has nothing to anchor on
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--env", f"a={sys.executable}",
                                   "--env", f"b={sys.executable}", "--out", str(tmp_path / "r")])
    assert "no case to anchor on" in line


def test_git_describe_of_a_library_imported_from_a_checkout(tmp_path):
    from flametool.measure import importcheck

    repo = tmp_path / "cupy"
    (repo / "cupy").mkdir(parents=True)
    (repo / "cupy" / "__init__.py").write_text("__version__ = '14.3.0.dev0'\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"], ["tag", "v14.3.0a1"]):
        subprocess.run(git + argv, check=True)
    assert importcheck.checkout_of(str(repo / "cupy" / "__init__.py"), ()) == "v14.3.0a1"
    (repo / "cupy" / "new.py").write_text("")
    subprocess.run(git + ["add", "."], check=True)
    assert importcheck.checkout_of(str(repo / "cupy" / "__init__.py"), ()) == "v14.3.0a1-dirty"
    # an installed copy inside some other checkout (a venv in a project's tree) is no checkout of the library
    installed = repo / "venv" / "lib" / "site-packages" / "torch"
    installed.mkdir(parents=True)
    assert importcheck.checkout_of(str(installed / "__init__.py"), ()) is None


def test_environments_may_take_more_processes_until_the_anchored_ratio_settles(tmp_path):
    from flametool.commands import main, settings
    from flametool.measure.config import CPU

    # numpy and a numpy case of one's own: each environment is probed (imports every case) at each parse, and
    # torch's import there took 5 of this test's 7 s; the process counts do not depend on the libraries
    argv = ["compare", "--device", "cpu", "--libs", "numpy", "--case", f"{CASES}:dot", "--env", f"a={sys.executable}",
            "--env", f"b={sys.executable}", "--out", str(tmp_path / "r")]
    config = settings.compare_config(main.build_parser().parse_args(argv), lambda text: None)
    assert (config.processes, config.max_processes) == (CPU.env_processes, CPU.env_max_processes)
    assert config.budget == CPU.env_budget and config.fail_above is None
    given = settings.compare_config(main.build_parser().parse_args([*argv, "--processes", "4"]), lambda text: None)
    assert given.processes == given.max_processes == 4
    # --fail-above (or --budget) with --processes: that many first, then more until decided, within the budget
    deciding = settings.compare_config(main.build_parser().parse_args(
        [*argv, "--processes", "4", "--fail-above", "3", "--budget", "90"]), lambda text: None)
    assert (deciding.processes, deciding.max_processes, deciding.budget, deciding.fail_above) == (
        4, CPU.env_max_processes, 90, 3)
    plain = settings.compare_config(main.build_parser().parse_args(argv[:7] + argv[11:]), lambda text: None)
    assert (plain.max_processes, plain.extra_seconds, plain.budget) == (CPU.max_processes, CPU.extra_seconds, None)
