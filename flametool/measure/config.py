"""What a measurement is asked to do (Config, what the runner reads and run.json records), and the one place
its defaults are set, per device (Defaults): the command line fills a Config from them and the options given,
and a Config built in code without them gets the CPU's."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..workload import ops
from ..workload.inputs import OPERAND_SEED

if TYPE_CHECKING:  # annotations only: the command line reads the defaults here for --help, which need not
    # import the case loader or the run record (issue 42: --help in under 0.15 s)
    from ..workload.cases import CaseSpec
    from ..run.record import Environment

SEED_SHAPE = list(ops.SEED_SHAPE)


@dataclass(frozen=True)
class Defaults:
    """A run's defaults on one kind of device."""

    libs: tuple[str, ...]
    dtype: str
    shape: tuple[int, ...]  # compare's
    sweep_sizes: tuple[tuple[int, ...], ...]
    # On the H200 a native sample stopped a CUDA process for 3-15 ms (the loop ran 1.17-1.77x slower at 50 Hz),
    # so 25 Hz keeps the slowdown near 1.2-1.4x, and 16 s still gives about 400 samples in the loop.
    rate_hz: int
    sample_seconds: float  # a whole number where it is one (options.seconds_value)
    # With the thread pools as they start (one thread per core) a CUDA child had 34 threads on a 32-core H200
    # host and a 25 Hz sample slowed the loop 1.49x; with one thread per pool it had 3 and 1.09x (cupy) / 1.15x
    # (torch), with the same unsampled time per call. On the 2-core CPU machine torch at 64^3 with its pool of 2
    # threads was bimodal: torch/numpy 1.685 (1.121-2.534), the next run 1.261 (1.061-1.500), and a sweep read
    # 15.9 ms per call at 32^3 where a plain loop takes 11 us; with one thread per pool 0.957 (0.934-0.981).
    # Launch-sized products gain nothing from a pool, so one thread on either device: a verdict that holds
    # from run to run.
    pool_threads: int
    spares: bool  # compare starts its later processes ahead (spawn.Spares): on a GPU
    iters: int = 250
    warmup: int = 50
    # Timing processes. On the H200 host the cupy/torch ratio of one process varied by about ±1.5% between
    # processes while the absolute times varied by 50%; five processes pool that to well within the 3% that
    # three runs in a row must agree to, and at 1024^3 each extra process costs a few seconds (set-up and
    # imports; its loops take milliseconds). At a GPU-bound shape only the first process times the requested
    # shape; the others time the host-bound sample shape.
    repeats: int = 3
    processes: int = 5
    # ... but on the H200 (2026-11-30) the ratio of one process still ranged 0.60-0.67 across processes, so five
    # do not always settle it: without --processes, compare runs more while a ratio's interval is wider than
    # SETTLED (below), up to max_processes and for at most extra_seconds more (about 10 s a process at 1024^3),
    # and only while max_processes processes spread as those so far would settle it.
    max_processes: int = 12
    extra_seconds: int = 60
    # With --env the anchored ratio's interval carries the spread of two environments' processes: on the H200
    # (benchmarks/envs.py, 2026-12-01) log(cupy/torch) spread 0.85-3.10% (sd) per environment, and at 10
    # processes each the 1 us plant's half-width read 0.41, 0.73 and 0.46 us over three runs; with 3% on both
    # sides +-2% (0.48 us at 24 us per call) takes about 19 each.
    # Issue 31: with --env the anchored ratio is speed-adjusted (run/speedfit) and its interval from the fit;
    # on the H200 reference runs (benchmarks/estimators.py, 2026-12-01) its median half-width over pseudo null
    # A/Bs read 3.3% at 5 processes a side and 2.4% at 8, so a run with environments starts with env_processes a
    # side and goes on (one process per environment a step) until the interval settles (ENV_SETTLED, below) or,
    # with --fail-above, the verdict is decided, up to env_budget seconds of timing in all (--budget; about 4 s
    # a process at 1024^3 there: 16 processes took 68 s) and env_max_processes a side.
    env_processes: int = 8
    env_budget: float = 180.0
    env_max_processes: int = 60
    # With --env, the timing processes after each environment's first run this many at a time (--processes-at-once):
    # on the H200 (2026-12-02, docs/calibration.md) two at a time, the environments side by side, held five null
    # A/Bs of five at 1 (half-widths 1.05-1.68%) and three plants of three, in 0.7-1.0 min a null against 1.3 one
    # at a time. Not without --env: there the unanchored cupy/torch ratio read 0.670-0.673 two at a time against
    # 0.653-0.655 one at a time, alternated in one call (a host slowed by its neighbour moves that ratio; the
    # anchored one carries the speed term). On the CPU (2 cores) one at a time.
    env_at_once: int = 1
    # ... and the anchored ratio's interval settles at this reach (ENV_SETTLED, below, on the CPU). On the H200
    # (benchmarks/calibrate.py --compare-args '--settle 1', 2026-12-03 and 2026-12-04, docs/calibration.md) +-1%
    # held six null A/Bs of six at 1 and three plants of three; the nulls' whole runs took 61, 66, 74, 77, 93 and
    # 144 s (the last in a noisy stretch of the host): the resolution a build's A/B is for (issue 42: +-1% within 90 s), for
    # 0.3-0.5 min more than +-1.75%.
    env_settle: float = 0.0175
    # Rounds of timed loops at a host-bound shape go on until each case had this long (child.interleaved). On
    # the H200 (benchmarks/noise.py on a default compare, 2026-12-01) half of it would do for the noise: with
    # 1 s a process's ratio kept 0.29% of its own beside 1.88% between processes, from the first half of the
    # rounds 0.46% beside 2.23%, and 0.5 s took the default compare from 1.43 to 1.26 of its floor. But not
    # for the figure: there the ratio climbs for a while after a shape's timing starts (torch/cupy from the
    # first half of each process's rounds, with flametool's medians, read 0.4-2.3% below the whole second in
    # five runs out of five, 0.6448 against 0.6601 in one), and a second's median is the settled value (the
    # last half alone: 0.6604). On the 2-core CPU machine the first half read differently from the whole in 2
    # of 4 runs, in no one direction. So 1 s on both, until a warm-up that takes the climb out is measured.
    timed_seconds: float = 1.0



