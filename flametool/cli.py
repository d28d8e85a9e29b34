"""Command line: ``build_parser()`` describes it, ``main(argv)`` checks every input before anything starts
and turns known failures into one line on stderr and an exit code (2 bad input, 1 a case failed,
3 `--fail-above`: the case got slower than allowed (its change's 95% interval wholly above it), 4 `--fail-above`
inconclusive (the interval holds it), 130 interrupted), never a traceback."""

from __future__ import annotations

import argparse
import errno
import math
import os
import signal
import sys
from pathlib import Path

from rich.console import Console

from . import __version__, cases, drilldown, ops, procs, render, rundir
from .analyse import analysis, summary
from .measure import atlasrun, envinfo, environments, paired, runner
from .config import CPU, CUDA, JAX_CPUS, Config, Defaults, default_out, defaults
from .record import size_name
from .render import terminal
from .render.base import Options
from .errors import FlametoolError, Interrupted, WriteError, interrupt_code
from .analyse.layers import VIEWS

MAX_SIZES = 64


# The most each count may be: far beyond any useful run, far below one that would run for days (a call takes a
# microsecond at the least) or overflow a float.
LIMITS = {"iters": 10_000_000, "warmup": 10_000_000, "repeats": 1000, "processes": 100, "sample_seconds": 3600,
          "pool_threads": 4096, "top": 100_000}


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line starting 'flametool: ' (exit 2) like every other fault, not a
    usage block and 'flametool compare: error: ...'."""

    def error(self, message: str):  # noqa: D401 - argparse's hook; must not return
        raise FlametoolError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="flametool",
        description="Where the host (CPU) time goes when a GPU array library launches work, side by side.",
    )
    parser.add_argument("--version", action="version", version=f"flametool {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("compare", help="measure each case in its own process and write a run directory")
    case_options(p)
    p.add_argument("--layers", choices=VIEWS, default="caller",
                   help="system libraries (libc, malloc, locks) in the terminal's layer table: charged to the layer that "
                        "called them (caller, the default) or as a layer of their own (library); the report has both")
    p.add_argument("--shape", help="matmul: M,K,N, a is MxK, b is KxN (default " + ",".join(map(str, CUDA.shape)) + " on CUDA, "
                                   + ",".join(map(str, CPU.shape)) + " on the CPU); the other ops: N elements or R,C "
                                   "(default: the op's host-bound size, as the atlas samples it)")
    sampling_options(p)
    p.add_argument("--sample-shape", help="the shape to sample at (default: the shape when host-bound, else the op's "
                                          "host-bound size: 1024,1024,1024 for matmul)")
    p.add_argument("--no-sample", action="store_true", help="timings and cProfile only; no py-spy")
    p.add_argument("--env", action="append", default=[], metavar="NAME=PYTHON",
                   help="run the cases under this interpreter too (a venv with another build), labelled CASE@NAME; "
                        "give two or more: their processes take turns, each also timing the anchor, and the pair "
                        "CASE@FIRST:CASE@OTHER is compared relative to it (README: comparing two builds)")
    p.add_argument("--anchor", metavar="CASE",
                   help="with --env: the case every environment's processes time beside the others, whose own speed "
                        "cancels the host's (default: the last case of --libs with one version in every environment)")

    p = sub.add_parser("sweep", help="time each case over a ladder of sizes: host, GPU and wall time per call, "
                                     "and where each library stops being host-bound")
    case_options(p)
    p.add_argument("--sizes", help="comma-separated sizes, each N (an NxN by NxN product) or MxKxN, e.g. "
                                   "64,256,1024,4096x1024x4096; 64,128,...,8192 for a geometric ladder; with ';' "
                                   "between sizes, M,K,N too (default: 64 doubling to 16384, then the seed's "
                                   "65536x24576x12288 on CUDA; 8 doubling to 512 on the CPU); for the other ops "
                                   "element counts N or RxC (default: 1024 growing 4x to 2^28 on CUDA, 64 to 2^18 "
                                   "on the CPU)")
    p.add_argument("--sample", action="store_true",
                   help="also profile each case alone (cProfile and py-spy) at each size where it is host-bound, for "
                        "the host time per call by layer there (default: timings only)")
    sampling_options(p)

    p = sub.add_parser("atlas", help="every op (or --ops) for the chosen libraries, each paired and sampled as compare "
                                     "does at the op's host-bound size: a table and one page of host time per call, "
                                     "ratios to the fastest and the layer that differs most")
    case_options(p, op=False)
    p.add_argument("--ops", help="comma-separated ops (default: all: " + ", ".join(ops.OPS) + ")")
    sampling_options(p)

    p = sub.add_parser("diff", help="one case in two run directories (RUN_A RUN_B), or two cases of one run "
                                    "(RUN --base A --head B): layers and frames, head - base")
    p.add_argument("run_a", type=Path, metavar="RUN_A", help="base run directory (or the run, with --base/--head)")
    p.add_argument("run_b", type=Path, metavar="RUN_B", nargs="?", help="head run directory")
    p.add_argument("--case", help="case label (default: the first sampled case both runs have)")
    p.add_argument("--layers", choices=VIEWS, default="caller",
                   help="system libraries charged to their callers' layers (caller, the default) or apart (library)")
    p.add_argument("--base", help="with one run: the base case")
    p.add_argument("--head", help="with one run: the head case")
    p.add_argument("--anchor", metavar="CASE",
                   help="the case both runs timed beside the case, that the change is taken relative to (default: "
                        "the runs' own anchor, else the first such case)")
    p.add_argument("--fail-above", type=float, metavar="PCT",
                   help=f"exit {analysis.SLOWER_EXIT} when the case's host time per call (relative to the anchor) grew "
                        f"by more than PCT percent, its whole 95%% interval above PCT; exit {analysis.INCONCLUSIVE_EXIT} "
                        "(inconclusive) when the interval holds PCT")
    p.add_argument("--top", type=int, default=15, help="frames to list (default 15)")
    p.add_argument("--format", default="text", metavar="FORMAT",
                   help="text (the layer and frame tables, the default), or a summary: markdown (a pull-request "
                        "comment) or json (docs/summary-json.md)")

    p = sub.add_parser("summary", help="a run's headline figures with intervals, largest layer and frame differences "
                                       "and the --fail-above verdict, for CI: text, markdown or json")
    p.add_argument("run", type=Path, metavar="RUN", help="run directory (of compare)")
    p.add_argument("--format", default="text", help="text (the default), markdown (a pull-request comment) or json "
                                                    "(a versioned schema: docs/summary-json.md)")
    p.add_argument("--fail-above", type=float, metavar="PCT",
                   help=f"exit {analysis.SLOWER_EXIT} when a pair's head is slower than its base by more than PCT "
                        f"percent (relative to the anchor with --env), its whole 95%% interval above PCT; exit "
                        f"{analysis.INCONCLUSIVE_EXIT} when the interval holds PCT")

    p = sub.add_parser("export", help="a run's stacks with normalized names, for speedscope or flame graph tools")
    p.add_argument("run", type=Path, metavar="RUN", help="run directory")
    p.add_argument("--format", required=True, help="speedscope (JSON, weights in us per call) or folded (sample counts)")
    p.add_argument("--case", help="export only this case (default: every sampled case)")
    p.add_argument("--lines", action="store_true", help="one frame per source line instead of per function")
    p.add_argument("-o", "--output", type=Path, help="file to write (default, or -: standard output)")

    p = sub.add_parser("report", help="render report.html from a run directory (no GPU needed)")
    p.add_argument("run", type=Path, metavar="RUN_DIR", help="run directory")
    p.add_argument("-o", "--output", type=Path, help=f"HTML file to write, - for standard output (default: RUN_DIR/{rundir.REPORT_FILE})")
    p.add_argument("--open", action="store_true", help="open the report in a web browser when there is one")

    p = sub.add_parser("snakeviz", help="serve a case's cProfile file with snakeviz on 127.0.0.1 until Ctrl-C")
    p.add_argument("run", type=Path, metavar="RUN_DIR", help="run directory")
    p.add_argument("--case", help="case label (default: the first case with a .prof)")
    p.add_argument("--port", type=int, default=drilldown.DEFAULT_PORT,
                   help=f"port to ask for (default {drilldown.DEFAULT_PORT}; snakeviz takes a nearby one if it is in use)")
    return parser


def sampling_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rate", type=int, help=f"py-spy samples per second (default {CUDA.rate_hz} on CUDA, where each native "
                                            f"sample stops a process of many threads for 3-15 ms; {CPU.rate_hz} on the CPU)")
    p.add_argument("--sample-seconds", type=int, help=f"seconds of sampling per case (default {CUDA.sample_seconds} on "
                                                      f"CUDA, {CPU.sample_seconds} on the CPU)")


def sampling_config(args: argparse.Namespace, d: Defaults) -> dict:
    if args.rate is not None and args.rate > 10000:
        raise FlametoolError(f"--rate {args.rate}: py-spy cannot sample faster than 10000 Hz")
    return dict(rate_hz=args.rate or d.rate_hz, sample_seconds=args.sample_seconds or d.sample_seconds)


def case_options(p: argparse.ArgumentParser, op: bool = True) -> None:
    """The options compare, sweep and atlas share: which cases, how they are timed, where the run goes."""
    p.add_argument("--libs", help="built-in cases, comma-separated: " + ", ".join(cases.BUILTIN)
                   + " (default: cupy,torch with a CUDA device, numpy,torch on the CPU)")
    p.add_argument("--case", action="append", default=[], metavar="FILE.py:FACTORY",
                   help="add a user case: FACTORY(shape, dtype, device) (or, for matmul, FACTORY(m, k, n, dtype, "
                        "device)) returns (step, sync); repeatable")
    if op:
        op_option(p)
    p.add_argument("--iters", type=int, default=CPU.iters, help=f"timed calls per loop (default {CPU.iters})")
    p.add_argument("--warmup", type=int, default=CPU.warmup, help=f"warm-up calls (default {CPU.warmup})")
    p.add_argument("--repeats", type=int,
                   help="rounds of timed loops per process (one loop of each case a round); the median is reported "
                        "(default 3, and at a host-bound shape more rounds until each case was timed for "
                        f"{CPU.timed_seconds:g} s; 2 "
                        "where every loop is GPU-bound and takes seconds; a given number is run as given)")
    p.add_argument("--processes", type=int, metavar="N",
                   help="fresh processes that run the timed loops; every case is built in each and their loops "
                        "interleaved, so a process's own speed cancels out of the comparison (default: "
                        f"{CPU.processes}, and in compare up to {CPU.max_processes} while a ratio's interval is wider "
                        f"than ±{paired.SETTLED * 100:.0f}%%, for at most {CPU.extra_seconds:g} s more, while that many would narrow it so; "
                        f"with --env ±{paired.ENV_SETTLED * 100:g}%% of the anchored ratio, up to {CPU.env_max_processes} per "
                        f"environment, {CPU.extra_seconds:g} s more per environment)")  # %%: argparse formats help
    p.add_argument("--pair", action="append", default=[], metavar="BASE:HEAD",
                   help="a pair of cases to compare, head against base (repeatable; default: the first two cases)")
    p.add_argument("--isolate", action="store_true",
                   help="time each case in processes of its own instead (for a case that cannot share a process); "
                        "its comparison with the others is then not paired")
    p.add_argument("--dtype", help="float16, bfloat16, float32 or float64, or per case: cupy=float16,torch=bfloat16 "
                                   "(default float16 on CUDA, float32 on the CPU)")
    p.add_argument("--device", help="cuda:N or cpu (default cuda:0 when a CUDA device is found, else cpu)")
    p.add_argument("--pool-threads", type=int, metavar="N",
                   help="threads of the CPU thread pools (OpenMP, OpenBLAS, MKL) in each case's process; 0 leaves "
                        "them as the environment says (default 1: on CUDA the GPU does the work and each native "
                        "sample stops every thread; on the CPU a pool of 2 made torch's small products bimodal, "
                        "its ratio to numpy 1.26 in one run and 1.69 in the next, where 1 thread read 0.96 in each)")
    p.add_argument("--keep-going", action="store_true", help="run the other cases when one fails")
    p.add_argument("--out", type=Path, help="run directory to create (default flametool-runs/<timestamp>)")


def op_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", default=ops.DEFAULT_OP, help="the operation each built-in case launches: "
                   + "; ".join(f"{o.name}: {o.does}" for o in ops.OPS.values()) + " (default matmul)")


def parse_shape(text: str, option: str, op: str = ops.DEFAULT_OP) -> list[int]:
    parts = text.split(",")
    try:
        shape = [int(p) for p in parts]
    except ValueError:
        shape = []
    if len(shape) not in ops.OPS[op].ranks or any(x <= 0 for x in shape):
        raise FlametoolError(f"{option} {text!r}: expected " + ("three positive integers M,K,N" if op == "matmul" else
                             f"N (elements) or R,C, positive integers, for --op {op}"))
    return shape


def parse_pair(text: str, labels: list[str]) -> list[str]:
    base, sep, head = text.partition(":")
    if not sep or not base or not head or base == head:
        raise FlametoolError(f"--pair {text!r}: expected BASE:HEAD, two different cases of this run")
    for label in (base, head):
        if label not in labels:
            raise FlametoolError(f"--pair {text!r}: no case named {label!r} in this run ({', '.join(labels)})")
    return [base, head]


def parse_device(text: str) -> str:
    if text == "cpu":
        return "cpu"
    head, sep, index = text.partition(":")
    if head == "cuda" and (not sep or index.isdigit()):
        return f"cuda:{int(index or 0)}"
    raise FlametoolError(f"--device {text!r}: expected cpu or cuda:N")


def parse_dtypes(text: str, labels: list[str]) -> dict[str, str]:
    """'float16' or 'cupy=float16,torch=bfloat16' or 'float32,torch=float16' (a bare name is the default)."""
    default: str | None = None
    per_case: dict[str, str] = {}
    for item in text.split(","):
        label, sep, dtype = item.strip().rpartition("=")
        if dtype not in cases.DTYPES:
            raise FlametoolError(f"--dtype {text!r}: unknown dtype {dtype!r}; choose from {', '.join(cases.DTYPES)}")
        if not sep:
            default = dtype
        elif label not in labels:
            raise FlametoolError(f"--dtype {text!r}: no case named {label!r} in this run ({', '.join(labels)})")
        else:
            per_case[label] = dtype
    missing = [l for l in labels if l not in per_case]
    if missing and default is None:
        raise FlametoolError(f"--dtype {text!r}: no dtype for {', '.join(missing)}; add a default, e.g. float16,{text}")
    return {l: per_case.get(l, default) for l in labels}


def check_limits(args: argparse.Namespace) -> None:
    for name, most in LIMITS.items():
        value = getattr(args, name, None)
        if value is not None and value > most:
            text = str(value) if len(str(value)) <= 20 else f"{str(value)[:8]}... ({len(str(value))} digits)"
            raise FlametoolError(f"--{name.replace('_', '-')} {text}: at most {most:,}")


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

    gpus = envinfo.cuda_device_count()
    cpu_fallback = False
    if args.device is None:
        device = "cuda:0" if gpus else "cpu"
        if not gpus:
            cpu_fallback = True
            say("no CUDA device found: comparing numpy and torch on the CPU" + (" at a small shape" if command == "compare" else ""))
    else:
        device = parse_device(args.device)
        if device != "cpu" and cases.cuda_index(device) >= gpus:
            raise FlametoolError(f"--device {device}: " + (f"only {gpus} CUDA device(s) found" if gpus else "no CUDA device found"))
    on_cpu = device == "cpu"

    d = defaults(device)
    op = ops.get(getattr(args, "op", ops.DEFAULT_OP)).name
    libs = args.libs.split(",") if args.libs is not None else list(d.libs)
    specs = [cases.builtin(l.strip(), op) for l in libs if l.strip()] + [cases.user_case(c) for c in args.case]
    labels = [s.label for s in specs]
    if not specs:
        raise FlametoolError("no cases: give --libs and/or --case")
    dupes = sorted({l for l in labels if labels.count(l) > 1})
    if dupes:
        raise FlametoolError(f"case label {dupes[0]!r} appears twice; each case needs its own label")
    for s in specs:
        needs_cuda = s.module and cases.BUILTIN[s.label].needs_cuda
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
        cpus=JAX_CPUS if not on_cpu and any(s.module and cases.BUILTIN[s.label].library == "jax" for s in specs) else None,
    )


def compare_config(args: argparse.Namespace, say) -> Config:
    common = case_config(args, say, "compare")
    d, op = defaults(common["device"]), common["op"]
    shape = (parse_shape(args.shape, "--shape", op) if args.shape else
             list(d.shape) if op == ops.DEFAULT_OP else ops.host_bound_shape(op, common["device"]))
    sample_shape = parse_shape(args.sample_shape, "--sample-shape", op) if args.sample_shape else None
    if args.env:
        common.update(env_config(args, common))
    elif args.anchor is not None:
        raise FlametoolError("--anchor: only with --env (two environments to compare)")
    envs = len(common.get("environments") or [])
    return Config(
        **common, **sampling_config(args, d), shape=shape,
        max_processes=args.processes or (d.env_max_processes if envs else d.max_processes),
        extra_seconds=d.extra_seconds * max(1, envs), sample_shape=sample_shape, sample=not args.no_sample,
        spares=d.spares,
    )


def env_config(args: argparse.Namespace, common: dict) -> dict:
    """--env: every environment checked and probed (each interpreter imports every case) before anything runs;
    the cases, dtypes and pairs as they run in each (CASE@NAME)."""
    if args.isolate:
        raise FlametoolError("--env --isolate: the environments are compared through the anchor timed in the same "
                             "processes; leave out --isolate")
    envs = environments.parse(args.env)
    specs = common["cases"]
    envs = environments.probe(envs, specs)
    anchor = environments.choose_anchor(envs, specs, args.anchor)
    labelled = environments.expand(specs, envs)
    labels = [c.label for c in labelled]
    pairs = [parse_pair(text, labels) for text in args.pair] or environments.default_pairs(specs, envs, anchor)
    dtypes = {c.label: common["dtypes"][c.name] for c in labelled}
    return dict(cases=labelled, dtypes=dtypes, pairs=pairs, environments=envs, anchor=anchor)


def default_sizes(device: str, op: str = ops.DEFAULT_OP) -> list[list[int]]:
    """A geometric ladder per device: squares doubling from the smallest size worth launching to the largest
    worth waiting for, and on CUDA the seed's own shape last; element counts growing 4x for the other ops."""
    return ops.ladder(op, device)


