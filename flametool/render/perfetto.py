"""One step's timeline as Chrome trace-event JSON (the "JSON Object Format" of Google's Trace Event Format,
which ui.perfetto.dev and chrome://tracing open): per case a process; on the calling thread's track the step's
lines as slices with the CUDA API calls below them (complete events, ph "X", nested by time), other threads'
calls on tracks of their own, the GPU's kernels, copies and memsets on one track per device and stream, and a
flow (ph "s" at the launch, ph "f" at the kernel, one id per correlation id) from each launch to what it
launched. Times are microseconds (ts, dur) from the step's start on CUPTI's clock, so that every case's step
begins at 0."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..analyse.timeline import Timelines
from ..run.steptrace import StepTrace
from .base import Renderer

HOST_TID = 1  # the calling thread's track in each case's process; other threads after it, GPU streams after those
GPU_TID = 1000


def _us(ns: int, origin: int) -> float:
    return round((ns - origin) / 1e3, 3)


def trace_events(t: StepTrace, pid: int, flows: dict[tuple[int, int], int] | None = None) -> list[dict[str, Any]]:
    """The events of one case's step (see the module's note). `flows`: (pid, correlation id) -> flow id, shared by
    every case of one trace: a flow's id is the trace's, not its process's (perfetto and chrome://tracing join the
    "s" and "f" events of one id, category and name whatever their pid), and each case's process numbers its
    correlation ids from 1, so two cases (two builds of one library above all) would share them and their launches
    would point at each other's kernels."""
    flows = {} if flows is None else flows

    def flow(correlation: int) -> int:
        return flows.setdefault((pid, correlation), len(flows) + 1)

    origin = t.start
    threads = sorted({a.thread for a in t.api if a.thread != t.thread})
    tid_of = {t.thread: HOST_TID, **{th: HOST_TID + 1 + i for i, th in enumerate(threads)}}
    streams = sorted({(g.device, g.stream) for g in t.gpu})
    stream_tid = {s: GPU_TID + i for i, s in enumerate(streams)}
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"{t.label} (one step)"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": HOST_TID, "args": {"name": "host: calling thread"}},
        *({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid_of[th], "args": {"name": f"host: thread {th}"}}
          for th in threads),
        *({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"GPU {d} stream {s}"}}
          for (d, s), tid in stream_tid.items()),
        {"ph": "X", "name": "step()", "cat": "step", "pid": pid, "tid": HOST_TID, "ts": 0.0,
         "dur": _us(t.end, origin), "args": {"file": t.file}},
    ]
    for s in t.lines:  # above the API calls: a line's slice encloses the calls made while it ran
        events.append({"ph": "X", "name": f"{t.file}:{s.line}" + (f"  {s.text}" if s.text else ""), "cat": "line",
                       "pid": pid, "tid": HOST_TID, "ts": _us(s.start, origin), "dur": _us(s.end, s.start),
                       "args": {"line": s.line, "text": s.text}})
    launched = {g.correlation for g in t.gpu}
    for a in t.api:
        tid = tid_of.get(a.thread, HOST_TID)
        events.append({"ph": "X", "name": a.name, "cat": "cuda api", "pid": pid, "tid": tid,
                       "ts": _us(a.start, origin), "dur": _us(a.end, a.start), "args": {"correlation": a.correlation}})
        if a.correlation in launched:
            events.append({"ph": "s", "name": "launch", "cat": "launch", "id": flow(a.correlation), "pid": pid, "tid": tid,
                           "ts": _us(a.start, origin)})
    for g in t.gpu:
        tid = stream_tid[(g.device, g.stream)]
        args: dict[str, Any] = {"correlation": g.correlation, "kind": g.kind}
        if g.bytes is not None:
            args["bytes"] = g.bytes
        events.append({"ph": "X", "name": g.name, "cat": g.kind, "pid": pid, "tid": tid,
                       "ts": _us(g.start, origin), "dur": _us(g.end, g.start), "args": args})
        # "bp": "e" binds the flow's end to the slice that encloses it (the kernel), not the next one to begin
        events.append({"ph": "f", "bp": "e", "name": "launch", "cat": "launch", "id": flow(g.correlation), "pid": pid,
                       "tid": tid, "ts": _us(g.start, origin)})
    return events


def perfetto(t: Timelines) -> dict[str, Any]:
    flows: dict[tuple[int, int], int] = {}
    return {"traceEvents": [e for pid, trace in enumerate(t.traces, start=1) for e in trace_events(trace, pid, flows)],
            "displayTimeUnit": "ns",
            "otherData": {"exporter": f"flametool {__version__}", "run": str(t.run_dir),
                          "clock": "CUPTI, microseconds from each step's start"}}


class PerfettoRenderer(Renderer[Timelines]):
    name = "perfetto"
    kind = Timelines

    def render(self, result: Timelines) -> str:
        return json.dumps(perfetto(result), ensure_ascii=False, allow_nan=False) + "\n"
