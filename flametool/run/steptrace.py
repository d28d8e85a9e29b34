"""The CUPTI records of one step() call, kept beside run.json as ``<label>.timeline.json`` (issue 40): the host's
CUDA API calls with their thread, the GPU's kernels, copies and memsets with their device and stream, the
correlation id that ties a launch to what it launched, and the step's lines as spans of time. Every time is in
nanoseconds on CUPTI's clock (``cupti.get_timestamp()``, the clock its activity records carry), so the lines'
spans, the calls and the kernels are on one time base.

measure/counting.py makes it from the counted loop's traced window (one step in the middle of it, so that
nothing of the window's edges is in it) when cupti-python traced the case; a CPU run, or one traced by
torch.profiler, has none. analyse/timeline.py reads it (how busy the GPU is during the step, its idle time
between kernels), render/perfetto.py turns it into Chrome trace events. The same dataclasses carry the raw
records of a whole window in measure/ (where each record is placed on a line of step())."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import rundir
from .sources import clean_text
from ..errors import RunDirError

VERSION = 1
MAX_TIMELINE_JSON = 64 * 2**20  # one step's records are kilobytes; a larger file is refused unread
GPU_KINDS = ("kernel", "copy", "memset")


@dataclass(frozen=True)
class ApiCall:
    """A CUDA runtime or driver API call on the host: `thread` CUPTI's thread id, `correlation` its id."""

    name: str
    start: int
    end: int
    correlation: int
    thread: int = 0


@dataclass(frozen=True)
class GpuOp:
    """A kernel, copy or memset as the GPU ran it (`kind`: one of GPU_KINDS), on `device` and `stream`, with the
    correlation id of the API call that launched it; `bytes` for copies and memsets."""

    kind: str
    name: str
    start: int
    end: int
    correlation: int
    device: int = 0
    stream: int = 0
    bytes: int | None = None


@dataclass(frozen=True)
class LineSpan:
    """One run of a line of step(), from the moment it began to the next line's (or step()'s return)."""

    line: int
    start: int
    end: int
    text: str | None = None


@dataclass
class StepTrace:
    """One step: its span, its lines' spans, the API calls made while it ran and what they launched."""

    label: str
    file: str  # the step's file as the per-line counts name it
    start: int
    end: int
    thread: int  # the calling thread's id as CUPTI gives it (0: not known)
    lines: list[LineSpan] = field(default_factory=list)
    api: list[ApiCall] = field(default_factory=list)
    gpu: list[GpuOp] = field(default_factory=list)
    version: int = VERSION

    def to_json(self) -> dict[str, Any]:
        def gpu(g: GpuOp) -> dict[str, Any]:
            d: dict[str, Any] = {"kind": g.kind, "name": g.name, "start": g.start, "end": g.end,
                                 "correlation": g.correlation, "device": g.device, "stream": g.stream}
            if g.bytes is not None:
                d["bytes"] = g.bytes
            return d

        return {"version": self.version, "clock": "CUPTI ns", "label": self.label, "file": self.file,
                "start": self.start, "end": self.end, "thread": self.thread,
                "lines": [{"line": s.line, "start": s.start, "end": s.end, "text": s.text} for s in self.lines],
                "api": [{"name": a.name, "start": a.start, "end": a.end, "correlation": a.correlation,
                         "thread": a.thread} for a in self.api],
                "gpu": [gpu(g) for g in self.gpu]}

    @classmethod
    def from_json(cls, data: Any, where: str) -> StepTrace:
        """The record from its JSON; anything not as to_json writes it is one RunDirError naming `where`."""
        def bad(what: str) -> RunDirError:
            return RunDirError(f"{where}: {what}")

        def num(d: dict[str, Any], key: str, what: str) -> int:
            v = d.get(key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise bad(f"{what}.{key} is not a whole number")
            return v

        def text(d: dict[str, Any], key: str, what: str) -> str:
            v = d.get(key)
            if not isinstance(v, str):
                raise bad(f"{what}.{key} is not a string")
            return clean_text(v)

        def items(key: str) -> list[dict[str, Any]]:
            got = data.get(key, [])
            if not isinstance(got, list) or not all(isinstance(x, dict) for x in got):
                raise bad(f"{key} is not a list of objects")
            return got

        if not isinstance(data, dict):
            raise bad("not a JSON object")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise bad("no version number")
        if version > VERSION:
            raise bad(f"version {version}, written by a newer flametool (this one reads version {VERSION})")
        lines = [LineSpan(num(s, "line", f"lines[{i}]"), num(s, "start", f"lines[{i}]"), num(s, "end", f"lines[{i}]"),
                          clean_text(s["text"]) if isinstance(s.get("text"), str) else None)
                 for i, s in enumerate(items("lines"))]
        api = [ApiCall(text(a, "name", f"api[{i}]"), num(a, "start", f"api[{i}]"), num(a, "end", f"api[{i}]"),
                       num(a, "correlation", f"api[{i}]"), num(a, "thread", f"api[{i}]"))
               for i, a in enumerate(items("api"))]
        gpu = []
        for i, g in enumerate(items("gpu")):
            kind = g.get("kind")
            if kind not in GPU_KINDS:
                raise bad(f"gpu[{i}].kind is not one of {', '.join(GPU_KINDS)}")
            nbytes = num(g, "bytes", f"gpu[{i}]") if g.get("bytes") is not None else None
            gpu.append(GpuOp(kind, text(g, "name", f"gpu[{i}]"), num(g, "start", f"gpu[{i}]"), num(g, "end", f"gpu[{i}]"),
                             num(g, "correlation", f"gpu[{i}]"), num(g, "device", f"gpu[{i}]"),
                             num(g, "stream", f"gpu[{i}]"), nbytes))
        return cls(text(data, "label", "timeline"), text(data, "file", "timeline"), num(data, "start", "timeline"),
                   num(data, "end", "timeline"), num(data, "thread", "timeline"), lines, api, gpu, VERSION)


def path_for(prof: Path | str) -> Path:
    """Where a case's timeline goes, beside its cProfile file: LABEL.prof -> LABEL.timeline.json."""
    prof = Path(prof)
    return prof.with_name(prof.name.removesuffix(".prof") + ".timeline.json")


def save(file: Path | str, record: StepTrace) -> None:
    rundir.write_atomic(Path(file), json.dumps(record.to_json(), ensure_ascii=False, allow_nan=False) + "\n")


def load(file: Path | str) -> StepTrace:
    """One timeline file; a link, FIFO or device is refused (safeopen), as is anything not as save writes it."""
    return StepTrace.from_json(rundir.read_json(Path(file), MAX_TIMELINE_JSON), str(file))