def _uniform(shape: list[int]) -> bool:
    """A size a ladder can run through: a square product or a count of elements."""
    return len(shape) == 1 or (len(shape) == 3 and shape[0] == shape[1] == shape[2])


def parse_sizes(text: str, op: str = ops.DEFAULT_OP) -> list[list[int]]:
    """The sizes of a sweep, in order, none twice:
    '64,256,4096x1024x4096'  each N (an NxN by NxN product) or MxKxN; for the other ops N elements or RxC;
    '64,128,...,8192'        a geometric ladder: the first two set the step, '...' runs on to the last;
    '64;4096,1024,4096'      with ';' between sizes, a size may be written M,K,N (or R,C)."""
    items = [i.strip() for i in text.split(";" if ";" in text else ",")]
    what = "N or MxKxN" if op == ops.DEFAULT_OP else f"N or RxC for --op {op}"
    bad = lambda item, why=f"is not a size; give {what} (positive integers)": FlametoolError(  # noqa: E731
        f"--sizes {text!r}: {item!r} {why}")
    sizes: list[list[int]] = []
    for n, item in enumerate(items):
        if item == "...":
            kind = "square sizes" if op == ops.DEFAULT_OP else "element counts N"
            if not (2 <= len(sizes) == n and n + 1 < len(items)) or not all(_uniform(s) for s in sizes[-2:]):
                raise bad(item, f"needs two {kind} before it and one after, e.g. 64,128,...,8192")
            first, step = sizes[-1][0], sizes[-1][0] / sizes[-2][0]
            last = _size(items[n + 1], bad, op)
            if step <= 1 or not _uniform(last) or last[0] <= first:
                raise bad(item, f"needs growing {kind}, e.g. 64,128,...,8192")
            k = 1
            while round(first * step ** k) < last[0] and len(sizes) <= MAX_SIZES:
                sizes.append([round(first * step ** k)] * len(last))
                k += 1
            continue
        shape = _size(item, bad, op)
        if shape in sizes:
            raise bad(item, "is given twice")
        sizes.append(shape)
    if len(sizes) > MAX_SIZES:
        raise FlametoolError(f"--sizes {text!r}: at most {MAX_SIZES} sizes")
    return sizes


