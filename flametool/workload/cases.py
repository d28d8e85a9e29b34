"""Cases: what gets measured. The case protocol, and how a case is found (loading); the built-in cases are in
builtins.py (the table), libraries.py and floors.py (their factories), their operands in inputs.py.

Every case, built-in or the user's ``--case FILE.py:FACTORY``, follows one protocol:
``FACTORY(shape, dtype, device) -> (step, sync)``, `shape` the op's shape (``--op``, ops.py: M,K,N for matmul,
(N,) or (R, C) for the others), as a tuple.  ``step()`` launches one operation on operands made in set-up;
``sync()`` waits until the device is done.  The factory does all set-up (imports, random inputs, device
selection, jit tracing) so that ``step`` holds only the launch.  A factory of five parameters, the older
``FACTORY(m, k, n, dtype, device)``, is still accepted for matmul (``call_factory`` tells them apart by their
signature).  GPU time comes from CUDA events of the library the case imported (see ``child.device_events``);
a step that sets ``step.device_clock = "wall"`` (jax: its streams are its own) is timed to its sync instead.

A step may launch several operations (a CUDA graph of N products): it then says so with an ``ops``
attribute (``step.ops = N``) and every figure is reported per operation.

A step that sets ``step.operands`` (the arrays it reads) gets an operand fingerprint in run.json (a short hash
of their bytes, see ``child.fingerprint``), and the fairness list flags cases of one shape and dtype whose
operands differ (the built-in cases all read the same values: inputs.py).

Loading. A user's case is checked here without running it (`user_case`) and imported by the child from its
file, its factory called as its signature asks (`call_factory`); a built-in is imported from ``flametool.cases``
(`MODULE`, the public module) by the name builtins.py gives it, so ``flametool.cases:jax_matmul`` in a run.json
loads as it always did.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import sys
import tokenize
import types
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import FlametoolError

# The module run.json names for the built-in factories (``flametool.cases:numpy_matmul``): the public name users
# import, an alias of this module (flametool/cases.py), so runs recorded before the cases moved here still load.
MODULE = "flametool.cases"

Step = Callable[[], object]
Sync = Callable[[], object]

DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class CaseSpec:
    """Where the child finds a case's factory: a module (built-in) or a file (user)."""

    label: str
    factory: str
    module: str | None = None
    file: str | None = None
    env: str | None = None  # `compare --env`: the environment whose interpreter runs it (None: flametool's own)
    # a workload's case (workloads.py): the library that runs FUNC (numpy, cupy, torch, jax, jax-eager); `factory`
    # is then FUNC, in `module` or `file`. None: a case factory
    xp: str | None = None

    @property
    def name(self) -> str:
        """The case as --libs or --case names it (cupy), without its environment (cupy@main)."""
        return self.label.removesuffix(f"@{self.env}") if self.env else self.label

    @property
    def own_file(self) -> str | None:
        """The file whose functions are the case's own (own_file)."""
        return own_file(self.file, self.module, self.xp is not None)

    def to_json(self) -> dict:
        data = {"label": self.label, "factory": self.factory, "module": self.module, "file": self.file}
        return data | ({"env": self.env} if self.env is not None else {}) | ({"xp": self.xp} if self.xp else {})


def own_file(file: str | None, module: str | None, workload: bool) -> str | None:
    """The file whose functions are a case's own, as a path the frames' names are (a tail of): a user's case or
    workload, its file; a workload named by its module (the built-ins: flametool.workload.builtin_workloads), that
    module as a path; None for a built-in case (its step, flametool's, is the stacks' root frame). A case's own
    short functions are kept whole in the record of lines (measure/profiling.py), and a workload's fn, which
    flametool's step calls, is its step (analyse/lines.py)."""
    if file:
        return file
    return module.replace(".", "/") + ".py" if workload and module else None


def import_file(name: str, file: str) -> types.ModuleType:
    """A user's .py file (a --case's or a --workload's) imported as module `name`, its folder first on sys.path
    (its own imports of files beside it), while it runs and after (a factory may import them when called). The
    module is in sys.modules while its code runs, as an imported module is: a @dataclass under `from __future__
    import annotations` looks its module up there, and failed with "'NoneType' object has no attribute
    '__dict__'" without it. (measure/importcheck.py, standard library only, does the same for --env.)"""
    # the file's path in the name: two files of one factory name (v1/c.py:make and v2/c.py:make in one child) are
    # two modules, each found under its own name by what looks a module up later (pickle, typing.get_type_hints)
    name = f"{name}_{zlib.crc32(os.path.abspath(file).encode()):08x}"
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None  # a .py file (user_case checked): a source loader
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(file))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def cuda_index(device: str) -> int | None:
    """'cuda:1' -> 1, 'cuda' -> 0, 'cpu' -> None."""
    if device == "cpu":
        return None
    return int(device.partition(":")[2] or 0)



