"""Schema 1 run.json files (one case per process, results flat, analysis stored beside them) read as schema 2 JSON,
which record.Run.from_json then reads into today's records."""

from __future__ import annotations

from ..errors import RunDirError
from .reader import Reader


def from_schema1(data: dict, file: str) -> dict:
    """A schema 1 run.json as schema 2 JSON. Schema 1 ran each case in its own processes and pooled their
    loops without saying which process ran which, so each case reads as one unpaired group of one process;
    its stored analysis and diff are dropped (they are recomputed with today's rules)."""
    results = {}
    groups = []
    for label, old in data["results"].items():
        if not isinstance(old, dict):
            raise RunDirError(f"{file}: result {label!r} is not an object")
        r = Reader(old, f"results.{label}", file)
        for key in ("cpu_us_per_call", "gpu_us_per_call", "cprofile_us_per_call", "sampled_us_per_call"):
            r.number(key)  # checked here, where the message can still name the field as the file spells it
        r.count("samples"), r.count("rate_hz"), r.count("iters"), r.count("cprofile_calls")
        for key in ("library", "factory", "device", "device_name", "dtype", "error", "bound_note",
                    "sample_shape_reason"):
            r.text(key)
        r.flag("host_bound")
        shape = r.shape("shape")
        sample_shape = r.shape("sample_shape")
        files = r.get("files", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                      "an object of file names", {})
        st = r.obj("sample_timing", optional=True)
        sampling = r.obj("sampling", optional=True)
        if sampling:
            for key in ("slowdown", "behind_seconds"):
                sampling.number(key)
            for key in ("kept_samples", "loop_samples", "total_samples", "calls_per_chunk", "chunks", "threads"):
                sampling.count(key)
        main = _timing1(r, shape)
        sample = _timing1(st, sample_shape) if st else None
        same = sample_shape is None or sample_shape == shape
        at_sample = sample if not same else main
        own = dict(at_sample["processes"][0]) if at_sample else {"cpu_us": [], "gpu_us": [], "slots": []}
        profile = None
        if files or old.get("cprofile_us_per_call") is not None:
            s = dict(sampling.value) if sampling else None
            if s is not None:
                s["sampled_us_per_call"] = old.get("sampled_us_per_call")
                s.setdefault("rate_hz", old.get("rate_hz") or 0)
                s.setdefault("kept_samples", old.get("samples") or 0)
            profile = {"own": own,
                       "calls": (st.value.get("iters") if st else None) or old.get("iters") or 0,
                       "cprofile_us_per_call": old.get("cprofile_us_per_call"), "cprofile_calls": old.get("cprofile_calls"),
                       "files": dict(files), "sampling": s}
        info = {k: old.get(k) for k in ("device_name", "device_index", "pci_bus_id", "cuda_runtime", "cuda_driver_api")
                if old.get(k) is not None}
        groups.append({"cases": [label], "paired": False, "reason": "schema 1: each case in its own processes",
                       "processes": 1})
        results[label] = {
            "factory": old.get("factory") or "", "library": old.get("library"), "device": old.get("device") or "",
            "dtype": old.get("dtype") or "", "shape": shape, "warmup": old.get("warmup") or 0,
            "ops_per_step": old.get("ops_per_step") or 1, "group": len(groups) - 1,
            "timing": main, "sample_shape": sample_shape, "sample_shape_reason": old.get("sample_shape_reason"),
            "sample_timing": None if same else sample, "device_info": info, "profile": profile,
            "error": old.get("error"),
        }
    return {**{k: data.get(k) for k in ("complete", "started", "finished", "command", "config", "env")},
            "schema": 1, "groups": groups, "results": results}


def _timing1(r: Reader, shape: list[int] | None) -> dict | None:
    """A schema 1 timing (median + repeats) as one process's loops; a file with only the median keeps it."""
    if r is None or shape is None:
        return None
    cpu, gpu = r.numbers("cpu_us_per_call_repeats"), r.numbers("gpu_us_per_call_repeats")
    median, gmedian = r.number("cpu_us_per_call"), r.number("gpu_us_per_call")
    if not cpu and median is None:
        return None
    return {"shape": shape, "calls": r.count("iters", 0) or 0,
            "processes": [{"cpu_us": cpu or [median], "gpu_us": gpu or ([gmedian] if gmedian is not None else []),
                           "slots": []}],
            "host_bound": r.flag("host_bound"), "bound_note": r.text("bound_note")}