def _size(item: str, bad, op: str = ops.DEFAULT_OP) -> list[int]:
    parts = item.lower().replace(",", "x").split("x")
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        dims = []
    if len(dims) not in ((1, 3) if op == ops.DEFAULT_OP else ops.OPS[op].ranks) or any(d <= 0 for d in dims):
        raise bad(item)
    return dims * 3 if len(dims) == 1 and op == ops.DEFAULT_OP else dims


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
        sampling["sample_seconds"] = atlasrun.SAMPLE_SECONDS[ops.kind(common["device"])]
    return Config(**common, **sampling, shape=list(d.shape), max_processes=common["processes"], extra_seconds=0.0,
                  spares=d.spares), names


def cmd_atlas(args: argparse.Namespace, argv: list[str], err: Console, out: Console) -> int:
    """Every op measured (each op's report written after it), then the atlas's table and page."""
    config, names = atlas_config(args, lambda text: terminal.say(err, text))
    with terminal.Progress(err) as progress:
        try:
            run_dir, run = atlasrun.atlas(config, names, ["flametool", *argv], progress.update,
                                          lambda op_dir: rundir.write_report(op_dir, page(op_dir)))
        except KeyboardInterrupt as exc:
            if not (config.out / rundir.RUN_FILE).exists():
                terminal.say(err, "flametool: interrupted before anything was measured")
                return interrupt_code(exc)
            # the ops that finished are shown and the page written, as at the end of a whole atlas
            analysed = analysis.analyse_dir(config.out)
            out.file.write(render.get("terminal")(terminal_options(out)).render(analysed))
            write_report(config.out, analysed, err, out)
            terminal.say(err, f"flametool: interrupted; the ops that finished are kept in {rundir.shown(config.out)} "
                              "(complete: false)")
            return interrupt_code(exc)
    analysed = analysis.analyse(run_dir, run)
    out.file.write(render.get("terminal")(terminal_options(out)).render(analysed))
    written = write_report(run_dir, analysed, err, out)
    failed = [p for p in run.parts if p.error]
    for part in failed:
        terminal.say(err, f"flametool: op {part.op}: {part.error}")
    return 1 if failed else (0 if written else 2)


