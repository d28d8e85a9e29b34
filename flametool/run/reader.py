"""Checked reading of run.json: a Reader walks one JSON value with its path in the file, and every getter checks
the type it returns, so a bad value is a RunDirError naming where it is (``results.torch.timing.processes[0].cpu_us``).
The bounds every number and count of a run is read within are here."""

from __future__ import annotations

import bisect
import math
from typing import Any, Callable, Literal, overload

from ..errors import RunDirError

# Bounds that keep every derived figure finite: a time per call (us), a ratio or a number of seconds is 0 or
# within [MIN_NUMBER, MAX_NUMBER] (a call of 1e12 us takes eleven days; 1e-6 us is a femtosecond), so that
# sums, differences and quotients of them stay far from overflow; counts stay below MAX_COUNT.
MIN_NUMBER = 1e-6
MAX_NUMBER = 1e12
MAX_COUNT = 10**12
NUMBER = f"a number 0 or from {MIN_NUMBER:g} to {MAX_NUMBER:g}"


class Reader:
    """Reads one JSON value with its path for messages; every getter checks the type it returns."""

    def __init__(self, value: Any, where: str, file: str) -> None:
        self.value, self.where, self.file = value, where, file

    def fail(self, key: str, value: Any, expected: str) -> RunDirError:
        import json

        shown = json.dumps(value, allow_nan=True)[:60] if _jsonable(value) else type(value).__name__
        return RunDirError(f"{self.file}: {self._path(key)} is {shown}, expected {expected}")

    def _path(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.where}[{key}]"
        return f"{self.where}.{key}" if self.where else key

    def child(self, key: str | int, value: Any) -> "Reader":
        return Reader(value, self._path(key), self.file)

    # the getters' overloads: a reader given a default that is not None never returns None
    @overload
    def obj(self, key: str, optional: Literal[False] = False) -> "Reader": ...
    @overload
    def obj(self, key: str, optional: bool) -> "Reader | None": ...
    def obj(self, key: str, optional: bool = False) -> "Reader | None":
        v = self.value.get(key) if isinstance(self.value, dict) else None
        if v is None and optional:
            return None
        if not isinstance(v, dict):
            raise self.fail(key, v, "an object")
        return self.child(key, v)

    def get(self, key: str, check: Callable[[Any], bool], expected: str, default: Any = None) -> Any:
        v = self.value.get(key, default)
        if v is None:
            return default
        if not check(v):
            raise self.fail(key, v, expected)
        return v

    @overload
    def number(self, key: str, default: None = None) -> float | None: ...
    @overload
    def number(self, key: str, default: float) -> float: ...
    def number(self, key: str, default: float | None = None) -> float | None:
        v = self.get(key, is_number, NUMBER, default)
        return float(v) if v is not None else None

    @overload
    def count(self, key: str, default: None = None) -> int | None: ...
    @overload
    def count(self, key: str, default: int) -> int: ...
    def count(self, key: str, default: int | None = None) -> int | None:
        return self.get(key, is_count, "a count", default)

    @overload
    def text(self, key: str, default: None = None) -> str | None: ...
    @overload
    def text(self, key: str, default: str) -> str: ...
    def text(self, key: str, default: str | None = None) -> str | None:
        return self.get(key, lambda v: isinstance(v, str), "a string", default)

    @overload
    def flag(self, key: str, default: None = None) -> bool | None: ...
    @overload
    def flag(self, key: str, default: bool) -> bool: ...
    def flag(self, key: str, default: bool | None = None) -> bool | None:
        return self.get(key, lambda v: isinstance(v, bool), "true or false", default)

    def numbers(self, key: str) -> list[float]:
        return [float(x) for x in self.get(key, lambda v: isinstance(v, list) and all_numbers(v),
                                           "a list of numbers", [])]

    def shape(self, key: str) -> list[int] | None:
        return self.get(key, is_shape, "a shape (one to three positive integers)")

    def items(self, key: str) -> list["Reader"]:
        """A list of objects (processes, groups, points), each to be read with its own path (null in it is not
        one: its reader would fail on the first field)."""
        v = self.get(key, lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of objects", [])
        return [self.child(key, None).child(i, x) for i, x in enumerate(v)]


def _jsonable(value: Any) -> bool:
    return isinstance(value, (dict, list, str, int, float, bool)) or value is None


def whole(v: float) -> float:
    """`v`, an int where it is a whole number: a figure read back as a number (5.0) is written and shown as it
    was given (5)."""
    return int(v) if float(v).is_integer() else v


def is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and (v == 0 or MIN_NUMBER <= v <= MAX_NUMBER))


_PLAIN = {int, float}


def all_numbers(values: list[Any], positive: bool = False) -> bool:
    """Whether is_number holds of every value (and each is above 0 with `positive`), exactly as that loop says, at
    C speed where every value is a plain float or int: a run's loops are tens of thousands of numbers."""
    if not set(map(type, values)) <= _PLAIN:  # a bool, a string, None: each value as is_number says
        return all(is_number(v) and (not positive or v > 0) for v in values)
    if not values:
        return True
    try:
        total = math.fsum(values)
    except (OverflowError, ValueError):  # inf - inf, or beyond a float: as is_number takes each
        return all(is_number(v) and (not positive or v > 0) for v in values)
    if not math.isfinite(total):  # a NaN or an infinity among them
        return False
    ordered = sorted(values)  # every value finite: a total order
    if ordered[0] < 0 or ordered[-1] > MAX_NUMBER:
        return False
    if positive:
        return ordered[0] >= MIN_NUMBER
    first = bisect.bisect_right(ordered, 0)  # past the zeros
    return first == len(ordered) or ordered[first] >= MIN_NUMBER


def is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_COUNT


def is_shape(v: Any) -> bool:
    """M,K,N (matmul), or N elements or R,C (the other ops, ops.py)."""
    return isinstance(v, list) and 1 <= len(v) <= 3 and all(is_count(x) and x > 0 for x in v)
