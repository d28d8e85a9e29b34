import gc
import os
import shutil
import subprocess
import sys

import pytest

# The suite starts some thousand Python processes (flametool and its children). Where PYTHONDONTWRITEBYTECODE is
# set (this project's machines set it) none of them writes bytecode, so each compiled flametool's modules afresh
# (about 0.15 s a command), and each xdist worker rewrote and compiled every test module (3 s): about 50 s of the
# suite's 240 on two workers. Python's own cache (the ignored __pycache__ folders), as a user's machine keeps it;
# what runs is the same source (a stale .pyc is recompiled), so no test's meaning changes.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# Each profiled case's cProfile loop runs 0.5 s (loops.CPROFILE_SECONDS); what a test reads of a profile (its
# functions, calls per step, counts) needs calls under cProfile, not half a second of them: 0.1 s keeps at least one
# whole loop of --iters calls (the loop ends past its deadline, never inside a loop) and takes some hundreds of
# profiled cases' 0.4 s off the suite. Every run's processes inherit it; a test that sets its own environment
# starts from os.environ (faultkit.env), so has it too.
os.environ.setdefault("FLAMETOOL_CPROFILE_SECONDS", "0.1")
# flametool's output, when not a terminal, is drawn at COLUMNS's width where it is given (else 160, as a CI log
# reads it), and the tests' processes have it: GNU readline, once imported (pytest's debugger support imports it),
# sets COLUMNS and LINES in the C environment the children inherit, behind os.environ's back (80 and 24 where there
# is no terminal). Readline is started here and both are unset, so that the tests read output as a user's pipe
# gives it, however the suite is run. A test of COLUMNS sets it in its own environment.
try:
    import readline  # noqa: F401 - for its side effect on the environment, undone below
except ImportError:
    pass
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)
    os.unsetenv(_size)
# OpenBLAS starts a thread per core at numpy's import, and each spins after every call before it sleeps: on the two
# cores here, beside three other workers' processes, that spinning is CPU the tests' own processes wait for. One
# thread per process (as four workers on two cores get anyway); a test that sets its own pools still can.
from flametool.measure.spawn import POOL_THREAD_VARS  # noqa: E402 - imports no numpy: the setting comes first

for _pool in POOL_THREAD_VARS:
    os.environ.setdefault(_pool, "1")


def pytest_collection_finish(session):
    # what collection made (every test module, its imports) lives as long as the worker: out of the collector's
    # reach, each full collection walks only what the tests make
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    from flametool.measure import machine

    if machine.cuda_device_count():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def run_cli(*args: str, cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run flametool the way a user does, in its own process."""
    return subprocess.run([sys.executable, "-m", "flametool", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


@pytest.fixture(scope="session")
def cli():
    if not shutil.which("py-spy"):
        pytest.fail("py-spy must be installed for the tests (pip install py-spy)")
    return run_cli
