"""Workloads: a step written once against the array API, ``FUNC(xp, shape) -> (fn, inputs)``, made into one case
per library of --libs (numpy, cupy, torch, jax, jax-eager), each an ordinary case (cases.py's protocol) from
then on: timed, paired, sampled and counted as a built-in is.

A case of a workload. `xp` is the library's array-API namespace (array_api_compat.numpy / .cupy / .torch;
jax.numpy, which implements the standard itself); FUNC is called with it at the run's shape; the inputs, NumPy
arrays, are moved to the library's device from the same bytes (a floating input cast on the host to the case's
--dtype where NumPy has it, bfloat16 rounded by the library from float32); the step is ``fn(*arrays)``, called
through functools.partial (no frame of its own), so that fn's frame is the step's: fn's file and lines are the
step's lines in every case's stacks and counts (`_step`; JAX's step is a function around fn, which keeps the
result its sync blocks on); the sync is the library's own (numpy none; torch cuda.synchronize; cupy its current
stream's synchronize; jax block_until_ready on the last result). ``jax`` runs ``jax.jit(fn)`` (traced and
compiled in set-up: its samples show jit's dispatch, not fn's lines), ``jax-eager`` fn op by op.

How a case travels. Its CaseSpec names FUNC as a case names its factory (the built-ins by ``module`` =
BUILTIN_MODULE, a user's by ``file``), with ``xp`` the label above; the child (and another --env interpreter)
loads FUNC from there and calls `case_factory(FUNC, xp)` to get the factory. The parent checks the workload
before anything starts (`parse`, `check`): a FUNC of the wrong signature, one that does not return (fn, inputs)
or whose inputs are not NumPy arrays, a library that is not installed, each one line (exit 2). A library fn
does not port to (an attribute its xp lacks, an in-place update JAX refuses) fails that library's case alone, in
one line naming the library and the line of fn (WorkloadFailed); the other libraries' cases run on."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import FlametoolError
from . import builtin_workloads, libraries
from .cases import CaseSpec, Step, Sync, import_file, user_case

BUILTIN_MODULE = "flametool.workload.builtin_workloads"
# what a workload's case runs it on (the case's label), and the library it imports
LIBRARY = {"numpy": "numpy", "cupy": "cupy", "torch": "torch", "jax": "jax", "jax-eager": "jax"}
NEEDS_CUDA = {"cupy"}
COMPAT = "array_api_compat"  # the array-API namespaces of numpy, cupy and torch
INSTALL = "pip install 'flametool[workloads]'"

Func = Callable[[Any, tuple], Any]


class WorkloadMisfit(ValueError):
    """FUNC's signature or what it returned is not a workload's."""


class WorkloadFailed(Exception):
    """fn failed for one library (not portable to it): the message names the library and fn's line."""


