"""Roles: what a frame does (a GEMM kernel, the allocator, a lock, a launch), by rules kept as data in
roles.json beside layers.json. A diff of two libraries matches frames of one role that only one side has, so
the same job under two names (OpenBLAS's sgemm_kernel_HASWELL, MKL's mkl_blas_def_sgemm_kernel_0_zen) is one
row and what differs beyond it is listed after."""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

from .layers import Rule
from .naming import Frame


@functools.lru_cache(maxsize=None)
def current() -> tuple[list[Rule], dict[str, str]]:
    """(rules, role -> what it does), read once from roles.json."""
    data = json.loads(resources.files(__package__).joinpath("roles.json").read_text(encoding="utf-8"))
    roles = {entry["role"]: entry["about"] for entry in data["roles"]}
    rules = []
    for entry in data["rules"]:
        if entry["role"] not in roles:
            raise ValueError(f"roles.json: rule {entry} names an unlisted role")
        rules.append(Rule(layer=entry["role"], kind=entry.get("kind"),
                          name=re.compile(entry["name"]) if "name" in entry else None,
                          file=re.compile(entry["file"]) if "file" in entry else None))
    return rules, roles


def about() -> dict[str, str]:
    """Role -> what it does, in the order roles.json lists them."""
    return current()[1]


def role(frame: Frame) -> str | None:
    """The frame's role, or None where no rule names one."""
    name = frame.name.rpartition(" (")[0] or frame.name if frame.name.endswith(")") else frame.name
    return next((r.layer for r in current()[0] if r.matches(Frame(name, frame.file, frame.kind))), None)
