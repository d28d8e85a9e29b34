"""A real run made once in a test session and read by every test that asks for it, whichever pytest-xdist
worker asks first.

A module-scoped fixture is made once per worker: when xdist gives a module's tests to both workers (it hands
out tests in chunks, not by module), both made the module's run, each taking seconds to minutes of real
timing and sampling. Here the first worker to ask makes it, under a lock in the session's temporary folder;
the other waits for it and reads the same run directory. A run is read, never changed, by the tests that
share it (as with a module fixture). The command's exit code, stdout and stderr are kept beside the run, so
each worker's tests check them as they did: a run that failed is made once and fails every test that reads
it, in either worker.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest


def session_folder(factory: pytest.TempPathFactory) -> Path:
    """The test session's temporary folder: under xdist each worker's basetemp (popen-gw0, ...) is in it."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder `name` of this session, made by `make(folder)` the first time any worker asks for it."""
    root = session_folder(factory)
    folder, done = root / f"once-{name}", root / f"once-{name}.done"
    with open(root / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; a worker that dies releases it too
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


def flametool_once(factory: pytest.TempPathFactory, name: str, *args: str, timeout: float = 300,
                   env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[Path, subprocess.CompletedProcess]:
    """`flametool ARGS --out RUN` in a process of its own (as conftest's cli runs it, or faultkit's run with its
    `env` and `cwd`), once a session: the run directory and the finished command (its exit code, stdout and
    stderr as it printed them)."""
    def make(folder: Path) -> None:
        argv = [sys.executable, "-m", "flametool", *args, "--out", str(folder / "run")]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
        (folder / "command.json").write_text(json.dumps({"args": argv, "returncode": proc.returncode,
                                                         "stdout": proc.stdout, "stderr": proc.stderr}))

    folder = once(factory, name, make)
    kept = json.loads((folder / "command.json").read_text())
    return folder / "run", subprocess.CompletedProcess(kept["args"], kept["returncode"], kept["stdout"], kept["stderr"])


WORKLOAD_CASES = Path(__file__).parent / "cases" / "workload_cases.py"
CPU_SHORT = ["--device", "cpu", "--pool-threads", "1", "--iters", "100", "--warmup", "10", "--processes", "1",
             "--sample-seconds", "0.5"]


def workload_compare(factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """`compare --workload workload_cases.py:scaled_exp_sum --libs numpy,torch` on the CPU, a short run, once a
    session: test_workloads.py and test_aligned_lines.py read the same run."""
    return flametool_once(factory, "workload-compare", "compare", "--workload", f"{WORKLOAD_CASES}:scaled_exp_sum",
                          "--libs", "numpy,torch", *CPU_SHORT)


USER_CASES = Path(__file__).parent / "cases" / "user_cases.py"
CPU_COMPARE = {"processes": 2, "repeats": 2, "iters": 200}


def cpu_compare(factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """`compare --device cpu` with its default libraries (numpy and torch) and a case of one's own (add_case), two
    processes, once a session: test_compare_cpu.py checks its run.json and the report, snakeviz and browser tests
    (tests/reportruns.py) read the same run (each made its own, 8-10 s of a worker each). Its environment asks
    the CPU pools for two threads (a user's default on two cores; conftest gives the other runs one), so that
    test_pool_threads_reach_the_child sees compare's default of one reach the child over the environment's."""
    from flametool.measure.spawn import POOL_THREAD_VARS

    env = {**os.environ, **dict.fromkeys(POOL_THREAD_VARS, "2")}
    return flametool_once(factory, "compare-cpu", "compare", "--device", "cpu", "--case", f"{USER_CASES}:add_case",
                          "--iters", str(CPU_COMPARE["iters"]), "--repeats", str(CPU_COMPARE["repeats"]),
                          "--processes", str(CPU_COMPARE["processes"]), "--sample-seconds", "0.5", "--rate", "200",
                          env=env)
