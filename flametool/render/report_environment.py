"""The Environment section of every report page (compare, sweep, atlas): the command, the machine, the versions,
the options as run.json holds them, and what ran beside what was asked (processes, rounds)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from . import format as fmt
from ..run.record import Run


def environment_rows(run: Path, data: Run) -> list[tuple[str, str]]:
    env, config = data.env, data.config
    gpu = env.gpu
    results = data.results.values()
    names = sorted({str(r.device_name) for r in results if r.device_name})
    runtimes = sorted({r.device_info.cuda_runtime for r in results if r.device_info.cuda_runtime})
    command = data.command
    rows = [
        ("command", shlex.join(map(str, command)) if isinstance(command, list) else "–"),
        ("started", data.started or "–"),
        ("finished", (data.finished or "–") + ("" if data.complete else " (incomplete)")),
        ("run directory", str(run)),
        ("device", str(config.device or gpu.device or "–")),
        ("GPU", ", ".join(names) or ", ".join(gpu.visible) or "none"),
        ("driver", gpu.driver or "–"),
        ("CUDA (driver API)", gpu.cuda_driver_api or "–"),
        ("CUDA runtime", ", ".join(runtimes) or "–"),
        ("Python", " ".join(v for v in (env.python_implementation, env.python) if v) or "–"),
        ("OS", env.os or "–"),
        ("CPU", (env.cpu or "–") + (f" ({env.cpu_count} cores usable)" if env.cpu_count else "")),
    ]
    if fmt.run_device(data) == "cpu":  # a CPU run's page does not list the CUDA it did not use
        rows = [(k, v) for k, v in rows if not (k in ("driver", "CUDA (driver API)", "CUDA runtime") and v == "–")]
    rows += [(name, str(v)) for name, v in env.versions.items() if v]
    rows += [(f"environment {e.name}", fmt.environment_line(e).partition(": ")[2]) for e in data.environments]
    if data.config.anchor:
        rows.append(("anchor", f"{data.config.anchor}: timed beside the cases in every environment's processes"))
    shown: tuple[str, ...] = ("op", "ops", "sizes", "shape", "dtypes", "iters", "warmup", "rate_hz", "sample_seconds", "sample_shape", "sample",
             "pool_threads", "isolate", "operand_seed")
    if config.sizes:  # a sweep: its sizes say it; its "shape" is only the first of them
        shown = tuple(k for k in shown if k not in ("shape", "sample_shape"))
    recorded = config.recorded  # the options as run.json holds them, shown as they are
    rows += [(f"config: {k}", json.dumps(recorded[k]) if not isinstance(recorded[k], str) else recorded[k])
             for k in shown if k in recorded]
    return rows + ran_rows(data)


def ran_rows(data: Run) -> list[tuple[str, str]]:
    """What ran, beside what was asked: the timing processes of each group and the rounds of timed loops in
    each process (a host-bound shape runs more rounds than --repeats; more processes run while a ratio is
    unsettled)."""
    asked_p, asked_r = data.config.processes, data.config.repeats
    groups = [g for g in data.groups if g.cases]
    ran = sorted({g.processes for g in groups})
    text = ("; ".join(f"{'+'.join(g.cases)} {g.processes}" for g in groups) if len(ran) > 1
            else str(ran[0]) if ran else "–")
    rows = [("processes run", text + (f" ({asked_p} asked)" if asked_p is not None and ran != [asked_p] else ""))]
    rounds = sorted({len(p.cpu_us) for r in data.results.values()
                     for t in [r.timing, r.sample_timing, *r.points] if t is not None for p in t.processes if p.cpu_us})
    if rounds:
        span = str(rounds[0]) if len(rounds) == 1 else f"{rounds[0]} to {rounds[-1]}"
        seconds = data.config.recorded.get("timed_seconds")
        how_long = f"{seconds:g} s" if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else "long enough"
        # only compare has --timed-seconds: a sweep's or an atlas's page named an option its command lacks
        option = ", --timed-seconds" if isinstance(data.command, list) and data.command[1:2] == ["compare"] else ""
        rows.append(("rounds run per process", span + (f" (at least {asked_r}, --repeats; more where a case is host-bound, "
                                                        f"until it has been timed for {how_long}{option})"
                                                        if asked_r is not None and rounds != [asked_r] else "")))
    return rows
