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

from .errors import FlametoolError, RunDirError, WriteError

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
    """Write via a temporary file in the same folder and rename, so a reader never sees half a file. A write
    that fails is one FlametoolError naming the file (cannot_write)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise cannot_write(path, exc) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a run directory is meant to be shared
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk, no permission: one line; the file as it was is kept
            raise cannot_write(path, exc) from None
        raise


def save(run: Path, data: dict[str, Any]) -> None:
    write_atomic(run / RUN_FILE, json.dumps(data, indent=2, sort_keys=False) + "\n")


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
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDirError(f"{path}: cannot be read as JSON ({exc})") from None
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
    data.setdefault("complete", False)
    data.setdefault("config", {})
    data.setdefault("env", {})
    return data


# The types of the fields readers compute with, wherever they appear in a result (the result itself,
# sample_timing, sampling). Checked on load, so that an edited or damaged run.json is one error naming the
# field rather than a crash somewhere in analysis or the report. null is allowed for each; unknown keys pass.
def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _shape(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 3 and all(_count(x) and x > 0 for x in v)


FIELD_TYPES: dict[str, tuple[Any, str]] = {
    **{k: (_number, "a number >= 0") for k in (
        "cpu_us_per_call", "gpu_us_per_call", "cprofile_us_per_call", "sampled_us_per_call", "cprofile_inflation",
        "slowdown", "behind_seconds")},
    **{k: (_count, "a count") for k in (
        "samples", "rate_hz", "iters", "warmup", "cprofile_calls", "ops_per_step", "kept_samples", "loop_samples",
        "outside_samples", "total_samples", "pyspy_samples", "pyspy_errors", "calls_per_chunk", "chunks",
        "suggested_rate_hz", "processes")},
    **{k: (lambda v: isinstance(v, bool), "true or false") for k in ("host_bound", "complete", "behind", "refused")},
    **{k: (lambda v: isinstance(v, str), "a string") for k in (
        "library", "factory", "device", "device_name", "dtype", "bound_note", "sample_shape_reason", "error")},
    **{k: (lambda v: isinstance(v, list) and all(_number(x) for x in v), "a list of numbers")
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


# What run.json holds from the moment a run claims its directory until the run writes its own: a valid,
# empty, incomplete run, so a reader in between sees no half file.
CLAIMED = {"schema": SCHEMA, "complete": False, "started": None, "finished": None, "command": [], "config": {},
           "env": {}, "results": {}}
UNIQUE_TRIES = 1000


def create(out: Path, unique: bool = False) -> Path:
    """Make and claim the run directory (an existing empty one is used as is), or say why it cannot be.

    Claiming is one atomic step, creating run.json with O_EXCL in it, so of two runs started on one --out at
    once exactly one gets it and the other is refused (checking that the folder is new, then writing into
    it, let both go on and one lose its results). With `unique` (the default --out, a timestamp of one
    second), a name already taken gets a suffix instead: -2, -3, ... Returns the directory claimed."""
    for n in range(1, UNIQUE_TRIES + 1):
        path = out if n == 1 else out.with_name(f"{out.name}-{n}")
        if claim(path):
            return path
        if not unique:
            break
    raise FlametoolError(f"{out}: already exists and is not empty; choose another --out")


def claim(out: Path) -> bool:
    """True when this process made `out` its run directory; False when it is taken (not empty, or a file)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out / RUN_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    except OSError as exc:
        if out.exists() and not out.is_dir():
            return False
        raise FlametoolError(f"{out}: cannot create the run directory ({exc.strerror or exc}); choose another --out") from None
    path = out / RUN_FILE
    try:
        # run.json was not there, but other files may be: then the folder is not empty, and not ours
        if any(p.name != RUN_FILE for p in out.iterdir()):
            os.close(fd)
            path.unlink()
            return False
        # a directory that can be made may still not be writable (a full disk): this is the probe
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(CLAIMED) + "\n")
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise cannot_write(path, exc) from None
    return True


def cannot_write(path: Path, exc: OSError) -> WriteError:
    """One line for a file of the run directory that cannot be written (a full disk, no permission)."""
    return WriteError(f"{path}: cannot be written ({exc.strerror or exc}); what was written before is kept")
