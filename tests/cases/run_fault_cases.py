"""User cases for tests/test_run_faults.py: cases that start processes of their own, write to the message pipe
that is not theirs, or write much output."""

import os
import subprocess
import sys
import time


def _matmul(m, k, n, dtype):
    import numpy as np

    a = np.ones((m, k), dtype=dtype)
    b = np.ones((k, n), dtype=dtype)
    out = np.empty((m, n), dtype=dtype)

    def step():
        np.matmul(a, b, out=out)

    return step, lambda: None


def spawning_case(m, k, n, dtype, device):
    """Starts a process that would run for 13 minutes, then measures as usual."""
    subprocess.Popen(["sleep", "777"])
    return _matmul(m, k, n, dtype)


def spawning_slow_case(m, k, n, dtype, device):
    """Starts a process, then takes its time setting up (a test stops the run meanwhile)."""
    subprocess.Popen(["sleep", "777"])
    print("spawning_slow_case: setting up", flush=True)
    time.sleep(120)
    raise AssertionError("the test should have stopped this case")


def _pipes():
    """The pipes this process writes to beyond stdin/stdout/stderr: the parent's message pipe, wherever it is."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2:
            continue
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:") and os.get_blocking(fd) is not None:
            flags = __import__("fcntl").fcntl(fd, __import__("fcntl").F_GETFL)
            if flags & os.O_ACCMODE == os.O_WRONLY:
                found.append(fd)
    return found


JUNK = [b"not json at all\n", b"{}\n", b"[1, 2, 3]\n", b"\xff\xfe binary\n", b'{"event": "phase"}\n',
        b'{"event": "result", "result": 5}\n', b'{"event": "sample_ready", "pid": 1}\n']


def junk_on_the_named_fd(m, k, n, dtype, device):
    """Writes non-JSON to the descriptor named on the child's command line (the message pipe, as started)."""
    fd = int(sys.argv[1])
    for junk in JUNK:
        os.write(fd, junk)
    return _matmul(m, k, n, dtype)


def junk_on_every_pipe(m, k, n, dtype, device):
    """Finds the message pipe wherever it was moved and writes non-JSON to it, the last line left open."""
    fds = _pipes()
    assert fds, "no pipe found"
    for fd in fds:
        for junk in JUNK:
            os.write(fd, junk)
        os.write(fd, b"no newline after this")  # the next message starts on this line
    step, sync = _matmul(m, k, n, dtype)

    def noisy_step():
        step()

    return noisy_step, sync


def loud_case(m, k, n, dtype, device):
    """Prints 1 MB while setting up (its output goes to <case>.log in the run directory)."""
    for _ in range(1024):
        print("x" * 1023, flush=True)
    return _matmul(m, k, n, dtype)


def many_functions_case(m, k, n, dtype, device):
    """A step through 400 Python functions: its cProfile file is tens of KB."""
    namespace = {}
    for i in range(400):
        exec(f"def f{i}(x):\n    return x", namespace)
    functions = [namespace[f"f{i}"] for i in range(400)]

    def step():
        for f in functions:
            f(None)

    return step, lambda: None


def dying_case(m, k, n, dtype, device):
    """Dies (os._exit(1), as a sitecustomize or the OOM killer would end it) in the processes whose number, counted
    across the run's processes that build it, is in FAULT_DIE_AT (e.g. "2,4"); FAULT_COUNT_DIR holds the count."""
    folder = os.environ["FAULT_COUNT_DIR"]
    n_built = 1
    while True:  # claim the next number: creating a file is atomic
        try:
            os.close(os.open(os.path.join(folder, str(n_built)), os.O_CREAT | os.O_EXCL))
            break
        except FileExistsError:
            n_built += 1
    if str(n_built) in os.environ.get("FAULT_DIE_AT", "").split(","):
        os._exit(1)
    return _matmul(m, k, n, dtype)


def huge_message_case(m, k, n, dtype, device):
    """Raises with a 5 MB message (one line)."""
    raise ValueError("x" * 5_000_000 + " the end")


def bogus_clock_case(m, k, n, dtype, device):
    """A step whose device_clock is no clock flametool knows."""
    step, sync = _matmul(m, k, n, dtype)
    step.device_clock = "bogus"
    return step, sync


def generator_case(m, k, n, dtype, device):
    """A step written as a generator: calling it runs none of its body."""
    def step():
        yield 1

    return step, lambda: None


def fast_clock_case(m, k, n, dtype, device):
    """Makes time.perf_counter read 1000x (a case's own clock patched for its own reasons)."""
    orig = time.perf_counter
    time.perf_counter = lambda: orig() * 1000
    return _matmul(m, k, n, dtype)


def frozen_clock_case(m, k, n, dtype, device):
    """Its step stops the time module's clocks (time.perf_counter and process_time read 0 from then on)."""
    step, sync = _matmul(m, k, n, dtype)

    def frozen():
        step()
        time.perf_counter = time.process_time = lambda: 0.0

    return frozen, sync


def unhooking_case(m, k, n, dtype, device):
    """Its step removes the profiling hook (sys.setprofile(None)) every 50th call."""
    step, sync = _matmul(m, k, n, dtype)
    calls = [0]

    def unhooking():
        step()
        calls[0] += 1
        if calls[0] % 50 == 0:
            sys.setprofile(None)

    return unhooking, sync
