"""A measuring command's options turned into its Config (measure/config.py): the cases, the device and its
defaults, the timing and sampling settings, --env's environments, a sweep's sizes and an atlas's ops."""

from __future__ import annotations

import argparse
import math
from typing import cast

from ..errors import FlametoolError
from ..measure import atlasrun, environments, machine, sources, workcheck
from ..measure.child import loops
from ..measure.config import ATLAS_SAMPLE_SECONDS, CPU, JAX_CPUS, MIN_SAMPLE_SECONDS, Config, Defaults, default_out, defaults
from ..workload import builtins, cases, ops, workloads
from ..run.record import base_label
from .options import LIMITS, check_fail_above, check_limits, default_sizes, parse_device, parse_dtypes, parse_pair, parse_pairs, parse_shape, parse_sizes


def sampling_config(args: argparse.Namespace, d: Defaults) -> dict:
    if args.rate is not None and args.rate > 10000:
        raise FlametoolError(f"--rate {args.rate}: py-spy cannot sample faster than 10000 Hz")
    return dict(rate_hz=args.rate or d.rate_hz, sample_seconds=args.sample_seconds or d.sample_seconds)


def unused_options(args: argparse.Namespace, command: str) -> None:
    """Options that would do nothing beside the others given, where the user would take them to have done
    something: one line (exit 2) before anything runs, not a run whose run.json records a setting that never took
    effect (`--repeats 2 --timed-seconds 0.5` ran two rounds; `--isolate --settle 1` added no process). Sampling
    options beside --no-sample (or a sweep's without --sample) are not refused: the switch says plainly that
    nothing is sampled, and a list of options kept for runs with and without it stays usable."""
    if command != "compare":
        return
    if args.repeats is not None and args.timed_seconds is not None:
        # a --repeats given is run as given: the rounds are not extended to --timed-seconds
        raise FlametoolError("--timed-seconds with --repeats: --repeats N runs N rounds exactly, and --timed-seconds "
                             "sets how long the rounds go on without it; give one of them")
    if args.isolate:
        # processes are added only to settle or decide a pair timed in the same processes (measure/paired.py):
        # each isolated case's group has no pair, so its processes are --processes N, whatever these say
        extra = [o for o, v in (("--settle", args.settle), ("--budget", args.budget)) if v is not None]
        if extra:
            raise FlametoolError(f"--isolate with {' and '.join(extra)}: processes are added only for cases timed in "
                                 "the same processes; isolated, each case runs --processes N (default "
                                 f"{CPU.processes}) and no more: give that instead")