# A sweep's default ladder: matmul's in ops.py (the other ops have theirs there too).
CPU = Defaults(libs=("numpy", "torch"), dtype="float32", shape=(64, 64, 64),
               sweep_sizes=ops.OPS["matmul"].ladder["cpu"],
               rate_hz=100, sample_seconds=5, pool_threads=1, spares=False)
CUDA = Defaults(libs=("cupy", "torch"), dtype="float16", shape=tuple(SEED_SHAPE),
                sweep_sizes=ops.OPS["matmul"].ladder["cuda"],
                rate_hz=25, sample_seconds=16, pool_threads=1, spares=True, env_at_once=2, env_settle=0.01)


# A pair's ratio has settled when its 95% interval reaches no further than this from it (paired.py runs more
# processes until it has; the options' help says it, so it is set here, with the defaults, not in paired.py).
SETTLED = 0.02
# ... and a pair of two environments (compare --env: a build against another, anchored) when it reaches no
# further than this. Such a comparison is there to resolve a change of a microsecond or so: at ±2% the 1 us
# plant of benchmarks/envs.py read half-widths of 0.46-0.54 us where cupy took 24-26 us a call (the H200,
# 2026-12-01); ±1.75% is 0.49 us at 28 us, the slowest the host has run it. On a GPU Defaults.env_settle (1%).
ENV_SETTLED = CPU.env_settle
# The shortest window --sample-seconds takes: py-spy's start-up and the chunks matched to the window (a chunk is at
# least loops.MIN_LOOP_SECONDS) need some tenths of a second around it, and at 100 Hz it is 10 samples
MIN_SAMPLE_SECONDS = 0.1
# Sampling per case and op in an atlas (atlasrun.py): an atlas samples every library at every op (18 cases for
# three libraries), so a shorter window than compare's default; at 25 Hz on CUDA 6 s is about 150 samples a case.
ATLAS_SAMPLE_SECONDS = {"cuda": 6, "cpu": 2}


# A jax GPU process starts about four threads per CPU it may run on (XLA sizes its pools by the CPU affinity;
# XLA_FLAGS' CPU thread options changed nothing): 75 on the 16-core H200 host, 19 with 2 CPUs, and each native
# sample stops them all (a sampled jitted add ran 1.93x slower at 50 Hz with 60 threads). The launch path is
# one caller thread and a worker or two, and with 2 CPUs its host time per call was no slower (32.6 against
# 40.0 us, benchmarks/jax_threads.py). So a run with a jax case runs every child, every library alike, on 2.
JAX_CPUS = 2


def defaults(device: str) -> Defaults:
    return CPU if device == "cpu" else CUDA


def default_out() -> Path:
    from datetime import datetime  # noqa: PLC0415 -- not for --help

    return Path("flametool-runs") / datetime.now().strftime("%Y%m%d-%H%M%S")