def cmd_compare(args: argparse.Namespace, argv: list[str], err: Console, out: Console) -> int:
    """compare and sweep: measure, then print the analysis and write the report."""
    sweeping = args.command == "sweep"
    config = (sweep_config if sweeping else compare_config)(args, lambda text: terminal.say(err, text))
    with terminal.Progress(err) as progress:
        try:
            run_dir, run = (runner.sweep if sweeping else runner.compare)(config, ["flametool", *argv], progress.update)
        except KeyboardInterrupt as exc:
            kept = config.out / rundir.RUN_FILE
            terminal.say(err, f"flametool: interrupted; what finished is kept in {rundir.shown(kept)} (complete: false)"
                         if kept.exists() else "flametool: interrupted before anything was measured")
            return interrupt_code(exc)
    analysed = analysis.analyse(run_dir, run)
    view = getattr(args, "layers", "caller")
    out.file.write(render.get("terminal")(terminal_options(out, view=view)).render(analysed))
    written = write_report(run_dir, analysed, err, out)
    failed = [l for l, r in run.results.items() if r.error]
    for label in failed:
        terminal.say(err, f"flametool: case {label!r}: {run.results[label].error}")
    # a sweep's case that failed at one size (out of memory at the largest) still has the others; one that failed
    # at every size has nothing, as a case of compare that failed
    nowhere = [l for l, r in run.results.items() if sweeping and not r.error and r.points
               and not any(p.processes for p in r.points)]
    for label in nowhere:
        first = next((p for p in run.results[label].points if p.error), None)
        terminal.say(err, f"flametool: case {label!r}: failed at every size" + (
            f" (at {size_name(first.shape)}: {first.error})" if first else ""))
    failed += nowhere
    # a sampler that hung or crashed kept what it had, but the run is not what was asked for
    unsampled = [l for l, r in run.results.items() if r.sampling is not None and not r.sampling.complete]
    for label in unsampled:
        terminal.say(err, f"flametool: case {label!r}: sampling incomplete: {run.results[label].sampling.error}")
    return 1 if failed or unsampled else (0 if written else 2)


