"""speedscope's JSON file format: https://www.speedscope.app/file-format-schema.json (spec: speedscope's
file-format-spec.ts). One sampled profile per case; each stack's weight is its time per call in
microseconds, so a profile's total is the case's CPU time per call and speedscope's numbers read directly
as us per call."""

from __future__ import annotations

import json
import os
from itertools import chain
from pathlib import Path

from .. import __version__
from ..analyse import attribution
from ..analyse.compare import Stacks
from ..errors import FlametoolError
from ..run import sources
from .base import ExportRenderer

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def speedscope(profs: list[attribution.Profile], name: str, by_line: bool = False,
               record: sources.Sources = sources.Sources()) -> dict:
    """`by_line`: the profiles' frames are source lines (export --lines), each given its `line` where py-spy
    reported one; a function-level frame stands for many lines (its Frame's is only the first one met), so it
    is given none. A line's `file` and `line` are the source line it was written at, as the lines views name it:
    py-spy names a Python or .pyx file from its sys.path entry (`cupy/_core/_gufuncs.py`, and a .pyx line where it
    maps one itself), and a generated C/C++ line by the bare name its line table gives (`_routines_linalg.cpp`);
    where the run's `record` (sources.json) maps that line to its .pyx line, the frame is given the .pyx's file and
    line, named as Cython names it (`cupy/_core/_routines_linalg.pyx`), its name keeping the generated line. Each
    profile's lines are mapped by its case's own copy of the file (Sources.for_case: two --env builds of a library,
    whose generated line 120 came from other .pyx lines), so a frame of one name may be two frames, one a build."""
    # frames shared between profiles, numbered in the order they are first met (profile by profile, stack
    # by stack, root first); each stack is then one C-level map over that index
    index: dict[tuple[str, str | None, int | None], int] = {}  # (name, file, line) -> its place in `frames`
    frames: list[dict] = []
    numbered: list[dict[str, int]] = []  # each profile's frame name -> its place in `frames`
    for p in profs:
        own = record.for_case(p.label)
        ids: dict[str, int] = {}
        for key in dict.fromkeys(chain.from_iterable(s.frames for s in p.stacks)):
            frame = p.frames[key]
            pyx = own.pyx(frame.file, frame.line) if by_line and frame.file and frame.line is not None else None
            file, line = (pyx.file, pyx.line) if pyx is not None else (frame.file, frame.line)
            place = (key, file or None, line if by_line else None)
            if place not in index:
                index[place] = len(frames)
                out: dict = {"name": key}
                if file:
                    out["file"] = file
                # the line also stays in the name: speedscope draws only the name, and two lines of one
                # function side by side must be told apart there
                if by_line and line is not None:
                    out["line"] = line
                frames.append(out)
            ids[key] = index[place]
        numbered.append(ids)

    out_profiles = []
    for p, ids in zip(profs, numbered):
        samples = [list(map(ids.__getitem__, s.frames)) for s in p.stacks]
        weights = [p.us(s.count) for s in p.stacks]
        out_profiles.append({
            "type": "sampled", "name": f"{p.label} (us per call)", "unit": "microseconds",
            "startValue": 0, "endValue": sum(weights), "samples": samples, "weights": weights,
        })
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": frames},
        "profiles": out_profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": f"flametool {__version__}",
    }


def check_speedscope(doc: dict) -> None:
    """The schema's required fields and types, so a file we write is one speedscope can open."""
    problems = []
    if doc.get("$schema") != SPEEDSCOPE_SCHEMA:
        problems.append("$schema")
    frames = (doc.get("shared") or {}).get("frames")
    if not isinstance(frames, list) or not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in frames):
        problems.append("shared.frames[].name")
    # the optional fields, where given: file a string, line and col numbers
    for i, f in enumerate(frames if isinstance(frames, list) else []):
        if not isinstance(f, dict):
            continue
        if "file" in f and not isinstance(f["file"], str):
            problems.append(f"shared.frames[{i}].file")
        for key in ("line", "col"):
            if key in f and (not isinstance(f[key], (int, float)) or isinstance(f[key], bool)):
                problems.append(f"shared.frames[{i}].{key}")
    profs = doc.get("profiles")
    if not isinstance(profs, list) or not profs:
        problems.append("profiles")
    for i, p in enumerate(profs or []):
        for key in ("type", "name", "unit", "startValue", "endValue", "samples", "weights"):
            if key not in p:
                problems.append(f"profiles[{i}].{key}")
        if p.get("type") != "sampled" or p.get("unit") not in ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"):
            problems.append(f"profiles[{i}].type/unit")
        if len(p.get("samples", [])) != len(p.get("weights", [])):
            problems.append(f"profiles[{i}]: samples and weights differ in length")
        stacks = [s for s in p.get("samples", []) if s]
        if stacks and not (0 <= min(map(min, stacks)) and max(map(max, stacks)) < len(frames or [])):
            problems.append(f"profiles[{i}]: frame index out of range")
        if p.get("endValue", 0) < p.get("startValue", 0):
            problems.append(f"profiles[{i}]: endValue < startValue")
    if problems:
        raise FlametoolError(f"speedscope export failed its own check: {', '.join(problems)}")


class SpeedscopeRenderer(ExportRenderer):
    """speedscope's JSON file: one sampled profile per case, weights in us per call."""

    name = "speedscope"

    def render(self, result: Stacks) -> str:
        # the folder's own name, also where the run was given as `.` or `run/..` (its name there is empty)
        doc = speedscope(result.profiles, name=f"flametool {Path(os.path.abspath(result.run_dir)).name}",
                         by_line=result.by_line, record=result.sources)
        # checked as written: json.dumps turns these dicts, lists, strings and numbers into JSON that reads
        # back as the same, and refuses a number JSON has not (allow_nan=False)
        check_speedscope(doc)
        try:
            return json.dumps(doc, allow_nan=False)
        except ValueError:  # the run's figures are bounded on load, so this is a bug, still said in one line
            raise FlametoolError(f"{result.run_dir}: speedscope export not written: a weight is not a finite number") from None