@dataclass
class Config:
    cases: list[CaseSpec]
    device: str
    shape: list[int]
    dtypes: dict[str, str]  # label -> dtype
    iters: int = CPU.iters
    warmup: int = CPU.warmup
    repeats: int = CPU.repeats
    extend_rounds: bool = True  # more rounds at a host-bound shape (for timed_seconds); False: `repeats` exactly
    timed_seconds: float = CPU.timed_seconds  # each host-bound case's rounds go on until it had this long
    rate_hz: int = CPU.rate_hz
    sample_seconds: float = CPU.sample_seconds
    processes: int = CPU.processes  # fresh processes that run the timed loops
    max_processes: int | None = None  # more, up to this, while a pair's ratio has not settled; None: `processes`
    extra_seconds: float = float(CPU.extra_seconds)  # and while the processes past `processes` have taken less than this
    # --budget: seconds all the timing processes may take (from the first one's start), replacing extra_seconds;
    # None: extra_seconds. --fail-above: more processes until every pair's verdict is decided (or the budget is spent)
    budget: float | None = None
    fail_above: float | None = None
    # --settle: a pair's ratio has settled when its 95% interval reaches no further than this (a fraction) from it;
    # None: SETTLED, or ENV_SETTLED for a pair of two environments
    settle: float | None = None
    # CPU thread pools in the child (spawn.POOL_THREAD_VARS); None: as the environment says
    pool_threads: int | None = None
    sample_shape: list[int] | None = None
    sample: bool = True
    count: bool = True  # the counted loop after each case's other loops (counting.py); --no-count: none
    keep_going: bool = False
    isolate: bool = False  # each case's timed loops in processes of its own (not paired)
    spares: bool = False  # compare starts its later processes ahead (spawn.Spares): on a GPU
    # compare's timing processes forked from a fork server per environment that imported the libraries once
    # (forking.py; compare --fork-processes). On the H200 a process that imports cupy and torch took 3.7-5.1 s
    # before its first timed loop, a forked one 0.36-0.51 s. False: fresh processes, on every device
    fork_server: bool = False
    # --forks-per-server: a fork server forks at most this many, then another takes over (its children share the
    # memory layout of its imports, a fresh process draws its own); None: one server for the whole run
    forks_per_server: int | None = None
    # --processes-at-once: the timing processes after each group's first run this many at a time (each on CPUs of
    # its own, each with its own CUDA context on the one GPU); 1: one at a time, as calibrated on the H200
    at_once: int = 1
    # a pair of two environments has settled when its anchored ratio's interval reaches no further than this
    # (Defaults.env_settle: the device's; --settle replaces it, as it does SETTLED)
    env_settle: float = ENV_SETTLED
    pairs: list[list[str]] | None = None  # [base, head] pairs to compare; None: the first two cases
    out: Path = field(default_factory=default_out)
    out_is_default: bool = False  # out is default_out(): a name already taken gets a suffix (rundir.create)
    cpu_fallback: bool = False  # True when no CUDA device was found and the CPU defaults were taken
    sizes: list[list[int]] | None = None  # a sweep: the shapes to time, in order (`shape` is then the first)
    operand_seed: int = OPERAND_SEED  # the seed the built-in cases' operands are made from (inputs.host_operands)
    # `compare --env`: each environment (probed: environments.probe); the cases are then CASE@NAME, each with
    # its CaseSpec.env, and `anchor` is the case (as --libs names it) every environment's processes time
    environments: list[Environment] = field(default_factory=list)
    anchor: str | None = None
    op: str = "matmul"  # --op: what the built-in cases launch (ops.py); `shape` and `sizes` are this op's
    cpus: int | None = None  # CPUs each child may run on (protocol.CPUS_ENV; a run with jax: JAX_CPUS); None: all
    # --source: folders (resolved, checked by measure.sources.check_source_roots) where the files the samples name
    # are looked for besides the case's folder and the child's sys.path: a library's checkout or build tree
    source_roots: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.max_processes is None:
            self.max_processes = self.processes

    def to_json(self) -> dict:
        data = asdict(self)
        data["cases"] = [c.to_json() for c in self.cases]
        data["out"] = str(self.out)
        data.pop("environments")  # what was found in each is Run.environments; here what was asked
        if self.environments:
            data["envs"] = [{"name": e.name, "python": e.python} for e in self.environments]
        else:  # a run of one environment records its options as before
            data.pop("anchor")
        if not self.source_roots:  # as before --source
            data.pop("source_roots")
        if self.at_once == 1:  # as before --processes-at-once
            data.pop("at_once")
        if self.settle is None:  # as before --settle
            data.pop("settle")
        if not self.environments or self.env_settle == ENV_SETTLED:  # as before the device's own
            data.pop("env_settle")
        return data

    def python(self, env: str | None) -> str:
        """The interpreter that runs a case of environment `env` (None: this one's)."""
        import sys

        return next((e.python for e in self.environments if e.name == env), sys.executable)