def terminal_options(out: Console, **given) -> Options:
    """The terminal's width and colours, for the terminal renderer."""
    return Options(width=out.width, colour=out.is_terminal, **given)


def write_report(run_dir: Path, analysed: analysis.Analysis, err: Console, out: Console) -> bool:
    """The report is made from what run.json already holds, so failing to render it loses nothing:
    say so in one line and how to try again. A report that renders but cannot be written (a full disk) is
    a fault of the machine (False: exit 2); one that fails to render lets the measurement's exit code stand."""
    try:
        path = rundir.write_report(run_dir, render.get("html")().render(analysed))
    except WriteError as exc:
        terminal.say(err, f"flametool: {exc}; run.json is complete; retry with: flametool report {rundir.shown(run_dir)}")
        return False
    except Exception as exc:  # noqa: BLE001 - any fault here must not hide a finished measurement
        terminal.say(err, f"flametool: report.html not written ({type(exc).__name__}: {exc}); run.json is complete; "
                          f"retry with: flametool report {rundir.shown(run_dir)}")
        return True
    terminal.say(out, f"report: {rundir.shown(path)}")
    return True


def cmd_report(args: argparse.Namespace, err: Console, out: Console) -> int:
    """The page to RUN/report.html, to -o FILE, or with `-o -` to standard output; the line saying where it went
    goes to standard error, so that `-o /dev/stdout > page.html` is the page alone."""
    if args.output == Path("-"):
        if args.open:
            raise FlametoolError("report -o - --open: a page on standard output cannot be opened; give -o FILE")
        out.file.write(page(args.run))
        out.file.flush()
        return 0
    path = rundir.write_report(args.run, page(args.run), args.output)
    terminal.say(err, f"report: {rundir.shown(path)}")
    # an atlas's page in its directory links to its ops' pages: those are written again beside it (with -o
    # the pages go where asked, and nothing is written into the run directory)
    for part in rundir.load(args.run).parts if args.output is None else []:
        if (args.run / part.dir / rundir.RUN_FILE).exists():
            terminal.say(err, f"report: {rundir.shown(rundir.write_report(args.run / part.dir, page(args.run / part.dir)))}")
    if args.open:
        import webbrowser

        if not webbrowser.open(path.resolve().as_uri()):
            terminal.say(err, f"flametool: no web browser found; open {path} yourself")
    return 0


