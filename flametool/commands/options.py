"""The options the commands share and the parsing of their values: argparse's parser with one-line errors,
the case, op and sampling options, and the checks of shapes, sizes, pairs, dtypes, devices and limits. A value
that cannot be used is a FlametoolError naming the option (exit 2) before anything starts."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Mapping, cast

from ..errors import FlametoolError
from ..run.reader import MAX_COUNT, whole
from ..measure.config import CPU, CUDA, MIN_SAMPLE_SECONDS, SETTLED
from ..workload import builtin_workloads, builtins, cases, ops, workloads


MAX_SIZES = 64


# The most each count may be: far beyond any useful run, far below one that would run for days (a call takes a
# microsecond at the least) or overflow a float.
LIMITS = {"iters": 10_000_000, "warmup": 10_000_000, "repeats": 1000, "processes": 100, "sample_seconds": 3600,
          "pool_threads": 4096, "top": 100_000, "processes_at_once": 16}


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line starting 'flametool: ' (exit 2) like every other fault, not a
    usage block and 'flametool compare: error: ...'."""

    def error(self, message: str):  # noqa: D401 - argparse's hook; must not return
        raise FlametoolError(f"{message} (see {self.prog} --help)")

    def parse_args(self, args=None, namespace=None):
        """argparse's, but an option the command does not have points at the command's --help: argparse says it
        from the top parser, and 'sweep --budget 5' sent the user to `flametool --help`, which lists no option of
        any command."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(parsed, "command", None)
            raise FlametoolError(f"unrecognized arguments: {' '.join(extras)} (see {self.prog}"
                                 + (f" {command}" if command else "") + " --help)")
        return parsed


def sampling_options(p: argparse.ArgumentParser, seconds: Mapping[str, float] | None = None) -> None:
    """--rate and --sample-seconds; `seconds` the command's own defaults by device kind (the atlas samples less)."""
    seconds = seconds or {"cuda": CUDA.sample_seconds, "cpu": CPU.sample_seconds}
    p.add_argument("--rate", type=int, help=f"py-spy samples per second (default {CUDA.rate_hz} on CUDA, where each native "
                                            f"sample stops a process of many threads for 3-15 ms; {CPU.rate_hz} on the CPU)")
    p.add_argument("--sample-seconds", type=seconds_value,
                   help=f"seconds of sampling per case, a fraction allowed (at least {MIN_SAMPLE_SECONDS:g}; default "
                        f"{seconds['cuda']} on CUDA, {seconds['cpu']} on the CPU)")