def case_config(args: argparse.Namespace, say, command: str) -> tuple[dict, workloads.Workload | None]:
    """What compare, sweep and atlas share, checked: the cases, the device, the timing options and the run
    directory. Returns Config's arguments, and the workload (--workload) whose cases they are, if any."""
    for name in ("iters", "repeats", "processes", "rate"):
        if getattr(args, name, None) is not None and getattr(args, name) < 1:
            raise FlametoolError(f"--{name.replace('_', '-')} {getattr(args, name)}: must be at least 1")
    if getattr(args, "sample_seconds", None) is not None and args.sample_seconds < MIN_SAMPLE_SECONDS:
        raise FlametoolError(f"--sample-seconds {args.sample_seconds:g}: must be at least {MIN_SAMPLE_SECONDS:g}")
    check_limits(args)
    unused_options(args, command)
    if args.warmup < 0:
        raise FlametoolError(f"--warmup {args.warmup}: must be 0 or more")
    if args.pool_threads is not None and args.pool_threads < 0:
        raise FlametoolError(f"--pool-threads {args.pool_threads}: must be 0 (as the environment says) or more")
    try:
        loops.cprofile_seconds()  # read again in each child: a bad value is one line here, before anything runs
    except ValueError as exc:
        raise FlametoolError(str(exc)) from None

    gpus = machine.cuda_device_count()
    cpu_fallback = False
    if args.device is None:
        device = "cuda:0" if gpus else "cpu"
        if not gpus:
            cpu_fallback = True
            # what runs there: the CPU's default libraries, unless --libs named others (then said by their checks)
            what = "comparing numpy and torch" if args.libs is None else "running"
            say(f"no CUDA device found: {what} on the CPU" + (" at a small shape" if command == "compare" and not getattr(args, "shape", None) else ""))
    else:
        device = parse_device(args.device)
        if device != "cpu" and cast(int, cases.cuda_index(device)) >= gpus:  # not the CPU: an index
            raise FlametoolError(f"--device {device}: " + (f"only {gpus} CUDA device(s) found" if gpus else "no CUDA device found"))
    on_cpu = device == "cpu"

    d = defaults(device)
    libs = [l.strip() for l in (args.libs.split(",") if args.libs is not None else d.libs) if l.strip()]
    workload = workload_of(args, device, libs)
    op = workload.name if workload else ops.get(getattr(args, "op", None) or ops.DEFAULT_OP).name
    specs = ((workload.specs(libs) if workload else [builtins.builtin(l, op) for l in libs])
             + [cases.user_case(c) for c in args.case])
    labels = [s.label for s in specs]
    if not specs:
        raise FlametoolError("no cases: give --libs and/or --case")
    dupes = sorted({l for l in labels if labels.count(l) > 1})
    if dupes:
        raise FlametoolError(f"case label {dupes[0]!r} appears twice; each case needs its own label")
    for s in specs:
        needs_cuda = s.xp in workloads.NEEDS_CUDA if s.xp else s.module and builtins.BUILTIN[s.label].needs_cuda
        if needs_cuda and on_cpu:
            # where this machine has no CUDA device, --device cuda:N would only be refused in turn
            raise FlametoolError(f"case {s.label!r} needs a CUDA device; " + (
                "use --device cuda:N or leave it out of --libs" if gpus else
                "this machine has none (no CUDA device found): leave it out of --libs"))

    # with --env the pairs name cases as they run in each environment (CASE@NAME): compare_config reads them
    pairs = None if getattr(args, "env", None) else parse_pairs(args.pair, labels) or None
    dtypes = parse_dtypes(args.dtype or d.dtype, labels)
    pool_threads = d.pool_threads if args.pool_threads is None else args.pool_threads or None
    return dict(
        cases=specs, device=device, dtypes=dtypes, iters=args.iters, warmup=args.warmup,
        repeats=args.repeats or d.repeats, extend_rounds=args.repeats is None, timed_seconds=d.timed_seconds,
        processes=args.processes or d.processes, isolate=args.isolate, pairs=pairs, pool_threads=pool_threads,
        # a workload's cases go on when one fails: a library fn does not port to fails alone (workloads.py)
        keep_going=args.keep_going or workload is not None, out=args.out or default_out(),
        out_is_default=args.out is None, cpu_fallback=cpu_fallback, op=op,
        source_roots=[str(p) for p in sources.check_source_roots(getattr(args, "source", []))],
        cpus=JAX_CPUS if not on_cpu and any(environments.library(s) == "jax" for s in specs) else None,
    ), workload


def workload_of(args: argparse.Namespace, device: str, libs: list[str]) -> workloads.Workload | None:
    """--workload checked (its libraries installed here, unless --env's interpreters run it: they are probed),
    or None without one."""
    text = getattr(args, "workload", None)
    if text is None:
        return None
    if getattr(args, "op", None):
        raise FlametoolError(f"--workload {text} --op {args.op}: a workload is its own step; give one of them")
    if not getattr(args, "env", None):
        workloads.check_libraries(libs)
    else:
        for xp in libs:
            if xp not in workloads.LIBRARY:
                raise FlametoolError(f"--libs {xp}: a workload runs on " + ", ".join(workloads.LIBRARY))
    return workloads.parse(text, device)


def workload_shape(workload: workloads.Workload, text: str | None, option: str = "--shape",
                   command: str = "compare") -> list[int]:
    """A workload's shape: --shape, else its default (FUNC's shape default; the built-in's on this device)."""
    if text is not None:  # given empty ('$SHAPE' unset) it is refused, not read as the default
        return workloads.shape_text(text, option, len(workload.shape) if workload.shape else None)
    if workload.shape is None:
        # an atlas runs each workload at its default: there is no --shape to give it there
        fix = ("give FUNC a default shape (def FUNC(xp, shape=(...))): an atlas runs each workload at its default"
               if command == "atlas" else "give --shape")
        raise FlametoolError(f"--workload {workload.name}: {workload.func}'s shape has no default; {fix}")
    return list(workload.shape)


