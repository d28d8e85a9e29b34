"""`flametool atlas`: every op (or those chosen) measured as compare measures one, each into a folder of its
own in the atlas's directory, at the op's host-bound size (ops.py says why those sizes), all of an op's
libraries paired in its timing processes; the atlas's run.json lists the ops' folders (Run.parts) and is
saved after each op, so an atlas stopped at a later op keeps the earlier ones."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from ..workload import builtins, ops, workloads
from ..run import rundir
from . import machine, runner, sampler
from .spawn import Progress
from .config import Config
from ..errors import CaseError
from ..run.record import AtlasPart, Run, RunConfig, part_word


def op_config(atlas: Config, op: str, out: Path, workload: workloads.Workload | None = None) -> Config:
    """The compare run of one op: the atlas's cases made for `op`, at its host-bound size, every library
    diffed against the first (each op's report then has a diff of every library; the atlas itself compares
    each with the op's fastest); or of one workload: its case of each library, at its default shape."""
    if workload is not None:
        specs = workload.specs([c.label for c in atlas.cases if c.xp]) + [c for c in atlas.cases if not c.xp]
        shape = list(workload.shape or ())  # settings.atlas_config: a workload of the atlas has a default shape
    else:
        specs = [builtins.builtin(c.label, op) if c.module or c.xp else c for c in atlas.cases]
        shape = ops.host_bound_shape(op, atlas.device)
    labels = [c.label for c in specs]
    return dataclasses.replace(atlas, op=op, cases=specs, shape=shape,
                               out=out, out_is_default=False, sample_shape=None,
                               pairs=[[labels[0], l] for l in labels[1:]] or None)


def part_dir(name: str) -> str:
    """The folder of an op or workload: its name, a user's workload (w.py:FUNC) as workload-FUNC."""
    return name if ":" not in name else "workload-" + name.rpartition(":")[2]


def atlas(config: Config, op_names: list[str], argv: list[str], progress: Progress,
          written: Callable[[Path], object],
          found: dict[str, workloads.Workload] | None = None) -> tuple[Path, Run]:
    """Measure each op of `op_names`, and each workload of `found` named there (written(op_dir) after each: its
    report); returns the atlas's directory and record."""
    found = found or {}
    if not config.out_is_default:
        rundir.ensure_new(config.out)
    if config.sample:
        sampler.check_available()
    for op in op_names:  # a floor has no other op: said now, not after the first op's minutes
        op_config(config, op, config.out / op, found.get(op))
    config.out = rundir.create(config.out, unique=config.out_is_default)
    # the ops' own shapes and pairs are in their run.json; the atlas records which ops, in order
    recorded = {k: v for k, v in config.to_json().items() if k not in ("op", "shape", "sample_shape", "pairs")}
    recorded["ops"] = op_names
    run = Run(schema=rundir.SCHEMA, kind="atlas", complete=False, started=runner._now(), finished=None,
              command=argv, config=RunConfig.of(recorded), env=machine.collect(config.device),
              parts=[AtlasPart(op, part_dir(op)) for op in op_names])
    rundir.save(config.out, run)
    try:
        for i, part in enumerate(run.parts):
            say = lambda label, what, i=i, op=part.op: progress(f"{part_word(op)} {i + 1}/{len(run.parts)} {op}: {label}", what)  # noqa: E731
            try:
                runner.compare(op_config(config, part.op, config.out / part.dir, found.get(part.op)), argv, say)
            except CaseError as exc:  # the op's run keeps what it measured; the next op goes on
                part.error = str(exc)
            written(config.out / part.dir)
            rundir.save(config.out, run)
        run.complete = True
    finally:
        run.finished = runner._now()
        rundir.save(config.out, run)
    return config.out, run
