"""A case built in the child: its factory loaded (a module, or a user's .py file) and called at a shape, the
(step, sync) it returns and its step.ops checked, its operands fingerprinted; and what went wrong told apart:
the machine cannot run the case (CaseUnavailable), or its factory failed (FactoryFailed)."""

from __future__ import annotations

import importlib
import math
import inspect
import operator
import sys
import traceback
from typing import Any, Callable

from ...workload import builtins, cases, workloads
from .. import explain
from ...workload.cases import CaseSpec, FactoryMisfit, Step, Sync, call_factory
from ..protocol import MESSAGE_CAP, JobCase, capped
from ...run.record import Operands
from .preload import imported
from .reporter import Reporter


def load_factory(case: CaseSpec) -> Callable[..., tuple[Step, Sync]]:
    """The case's factory: from its module or its file; a workload's case (case.xp) the factory
    workloads.case_factory makes of FUNC, loaded from there alike."""
    if case.xp:
        return workloads.case_factory(workloads.load(case.factory, case.module, case.file), case.xp)
    if case.module:
        module = importlib.import_module(case.module)
    else:
        assert case.file is not None  # a case without a module has a .py file (cases.parse_case)
        module = cases.import_file(f"flametool_case_{case.factory}", case.file)
    factory = getattr(module, case.factory, None)
    if not callable(factory):
        raise TypeError(f"{case.factory} is not callable")
    return factory



class FactoryFailed(Exception):
    pass



class CaseUnavailable(Exception):
    """The machine cannot run this case (library missing or built for another CUDA, no device, out of
    memory at this shape), or its loop failed and the message was already made (interleaved): the message
    is the whole story."""



# What a case's own code (its factory, its step) raises is that case's failure, said in one line: SystemExit (a
# sys.exit in a step) and KeyboardInterrupt too, since the child ignores SIGINT (procs.tie_to_parent), so one here
# is the case's own raise. Uncaught, they ended the process with "exited with code 0 before reporting (it wrote
# nothing to its log)" or "killed by SIGINT", naming neither the exception nor the step.
CASE_FAULTS = (Exception, SystemExit, KeyboardInterrupt)


def set_up(factory: Callable, shape: list[int], dtype: str, device: str) -> tuple[Step, Sync]:
    try:
        made = call_factory(factory, shape, dtype, device)
    except FactoryMisfit as exc:
        raise FactoryFailed(str(exc)) from exc
    except (workloads.WorkloadFailed, workloads.WorkloadMisfit) as exc:
        # a library fn does not port to, or FUNC returning what is not a workload: its own line says it all
        # (out of memory and the installation's faults are said as for any case)
        cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
        raise CaseUnavailable(explain.known_fault(cause, shape, dtype, device) or str(exc)) from exc
    except CASE_FAULTS as exc:
        known = explain.known_fault(exc, shape, dtype, device)
        if known:
            raise CaseUnavailable(known) from exc
        raise FactoryFailed(describe(exc)) from exc
    if not (isinstance(made, tuple) and len(made) == 2 and all(callable(f) for f in made)):
        raise FactoryFailed(misfit(made))
    check_ops(made[0])
    check_step(made[0])
    return made


def misfit(made: object) -> str:
    """What a factory returned that is not a (step, sync) pair of callables, said as what is wrong with it: a pair
    whose sync is None was told 'returned tuple', though it did return a pair."""
    expected = "expected a (step, sync) pair of callables"
    if isinstance(made, tuple) and len(made) == 2:
        wrong = [f"{which} is {type(f).__name__}" for which, f in zip(("step", "sync"), made) if not callable(f)]
        hint = (" (a step with nothing to wait for returns `lambda: None` as its sync)"
                if made[1] is None and callable(made[0]) else "")
        return f"returned (step, sync) whose {' and whose '.join(wrong)}, not callable: {expected}{hint}"
    if isinstance(made, tuple):
        return f"returned a tuple of {len(made)}, {expected}"
    return f"returned {type(made).__name__}, {expected}"