def seconds_value(text: str) -> float:
    """--sample-seconds: a number of seconds, kept a whole number where it is one (run.json and the progress line
    say 5, not 5.0)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds")
    return whole(value)


def case_options(p: argparse.ArgumentParser, op: bool = True, pair: bool = True) -> None:
    """The options compare, sweep and atlas share: which cases, how they are timed, where the run goes (the
    atlas chooses its own pairs: no --pair; and its workloads are --workloads)."""
    p.add_argument("--libs", help="built-in cases, comma-separated: " + ", ".join(builtins.BUILTIN)
                   + "; with a workload the libraries it runs on: " + ", ".join(workloads.LIBRARY)
                   + " (default: cupy,torch with a CUDA device, numpy,torch on the CPU)")
    if op:
        p.add_argument("--workload", metavar="FILE.py:FUNC",
                       help="a step written once against the array API, run on every library of --libs: "
                            "FUNC(xp, shape) returns (fn, inputs), inputs NumPy arrays (--shape: FUNC's shape; "
                            "jax is jitted, jax-eager is not; needs " + workloads.INSTALL + "); or a built-in: "
                            + "; ".join(f"{w.name}: {w.does}" for w in builtin_workloads.WORKLOADS.values())
                            + " (README: writing a workload)")
    p.add_argument("--case", action="append", default=[], metavar="FILE.py:FACTORY",
                   help="add a user case: FACTORY(shape, dtype, device) (or, for matmul, FACTORY(m, k, n, dtype, "
                        "device)) returns (step, sync); repeatable")
    if op:
        op_option(p)
    p.add_argument("--iters", type=int, default=CPU.iters,
                   help=f"timed calls per loop (default {CPU.iters}; where the rounds go on until each case was timed "
                        "long enough, a faster case's loops get more, so that a round's loops are one length)")
    p.add_argument("--warmup", type=int, default=CPU.warmup, help=f"warm-up calls (default {CPU.warmup})")
    p.add_argument("--repeats", type=int,
                   help="rounds of timed loops per process (one loop of each case a round); a case's figure in a "
                        "process is the median of its rounds, then the processes are pooled at the median process's "
                        "speed (default 3, and at a host-bound shape more rounds until each case was timed for "
                        f"{CPU.timed_seconds:g} s; 2 "
                        "where every loop is GPU-bound and takes seconds; a given number is run as given)")
    p.add_argument("--processes", type=int, metavar="N",
                   help="fresh processes that run the timed loops; every case is built in each and their loops "
                        "interleaved, so a process's own speed cancels out of the comparison (default: "
                        f"{CPU.processes}, and in compare up to {CPU.max_processes} while a ratio's interval is wider "
                        f"than ±{SETTLED * 100:.0f}%%, for at most {CPU.extra_seconds:g} s more, while that many would narrow it so; "
                        f"with --env {CPU.env_processes} per environment and more until the anchored ratio's interval "
                        f"reaches ±{CUDA.env_settle * 100:g}%% on a GPU, ±{CPU.env_settle * 100:g}%% on the CPU (or --fail-above is decided), up to {CPU.env_max_processes} per "
                        "environment, within --budget)")  # %%: argparse formats help
    # the atlas takes --pair only to refuse it with what to do instead; its --help does not list it
    p.add_argument("--pair", action="append", default=[], metavar="BASE:HEAD",
                   help=argparse.SUPPRESS if not pair else
                   "a pair of cases to compare, head against base (repeatable; default: the first two library cases, "
                   "not the floors cublas, torch-graph and cupy-graph; each case of your own (--case) against the first "
                   "built-in library case; and each library case against the cublas floor when it runs)")
    p.add_argument("--isolate", action="store_true",
                   help="time each case in processes of its own instead (for a case that cannot share a process); "
                        "its comparison with the others is then not paired")
    p.add_argument("--dtype", help="float16, bfloat16, float32 or float64, or per case: cupy=float16,torch=bfloat16 "
                                   "(default float16 on CUDA, float32 on the CPU)")
    p.add_argument("--device", help="cuda:N or cpu (default cuda:0 when a CUDA device is found, else cpu)")
    p.add_argument("--pool-threads", type=int, metavar="N",
                   help="threads of the CPU thread pools (OpenMP, OpenBLAS, MKL) in each case's process; 0 leaves "
                        "them as the environment says (default 1: on CUDA the GPU does the work and each native "
                        "sample stops every thread; on the CPU a pool of more threads makes small products bimodal, "
                        "so a ratio moves from run to run by far more than its interval: docs/method.md)")
    p.add_argument("--keep-going", action="store_true", help="run the other cases when one fails (a workload's "
                                                             "cases always: a library fn does not port to fails alone)")
    p.add_argument("--source", action="append", default=[], metavar="DIR",
                   help="a library's checkout or build tree, where the generated C/C++ of its Cython is, to map "
                        "sampled .c/.cpp lines to .pyx lines and keep their text (repeatable; docs/lines.md)")
    p.add_argument("--out", type=Path, help="run directory to create (default flametool-runs/<timestamp>)")


def processes_help(p: argparse.ArgumentParser, where: str, command: str) -> None:
    """--processes as a sweep or an atlas runs it (case_options' help speaks of compare's, which adds processes,
    and of --env, --fail-above and --budget, none of them options of these): `where`, what each process times;
    `command`, 'a sweep' or 'an atlas'."""
    for action in p._actions:
        if "--processes" in action.option_strings:
            action.help = (f"fresh processes that run the timed loops {where}; every case is built in each and their "
                           "loops interleaved, so a process's own speed cancels out of each ratio (default "
                           f"{CPU.processes}; {command} adds no processes to narrow an interval)")


def op_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", help="the operation each built-in case launches: "
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
    if any(x > MAX_COUNT for x in shape):  # run.json reads no figure past it back: refused before, not after
        raise FlametoolError(f"{option} {text!r}: a figure above {MAX_COUNT:.0e} is beyond any device's memory")
    return shape


def parse_pairs(texts: list[str], labels: list[str]) -> list[list[str]]:
    """Every --pair, none twice: a pair given twice was compared, printed and summarised twice."""
    pairs: list[list[str]] = []
    for text in texts:
        pair = parse_pair(text, labels)
        if pair in pairs:
            raise FlametoolError(f"--pair {text!r}: given twice")
        pairs.append(pair)
    return pairs


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
    # a label without a dtype of its own takes the default, which is not None then (checked above)
    return cast("dict[str, str]", {l: per_case.get(l, default) for l in labels})


def check_limits(args: argparse.Namespace) -> None:
    for name, most in LIMITS.items():
        value = getattr(args, name, None)
        if value is not None and value > most:
            text = str(value) if len(str(value)) <= 20 else f"{str(value)[:8]}... ({len(str(value))} digits)"
            raise FlametoolError(f"--{name.replace('_', '-')} {text}: at most {most:,}")


def check_fail_above(args: argparse.Namespace) -> None:
    if args.fail_above is not None and not (math.isfinite(args.fail_above) and args.fail_above >= 0):
        raise FlametoolError(f"--fail-above {args.fail_above}: must be a number, 0 or more (a percentage)")


def default_sizes(device: str, op: str = ops.DEFAULT_OP) -> list[list[int]]:
    """A geometric ladder per device: squares doubling from the smallest size worth launching to the largest
    worth waiting for, and on CUDA the seed's own shape last; element counts growing 4x for the other ops."""
    return ops.ladder(op, device)