def page(run: Path) -> str:
    """The report of a run directory: loaded, analysed once, rendered."""
    return render.get("html")().render(analysis.analyse_dir(run))


def cmd_snakeviz(args: argparse.Namespace, err: Console, out: Console) -> int:
    target = drilldown.target(args.run, args.case)
    return drilldown.serve(target, args.port, lambda text: terminal.say(out, text, soft_wrap=True))


def check_fail_above(args: argparse.Namespace) -> None:
    if args.fail_above is not None and not (math.isfinite(args.fail_above) and args.fail_above >= 0):
        raise FlametoolError(f"--fail-above {args.fail_above}: must be a number, 0 or more (a percentage)")


def cmd_summary(args: argparse.Namespace, err: Console, out: Console) -> int:
    """The summary of a run, in the format asked; with --fail-above, the exit code of its worst verdict."""
    check_fail_above(args)
    renderer = render.get(args.format, render.SUMMARIES)
    made = summary.of(analysis.analyse_dir(args.run), args.fail_above)
    out.file.write(renderer().render(made))
    out.file.flush()
    if made.exit_code:
        terminal.say(err, f"flametool: {made.verdict.sentence}")
    return made.exit_code


def cmd_diff(args: argparse.Namespace, err: Console, out: Console) -> int:
    check_fail_above(args)
    renderer = render.get(args.format, ("text",) + tuple(f for f in render.SUMMARIES if f != "text"))
    if args.top < 0:
        raise FlametoolError(f"--top {args.top}: must be 0 or more")
    check_limits(args)
    if args.base or args.head:
        if not (args.base and args.head) or args.run_b is not None or args.case is not None:
            raise FlametoolError("diff RUN --base A --head B: one run and two of its cases (or RUN_A RUN_B [--case C])")
        if args.anchor is not None:
            raise FlametoolError("diff RUN --base A --head B --anchor: the anchor is for two runs (RUN_A RUN_B)")
        result = analysis.diff_cases(args.run_a, args.base, args.head, args.layers)
    elif args.run_b is None:
        raise FlametoolError("diff: give two runs (RUN_A RUN_B), or one run with --base A --head B")
    else:
        result = analysis.diff_runs(args.run_a, args.run_b, args.case, args.layers, args.anchor)
    if args.format == "text":
        out.file.write(render.get("terminal")(terminal_options(out, top=args.top)).render(result))
    else:
        out.file.write(renderer().render(summary.of(result, args.fail_above)))
        out.file.flush()
    if args.fail_above is None:
        return 0
    decided = analysis.verdict(result.change, result.label, args.fail_above)
    if decided.exit_code:
        terminal.say(err, f"flametool: {decided.sentence}")
    return decided.exit_code


