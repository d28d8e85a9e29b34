"""The run directory: the one interface between measuring and everything after it.

A run directory holds ``run.json`` (this module's schema), one ``<label>.prof`` (cProfile) and one
``<label>.folded`` (py-spy raw folded stacks, filtered to the active loop) per case, and later
``report.html``.  Everything downstream (analysis, report, diff, export, snakeviz) reads only this.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import FlametoolError, RunDirError

SCHEMA = 1
RUN_FILE = "run.json"

# Fields every result carries; older or partial files are read with these filled in as None so that a
# consumer never has to guess whether a key exists (as pyinstrument's session loader does).
RESULT_FIELDS: dict[str, Any] = {
    "library": None,
    "factory": None,
    "device": None,
    "device_name": None,
    "dtype": None,
    "shape": None,
    "iters": None,
    "warmup": None,
    "cpu_us_per_call": None,
    "gpu_us_per_call": None,
    "cpu_us_per_call_repeats": [],
    "gpu_us_per_call_repeats": [],
    "host_bound": None,
    "bound_note": None,
    "sample_shape": None,
    "sample_shape_reason": None,
    "sample_timing": None,
    "cprofile_us_per_call": None,
    "cprofile_calls": None,
    "sampled_us_per_call": None,
    "samples": None,
    "rate_hz": None,
    "sampling": None,
    "files": {},
    "error": None,
}


def blank_result() -> dict[str, Any]:
    return {k: (type(v)() if isinstance(v, (list, dict)) else v) for k, v in RESULT_FIELDS.items()}


def prof_path(run: Path, label: str) -> Path:
    return run / f"{label}.prof"


def folded_path(run: Path, label: str) -> Path:
    return run / f"{label}.folded"


def new_run(config: dict[str, Any], env: dict[str, Any], argv: list[str], started: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "complete": False,
        "started": started,
        "finished": None,
        "command": argv,
        "config": config,
        "env": env,
        "results": {},
    }


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a run directory is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_output(path: Path, text: str) -> None:
    """Write a file the user named (`-o`) as a shell's '>' would: through whatever is there, so a symlink
    keeps pointing where it did, a FIFO is fed, a device (/dev/stdout, /dev/full) is written to and stays a
    device. Any failure, on open or on write (ENOSPC), is one FlametoolError naming the path. Files inside a
    run directory are written with write_atomic instead."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise FlametoolError(f"{path}: cannot be written ({exc.strerror or exc})") from None


def save(run: Path, data: dict[str, Any]) -> None:
    """run.json, atomically; strict JSON only (no NaN or Infinity, which other parsers reject)."""
    try:
        text = json.dumps(data, indent=2, sort_keys=False, allow_nan=False)
    except ValueError:
        raise FlametoolError(f"{run / RUN_FILE}: not written: {check_tree(data) or 'a value is not a finite number'}") from None
    write_atomic(run / RUN_FILE, text + "\n")


def load(run: Path | str) -> dict[str, Any]:
    """Read and check a run directory's run.json; every problem is one RunDirError naming the file."""
    run = Path(run)
    if not run.exists():
        raise RunDirError(f"{run}: no such run directory")
    if not run.is_dir():
        raise RunDirError(f"{run}: not a directory")
    path = run / RUN_FILE
    if not path.is_file():
        raise RunDirError(f"{path}: missing (is {run} a flametool run directory?)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, or an integer of 4300+ digits
        raise RunDirError(f"{path}: cannot be read as JSON ({exc})") from None
    except RecursionError:
        raise RunDirError(f"{path}: cannot be read as JSON (nested more than {MAX_DEPTH} levels deep)") from None
    problem = check_tree(data)
    if problem:
        raise RunDirError(f"{path}: {problem}")
    if not isinstance(data, dict) or not isinstance(data.get("schema"), int):
        raise RunDirError(f"{path}: not a flametool run.json (no schema number)")
    if data["schema"] > SCHEMA:
        raise RunDirError(
            f"{path}: schema {data['schema']} is newer than this flametool understands ({SCHEMA}); upgrade flametool"
        )
    results = data.get("results")
    if not isinstance(results, dict):
        raise RunDirError(f"{path}: 'results' is missing or not an object")
    for label, result in results.items():
        if not isinstance(result, dict):
            raise RunDirError(f"{path}: result {label!r} is not an object")
        problem = check_types(result)
        if problem:
            raise RunDirError(f"{path}: result {label!r}: {problem}")
        for key, default in blank_result().items():
            result.setdefault(key, default)
    for key in ("config", "env"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise RunDirError(f"{path}: {key} is {json.dumps(data[key])[:60]}, expected an object")
    problem = check_types(data.get("config") or {}, "config.") or check_types(
        {k: data.get(k) for k in ("complete", "command", "started", "finished")})
    if problem:
        raise RunDirError(f"{path}: {problem}")
    # 'analysis' and 'diff' are derived from the rest and are not read: the report computes them afresh
    data.setdefault("complete", False)
    data["config"] = data.get("config") or {}
    data["env"] = data.get("env") or {}
    return data


# run.json nests about 7 levels (results.LABEL.sampling.earlier_attempts[0].command[0]); deeper is not ours,
# and would only make a reader recurse until Python stops it
MAX_DEPTH = 32


def check_tree(data: Any) -> str | None:
    """What is wrong with the document as a whole: nesting deeper than MAX_DEPTH, or a number that is not
    finite (NaN, Infinity and 1e400 are accepted by Python's json but are no JSON number). Iterative, so
    that no depth can make it recurse; the path to the value is named."""
    todo: list[tuple[Any, int, Any]] = [(data, 1, None)]
    while todo:
        value, depth, trail = todo.pop()
        if depth > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} levels deep (at {_path(trail)[:100]})"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{_path(trail)} is {json.dumps(value)}, not a finite number"
        if isinstance(value, dict):
            todo.extend((v, depth + 1, (trail, k)) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, depth + 1, (trail, i)) for i, v in enumerate(value))
    return None