def parse_sizes(text: str, op: str = ops.DEFAULT_OP, rank: int | None = None) -> list[list[int]]:
    """The sizes of a sweep, in order, none twice (a workload's, `op` not an op: `rank` figures each, any number
    where None):
    '64,256,4096x1024x4096'  each N (an NxN by NxN product) or MxKxN; for the other ops N elements or RxC;
    '64,128,...,8192'        a geometric ladder: the first two set the step, '...' runs on to the last;
    '8x256,16x256,...,512x256'  a ladder of shapes: the figures that change grow, the others stay (`_ladder`);
    '64;4096,1024,4096'      with ';' between sizes, a size may be written M,K,N (or R,C)."""
    items = [i.strip() for i in text.split(";" if ";" in text else ",")]
    what = ("N or MxKxN" if op == ops.DEFAULT_OP else f"N or RxC for --op {op}" if op in ops.OPS else
            f"{rank or 'any number of'} figures AxB... for the workload")
    bad = lambda item, why=f"is not a size; give {what} (positive integers)": FlametoolError(  # noqa: E731
        f"--sizes {text!r}: {item!r} {why}")
    sizes: list[list[int]] = []
    for n, item in enumerate(items):
        if item == "...":
            # the two sizes written just before it (not ones a ladder before made) and one after it
            if not (2 <= len(sizes) == n and n + 1 < len(items)):
                raise bad(item, f"needs two sizes before it and one after, e.g. {_ladder_example(op, rank)}")
            last = _size(items[n + 1], bad, op, rank)
            for made in _ladder(sizes[-2], sizes[-1], last, op, rank, lambda why: bad(item, why)):
                if made in sizes:  # '32,8,16,...,64' runs through 32 again
                    from ..run.record import size_name  # run.json's reader: not for `flametool --help`

                    raise bad(item, f"runs through {size_name(made, op)}, which is given before it")
                sizes.append(made)
            continue
        shape = _size(item, bad, op, rank)
        if shape in sizes:
            raise bad(item, "is given twice")
        sizes.append(shape)
    if len(sizes) > MAX_SIZES:
        raise FlametoolError(f"--sizes {text!r}: at most {MAX_SIZES} sizes")
    return sizes


