"""Hand-built run directories for the analysis tests: run.json as rundir writes it, plus .folded files."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from flametool.run import rundir
from flametool.run.profiled import ProfileProcess, Sampling
from flametool.run.record import CaseResult, Group, Run, SweepPoint
from flametool.run.timing import Loops, Timing


def new_run(config: dict | None = None, env: dict | None = None) -> Run:
    return Run(schema=rundir.SCHEMA, complete=False, started="2026-11-29T00:00:00+00:00", finished=None,
               command=["flametool", "test"], config=config or {}, env=env or {})


def case_result(label: str, us: float, kept: int, loop: int = 0, shape=(64, 64, 64), dtype: str = "float32",
                sample_shape=None, sample_us: float | None = None, device: str = "cpu", processes: int = 1,
                **extra) -> CaseResult:
    """A sampled case whose timed loops all read `us` per call (at the sample shape: `sample_us`), in `processes`
    processes (two or more: enough for a --fail-above verdict)."""
    shape = list(shape)
    sample_shape = list(sample_shape) if sample_shape else shape
    at_sample = us if sample_us is None else sample_us
    r = CaseResult(label=label, factory=f"test:{label}", library=extra.pop("library", None), device=device, dtype=dtype,
                   shape=shape, timing=Timing(shape, 200, [Loops([us]) for _ in range(processes)], host_bound=sample_shape == shape,
                                              bound_note="hand-built"),
                   sample_shape=sample_shape, sample_shape_reason="hand-built",
                   sample_timing=Timing(sample_shape, 200, [Loops([at_sample]) for _ in range(processes)], True) if sample_shape != shape else None,
                   profile=ProfileProcess(own=Loops([at_sample]), calls=200,
                                    sampling=Sampling(command=[], rate_hz=100, seconds=1, complete=True, kept_samples=kept,
                                                      loop_samples=loop),
                                    files={"folded": f"{label}.folded"}))
    for key, value in extra.items():
        setattr(r, key, value)
    return r


def make_run(path: Path, cases: dict[str, tuple[str, float, int]], processes: int = 1) -> Path:
    """cases: label -> (folded text, time per call, loop samples), timed in `processes` processes."""
    path.mkdir(parents=True, exist_ok=True)
    run = new_run()
    run.groups.append(Group(list(cases), len(cases) > 1, "hand-built", processes))
    for label, (text, us, loop) in cases.items():
        (path / f"{label}.folded").write_text(text, encoding="utf-8")
        counts = [line.rsplit(" ", 1)[-1] for line in text.splitlines() if line.strip()]
        kept = sum(int(c) for c in counts if c.isdigit()) or 1  # garbage files still claim samples
        run.results[label] = case_result(label, us, kept, loop, group=0, processes=processes)
    run.complete = True
    rundir.save(path, run)
    return path


def make_sweep(path: Path, cases: dict[str, dict[int, tuple[str | None, float, float | None]]], processes: int = 2,
               prof: Callable[[Path], int] | None = None) -> Path:
    """A `sweep --sample` run directory, every case timed in the same processes (paired) at each size N (NxNxN):
    cases: label -> {N: (folded text, or None where it was not profiled there; host us per call; GPU us per call, or
    None on the CPU)}. A profiled size has LABEL@N.folded, and with `prof` (it writes a cProfile file and says how
    many calls it holds) LABEL@N.prof."""
    path.mkdir(parents=True, exist_ok=True)
    sizes = sorted({n for by_size in cases.values() for n in by_size})
    run = new_run({"sizes": [[n] * 3 for n in sizes], "sample": True, "processes": processes, "device": "cpu"})
    run.kind = "sweep"
    run.groups.append(Group(list(cases), len(cases) > 1, "hand-built", processes))
    for label, by_size in cases.items():
        r = CaseResult(label=label, factory=f"test:{label}", library=None, device="cpu", dtype="float32",
                       shape=[sizes[-1]] * 3, group=0)
        for n, (text, us, gpu) in sorted(by_size.items()):
            loops = [Loops([us, us * 1.01], [gpu, gpu] if gpu else [], [0, 1], [us, us * 1.01]) for _ in range(processes)]
            t = SweepPoint([n] * 3, 200, loops)
            if text is not None:
                name = f"{label}@{n}"
                (path / f"{name}.folded").write_text(text, encoding="utf-8")
                kept = sum(int(line.rsplit(" ", 1)[-1]) for line in text.splitlines() if line.strip())
                t.profile = ProfileProcess(own=Loops([us]), calls=200, files={"folded": f"{name}.folded"},
                                           sampling=Sampling(command=[], rate_hz=100, seconds=1, complete=True,
                                                             kept_samples=kept))
                if prof is not None:
                    t.profile.cprofile_calls = prof(path / f"{name}.prof")
                    t.profile.files["prof"] = f"{name}.prof"
            r.points.append(t)
        run.results[label] = r
    run.complete = True
    rundir.save(path, run)
    return path


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file's bytes, to check that a command left the run directory as it was."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def real_compare(cli, tmp_path_factory, name: str, *args: str) -> tuple[Path, Run]:
    """A real `flametool compare ARGS` into a fresh folder (the GPU tests' runs): its directory and record."""
    out = tmp_path_factory.mktemp(name) / "run"
    proc = cli("compare", *args, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    print(proc.stdout)
    return out, rundir.load(out)


def env_run_dir(path: Path, ratios_a: list[float], ratios_b: list[float], sampled: bool = False) -> Path:
    """A `compare --env a --env b` run by hand: numpy in each environment beside torch, the anchor, in the same
    processes; per process numpy / torch as given, torch at 10 us in a's processes and 13 us in b's. `sampled`:
    each case has stacks (else --no-sample)."""
    path.mkdir(parents=True)
    run = new_run({"anchor": "torch", "pairs": [["numpy@a", "numpy@b"]]})
    for g, (env, ratios, torch_us) in enumerate((("a", ratios_a, 10.0), ("b", ratios_b, 13.0))):
        run.groups.append(Group([f"numpy@{env}", f"torch@{env}"], True, "hand-built", len(ratios)))
        for case, figures in (("numpy", [torch_us * r for r in ratios]), ("torch", [torch_us] * len(ratios))):
            label = f"{case}@{env}"
            r = case_result(label, figures[0], 50, 50, group=g, env=env, library=case)
            r.timing = Timing([64, 64, 64], 250, [Loops([v, v]) for v in figures], True)
            if sampled:
                (path / f"{label}.folded").write_text(f"step (s.py:1);{case} (s.py:2) 50\n", encoding="utf-8")
            else:
                r.profile = None
            run.results[label] = r
    run.complete = True
    rundir.save(path, run)
    return path