DEVICE_CLOCKS = ("wall",)  # step.device_clock, when set: the wall time to its sync (left out: CUDA events)


def check_step(step: Step) -> None:
    """step.device_clock, when set, is one flametool knows; and step is a function that does its work when called,
    not a generator function (calling one makes a generator and runs none of its body: timed, a no-op)."""
    clock = getattr(step, "device_clock", None)
    if clock is not None and clock not in DEVICE_CLOCKS:
        shown = repr(clock) if len(repr(clock)) <= 40 else repr(clock)[:37] + "..."
        raise FactoryFailed(f"step.device_clock is {shown}: it must be 'wall' (the wall time to the step's sync, for "
                            "a library whose streams CUDA events do not see) or left out")
    if inspect.isgeneratorfunction(step) or inspect.isasyncgenfunction(step) or inspect.iscoroutinefunction(step):
        raise FactoryFailed("step is a generator (or async) function: calling it runs none of its body, so it would be "
                            "timed as a no-op; make step a plain function (no yield, no async)")



# step.ops at most this: a step of a million operations already reads its time per operation in picoseconds
MAX_OPS_PER_STEP = 1_000_000



def check_ops(step: Step) -> None:
    """step.ops, when the factory set it, is a whole number of operations from 1 to MAX_OPS_PER_STEP: every
    figure is divided by it, and a negative, zero, fractional or absurd count makes every figure wrong."""
    ops = getattr(step, "ops", 1)
    try:
        whole = None if isinstance(ops, bool) else operator.index(ops)  # an int, or numpy's
    except TypeError:
        whole = None
    if whole is None or not 1 <= whole <= MAX_OPS_PER_STEP:
        shown = repr(ops) if len(repr(ops)) <= 40 else repr(ops)[:37] + "..."
        raise FactoryFailed(f"step.ops is {shown}: it must be a positive integer (the operations one call of "
                            f"step launches), at most {MAX_OPS_PER_STEP:,}")



# An operand fingerprint hashes at most this many elements of each array (every s-th one beyond), so that the
# seed's 1.6-billion-element a costs a copy of megabytes, not gigabytes, off the device.
FINGERPRINT_ELEMENTS = 1 << 22



def host_sample(array: Any) -> tuple[str, list[int], bytes, int]:
    """(dtype, shape, bytes of every s-th element, s) of a numpy, CuPy or PyTorch array: its raw bytes, read
    back from the device; torch's bfloat16, which numpy has no type for, as its 16-bit patterns."""
    shape = [int(d) for d in array.shape]
    size = math.prod(shape)
    stride = max(1, math.ceil(size / FINGERPRINT_ELEMENTS))
    if type(array).__module__.startswith("torch"):
        import torch

        flat = array.detach().reshape(-1)[::stride]
        dtype = str(array.dtype).removeprefix("torch.")
        if array.dtype == torch.bfloat16:
            flat = flat.view(torch.int16)
        host = flat.cpu().contiguous().numpy()
    elif type(array).__module__.startswith("cupy") and array.flags.c_contiguous:
        dtype = str(array.dtype)
        host = _cupy_strided_get(array, stride)
    else:
        flat = array.reshape(-1)[::stride]
        dtype = str(array.dtype)
        host = flat.get() if hasattr(flat, "get") else flat
    import numpy as np

    return dtype, shape, np.ascontiguousarray(host).tobytes(), stride