def _ladder(a: list[int], b: list[int], last: list[int], op: str, rank: int | None, bad) -> list[list[int]]:
    """The sizes '...' stands for between b and last (neither included), a, b the two before it: the figures a
    and b differ in grow by b's over a's at each size, the others stay as they are, until the growing ones reach
    last's. One rule for every sweep: an op's N and a matmul's NxNxN (every figure grows) as a workload's shape
    whose batch grows at a fixed width (16x256,32x256,...,1024x256), so that what a ladder means never depends
    on what is swept (it read squares and element counts alone, and a workload's shape of two or more figures
    could not be written as a ladder at all). Refused (bad(why)): sizes of different numbers of figures, no
    figure growing, figures growing by different steps or shrinking, and a last size off the line the two set (a
    fixed figure changed, the growing ones out of proportion, or not beyond b): each would leave '...' to guess
    what was meant. It stops one past MAX_SIZES ('1,2,...,10**12' is not a trillion sizes made), which
    parse_sizes refuses."""
    example = _ladder_example(op, rank or len(b))  # a workload of no default shape: as many figures as given
    if not len(a) == len(b) == len(last):
        raise bad(f"needs sizes of as many figures before and after it, e.g. {example}")
    growing = [i for i in range(len(b)) if a[i] != b[i]]
    lead = growing[0] if growing else 0
    # one step for every growing figure, compared in integers (b_i/a_i == b_lead/a_lead), not as rounded floats
    if (not growing or any(b[i] <= a[i] or b[i] * a[lead] != b[lead] * a[i] for i in growing)
            or any(last[i] != b[i] for i in range(len(b)) if i not in growing)
            or any(last[i] * b[lead] != last[lead] * b[i] for i in growing) or last[lead] <= b[lead]):
        raise bad(f"needs growing sizes on one line: the figures that change grow by one step, the others stay, "
                  f"e.g. {example}")
    step = b[lead] / a[lead]
    made: list[list[int]] = []
    k = 1
    while round(b[lead] * step ** k) < last[lead] and len(made) <= MAX_SIZES:
        made.append([round(b[i] * step ** k) if i in growing else b[i] for i in range(len(b))])
        k += 1
    return made


def _ladder_example(op: str, rank: int | None) -> str:
    """A ladder of this sweep's sizes for an error to show: a workload's grows its first figure at fixed others."""
    if op in ops.OPS or not rank or rank == 1:
        return "64,128,...,8192"
    rest = "x256" * (rank - 1)
    return f"8{rest},16{rest},...,512{rest}"


def _size(item: str, bad, op: str = ops.DEFAULT_OP, rank: int | None = None) -> list[int]:
    parts = item.lower().replace(",", "x").split("x")
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        dims = []
    ranks = ((1, 3) if op == ops.DEFAULT_OP else ops.OPS[op].ranks if op in ops.OPS else
             (rank,) if rank else (len(dims),))
    if not dims or len(dims) not in ranks or any(d <= 0 for d in dims):
        raise bad(item)
    if any(d > MAX_COUNT for d in dims):  # run.json reads no figure past it back: refused before, not after
        raise bad(item, f"has a figure above {MAX_COUNT:.0e}, beyond any device's memory")
    return dims * 3 if len(dims) == 1 and op == ops.DEFAULT_OP else dims
