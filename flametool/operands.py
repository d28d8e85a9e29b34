"""Whether the cases of a run multiplied the same values: a GEMM's GPU time depends on them."""

from __future__ import annotations

from dataclasses import dataclass

from .record import Run


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
