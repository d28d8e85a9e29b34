"""User cases that fail the way machines do: out of GPU memory, a slow set-up to interrupt, a message
full of markup, a case that cannot share a process with another library."""

import sys
import time


class OutOfMemoryError(RuntimeError):
    """Named as torch.cuda.OutOfMemoryError is; its message is the one torch writes."""


def oom_case(m, k, n, dtype, device):
    raise OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 139.81 GiB of which "
        "1.23 GiB is free. Including non-PyTorch memory, this process has 138.57 GiB memory in use. Of the "
        "allocated memory 137.50 GiB is allocated by PyTorch, and 12.00 MiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")


def slow_setup_case(m, k, n, dtype, device):
    print("slow_setup_case: setting up", flush=True)
    time.sleep(120)
    raise AssertionError("the test should have stopped this case")


def _count_build() -> int:
    """This build's number, counted in the file $FLAMETOOL_TEST_BUILDS names."""
    import os
    from pathlib import Path

    builds = Path(os.environ["FLAMETOOL_TEST_BUILDS"])
    count = int(builds.read_text() or 0) + 1 if builds.exists() else 1
    builds.write_text(str(count))
    return count


def _summing(m):
    data = list(range(m))

    def step():
        sum(data)

    return step, lambda: None


def slow_second_build(m, k, n, dtype, device):
    """Builds at once the first time, then sets up slowly (to be interrupted): with --processes 1 the first
    build is the timing process, the second the case's profiled process. Counts its builds in the file
    $FLAMETOOL_TEST_BUILDS names."""
    if _count_build() > 1:
        print("slow_second_build: setting up slowly", flush=True)
        time.sleep(120)
        raise AssertionError("the test should have stopped this case")
    return _summing(m)


def counted_build(m, k, n, dtype, device):
    """Builds at once every time, counting its builds in the file $FLAMETOOL_TEST_BUILDS names: with --processes 1
    the second is its profiled process's (given its job ahead where there are spares)."""
    _count_build()
    return _summing(m)


def markup_case(m, k, n, dtype, device):
    raise ValueError("[/bold] <b>bold</b> [red]unclosed \"quoted\" 'x'")


# what claims_the_process leaves in sys.modules: the mark of a library that has taken its process for itself
CLAIM = "fault_cases_claimed_process"


def claims_the_process(m, k, n, dtype, device):
    """Claims its process as a library that takes a device or a thread pool for itself does (torch, say; the mark
    is a module in sys.modules), and works wherever it is built. Nothing in flametool's child makes the mark, so
    the two cases below fail exactly when this one was built before them in the same process."""
    import types

    sys.modules.setdefault(CLAIM, types.ModuleType(CLAIM))
    data = list(range(m))

    def step():
        sum(data)

    return step, lambda: None


def not_beside_a_claim(m, k, n, dtype, device):
    """Refuses to be built in a process that claims_the_process has claimed; alone it works."""
    if CLAIM in sys.modules:
        raise RuntimeError("another case has claimed this process")
    data = list(range(m))

    def step():
        sum(data)

    return step, lambda: None


def exits_beside_a_claim(m, k, n, dtype, device):
    """Ends its whole process where claims_the_process has claimed it (as a library that aborts on a conflict
    does): the process it shares dies before reporting anything. Alone it works."""
    if CLAIM in sys.modules:
        import os

        os._exit(3)
    data = list(range(m))

    def step():
        sum(data)

    return step, lambda: None


def ops_case(m, k, n, dtype, device):
    """A step whose `ops` attribute is whatever $FLAMETOOL_TEST_OPS holds, read as a Python literal
    ('-1', '0', '10**30', 'float("nan")', '"many"')."""
    import os

    data = list(range(m))

    def step():
        sum(data)

    step.ops = eval(os.environ["FLAMETOOL_TEST_OPS"])  # noqa: S307 - the test's own value
    return step, lambda: None


def wipes_the_run(m, k, n, dtype, device):
    """Cleans up after itself too eagerly: removes every file in the folder $FLAMETOOL_TEST_WIPE names (the
    run directory), and with $FLAMETOOL_TEST_WIPE_DIR=1 the folder itself, when it is built."""
    import os
    import shutil
    from pathlib import Path

    run = Path(os.environ["FLAMETOOL_TEST_WIPE"])
    if os.environ.get("FLAMETOOL_TEST_WIPE_DIR") == "1":
        shutil.rmtree(run, ignore_errors=True)
    else:
        for f in run.iterdir():
            if f.is_file():
                f.unlink()
    data = list(range(m))

    def step():
        sum(data)

    return step, lambda: None
