"""Operand values any case can ask for: uniform in [0, 1), the same bytes for a (shape, dtype, seed, stream) on
any host, made in parallel.

The values come in fixed chunks of CHUNK elements; chunk i of stream s (one stream per operand: a is 0, b is 1)
is drawn from its own generator, seeded by ``SeedSequence(seed, spawn_key=(s, i))`` (the same as
``SeedSequence(seed).spawn(...)[s].spawn(...)[i]``), so the bytes depend on the seed, the stream and the position
alone: not on the thread count, and an array's first values are those of any longer one of its stream. numpy's
generators release the GIL while they fill, so the chunks are drawn by one thread per core. On the H200 host
(`benchmarks/values_speed.py`, 2e8 float16 values): one stream of numpy's default generator, then astype, 1.85 s
(the seed's 1.9 billion values: about 17 s); chunks on 16 threads 0.14 s. On the 2-core machine a chunk costs
3.8 s per billion values to draw with SFC64 (PCG64 6.0, Philox 5.0) and 4.8 s to round to float16.
"""

from __future__ import annotations

import math
import os
import signal
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

from .. import procs

# numpy is imported where values are made, not here: the command line reads workload/ (the built-in cases'
# names, for --help) and `flametool --help` must not wait for numpy (issue 42)
if TYPE_CHECKING:
    import numpy as np

CHUNK = 1 << 22  # elements per chunk: 16 MB of float32 scratch per thread
# Apart's process runs this much nicer than the timing process it makes the values for: that one's imports and CUDA
# context, beside it, are what its set-up waits on, and the values have time to spare while they run. On the 2-core
# CPU machine (benchmarks/values_apart.py, 2e8 values beside `import torch`, 5 processes each, twice, 2026-12-04):
# imports done at 1.07-1.10 s against 1.34-1.42 s, values ready at 1.20-1.27 s against 0.99-1.02 s; the later
# of the two 1.20-1.27 s against 1.34-1.42 s. On the H200's 16 cores the values take about 1.3 s and the imports
# longer (benchmarks/startup.py --apart says how much).
NICE = 10


def made(dtype: str, seed: int) -> str:
    """How `uniform` makes its values, in words (run.json's operand record)."""
    return (f"numpy SFC64 float32 uniform in [0, 1), seed {seed}, one generator per {CHUNK:,} values of each "
            f"operand's stream (SeedSequence({seed}).spawn)" + (f", rounded to {dtype}" if dtype != "float32" else ""))


def host_dtype(dtype: str) -> np.dtype:
    """The dtype `uniform` returns for `dtype`: itself where numpy has it, else float32 (bfloat16: the library
    rounds it)."""
    import numpy as np

    return np.dtype(dtype) if dtype in ("float16", "float32", "float64") else np.dtype(np.float32)


def _generator(seed: int, stream: int, chunk: int) -> np.random.Generator:
    # SFC64: the fastest of numpy's bit generators here (benchmarks/values_speed.py)
    import numpy as np

    return np.random.Generator(np.random.SFC64(np.random.SeedSequence(seed, spawn_key=(stream, chunk))))


def uniform(shape: int | tuple[int, ...], dtype: str, seed: int, stream: int = 0,
            threads: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """An array of `shape` (or that many elements) of float32 uniform values in [0, 1), rounded to `dtype`
    where numpy has it (float32 otherwise, see host_dtype), from `stream` (one per operand of a product).
    The same bytes whatever `threads` is. `out`: a flat array of that many elements of host_dtype(dtype) to fill
    (Apart's shared memory) instead of a new one."""
    import numpy as np

    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    count = math.prod(shape)
    if out is None:
        out = np.empty(count, dtype=host_dtype(dtype))
    elif out.shape != (count,) or out.dtype != host_dtype(dtype):
        raise ValueError(f"out: {out.shape} {out.dtype} for {count} values of {host_dtype(dtype)}")
    chunks = math.ceil(count / CHUNK)
    cast = out.dtype != np.float32
    workers = max(1, min(chunks, threads or len(os.sched_getaffinity(0))))

    def fill(worker: int) -> None:
        scratch = np.empty(min(CHUNK, count), dtype=np.float32) if cast else None
        for i in range(worker, chunks, workers):  # a fixed set of chunks per thread: one scratch each
            part = out[i * CHUNK:(i + 1) * CHUNK]
            rng = _generator(seed, stream, i)
            if scratch is None:
                rng.random(out=part, dtype=np.float32)
            else:
                tmp = scratch[:len(part)]
                rng.random(out=tmp, dtype=np.float32)
                np.copyto(part, tmp, casting="same_kind")  # round to nearest, as astype does

    if workers == 1:
        fill(0)
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="flametool-values") as pool:
            for f in [pool.submit(fill, w) for w in range(workers)]:
                f.result()
    return out.reshape(shape)


