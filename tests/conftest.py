import shutil
import subprocess
import sys

import pytest


def pytest_collection_modifyitems(config, items):
    from flametool.measure import envinfo

    if envinfo.cuda_device_count():
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