def cmd_export(args: argparse.Namespace, out: Console) -> int:
    renderer = render.get(args.format, render.EXPORTS)()
    text = renderer.render(analysis.stacks(args.run, rundir.load_profiled(args.run, "export"), args.case, args.lines))
    if args.output is None or args.output == Path("-"):
        out.file.write(text)
        out.file.flush()
        return 0
    rundir.write_output(args.output, text, args.run)
    return 0


class Stdout:
    """Standard output as the commands write it. A reader that stops reading (`| head`) is not a fault: the
    rest of the output is dropped, nothing is said, and the command finishes with its own exit code (a diff
    that passed exits 0, one over --fail-above 3; compare still writes its analysis and report). Any other
    failure (a full disk, /dev/full) ends the command in one line."""

    def __init__(self, stream, quiet: bool = False) -> None:
        self.stream = stream
        self.quiet = quiet  # standard error: a failure is not said (where would it go?), later output dropped
        self.dropped = False  # set after a failure: later output goes nowhere

    def write(self, text: str) -> int:
        if not self.dropped:
            try:
                self.stream.write(text)
                self.stream.flush()
            except OSError as exc:
                self._failed(exc)
        return len(text)

    def flush(self) -> None:
        if not self.dropped:
            try:
                self.stream.flush()
            except OSError as exc:
                self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        self.dropped = True
        try:  # what is still buffered goes nowhere, so Python's own flush at exit cannot fail again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        if exc.errno == errno.EPIPE or self.quiet:
            return
        raise FlametoolError(f"standard output: cannot be written ({exc.strerror or exc})") from None

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"


