"""Whether the cases of a run multiplied the same values (a GEMM's GPU time depends on them), and whether they
wrote their results alike (jax has no out=)."""

from __future__ import annotations

from dataclasses import dataclass

from ..run.record import Run


@dataclass
class UnlikeOperands:
    """Cases of one shape and dtype whose operands (step.operands) are not the same bytes: their GPU times
    differ by the values alone (on the H200, 4096^3 float16: 204-206 us on uniform values, 215-217 on normal)."""

    shape: list[int]
    dtype: str
    cases: dict[str, str]  # label -> fingerprint
    made: dict[str, str]  # label -> how its operands were made


def unlike_operands(run: Run) -> list[UnlikeOperands]:
    """Each shape and dtype at which the cases that recorded operand fingerprints recorded more than one."""
    seen: dict[tuple, dict[str, tuple[str, str]]] = {}
    for label, r in run.results.items():
        if r.error:
            continue
        for o in r.operands:
            seen.setdefault((tuple(o.shape), r.dtype), {})[label] = (o.fingerprint, o.made)
    return [UnlikeOperands(list(shape), dtype, {l: fp for l, (fp, _) in found.items()},
                           {l: made for l, (_, made) in found.items()})
            for (shape, dtype), found in seen.items() if len({fp for fp, _ in found.values()}) > 1]


def wrote_operands(run: Run) -> list[str]:
    """The cases whose step wrote the values it reads (their operands hashed again after the timed loops differed:
    record.Operands.after), in the run's order."""
    return [label for label, r in run.results.items() if not r.error and any(o.after for o in r.operands)]


@dataclass
class NewOutputs:
    """Built-in jax cases beside cases that write into a preallocated out (matmul, add): jax has no out=, so each
    of its calls makes a new output buffer where the others reuse one."""

    op: str
    new: list[str]  # the cases that return a new array each call
    into_out: list[str]  # the built-in cases that write into a preallocated out


def new_outputs(run: Run, op: str | None = None) -> NewOutputs | None:
    from ..workload import ops

    op = op if op is not None else run.config.operation  # Loaded.op where the run was read whole
    if op not in ops.OPS or "preallocated out" not in ops.OPS[op].output:
        return None
    builtin = {l: r for l, r in run.results.items() if not r.error and r.factory.startswith("flametool.cases:")}
    new = [l for l, r in builtin.items() if r.library == "jax"]
    into = [l for l, r in builtin.items() if r.library in ("cupy", "torch", "numpy")]
    return NewOutputs(op, new, into) if new and into else None
