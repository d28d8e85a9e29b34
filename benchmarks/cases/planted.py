"""Cases with a planted cost of a known length: the library's matmul plus a busy-wait in a function with a
name nothing else has. numpy on the CPU, CuPy on a CUDA device. The wait spins on the clock (CPU time on
this thread, which is what py-spy samples and the timed loop measures) and its length does not depend on
the process's speed, so it must read the same in every process."""

import time


def planted_wait_5us() -> None:
    end = time.perf_counter() + 5e-6
    while time.perf_counter() < end:
        pass


def planted_wait_20us() -> None:
    end = time.perf_counter() + 20e-6
    while time.perf_counter() < end:
        pass


def _matmul(m, k, n, dtype, device):
    if device == "cpu":
        import numpy as np

        rng = np.random.default_rng(0)
        a, b = rng.random((m, k)).astype(dtype), rng.random((k, n)).astype(dtype)
        out = np.empty((m, n), dtype=dtype)
        return np.matmul, a, b, out, (lambda: None)
    import cupy as cp

    cp.cuda.Device(int(device.partition(":")[2] or 0)).use()
    a = cp.random.rand(m, k, dtype=cp.float32).astype(dtype)
    b = cp.random.rand(k, n, dtype=cp.float32).astype(dtype)
    out = cp.empty((m, n), dtype=dtype)
    return cp.matmul, a, b, out, cp.cuda.runtime.deviceSynchronize


def plain(m, k, n, dtype, device):
    matmul, a, b, out, sync = _matmul(m, k, n, dtype, device)

    def step():
        matmul(a, b, out=out)

    return step, sync


def _planted(wait):
    """A factory: the library's matmul, then `wait` (its own frame, of a name nothing else has)."""

    def factory(m, k, n, dtype, device):
        matmul, a, b, out, sync = _matmul(m, k, n, dtype, device)

        def step():
            matmul(a, b, out=out)
            wait()

        return step, sync

    return factory


planted_5us = _planted(planted_wait_5us)
planted_20us = _planted(planted_wait_20us)
