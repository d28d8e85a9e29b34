"""A measuring command's options turned into its Config (measure/config.py): the cases, the device and its
defaults, the timing and sampling settings, --env's environments, a sweep's sizes and an atlas's ops."""

from __future__ import annotations

import argparse
import math
from typing import cast

from ..errors import FlametoolError
from ..measure import atlasrun, environments, machine
from ..measure.config import ATLAS_SAMPLE_SECONDS, JAX_CPUS, Config, Defaults, default_out, defaults
from ..workload import builtins, cases, ops
from .options import LIMITS, check_fail_above, check_limits, default_sizes, parse_device, parse_dtypes, parse_pair, parse_shape, parse_sizes


def sampling_config(args: argparse.Namespace, d: Defaults) -> dict:
    if args.rate is not None and args.rate > 10000:
        raise FlametoolError(f"--rate {args.rate}: py-spy cannot sample faster than 10000 Hz")
    return dict(rate_hz=args.rate or d.rate_hz, sample_seconds=args.sample_seconds or d.sample_seconds)


def case_config(args: argparse.Namespace, say, command: str) -> dict:
    """What compare and sweep share, checked: the cases, the device, the timing options and the run directory.
    Returns Config's arguments."""
    for name in ("iters", "repeats", "processes", "rate", "sample_seconds"):
        if getattr(args, name, None) is not None and getattr(args, name) < 1:
            raise FlametoolError(f"--{name.replace('_', '-')} {getattr(args, name)}: must be at least 1")
    check_limits(args)
    if args.warmup < 0:
        raise FlametoolError(f"--warmup {args.warmup}: must be 0 or more")
    if args.pool_threads is not None and args.pool_threads < 0:
        raise FlametoolError(f"--pool-threads {args.pool_threads}: must be 0 (as the environment says) or more")

    gpus = machine.cuda_device_count()
    cpu_fallback = False
    if args.device is None:
        device = "cuda:0" if gpus else "cpu"
        if not gpus:
            cpu_fallback = True
            say("no CUDA device found: comparing numpy and torch on the CPU" + (" at a small shape" if command == "compare" and not getattr(args, "shape", None) else ""))
    else:
        device = parse_device(args.device)
        if device != "cpu" and cast(int, cases.cuda_index(device)) >= gpus:  # not the CPU: an index
            raise FlametoolError(f"--device {device}: " + (f"only {gpus} CUDA device(s) found" if gpus else "no CUDA device found"))
    on_cpu = device == "cpu"

    d = defaults(device)
    op = ops.get(getattr(args, "op", ops.DEFAULT_OP)).name
    libs = args.libs.split(",") if args.libs is not None else list(d.libs)
    specs = [builtins.builtin(l.strip(), op) for l in libs if l.strip()] + [cases.user_case(c) for c in args.case]
    labels = [s.label for s in specs]
    if not specs:
        raise FlametoolError("no cases: give --libs and/or --case")
    dupes = sorted({l for l in labels if labels.count(l) > 1})
    if dupes:
        raise FlametoolError(f"case label {dupes[0]!r} appears twice; each case needs its own label")
    for s in specs:
        needs_cuda = s.module and builtins.BUILTIN[s.label].needs_cuda
        if needs_cuda and on_cpu:
            raise FlametoolError(f"case {s.label!r} needs a CUDA device; use --device cuda:N or leave it out of --libs")

    # with --env the pairs name cases as they run in each environment (CASE@NAME): compare_config reads them
    pairs = None if getattr(args, "env", None) else [parse_pair(text, labels) for text in args.pair] or None
    dtypes = parse_dtypes(args.dtype or d.dtype, labels)
    pool_threads = d.pool_threads if args.pool_threads is None else args.pool_threads or None
    return dict(
        cases=specs, device=device, dtypes=dtypes, iters=args.iters, warmup=args.warmup,
        repeats=args.repeats or d.repeats, extend_rounds=args.repeats is None, timed_seconds=d.timed_seconds,
        processes=args.processes or d.processes, isolate=args.isolate, pairs=pairs, pool_threads=pool_threads,
        keep_going=args.keep_going, out=args.out or default_out(), out_is_default=args.out is None,
        cpu_fallback=cpu_fallback, op=op,
        cpus=JAX_CPUS if not on_cpu and any(s.module and builtins.BUILTIN[s.label].library == "jax" for s in specs) else None,
    )