def compare_config(args: argparse.Namespace, say) -> Config:
    check_fail_above(args)  # before anything is probed
    settle = settle_fraction(args)
    if args.budget is not None and not (math.isfinite(args.budget) and args.budget > 0):
        raise FlametoolError(f"--budget {args.budget}: must be a number of seconds, more than 0")
    if args.timed_seconds is not None and not (math.isfinite(args.timed_seconds) and 0 < args.timed_seconds <= 60):
        raise FlametoolError(f"--timed-seconds {args.timed_seconds}: must be more than 0 and at most 60")
    common, workload = case_config(args, say, "compare")
    d, op = defaults(common["device"]), common["op"]
    if workload:
        shape = workload_shape(workload, args.shape)
        sample_shape = (workload_shape(workload, args.sample_shape, "--sample-shape") if args.sample_shape is not None
                        else None)
        workcheck.check(workload, shape)
    else:
        shape = (parse_shape(args.shape, "--shape", op) if args.shape is not None else
                 list(d.shape) if op == ops.DEFAULT_OP else ops.host_bound_shape(op, common["device"]))
        sample_shape = parse_shape(args.sample_shape, "--sample-shape", op) if args.sample_shape is not None else None
    if args.env:
        common.update(env_config(args, common, say))
    elif args.anchor is not None:
        raise FlametoolError("--anchor: only with --env (two environments to compare)")
    envs = len(common.get("environments") or [])
    if envs and args.processes is None:  # issue 31: more processes a side, until settled or decided, in a budget
        common["processes"] = d.env_processes
    if args.timed_seconds is not None:
        common["timed_seconds"] = args.timed_seconds
    budget = args.budget if args.budget is not None else (d.env_budget if envs else None)
    # --settle, like --fail-above and --budget: processes past --processes until it is met (or the budget spent)
    stopping = args.fail_above is not None or args.budget is not None or settle is not None
    most = d.env_max_processes if envs else (LIMITS["processes"] if stopping else d.max_processes)
    return Config(
        **common, **sampling_config(args, d), shape=shape,
        # --processes N alone: N exactly; else more, up to `most`, until settled (or decided) or the budget is spent
        max_processes=args.processes if args.processes and not stopping else max(most, common["processes"]),
        extra_seconds=d.extra_seconds * max(1, envs), sample_shape=sample_shape, sample=not args.no_sample,
        count=not getattr(args, "no_count", False),
        spares=d.spares and not args.no_spares, fork_server=fork_processes(args),
        forks_per_server=forks_per_server(args), at_once=processes_at_once(args, d.env_at_once if envs else 1),
        budget=budget, fail_above=args.fail_above, settle=settle, env_settle=d.env_settle,
    )


def settle_fraction(args: argparse.Namespace) -> float | None:
    """--settle PCT as a fraction (None: not given). At most 50%: an interval half the ratio wide is no answer."""
    pct = getattr(args, "settle", None)
    if pct is None:
        return None
    if not (math.isfinite(pct) and 0 < pct <= 50):
        raise FlametoolError(f"--settle {pct:g}: must be a percentage more than 0 and at most 50")
    return pct / 100


def fork_processes(args: argparse.Namespace) -> bool:
    """--fork-processes: timing processes forked from fork servers, an opt-in since the H200's calibration
    (2026-12-02: two null A/Bs of two excluded 1 with forked processes, none of ten with fresh ones)."""
    if args.fork_processes and args.fresh_processes:
        raise FlametoolError("--fork-processes with --fresh-processes: give one of them")
    return bool(args.fork_processes)


def processes_at_once(args: argparse.Namespace, default: int) -> int:
    n = getattr(args, "processes_at_once", None)
    if n is None:
        return default
    if not 1 <= n <= LIMITS["processes_at_once"]:
        raise FlametoolError(f"--processes-at-once {n}: must be a whole number from 1 to {LIMITS['processes_at_once']}")
    return n


def forks_per_server(args: argparse.Namespace) -> int | None:
    n = args.forks_per_server
    if n is not None and n < 1:
        raise FlametoolError(f"--forks-per-server {n}: must be a whole number from 1")
    if n is not None and not args.fork_processes:
        raise FlametoolError("--forks-per-server needs --fork-processes: fresh processes are forked by no server")
    return n


