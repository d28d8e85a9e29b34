"""The built-in cases (``--libs``), one row each: the label, the library whose version and device events apply,
whether it needs CUDA, its matmul factory, its op factory (LIBRARY_OP for every op of ops.py the library has),
and for a floor what its time per call means. The libraries' rows are made from theirs in libraries.py (a new
library's built-in is its row there), the floors' are here (their factories in floors.py); a new op is its row
in ops.py.

The child loads a built-in exactly as a user's case: ``flametool.cases:NAME`` (cases.MODULE), NAME as
`factory_name` gives it and `factory` finds it: the matmul factories by their own names (numpy_matmul, torch_mm,
cupy_matmul, cublas_gemm...: what run.json recorded before there were other ops), LIBRARY_OP for the others
(jax_matmul, numpy_add, torch_fft).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import cache
from typing import Callable

from . import floors, libraries, ops, workloads
from ..errors import FlametoolError
from .cases import MODULE, CaseSpec, Step, Sync

Factory = Callable[..., "tuple[Step, Sync]"]


@dataclass(frozen=True)
class Builtin:
    label: str  # as --libs names it
    library: str  # whose version and device events apply
    needs_cuda: bool
    matmul: Factory | None  # its own matmul factory; None: matmul is one of its ops (made by `ops`)
    ops: Callable[[str, tuple, str, str], tuple[Step, Sync]] | None = None  # OP_FACTORY(op, shape, dtype, device)
    floor: str = ""  # a floor: what its time per call means, for the report's comparison against it
    any_op: bool = False  # a floor that launches the same thing whatever the op: built for every op by `matmul`
    op_names: tuple[str, ...] = ()  # the ops `ops` makes (a library's: every op of ops.py its row does not lack)

    @property
    def factory(self) -> str:
        """The matmul factory's name in flametool.cases (run.json's factory string)."""
        return self.matmul.__name__ if self.matmul else f"{self.label}_{ops.DEFAULT_OP}"


def of_library(row: libraries.Library) -> Builtin:
    """A library's built-in case, from its row in libraries.py."""
    return Builtin(row.label, row.imports, row.needs_cuda, row.matmul, functools.partial(libraries.op_case, row),
                   op_names=tuple(op for op in ops.OPS if row.has(op)))


BUILTIN: dict[str, Builtin] = {b.label: b for b in (
    *(of_library(row) for row in libraries.LIBRARIES.values()),
    Builtin("cublas", "cupy", True, floors.cublas_gemm, floor="cublasGemmEx called with the least Python"),
    Builtin("torch-graph", "torch", True, floors.torch_graph,
            floor="host cost per product of replaying a CUDA graph from PyTorch"),
    Builtin("cupy-graph", "cupy", True, floors.cupy_graph,
            floor="host cost per product of launching a CUDA graph from CuPy"),
    Builtin("cuda-launch", "cuda.bindings", True, floors.cuda_launch, any_op=True,
            floor="an empty kernel launched with cuLaunchKernel from cuda.bindings: the launch itself"),
)}
# floors that launch the same thing whatever the op (--op): built for every op by the same factory
ANY_OP = {b.label for b in BUILTIN.values() if b.any_op}
# what each floor's time per call means, for the report's comparison against them
FLOORS = {b.label: b.floor for b in BUILTIN.values() if b.floor}


def factory_name(label: str, op: str) -> str:
    """The built-in factory of case `label` for `op`: the matmul factories by their own names (run.json's
    factory strings of older runs), LIBRARY_OP for the others."""
    row = BUILTIN.get(label)
    if op == ops.DEFAULT_OP or label in ANY_OP:
        return BUILTIN[label].factory
    if row is None or row.ops is None:
        raise FlametoolError(f"case {label!r} is a matmul floor: it has no --op {op} (leave it out of --libs)")
    if op not in row.op_names:
        raise FlametoolError(f"case {label!r} has no --op {op}: its row in libraries.py has none "
                             "(leave it out of --libs)")
    return f"{label}_{op}"


@cache
def factories() -> dict[str, Factory]:
    """Every built-in factory by the name flametool.cases gives it (made once, so a name is one function)."""
    found: dict[str, Factory] = {b.factory: b.matmul for b in BUILTIN.values() if b.matmul}
    for b in BUILTIN.values():
        for op in b.op_names:
            if b.ops and f"{b.label}_{op}" not in found and not (op == ops.DEFAULT_OP and b.matmul):
                found[f"{b.label}_{op}"] = _op_factory(b.ops, b.label, op)
    return found


def _op_factory(build: Callable[[str, tuple, str, str], tuple[Step, Sync]], library: str, op: str) -> Factory:
    """The built-in factory LIBRARY_OP(shape, dtype, device), found by name as every factory is."""

    def factory(shape: tuple, dtype: str, device: str) -> tuple[Step, Sync]:
        return build(op, shape, dtype, device)

    factory.__name__ = factory.__qualname__ = f"{library}_{op}"
    return factory


def builtin_libraries(specs: list[CaseSpec]) -> list[str]:
    """The libraries the built-in cases and workloads' cases among `specs` import (what a process can import
    ahead of building them), in the order of the cases."""
    return list(dict.fromkeys(workloads.LIBRARY[c.xp] if c.xp else BUILTIN[c.name].library for c in specs
                              if c.xp or (c.module == MODULE and c.name in BUILTIN)))


def is_floor(label: str, factory: str) -> bool:
    """A built-in floor (not a user case that happens to share its label)."""
    return label in FLOORS and factory.startswith(f"{MODULE}:")


def default_pairs(factories: dict[str, str]) -> list[tuple[str, str]]:
    """(base, head) pairs a run compares unless told: the first two library cases, each case of the user's own
    (--case) against the first built-in library case (a case added beside the built-ins is compared with the
    built-in of its op), and each library case against the cublas floor when the run has it (what the library
    adds to one bare cuBLAS call)."""
    libraries = [l for l, f in factories.items() if not is_floor(l, f)]
    pairs = [(libraries[0], libraries[1])] if len(libraries) >= 2 else []
    builtin = [l for l in libraries if factories[l].startswith(f"{MODULE}:")]
    for label in libraries:
        if builtin and not factories[label].startswith(f"{MODULE}:") and (builtin[0], label) not in pairs \
                and (label, builtin[0]) not in pairs:
            pairs.append((builtin[0], label))
    if "cublas" in factories and is_floor("cublas", factories["cublas"]):
        pairs += [("cublas", l) for l in libraries]
    if not pairs and len(factories) >= 2:  # floors only: the first two, whatever they are
        first, second = list(factories)[:2]
        pairs = [(first, second)]
    return pairs


def builtin(label: str, op: str = ops.DEFAULT_OP) -> CaseSpec:
    if label not in BUILTIN:
        raise FlametoolError(f"unknown case {label!r}; built-in cases are {', '.join(BUILTIN)} (or use --case FILE.py:FACTORY)")
    return CaseSpec(label=label, factory=factory_name(label, op), module=MODULE)