class Ahead:
    """Values being made in a background thread while the process does something else (imports its
    libraries): `get` waits for them. With `background` False they are made by the first `get`, in the thread
    that asks: values of less than a chunk take milliseconds, and a thread of their own is one more thread in the
    process when its loops begin (a profiled process sampled right after its warm-up counted it, still exiting,
    in 3 runs of 5 on a loaded machine, 2026-12-04)."""

    def __init__(self, make: Callable[[], object], background: bool = True) -> None:
        # numpy imported here, in the thread that asks, as the child imported it before values.py deferred it:
        # the background thread then does not import it while this one imports the case's libraries
        import numpy  # noqa: F401

        self._future: Future = Future()
        self._make: Callable[[], object] | None = None  # made by the first get (not in the background)
        if background:
            threading.Thread(target=self._run, args=(make,), name="flametool-values-ahead", daemon=True).start()
        else:
            self._make = make

    def _run(self, make: Callable[[], object]) -> None:
        try:
            self._future.set_result(make())
        except BaseException as exc:  # noqa: BLE001 -- raised again by get(), in the thread that asked
            self._future.set_exception(exc)

    def get(self) -> object:
        if self._make is not None:
            make, self._make = self._make, None
            self._run(make)
        return self._future.result()


class Apart:
    """Values made in a process of their own, forked for them, into memory this one shares with it; `get` waits
    for them. Made by threads of this process instead (Ahead), their threads need the GIL between chunks, which
    the imports running beside them hold most of the time: on the 2-core CPU machine one thread's 10^8 float16
    values took 0.53-0.59 s alone and 1.11-1.61 s beside a thread importing torch (2026-12-04). A process of their
    own shares no GIL. Forked only from a process with one thread (a fork copies none of the others, whatever
    they hold) and nothing of CUDA's started (the fresh timing process, before its imports: child.entry.begin);
    where it cannot fork, the values are made by Ahead, as before. `specs`: (shape, dtype, seed, stream) each."""

    def __init__(self, specs: list[tuple[tuple[int, ...], str, int, int]]) -> None:
        import mmap

        import numpy as np

        self._specs = specs
        sizes = [math.prod(shape) * host_dtype(dtype).itemsize for shape, dtype, _, _ in specs]
        self._memory = mmap.mmap(-1, max(1, sum(sizes)))  # shared and anonymous: the fork writes what this reads
        try:  # huge pages where the kernel gives them to shared memory (its shmem_enabled): fewer faults and misses
            self._memory.madvise(mmap.MADV_HUGEPAGE)
        except (AttributeError, OSError):
            pass
        self._arrays = []
        offset = 0
        for (shape, dtype, _, _), size in zip(specs, sizes):
            self._arrays.append(np.frombuffer(self._memory, dtype=host_dtype(dtype), count=math.prod(shape),
                                              offset=offset))
            offset += size
        self._read, write = os.pipe()
        parent = os.getpid()
        self._pid = os.fork()
        if self._pid == 0:  # the values' process: fill, say what failed, and end without this one's teardown
            code = 1
            try:
                procs.die_with_parent()  # SIGTERM when the process it makes them for ends first
                if os.getppid() != parent:  # ended before the line above took effect
                    os._exit(1)
                try:
                    os.nice(NICE)  # the imports beside it first: see NICE
                except OSError:  # not allowed here: the values come all the same
                    pass
                # only the pipe back: a message pipe or log held open here would keep the parent's reader from
                # its end-of-file after this process's parent died
                procs.close_inherited(keep=write)
                for (shape, dtype, seed, stream), flat in zip(specs, self._arrays):
                    uniform(shape, dtype, seed, stream, out=flat)
                code = 0
            except BaseException as exc:  # noqa: BLE001 -- said to the process that waits for them
                os.write(write, f"{type(exc).__name__}: {exc}".encode()[:2000])
            finally:
                os._exit(code)
        os.close(write)
        self._result: tuple[np.ndarray, ...] | None = None

    def get(self) -> tuple:
        """The arrays, in the order of `specs`, each in its shape; RuntimeError with the values' process's own
        words when it failed."""
        if self._pid < 0:
            raise RuntimeError("the operand values were discarded")
        if self._result is None:
            _, status = os.waitpid(self._pid, 0)
            said = os.read(self._read, 4096).decode("utf-8", "replace")
            os.close(self._read)
            if os.waitstatus_to_exitcode(status) != 0:
                raise RuntimeError(f"the process making the operand values failed ({said or 'exit status ' + str(status)})")
            self._result = tuple(a.reshape(shape) for a, (shape, _, _, _) in zip(self._arrays, self._specs))
        return self._result

    def discard(self) -> None:
        """Not wanted after all (another shape's values were asked for): its process stopped and reaped, so that it
        makes nothing beside the loops that follow."""
        if self._result is None and self._pid > 0:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:  # ended, not reaped yet
                pass
            os.waitpid(self._pid, 0)
            os.close(self._read)
            self._pid = -1

    @staticmethod
    def can_fork() -> bool:
        """One thread in this process, native ones counted where /proc lists them (a fork copies only the caller's;
        another's lock would stay held in it): numpy's OpenBLAS starts a thread per core at numpy's import unless
        its pool is held to one (--pool-threads, the default 1), so numpy, which Apart imports, is imported first."""
        import numpy  # noqa: F401

        if not hasattr(os, "fork") or threading.active_count() != 1:
            return False
        try:
            return len(os.listdir("/proc/self/task")) == 1
        except OSError:  # no /proc: Python's own count
            return True