def _path(trail: Any) -> str:
    keys = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text or "the document"


# The types of the fields readers compute with, wherever they appear in a result (the result itself,
# sample_timing, sampling). Checked on load, so that an edited or damaged run.json is one error naming the
# field rather than a crash somewhere in analysis or the report. null is allowed for each; unknown keys pass.
# Bounds that keep every derived figure finite: a time per call (us), a ratio or a number of seconds is 0 or
# within [MIN_NUMBER, MAX_NUMBER] (a call of 1e12 us takes eleven days; 1e-6 us is a femtosecond), so that
# sums, differences and quotients of them stay far from overflow; counts stay below MAX_COUNT.
MIN_NUMBER = 1e-6
MAX_NUMBER = 1e12
MAX_COUNT = 10**12


def _number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and (v == 0 or MIN_NUMBER <= v <= MAX_NUMBER))


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_COUNT


NUMBER = f"a number 0 or from {MIN_NUMBER:g} to {MAX_NUMBER:g}"
COUNT = f"a count (0 to {MAX_COUNT:.0e})"


def _shape(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 3 and all(_count(x) and x > 0 for x in v)


FIELD_TYPES: dict[str, tuple[Any, str]] = {
    **{k: (_number, NUMBER) for k in (
        "cpu_us_per_call", "gpu_us_per_call", "cprofile_us_per_call", "sampled_us_per_call", "cprofile_inflation",
        "slowdown", "behind_seconds")},
    **{k: (_count, COUNT) for k in (
        "samples", "rate_hz", "iters", "warmup", "cprofile_calls", "ops_per_step", "kept_samples", "loop_samples",
        "outside_samples", "total_samples", "pyspy_samples", "pyspy_errors", "calls_per_chunk", "chunks",
        "suggested_rate_hz", "processes", "threads", "repeats", "sample_seconds", "pool_threads")},
    **{k: (lambda v: isinstance(v, bool), "true or false") for k in (
        "host_bound", "complete", "behind", "refused", "sample", "keep_going", "cpu_fallback")},
    **{k: (lambda v: isinstance(v, str), "a string") for k in (
        "library", "factory", "device", "device_name", "dtype", "bound_note", "sample_shape_reason", "error",
        "started", "finished")},
    "command": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
    "dtypes": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()), "an object of strings"),
    **{k: (lambda v: isinstance(v, list) and all(_number(x) for x in v), f"a list of numbers (each {NUMBER})")
       for k in ("cpu_us_per_call_repeats", "gpu_us_per_call_repeats", "cpu_us_per_call_processes")},
    "shape": (_shape, "three positive integers"),
    "sample_shape": (_shape, "three positive integers"),
    "files": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()), "an object of file names"),
    "sample_timing": (lambda v: isinstance(v, dict), "an object"),
    "sampling": (lambda v: isinstance(v, dict), "an object"),
}


def check_types(result: dict[str, Any], where: str = "") -> str | None:
    """What is wrong with a result's field types, or None."""
    for key, value in result.items():
        rule = FIELD_TYPES.get(key)
        if value is None or rule is None:
            continue
        ok, what = rule
        if not ok(value):
            return f"{where}{key} is {json.dumps(value)[:60]}, expected {what}"
        if key in ("sample_timing", "sampling"):
            problem = check_types(value, f"{where}{key}.")
            if problem:
                return problem
    return None


def ensure_new(out: Path) -> None:
    """Refuse to write into an existing, non-empty folder: a run is never overwritten silently."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FlametoolError(f"{out}: already exists and is not empty; choose another --out")


def create(out: Path) -> None:
    """Make the run directory (an existing empty one is used as is), or say why it cannot be made."""
    ensure_new(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".{RUN_FILE}.probe"  # a directory that can be made may still not be writable
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise FlametoolError(f"{out}: cannot create the run directory ({exc.strerror or exc}); choose another --out") from None
