"""``flametool.cases``: the built-in cases and the case protocol, under the name run.json records for them
(``flametool.cases:numpy_matmul``) and users import. The module itself is flametool/workload/cases.py; this
name is the same module object, so its factories, `BUILTIN` and `CaseSpec` are one, whichever name is used."""

import sys

from .workload import cases as _cases

sys.modules[__name__] = _cases