@dataclass(frozen=True)
class Workload:
    """A workload as --workload names it, checked: where FUNC is, its default shape and what it does."""

    name: str  # run.json's op and the report's: mlp, or w.py:FUNC
    func: str
    module: str | None = None
    file: str | None = None
    does: str = ""
    shape: tuple[int, ...] | None = None  # the default shape on this device (None: --shape is needed)
    ladder: tuple[tuple[int, ...], ...] | None = None  # the sweep's default sizes on this device

    def specs(self, xps: list[str]) -> list[CaseSpec]:
        return [CaseSpec(label=xp, factory=self.func, module=self.module, file=self.file, xp=xp) for xp in xps]

    def sizes(self) -> list[list[int]]:
        """The sweep's default sizes: the built-in's ladder, else the default shape with its first figure from a
        quarter of it to 16 times, doubling."""
        if self.ladder:
            return [list(s) for s in self.ladder]
        if self.shape is None:
            raise FlametoolError(f"--workload {self.name}: FUNC's shape has no default; give --sizes")
        first, rest = self.shape[0], list(self.shape[1:])
        return [[n, *rest] for n in sorted({max(1, first * 2**k // 4) for k in range(7)})]


def kind(device: str) -> str:
    return "cpu" if device == "cpu" else "cuda"


def parse(text: str, device: str) -> Workload:
    """--workload NAME (a built-in) or FILE.py:FUNC, checked: the file parses and binds FUNC (cases.user_case),
    FUNC takes (xp, shape), its default shape (the shape parameter's default) positive integers."""
    row = builtin_workloads.WORKLOADS.get(text)
    if row is not None:
        return Workload(text, text, module=BUILTIN_MODULE, does=row.does, shape=row.shape[kind(device)],
                        ladder=row.ladder[kind(device)])
    if ":" not in text:
        raise FlametoolError(f"--workload {text!r}: expected FILE.py:FUNC or a built-in workload: "
                             + ", ".join(builtin_workloads.WORKLOADS))
    try:
        spec = user_case(text)
    except FlametoolError as exc:
        raise FlametoolError(str(exc).replace("--case", "--workload", 1).replace("FACTORY", "FUNC")) from None
    func = load(spec.factory, None, spec.file)
    # named as every later message names it (the file's name, not the path given): 'has no default' did, and a
    # bad default named the whole path
    name = f"{Path(spec.file or '').name}:{spec.factory}"
    return Workload(name, spec.factory, file=spec.file, does=(inspect.getdoc(func) or "").split("\n")[0],
                    shape=default_shape(func, name))


def load(func: str, module: str | None, file: str | None) -> Func:
    """FUNC from its module or its file (imported as the child imports a case's file)."""
    if module:
        found = getattr(importlib.import_module(module), func, None)
    else:
        assert file is not None
        try:
            loaded = import_file(f"flametool_workload_{func}", file)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 -- the file's own fault (sys.exit too), in one line
            raise FlametoolError(f"--workload {file}:{func}: importing {file} raised {_one_line(exc)}") from None
        finally:
            sys.path.remove(os.path.dirname(file))
        found = getattr(loaded, func, None)
    if not callable(found):
        raise FlametoolError(f"--workload {file or module}:{func}: {func} is not callable")
    return found


def default_shape(func: Func, text: str) -> tuple[int, ...] | None:
    """FUNC's shape default (``def FUNC(xp, shape=(256, 1024))``), None without one; a FUNC that cannot be called
    as FUNC(xp, shape), or a default that is not a tuple of positive integers: FlametoolError. `text`: the
    workload as the messages name it (Workload.name)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    star = any(p.kind is p.VAR_POSITIONAL for p in params)
    if len(required) > 2 or any(p.kind is p.KEYWORD_ONLY for p in required) or (len(positional) < 2 and not star):
        # the signature as written (its `*` and defaults): the names alone read as the call it cannot take
        raise FlametoolError(f"--workload {text}: {func.__name__}{inspect.signature(func)} cannot be called as "
                             f"{func.__name__}(xp, shape); a workload is FUNC(xp, shape) -> (fn, inputs)")
    if len(positional) < 2 or positional[1].default is positional[1].empty:
        return None
    given = positional[1].default
    if isinstance(given, int) and not isinstance(given, bool) and given > 0:
        # `shape=16`: one figure, not a shape; it read 'the default shape 16 is not positive integers'
        raise FlametoolError(f"--workload {text}: the default shape {given!r} is a number, not a shape; a shape is "
                             f"a tuple of positive integers: shape=({given},)")
    if not (isinstance(given, (tuple, list)) and given
            and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in given)):
        raise FlametoolError(f"--workload {text}: the default shape {given!r} is not a tuple of positive integers "
                             "(shape=(256, 1024))")
    return tuple(given)


def checked(made: object, where: str) -> tuple[Callable[..., Any], list[Any]]:
    """(fn, inputs) of what FUNC returned, checked: a callable and a list or tuple of NumPy arrays."""
    import numpy as np

    if not (isinstance(made, tuple) and len(made) == 2):
        got = f"a tuple of {len(made)}" if isinstance(made, tuple) else type(made).__name__
        raise WorkloadMisfit(f"{where} returned {got}; a workload returns (fn, inputs)")
    fn, inputs = made
    if not callable(fn):
        raise WorkloadMisfit(f"{where} returned ({type(fn).__name__}, ...): fn must be callable, the step fn(*inputs)")
    if not isinstance(inputs, (list, tuple)):
        raise WorkloadMisfit(f"{where} returned (fn, {type(inputs).__name__}): inputs must be a list of NumPy arrays")
    for i, x in enumerate(inputs):
        if not isinstance(x, np.ndarray):
            raise WorkloadMisfit(f"{where}: inputs[{i}] is {type(x).__module__}.{type(x).__qualname__}, not a NumPy "
                                 "array (flametool moves NumPy arrays to each library's device)")
    try:  # fn's signature against the call each step makes, here, not in every library's set-up
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or extension with no signature: its call says
        return fn, list(inputs)
    try:
        signature.bind(*inputs)
    except TypeError as exc:
        name = getattr(fn, "__name__", "fn")
        raise WorkloadMisfit(f"{where} returned fn {name}{signature}, which cannot be called with the "
                             f"{len(inputs)} input{'' if len(inputs) == 1 else 's'} returned ({exc}); each step calls "
                             "fn(*inputs)") from None
    return fn, list(inputs)


def check(workload: Workload, shape: list[int]) -> None:
    """FUNC called once here, with numpy's namespace, at `shape` (before anything starts): what it returns
    checked (checked). fn itself is not called: whether it runs is each library's case's to say."""
    func = load(workload.func, workload.module, workload.file)
    xp: Any
    try:
        import array_api_compat.numpy as xp  # type: ignore[import-not-found,unused-ignore,no-redef]
    except ImportError:
        import numpy as xp  # type: ignore[no-redef,unused-ignore]
    where = f"--workload {workload.name}: {workload.func}(xp, {tuple(shape)})"
    try:
        made = func(xp, tuple(shape))
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 -- FUNC's own fault (sys.exit too:
        # it ended flametool silently with FUNC's code), in one line with its line; run in a process of its own
        # (measure/workcheck.py), where a KeyboardInterrupt is FUNC's own raise, not a Ctrl-C
        raise FlametoolError(f"{where} raised {_one_line(exc)}{_at(exc, getattr(func, '__code__', None))}") from None
    try:
        checked(made, where)
    except WorkloadMisfit as exc:
        raise FlametoolError(str(exc)) from None


def check_libraries(xps: list[str]) -> None:
    """Each library of --libs, and array-api-compat where one needs it, installed in this interpreter (looked up,
    not imported)."""
    for xp in xps:
        if xp not in LIBRARY:
            raise FlametoolError(f"--libs {xp}: a workload runs on " + ", ".join(LIBRARY))
    for xp in xps:
        if importlib.util.find_spec(LIBRARY[xp]) is None:
            raise FlametoolError(f"--libs {xp}: {LIBRARY[xp]} is not installed (leave it out of --libs, or install it)")
    if any(LIBRARY[xp] != "jax" for xp in xps) and importlib.util.find_spec(COMPAT) is None:
        raise FlametoolError(f"--workload: the array-API namespaces of numpy, cupy and torch come from "
                             f"array-api-compat, which is not installed: {INSTALL}")


def shape_text(text: str, option: str, rank: int | None) -> list[int]:
    """--shape of a workload: positive integers, as many as its default shape has."""
    try:
        shape = [int(p) for p in text.split(",")]
    except ValueError:
        shape = []
    if not shape or any(x <= 0 for x in shape) or (rank is not None and len(shape) != rank):
        raise FlametoolError(f"{option} {text!r}: expected " + (f"{rank} positive integers" if rank else
                             "positive integers") + " (the workload's shape)")
    return shape


# --- in the child: a case of one library --------------------------------------------------------------------

def case_factory(func: Func, xp: str) -> Callable[[tuple, str, str], tuple[Step, Sync]]:
    """The case of `func` for library `xp`: FACTORY(shape, dtype, device) -> (step, sync)."""

    def factory(shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
        namespace, place, sync = _library(xp, dtype, device)
        try:
            made = func(namespace, tuple(shape))
        except Exception as exc:
            raise WorkloadFailed(f"{xp}: {func.__name__}(xp, shape) raised {_one_line(exc)}"
                                 f"{_at(exc, func.__code__)}") from exc
        fn, inputs = checked(made, f"{func.__name__}(xp, {tuple(shape)})")
        arrays = tuple(_placed(xp, place, _cast(x, dtype), i) for i, x in enumerate(inputs))
        last: list[Any] = [None]
        run = _jit(fn) if xp == "jax" else fn
        step = _step(run, arrays, last, keeps_result=LIBRARY[xp] == "jax")
        try:  # once here: jax traces and compiles, and a library fn does not port to fails now, in set-up
            got = step()
            if LIBRARY[xp] != "jax":
                last[0] = got
            sync(last)
        except Exception as exc:
            raise WorkloadFailed(f"{xp} cannot run {getattr(fn, '__name__', 'fn')}: {_one_line(exc)}"
                                 f"{_at(exc, getattr(fn, '__code__', None) or func.__code__)}") from exc
        setattr(step, "operands", arrays)
        setattr(step, "operands_made", f"the inputs of the workload {func.__name__}(xp, shape), floating ones as "
                                       f"{dtype}")
        setattr(step, "last", last)
        if LIBRARY[xp] == "jax":  # JAX's streams are its own: timed to the sync on a GPU (cases.py)
            libraries.wall_clock_on(step, device)
        return step, lambda: sync(last)

    factory.__name__ = factory.__qualname__ = f"{xp}_{func.__name__}"
    return factory


def _step(fn: Callable[..., Any], arrays: tuple, last: list[Any], keeps_result: bool) -> Step:
    """fn with its arrays, as the loops call it: step().

    A Python fn is called through functools.partial, which adds no frame of its own: the frame the loops call is
    fn's, so fn's lines are the step's own lines in every library's case (the sampled step() lines, and the
    lines the counted loop counts per line, which are those of the code `step.__code__` names), and the lines
    views align the libraries by file:line. JAX's sync blocks on the last result (`keeps_result`), which only a
    function around fn can keep: its step is that function (and jitted, fn's lines are not run by a step)."""
    if not keeps_result and inspect.isfunction(fn):
        bound = functools.partial(fn, *arrays)
        setattr(bound, "__code__", fn.__code__)  # the code of the frame the loops' call runs (counting.py reads it)
        return bound

    def step() -> None:
        last[0] = fn(*arrays)

    return step


def _placed(xp: str, place: Callable[[Any], Any], x: Any, i: int) -> Any:
    """inputs[i] where library `xp` runs; one it cannot take (a dtype it has not, or keeps in fewer bits) fails
    its case alone, in one line naming the input (WorkloadFailed)."""
    try:
        return place(x)
    except Exception as exc:
        raise WorkloadFailed(f"{xp} cannot take inputs[{i}] ({x.dtype}, shape {tuple(x.shape)}): "
                             f"{_one_line(exc)}") from exc


def _jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    import jax

    return jax.jit(fn)


def _cast(x: Any, dtype: str) -> Any:
    """A floating input in `dtype` where NumPy has it (float32 for bfloat16, which the library rounds)."""
    from .values import host_dtype

    return x.astype(host_dtype(dtype), copy=True) if x.dtype.kind == "f" else x.copy()


def _library(xp: str, dtype: str, device: str) -> tuple[Any, Callable[[Any], Any], Callable[[list[Any]], None]]:
    """(namespace, place: a host array onto the device in `dtype`, sync(last)) of library `xp`."""
    def nothing(last: list[Any]) -> None:
        return None

    if xp == "numpy":
        if device != "cpu":
            raise ValueError("numpy runs on the CPU only; use --device cpu (or leave numpy out of --libs)")
        if dtype == "bfloat16":
            raise ValueError("numpy has no bfloat16")
        import array_api_compat.numpy as npx  # type: ignore[import-not-found,unused-ignore]

        return npx, lambda x: x, nothing
    if xp == "torch":
        import array_api_compat.torch as tx  # type: ignore[import-not-found,unused-ignore]
        import torch

        dev, torch_sync = libraries._torch_device(device)
        dt = getattr(torch, dtype)
        return (tx, lambda x: torch.from_numpy(x).to(device=dev, copy=True, **({"dtype": dt} if x.dtype.kind == "f"
                                                                                   else {})),
                lambda last: torch_sync())
    if xp == "cupy":
        import array_api_compat.cupy as cx  # type: ignore[import-not-found,unused-ignore]
        import cupy as cp

        libraries._cupy_device(device, dtype)
        return cx, libraries.to_cupy, lambda last: cp.cuda.get_current_stream().synchronize()
    import jax
    import jax.numpy as jnp

    dev = libraries.jax_device(device)
    return jnp, lambda x: libraries.jax_put(x, dev, dtype), lambda last: jax.block_until_ready(last[0])


def _one_line(exc: BaseException) -> str:
    first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _at(exc: BaseException, code: Any) -> str:
    """' at FILE:LINE (the line's text)': the deepest frame of the traceback in the file of `code` (fn's or
    FUNC's code object: a helper of the same file counts; FUNC's for an fn with no code of its own, a
    functools.partial of a helper or an object's __call__, whose failure named no line); '' where none is."""
    frames = traceback.extract_tb(exc.__traceback__)
    hits = [f for f in frames if code is not None and f.filename == code.co_filename]
    if not hits:
        return ""
    f = hits[-1]
    text = (f.line or "").strip()
    return f" at {f.filename}:{f.lineno}" + (f" ({text if len(text) <= 80 else text[:77] + '...'})" if text else "")