def compare_config(args: argparse.Namespace, say) -> Config:
    check_fail_above(args)  # before anything is probed
    if args.budget is not None and not (math.isfinite(args.budget) and args.budget > 0):
        raise FlametoolError(f"--budget {args.budget}: must be a number of seconds, more than 0")
    if args.timed_seconds is not None and not (math.isfinite(args.timed_seconds) and 0 < args.timed_seconds <= 60):
        raise FlametoolError(f"--timed-seconds {args.timed_seconds}: must be more than 0 and at most 60")
    common = case_config(args, say, "compare")
    d, op = defaults(common["device"]), common["op"]
    shape = (parse_shape(args.shape, "--shape", op) if args.shape else
             list(d.shape) if op == ops.DEFAULT_OP else ops.host_bound_shape(op, common["device"]))
    sample_shape = parse_shape(args.sample_shape, "--sample-shape", op) if args.sample_shape else None
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
    stopping = args.fail_above is not None or args.budget is not None
    most = d.env_max_processes if envs else (LIMITS["processes"] if stopping else d.max_processes)
    return Config(
        **common, **sampling_config(args, d), shape=shape,
        # --processes N alone: N exactly; else more, up to `most`, until settled (or decided) or the budget is spent
        max_processes=args.processes if args.processes and not stopping else max(most, common["processes"]),
        extra_seconds=d.extra_seconds * max(1, envs), sample_shape=sample_shape, sample=not args.no_sample,
        count=not getattr(args, "no_count", False),
        spares=d.spares and not args.no_spares, budget=budget, fail_above=args.fail_above,
    )


def env_config(args: argparse.Namespace, common: dict, say=lambda text: None) -> dict:
    """--env: every environment checked and probed (each interpreter imports every case) before anything runs;
    the cases, dtypes and pairs as they run in each (CASE@NAME)."""
    if args.isolate:
        raise FlametoolError("--env --isolate: the environments are compared through the anchor timed in the same "
                             "processes; leave out --isolate")
    envs = environments.parse(args.env)
    specs = common["cases"]
    envs = environments.probe(envs, specs)
    anchor = environments.choose_anchor(envs, specs, args.anchor)
    warning = environments.anchor_versions(envs, specs, anchor)
    if warning:
        say(warning)
    labelled = environments.expand(specs, envs)
    labels = [c.label for c in labelled]
    pairs = [parse_pair(text, labels) for text in args.pair] or environments.default_pairs(specs, envs, anchor)
    dtypes = {c.label: common["dtypes"][c.name] for c in labelled}
    return dict(cases=labelled, dtypes=dtypes, pairs=pairs, environments=envs, anchor=anchor)


def sweep_config(args: argparse.Namespace, say) -> Config:
    common = case_config(args, say, "sweep")
    op = common["op"]
    sizes = parse_sizes(args.sizes, op) if args.sizes is not None else default_sizes(common["device"], op)
    return Config(**common, **sampling_config(args, defaults(common["device"])), shape=sizes[0], sizes=sizes,
                         max_processes=common["processes"], sample=args.sample)


def atlas_config(args: argparse.Namespace, say) -> tuple[Config, list[str]]:
    """The atlas's Config (its cases as matmul's; atlasrun.op_config makes each op's) and its ops."""
    names = [o.strip() for o in (args.ops or ",".join(ops.OPS)).split(",") if o.strip()]
    for name in names:
        ops.get(name, "--ops")
    if not names or len(set(names)) != len(names):
        raise FlametoolError(f"--ops {args.ops!r}: give each op once, e.g. add,sum")
    if args.pair:  # each op's run diffs every library against the first, and the atlas each against the fastest
        raise FlametoolError("atlas --pair: the atlas pairs each library with the first of each op's run and with the "
                             "op's fastest; for a pair of your own use compare --op OP --pair BASE:HEAD")
    common = case_config(args, say, "atlas")
    d = defaults(common["device"])
    sampling = sampling_config(args, d)
    if args.sample_seconds is None:
        sampling["sample_seconds"] = ATLAS_SAMPLE_SECONDS[ops.kind(common["device"])]
    return Config(**common, **sampling, shape=list(d.shape), max_processes=common["processes"], extra_seconds=0.0,
                  spares=d.spares), names