def _terminate(signum, frame):  # SIGTERM and SIGHUP end a run like Ctrl-C: children stopped, run.json kept
    raise Interrupted(129 if signum == getattr(signal, "SIGHUP", None) else 130)


def take_stop_signals() -> dict:
    """SIGTERM, and SIGHUP (a closed terminal, a dropped ssh connection) unless it is ignored (`nohup`), end
    flametool as Ctrl-C does. Returns the handlers to restore."""
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate)}
    hup = getattr(signal, "SIGHUP", None)
    if hup is not None and signal.getsignal(hup) is not signal.SIG_IGN:
        previous[hup] = signal.signal(hup, _terminate)
    return previous


def internal_error(exc: BaseException, err: Console) -> int:
    """Any exception no part of flametool expected: one line saying what and where the traceback went (a file
    in the temporary directory; never on the terminal), exit 1."""
    import tempfile
    import traceback

    details = "".join(traceback.format_exception(exc))
    where = "nowhere (the temporary directory cannot be written)"
    try:
        fd, path = tempfile.mkstemp(prefix="flametool-traceback-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(f"flametool {__version__}, python {sys.version.split()[0]}, argv {sys.argv!r}\n{details}")
        where = path
    except OSError:
        pass
    first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
    what = f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__
    terminal.say(err, f"flametool: internal error ({what}); the traceback is in {where}: please report it with that "
                      f"file (flametool {__version__})")
    return 1


def take_ctrl_c():
    """Make SIGINT stop flametool even when it was started with SIGINT ignored, and return what to restore.

    A shell without job control starts a background command with SIGINT ignored (a script's `setsid
    flametool compare ... &`), and Python keeps it ignored: a `kill -INT` to the run's process group then
    stopped nothing, and the run went on for as long as it was asked to. When flametool leads its own
    process group (setsid, or a shell with job control), a SIGINT sent to that group is meant for it. Run in
    a script's own group (`flametool ... &` without setsid), it keeps ignoring Ctrl-C, as the shell intends."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN and os.getpgrp() == os.getpid():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return previous


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):  # PYTHONIOENCODING=ascii: '×' and 'µ' printed as escapes, not a crash
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
    # a closed terminal (SIGHUP) cannot take the last line: it goes nowhere, the exit code still says it
    err = Console(file=Stdout(sys.stderr, quiet=True), soft_wrap=True)
    stdout = Stdout(sys.stdout)
    # piped or redirected output is read in a log or an editor, not squeezed to 80 columns
    out = Console(file=stdout) if stdout.isatty() else Console(file=stdout, width=160)
    try:
        args = build_parser().parse_args(argv)
    except FlametoolError as exc:
        terminal.say(err, f"flametool: {exc}")
        return exc.exit_code
    previous = take_stop_signals()
    previous_int = take_ctrl_c()
    previous_tstp = procs.take_ctrl_z()
    try:
        if args.command in ("compare", "sweep"):
            return cmd_compare(args, argv, err, out)
        if args.command == "atlas":
            return cmd_atlas(args, argv, err, out)
        if args.command in ("diff", "export", "report", "summary"):
            with analysis.collector_paused():
                if args.command == "diff":
                    return cmd_diff(args, err, out)
                if args.command == "summary":
                    return cmd_summary(args, err, out)
                if args.command == "export":
                    return cmd_export(args, out)
                return cmd_report(args, err, out)
        if args.command == "snakeviz":
            return cmd_snakeviz(args, err, out)
        raise FlametoolError(f"unknown command {args.command}")
    except FlametoolError as exc:
        terminal.say(err, f"flametool: {exc}")
        return exc.exit_code
    except KeyboardInterrupt as exc:
        err.print("flametool: interrupted", highlight=False)
        return interrupt_code(exc)
    except Exception as exc:  # noqa: BLE001 - the last resort: one line and a file, never a traceback
        return internal_error(exc, err)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
        if previous_tstp is not None:
            signal.signal(signal.SIGTSTP, previous_tstp)


def main_entry() -> None:
    sys.exit(main())