def _cupy_strided_get(array: Any, stride: int) -> Any:
    """Every stride-th element of a C-contiguous cupy array, on the host: the bytes ``array.reshape(-1)[::stride]
    .get()`` reads, by one strided copy (cudaMemcpy2D) instead of cupy's copy kernel, which a process compiles
    first (0.45 s of the first process's set-up at the seed's shape on the H200 host, where nothing else waits)."""
    import cupy as cp
    import numpy as np

    size, item = int(array.size), int(array.itemsize)
    count = -(-size // stride)
    host = np.empty(count, dtype=array.dtype)
    if count:
        cp.cuda.runtime.deviceSynchronize()  # written on a stream of the case's own: done
        cp.cuda.runtime.memcpy2D(host.ctypes.data, item, array.data.ptr, stride * item, item, count,
                                 cp.cuda.runtime.memcpyDeviceToHost)
    return host


def fingerprint(step: Step, product: list[int] | None = None) -> Operands | None:
    """The step's operands (``step.operands``, the arrays it reads) as a short hash of their dtypes, shapes and
    bytes, with how they were made (``step.operands_made``) and how much was hashed, for the product of shape
    `product`; None without operands."""
    arrays = getattr(step, "operands", None)
    if not isinstance(arrays, (tuple, list)) or not arrays:
        return None
    import hashlib

    h = hashlib.blake2b(digest_size=6)
    strides = []
    for array in arrays:
        dtype, shape, data, stride = host_sample(array)
        h.update(f"{dtype}{shape}{stride};".encode())
        h.update(data)
        strides.append(stride)
    hashed = ("every byte" if all(s == 1 for s in strides)
              else "of each, one element in " + ", ".join(f"{s:,}" for s in strides))
    made = getattr(step, "operands_made", None)
    return Operands(shape=list(product or []), fingerprint=h.hexdigest(),
                    made=made if isinstance(made, str) else "step.operands of the case",
                    hashed=f"blake2b of {len(arrays)} operands, {hashed}")



def read_again(made: dict[str, tuple[Step, Sync]], operands: dict[str, Operands], errors: dict[str, str]) -> None:
    """Each case's operands hashed again after its timed loops: where the bytes differ from those hashed at
    set-up, `after` says so (the step writes what it reads: `a += b`, `w -= lr * g`). Its calls then ran on
    values that moved from loop to loop, and each library's on others than the rest (their loops differ in
    number), which can move their speed (values grown to inf, or shrunk to subnormals: slow on a CPU)."""
    for label, before in operands.items():
        if label in errors or label not in made:
            continue
        try:
            now = fingerprint(made[label][0], before.shape)
        except Exception:  # noqa: BLE001 -- hashed once at set-up; a second read that fails leaves it unflagged
            continue
        if now is not None and now.fingerprint != before.fingerprint:
            before.after = now.fingerprint


def describe(exc: BaseException) -> str:
    # out of memory and faults of the installation are explained by explain.known_fault, before this
    first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
    said = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    if len(said) > MESSAGE_CAP:  # the whole of it in the log (the child's stderr), its start on the parent's line
        try:
            print(f"flametool: the whole message: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        except OSError:  # the log cannot be written (a full disk): the capped line still goes
            pass
    return capped(said)



def build(todo: list[JobCase], shape: list[int], device: str, report: Reporter,
          errors: dict[str, str], operands: dict[str, Operands] | None = None) -> dict[str, tuple[Step, Sync]]:
    """Every case's (step, sync) at `shape`; a case that cannot be built is left out, its reason in `errors`.
    With `operands`, each built case's operand fingerprint (when its step has operands) goes there by label."""
    made: dict[str, tuple[Step, Sync]] = {}
    for c in todo:
        if c.label in errors:
            continue
        report.phase("setup", shape=shape, label=c.label)
        imported(builtins.builtin_libraries([c.case]))
        try:
            made[c.label] = set_up(load_factory(c.case), shape, c.dtype, device)
            if operands is not None:
                try:
                    found = fingerprint(made[c.label][0], shape)
                except Exception:  # noqa: BLE001 -- operands it cannot read leave the case unflagged, not failed
                    print(f"flametool: {c.label}: step.operands could not be hashed:", file=sys.stderr)
                    traceback.print_exc()
                    found = None
                if found:
                    operands[c.label] = found
        except CaseUnavailable as exc:
            errors[c.label] = str(exc)
        except FactoryFailed as exc:
            errors[c.label] = f"factory {c.case.factory} failed: {exc}"
        except Exception as exc:  # noqa: BLE001 -- a case's file that does not load is that case's failure
            traceback.print_exc()
            errors[c.label] = explain.known_fault(exc, shape, c.dtype, device) or describe(exc)
    return made