def factory_style(factory: Callable) -> str:
    """'shape' for FACTORY(shape, dtype, device), 'mnk' for the older FACTORY(m, k, n, dtype, device) (or one
    that takes *args, as such factories were called); otherwise why it fits neither."""
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: called as factories always were
        return "mnk"
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return "mnk"
    positional = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(positional) == 3:
        return "shape"
    if len(positional) == 5:
        return "mnk"
    return (f"takes {len(positional)} positional parameters; a factory is FACTORY(shape, dtype, device) "
            "or FACTORY(m, k, n, dtype, device)")


def call_factory(factory: Callable, shape: list[int], dtype: str, device: str):
    """The factory called as its signature asks: (shape, dtype, device), the shape a tuple; or (m, k, n, dtype,
    device), which only a matmul shape has. Raises ValueError (FactoryMisfit) when it fits neither."""
    style = factory_style(factory)
    if style == "shape":
        return factory(tuple(shape), dtype, device)
    if style != "mnk":
        raise FactoryMisfit(style)
    if len(shape) != 3:
        raise FactoryMisfit(f"is FACTORY(m, k, n, dtype, device), a matmul factory, and this op's shape is "
                            f"{','.join(map(str, shape))}; write it as FACTORY(shape, dtype, device)")
    return factory(*shape, dtype, device)


class FactoryMisfit(ValueError):
    """A factory whose signature is not the case protocol's (the child names it so, before calling it)."""



def user_case(text: str) -> CaseSpec:
    """Check ``FILE.py:FACTORY`` without running the file: a .py file that exists, parses (read as Python
    reads it: a PEP 263 coding cookie or a BOM decides the encoding), and binds FACTORY at module level."""
    path_text, sep, factory = text.rpartition(":")
    if not sep or not path_text or not factory:
        raise FlametoolError(f"--case {text!r}: expected FILE.py:FACTORY")
    path = Path(path_text)
    if not path.is_file():
        raise FlametoolError(f"--case {text!r}: no such file {path}")
    if path.suffix != ".py":  # the child imports it as Python source, which only a .py file is found as
        raise FlametoolError(f"--case {text!r}: {path} is not a Python file (expected FILE.py:FACTORY)")
    if not factory.isidentifier():
        raise FlametoolError(f"--case {text!r}: {factory!r} is not a Python name")
    try:
        with tokenize.open(path) as fh:
            source = fh.read()
        tree = ast.parse(source, filename=str(path))
    except OSError as exc:
        raise FlametoolError(f"--case {text!r}: {path} cannot be read ({exc.strerror or exc})") from None
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL byte (Python 3.11)
        raise FlametoolError(f"--case {text!r}: {path} does not parse ({exc})") from None
    except (RecursionError, MemoryError):  # nested deeper than Python's parser goes ('1+' * 200000)
        raise FlametoolError(f"--case {text!r}: {path} does not parse (nested too deeply for Python's parser)") from None
    names, star = module_names(tree)
    if factory not in names and not star:  # after 'from x import *' any name may be bound: the child checks
        raise FlametoolError(f"--case {text!r}: {path} defines no {factory}")
    return CaseSpec(label=factory, factory=factory, file=str(path.resolve()))


def module_names(tree: ast.Module) -> tuple[set[str], bool]:
    """The names a module binds at module level, wherever the statement is (under if, try, with, for,
    while, match), and whether it has a 'from ... import *'. Function and class bodies (and lambdas,
    comprehensions) have scopes of their own and are not entered; their names are bound there."""
    names: set[str] = set()
    star = False
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            # decorators and default values run at module level; a walrus there binds a module name
            todo.extend(node.decorator_list)
            if not isinstance(node, ast.ClassDef):
                todo.extend(node.args.defaults + [d for d in node.args.kw_defaults if d is not None])
            else:
                todo.extend(node.bases + [k.value for k in node.keywords])
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    star = True
                else:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        todo.extend(ast.iter_child_nodes(node))
    return names, star

