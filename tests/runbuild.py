"""Hand-built run directories for the analysis tests: run.json as rundir writes it, plus .folded files."""

from __future__ import annotations

from pathlib import Path

from flametool import rundir


def make_run(path: Path, cases: dict[str, tuple[str, float, int]]) -> Path:
    """cases: label -> (folded text, unsampled us per call, loop samples)."""
    path.mkdir(parents=True, exist_ok=True)
    data = rundir.new_run({}, {}, ["flametool", "test"], "2026-11-29T00:00:00+00:00")
    for label, (text, us, loop) in cases.items():
        (path / f"{label}.folded").write_text(text, encoding="utf-8")
        counts = [line.rsplit(" ", 1)[-1] for line in text.splitlines() if line.strip()]
        kept = sum(int(c) for c in counts if c.isdigit()) or 1  # garbage files still claim samples
        result = rundir.blank_result()
        result.update(
            dtype="float32", shape=[64, 64, 64], sample_shape=[64, 64, 64], cpu_us_per_call=us,
            sample_timing={"cpu_us_per_call": us}, samples=kept, rate_hz=100,
            sampling={"kept_samples": kept, "loop_samples": loop}, files={"folded": f"{label}.folded"},
        )
        data["results"][label] = result
    data["complete"] = True
    rundir.save(path, data)
    return path


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file's bytes, to check that a command left the run directory as it was."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
