"""The analysis of a run directory: per case, where the time per call goes; between cases or runs, what
changed. Reads only the run directory (run.json and the .folded files), so it runs anywhere, GPU or not."""

from __future__ import annotations

from pathlib import Path

from . import attribution, diff, rundir
from .errors import FlametoolError, RunDirError

# diff exits with this when the head got slower than --fail-above allows (2 is bad input, 1 a failed case)
SLOWER_EXIT = 3


def analyse_run(run: Path, data: dict, loaded: dict[str, attribution.Profile] | None = None,
                flame_threshold: float | None = None) -> tuple[dict, dict | None]:
    """(analysis, diff) for run.json: every case that has stacks, and the first two such cases diffed.
    A case that cannot be analysed gets {"skipped": why}; that never fails the run. `loaded`: profiles the
    caller has read already (by label), used instead of reading them again; flame_threshold: see diff.diff."""
    analysis: dict[str, dict] = {}
    profiles: list[attribution.Profile] = []
    for label, result in data["results"].items():
        reason = attribution.skip_reason(result)
        if reason is None:
            try:
                profile = loaded[label] if loaded and label in loaded else attribution.load_profile(run, data, label)
            except RunDirError as exc:
                reason = str(exc)
            else:
                profiles.append(profile)
                analysis[label] = attribution.attribute(profile).to_json()
                continue
        analysis[label] = {"skipped": reason}
    case_diff = diff.diff(profiles[0], profiles[1], flame_threshold) if len(profiles) >= 2 else None
    return analysis, case_diff


def analyse_and_save(run: Path, data: dict) -> dict:
    data["analysis"], data["diff"] = analyse_run(run, data)
    rundir.save(run, data)
    return data


def common_case(run_a: Path, a: dict, run_b: Path, b: dict, case: str | None) -> str:
    if case is not None:
        for run, data in ((run_a, a), (run_b, b)):
            if case not in data["results"]:
                raise FlametoolError(f"--case {case!r}: no such case in {run} (cases: {', '.join(data['results']) or 'none'})")
        return case
    shared = [l for l in attribution.sampled_labels(a) if l in attribution.sampled_labels(b)]
    if not shared:
        raise FlametoolError(f"{run_a} and {run_b} have no sampled case in common; name one with --case")
    return shared[0]


def diff_runs(run_a: Path, run_b: Path, case: str | None) -> dict:
    """The same case in two runs, base = RUN_A, head = RUN_B; nothing is written."""
    a, b = rundir.load(run_a), rundir.load(run_b)
    label = common_case(run_a, a, run_b, b, case)
    base = attribution.load_profile(run_a, a, label)
    head = attribution.load_profile(run_b, b, label)
    out = diff.diff(base, head)
    out["base_run"], out["head_run"] = str(run_a), str(run_b)
    shapes = [(d["results"][label].get("sample_shape"), d["results"][label].get("dtype")) for d in (a, b)]
    out["same_shape_and_dtype"] = shapes[0] == shapes[1]
    return out
