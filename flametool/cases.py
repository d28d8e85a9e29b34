"""``flametool.cases``: the case protocol and the built-in cases, under the name run.json records for them
(``flametool.cases:numpy_matmul``, cases.MODULE) and users import. The protocol is flametool/workload/cases.py,
whose names are these; a built-in factory is found here by its name (workload/builtins.py: the matmul factories
by their own names, LIBRARY_OP for the other ops), and so are the names this module held before the built-ins
moved out of workload/cases.py (MOVED), so a user's case file that imports them keeps working."""

from __future__ import annotations

import importlib
from typing import Any

from .workload import builtins
from .workload.cases import (DTYPES, MODULE, CaseSpec, FactoryMisfit, Step, Sync, call_factory, cuda_index,
                             factory_style, module_names, user_case)

__all__ = ["DTYPES", "MODULE", "CaseSpec", "FactoryMisfit", "Step", "Sync", "call_factory", "cuda_index",
           "factory_style", "module_names", "user_case"]

# each name flametool.cases held before the built-ins moved out, by the module of workload/ that holds it now
MOVED = {
    "inputs": ("OPERAND_SEED", "operands_made", "prefetch_operands", "prefetch_shape", "host_operands", "made_by",
               "op_operands", "op_operands_made"),
    "libraries": ("to_cupy", "kit_step"),
    "floors": ("GRAPH_OPS", "EMPTY_KERNEL_PTX"),
    "builtins": ("Builtin", "BUILTIN", "ANY_OP", "FLOORS", "builtin", "factory_name", "builtin_libraries", "is_floor",
                 "default_pairs"),
}


def __getattr__(name: str) -> Any:
    """A built-in factory by its name (``torch_mm``, ``jax_matmul``, ``numpy_add``), or a name this module held
    before the built-ins moved (MOVED)."""
    if name in builtins.factories():
        return builtins.factories()[name]
    for module, names in MOVED.items():
        if name in names:
            return getattr(importlib.import_module(f"flametool.workload.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