def env_config(args: argparse.Namespace, common: dict, say=lambda text: None) -> dict:
    """--env: every environment checked and probed (each interpreter imports every case) before anything runs;
    the cases, dtypes and pairs as they run in each (CASE@NAME)."""
    if args.isolate:
        raise FlametoolError("--env --isolate: the environments are compared through the anchor timed in the same "
                             "processes; leave out --isolate")
    envs = environments.parse(args.env)
    specs = common["cases"]
    if args.anchor is not None:  # before the environments are probed: a pair of the anchor is refused at once
        anchor_not_paired(args.anchor, [t.partition(":")[::2] for t in args.pair])
    envs = environments.probe(envs, specs)
    # the cases --pair compares (checked below): not the default anchor, which they would be taken relative to
    paired = {base_label(x) for t in args.pair for x in t.partition(":")[::2] if x}
    anchor, chosen = environments.choose_anchor(envs, specs, args.anchor, paired)
    if chosen:  # the default: which case, and why it (the pairs name it as what they are relative to)
        say(chosen)
    warning = environments.anchor_warning(envs, specs, anchor)
    if warning:
        say(warning)
    labelled = environments.expand(specs, envs)
    labels = [c.label for c in labelled]
    pairs = parse_pairs(args.pair, labels) or environments.default_pairs(specs, envs, anchor)
    anchor_not_paired(anchor, [tuple(p) for p in pairs])
    dtypes = {c.label: common["dtypes"][c.name] for c in labelled}
    return dict(cases=labelled, dtypes=dtypes, pairs=pairs, environments=envs, anchor=anchor)


def anchor_not_paired(anchor: str, pairs) -> None:
    """An anchor is what both sides of a pair are taken relative to: a pair of the anchor itself (numpy@a:numpy@b
    anchored on numpy) would be its change relative to itself, a ratio of exactly nothing whatever it did."""
    for base, head in pairs:
        if anchor in (base_label(base), base_label(head)):
            raise FlametoolError(f"--anchor {anchor}: the anchor is the case under test in --pair {base}:{head}; anchor on "
                                 "another case, one the same in every environment (e.g. torch)")


def sweep_config(args: argparse.Namespace, say) -> Config:
    common, workload = case_config(args, say, "sweep")
    op = common["op"]
    if workload:
        rank = len(workload.shape) if workload.shape else None
        sizes = parse_sizes(args.sizes, op, rank) if args.sizes is not None else workload.sizes()
        workcheck.check(workload, sizes[0])
    else:
        sizes = parse_sizes(args.sizes, op) if args.sizes is not None else default_sizes(common["device"], op)
    return Config(**common, **sampling_config(args, defaults(common["device"])), shape=sizes[0], sizes=sizes,
                         max_processes=common["processes"], sample=args.sample)


def atlas_config(args: argparse.Namespace, say) -> tuple[Config, list[str], dict[str, workloads.Workload]]:
    """The atlas's Config (its cases as matmul's, or as the first workload's; atlasrun.op_config makes each op's
    and workload's), its ops and workloads in order, and the workloads by name."""
    for option, value in (("--ops", args.ops), ("--workloads", args.workloads)):
        if value is not None and not value.strip(" ,"):  # given empty: not the default of every op
            raise FlametoolError(f"{option} {value!r}: give one or more, e.g. " + ("add,sum" if option == "--ops" else "mlp"))
    given = [w.strip() for w in (args.workloads or "").split(",") if w.strip()]
    names = [o.strip() for o in (args.ops or ("" if given else ",".join(ops.OPS))).split(",") if o.strip()]
    for name in names:
        ops.get(name, "--ops")
    if (not names and not given) or len(set(names)) != len(names):
        raise FlametoolError(f"--ops {args.ops!r}: give each op once, e.g. add,sum")
    if len(set(given)) != len(given):
        raise FlametoolError(f"--workloads {args.workloads!r}: give each workload once, e.g. mlp,softmax")
    if args.pair:  # each op's run diffs every library against the first, and the atlas each against the fastest
        raise FlametoolError("atlas --pair: the atlas pairs each library with the first of each op's run and with the "
                             "op's fastest; for a pair of your own use compare --op OP --pair BASE:HEAD")
    if given and names:  # the ops' cases are the built-ins of --libs, the workloads' their libraries
        raise FlametoolError("atlas --ops and --workloads: give one of them (an atlas is of ops or of workloads)")
    args.workload = given[0] if given else None  # case_config checks the libraries and makes the cases
    common, _ = case_config(args, say, "atlas")
    found = {}
    for text in given:
        w = workloads.parse(text, common["device"])
        workcheck.check(w, workload_shape(w, None, command="atlas"))
        found[w.name] = w
    d = defaults(common["device"])
    sampling = sampling_config(args, d)
    if args.sample_seconds is None:
        sampling["sample_seconds"] = ATLAS_SAMPLE_SECONDS[ops.kind(common["device"])]
    return Config(**common, **sampling, shape=list(d.shape), max_processes=common["processes"], extra_seconds=0.0,
                  spares=d.spares), names + list(found), found
