"""What a run measured, typed once: the records run.json holds, with to/from JSON.

run.json holds measurements only (what the loops, cProfile and py-spy produced, and the decisions taken
while measuring: which shape was sampled, which cases shared a process). Everything derived from them
(medians, intervals, ratios, layers, frames, diffs) is computed by ``analysis`` when it is needed, so a
change of the layer rules or of the statistics can never leave two views of one run disagreeing.

A new measured field goes here: a field of the record that holds it, read back in its ``from_json``.

Reading is strict: every value is checked as it is read and a bad one is a RunDirError naming its path in
the file (``results.torch.timing.processes[0].cpu_us``). Schema 1 files (one case per process, results
flat, analysis stored beside them) are read into the same records; see ``from_schema1``.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Literal, overload

from ..workload.builtins import default_pairs
from .counts import Counts
from ..errors import RunDirError

SCHEMA = 3  # 3: ProfileProcess.counts (the counted loop); 2 and 1 are still read
# compare: each case at one shape, timed, profiled and sampled; sweep: each case timed at a list of sizes
# (CaseResult.points). Files from before sweeps have no "kind" and are compare runs.
# atlas: one compare run per op in a folder of its own under the atlas's directory (Run.parts).
KINDS = ("compare", "sweep", "atlas")
# Bounds that keep every derived figure finite: a time per call (us), a ratio or a number of seconds is 0 or
# within [MIN_NUMBER, MAX_NUMBER] (a call of 1e12 us takes eleven days; 1e-6 us is a femtosecond), so that
# sums, differences and quotients of them stay far from overflow; counts stay below MAX_COUNT.
MIN_NUMBER = 1e-6
MAX_NUMBER = 1e12
MAX_COUNT = 10**12
NUMBER = f"a number 0 or from {MIN_NUMBER:g} to {MAX_NUMBER:g}"


# --- checked reading --------------------------------------------------------------------------------------

class Reader:
    """Reads one JSON value with its path for messages; every getter checks the type it returns."""

    def __init__(self, value: Any, where: str, file: str) -> None:
        self.value, self.where, self.file = value, where, file

    def fail(self, key: str, value: Any, expected: str) -> RunDirError:
        import json

        shown = json.dumps(value, allow_nan=True)[:60] if _jsonable(value) else type(value).__name__
        return RunDirError(f"{self.file}: {self._path(key)} is {shown}, expected {expected}")

    def _path(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.where}[{key}]"
        return f"{self.where}.{key}" if self.where else key

    def child(self, key: str | int, value: Any) -> "Reader":
        return Reader(value, self._path(key), self.file)

    # the getters' overloads: a reader given a default that is not None never returns None
    @overload
    def obj(self, key: str, optional: Literal[False] = False) -> "Reader": ...
    @overload
    def obj(self, key: str, optional: bool) -> "Reader | None": ...
    def obj(self, key: str, optional: bool = False) -> "Reader | None":
        v = self.value.get(key) if isinstance(self.value, dict) else None
        if v is None and optional:
            return None
        if not isinstance(v, dict):
            raise self.fail(key, v, "an object")
        return self.child(key, v)

    def get(self, key: str, check: Callable[[Any], bool], expected: str, default: Any = None) -> Any:
        v = self.value.get(key, default)
        if v is None:
            return default
        if not check(v):
            raise self.fail(key, v, expected)
        return v

    @overload
    def number(self, key: str, default: None = None) -> float | None: ...
    @overload
    def number(self, key: str, default: float) -> float: ...
    def number(self, key: str, default: float | None = None) -> float | None:
        v = self.get(key, is_number, NUMBER, default)
        return float(v) if v is not None else None

    @overload
    def count(self, key: str, default: None = None) -> int | None: ...
    @overload
    def count(self, key: str, default: int) -> int: ...
    def count(self, key: str, default: int | None = None) -> int | None:
        return self.get(key, is_count, "a count", default)

    @overload
    def text(self, key: str, default: None = None) -> str | None: ...
    @overload
    def text(self, key: str, default: str) -> str: ...
    def text(self, key: str, default: str | None = None) -> str | None:
        return self.get(key, lambda v: isinstance(v, str), "a string", default)

    @overload
    def flag(self, key: str, default: None = None) -> bool | None: ...
    @overload
    def flag(self, key: str, default: bool) -> bool: ...
    def flag(self, key: str, default: bool | None = None) -> bool | None:
        return self.get(key, lambda v: isinstance(v, bool), "true or false", default)

    def numbers(self, key: str) -> list[float]:
        return [float(x) for x in self.get(key, lambda v: isinstance(v, list) and all(is_number(x) for x in v),
                                           "a list of numbers", [])]

    def shape(self, key: str) -> list[int] | None:
        return self.get(key, is_shape, "a shape (one to three positive integers)")

    def items(self, key: str) -> list["Reader"]:
        """A list of objects (processes, groups, points), each to be read with its own path (null in it is not
        one: its reader would fail on the first field)."""
        v = self.get(key, lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of objects", [])
        return [self.child(key, None).child(i, x) for i, x in enumerate(v)]


def _jsonable(value: Any) -> bool:
    return isinstance(value, (dict, list, str, int, float, bool)) or value is None


def is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and (v == 0 or MIN_NUMBER <= v <= MAX_NUMBER))


def is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_COUNT


def is_shape(v: Any) -> bool:
    """M,K,N (matmul), or N elements or R,C (the other ops, ops.py)."""
    return isinstance(v, list) and 1 <= len(v) <= 3 and all(is_count(x) and x > 0 for x in v)


# --- the records --------------------------------------------------------------------------------------------

# The GPU is "well above" the host when its time per call exceeds the host's by this factor; below it,
# the GPU waited on the CPU and launch cost sets the pace.
HOST_BOUND_FACTOR = 1.2


def boundedness(cpu_us: float, gpu_us: float | None) -> tuple[bool, str]:
    """(host-bound?, why) of a case's host and device time per call: the rule compare and sweep share."""
    if gpu_us is None:
        return True, "CPU device: all the work is on the host"
    if gpu_us > HOST_BOUND_FACTOR * cpu_us:
        return False, (
            f"not host-bound: the GPU takes {gpu_us / cpu_us:.1f}x the host time per call, so the launch queue "
            "hid the launches; CPU time is launch cost only and a sampler would see mostly waiting"
        )
    return True, (
        "host-bound: GPU time per call is close to CPU time per call, so the GPU waited on the CPU "
        "and launch cost sets the pace"
    )


ENV_SEPARATOR = "@"


def env_label(label: str, env: str) -> str:
    """A case as it runs in one environment of `compare --env`: cupy@main."""
    return f"{label}{ENV_SEPARATOR}{env}"


def base_label(label: str) -> str:
    """The case a label names, without its environment: cupy@main -> cupy."""
    return label.rpartition(ENV_SEPARATOR)[0] or label


def size_name(shape: list[int]) -> str:
    """A size as a sweep names it: N for an NxN by NxN product, else MxKxN; N elements, or RxC."""
    return str(shape[0]) if len(shape) == 3 and shape[0] == shape[1] == shape[2] else "x".join(map(str, shape))


def host_bound(timing: "Timing") -> bool | None:
    """compare's rule (record.boundedness) on the medians of every process's loops; None without loops."""
    cpu = timing.median("cpu_us")
    return boundedness(cpu, timing.median("gpu_us"))[0] if cpu is not None else None


@dataclass
class Loops:
    """One process's timed loops of one case at one shape: one figure per loop, us per operation: the host's
    (cpu_us), the device's (gpu_us, by events) and the wall time to the synchronisation after the loop
    (wall_us; runs before 2026-11-30 did not record it). ``slots`` is each loop's place in that process's
    sequence of loops at this shape (all cases counted), so the interleaving can be read back."""

    cpu_us: list[float]
    gpu_us: list[float] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    wall_us: list[float] = field(default_factory=list)
    # CPU time of every thread of the process during each loop, us per operation (the caller's and its
    # workers': jax hands each call to threads of its own); runs before 2026-12-01 did not record it
    all_threads_us: list[float] = field(default_factory=list)
    # of those, the threads other than the caller: all threads' CPU time minus the caller's own (thread_time);
    # schema 3 (runs before it: none)
    other_threads_us: list[float] = field(default_factory=list)

    @classmethod
    def from_json(cls, r: Reader) -> "Loops":
        slots = r.get("slots", lambda v: isinstance(v, list) and all(is_count(x) for x in v), "a list of counts", [])
        return cls(r.numbers("cpu_us"), r.numbers("gpu_us"), slots, r.numbers("wall_us"), r.numbers("all_threads_us"),
                   r.numbers("other_threads_us"))

    def figures(self, metric: str) -> list[float]:
        """The loops' figures of one kind: "cpu_us", "gpu_us" or "wall_us"."""
        return getattr(self, metric)


@dataclass
class Timing:
    """A case's timed loops at one shape, in every process that ran them (the seed's method in each:
    host clock and device events around ``calls`` operations)."""

    shape: list[int]
    calls: int  # operations per loop
    processes: list[Loops]
    host_bound: bool | None = None
    bound_note: str | None = None

    def loops(self, metric: str = "cpu_us") -> list[float]:
        return [v for p in self.processes for v in p.figures(metric)]

    def median(self, metric: str = "cpu_us") -> float | None:
        loops = self.loops(metric)
        return statistics.median(loops) if loops else None

    @property
    def cpu_loops(self) -> list[float]:
        return self.loops("cpu_us")

    @property
    def gpu_loops(self) -> list[float]:
        return self.loops("gpu_us")

    @property
    def cpu_us_per_call(self) -> float | None:
        return self.median("cpu_us")

    @property
    def gpu_us_per_call(self) -> float | None:
        return self.median("gpu_us")

    @property
    def process_medians(self) -> list[float]:
        return [statistics.median(p.cpu_us) for p in self.processes if p.cpu_us]

    @classmethod
    def from_json(cls, r: Reader) -> "Timing":
        return cls(shape=r.shape("shape") or [], calls=r.count("calls", 0),
                   processes=[Loops.from_json(p) for p in r.items("processes")],
                   host_bound=r.flag("host_bound"), bound_note=r.text("bound_note"))


@dataclass
class Sampling:
    """What one py-spy record produced, and how far it can be trusted."""

    command: list[str]
    rate_hz: int
    seconds: int
    complete: bool = False
    exit_code: int | None = None
    error: str | None = None
    refused: bool = False  # the kernel refused py-spy's attach: every later case would be refused too
    window: tuple[float, float] | None = None  # CLOCK_MONOTONIC seconds while py-spy was sampling
    behind_seconds: float = 0.0
    pyspy_samples: int | None = None
    pyspy_errors: int | None = None
    threads: int | None = None  # threads of the target when py-spy attached: each sample stops them all
    total_samples: int = 0  # every stack py-spy wrote
    kept_samples: int = 0  # stacks inside step(), the ones analysis reads
    loop_samples: int = 0  # in the active loop itself, between calls
    outside_samples: int = 0  # sync(), chunk timing, anything outside the active loop
    other_samples: int = 0  # on threads other than the caller's (LABEL.threads.folded; py-spy --threads)
    output_tail: list[str] = field(default_factory=list)
    earlier: list["Sampling"] = field(default_factory=list)  # attempts at a higher rate that fell behind
    # the loop's host time per call while sampled (from the chunks inside the window), and how it was cut
    sampled_us_per_call: float | None = None
    calls_per_chunk: int | None = None
    chunks: int | None = None

    @property
    def behind(self) -> bool:
        return self.behind_seconds > 0

    @property
    def analysed_samples(self) -> int:
        """The samples the analysis reads and every view counts: inside step() and in the loop between calls."""
        return self.kept_samples + self.loop_samples

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("window")
        data.pop("output_tail")
        data.pop("earlier")
        data["earlier_attempts"] = [e.to_json() for e in self.earlier]
        return data

    @classmethod
    def from_json(cls, r: Reader) -> "Sampling":
        command = r.get("command", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                        "a list of strings", [])
        earlier = [Sampling.from_json(e) for e in r.items("earlier_attempts")]
        return cls(
            command=command, rate_hz=r.count("rate_hz", 0), seconds=r.count("seconds", 0),
            complete=r.flag("complete", False), exit_code=r.get("exit_code", lambda v: isinstance(v, int), "an integer"),
            error=r.text("error"), refused=r.flag("refused", False), behind_seconds=r.number("behind_seconds", 0.0),
            pyspy_samples=r.count("pyspy_samples"), pyspy_errors=r.count("pyspy_errors"), threads=r.count("threads"),
            total_samples=r.count("total_samples", 0), kept_samples=r.count("kept_samples", 0),
            loop_samples=r.count("loop_samples", 0), outside_samples=r.count("outside_samples", 0),
            other_samples=r.count("other_samples", 0), earlier=earlier,
            sampled_us_per_call=r.number("sampled_us_per_call"), calls_per_chunk=r.count("calls_per_chunk"),
            chunks=r.count("chunks"),
        )


@dataclass
class ProfileProcess:
    """The case's own process at the sample shape: its unsampled loops (the check on the paired figure),
    the cProfile loop and py-spy's sampling."""

    own: Loops
    calls: int
    cprofile_us_per_call: float | None = None
    cprofile_calls: int | None = None
    sampling: Sampling | None = None
    files: dict[str, str] = field(default_factory=dict)  # "prof", "folded": file names in the run directory
    counts: Counts | None = None  # the counted loop (schema 3): what one step() call does, counted

    @property
    def own_us_per_call(self) -> float | None:
        return statistics.median(self.own.cpu_us) if self.own.cpu_us else None

    @property
    def cprofile_inflation(self) -> float | None:
        own = self.own_us_per_call
        return self.cprofile_us_per_call / own if self.cprofile_us_per_call and own else None

    @property
    def slowdown(self) -> float | None:
        own = self.own_us_per_call
        sampled = self.sampling.sampled_us_per_call if self.sampling else None
        return sampled / own if sampled and own else None

    def to_json(self) -> dict:
        return {"own": asdict(self.own), "calls": self.calls, "cprofile_us_per_call": self.cprofile_us_per_call,
                "cprofile_calls": self.cprofile_calls, "files": self.files,
                "sampling": self.sampling.to_json() if self.sampling else None} | (
                    {"counts": self.counts.to_json()} if self.counts is not None else {})

    @classmethod
    def from_json(cls, r: Reader) -> "ProfileProcess":
        files = r.get("files", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                      "an object of file names", {})
        sampling = r.obj("sampling", optional=True)
        return cls(own=Loops.from_json(r.obj("own")), calls=r.count("calls", 0),
                   cprofile_us_per_call=r.number("cprofile_us_per_call"), cprofile_calls=r.count("cprofile_calls"),
                   sampling=Sampling.from_json(sampling) if sampling else None, files=dict(files),
                   counts=read_counts(r))


def read_counts(r: Reader) -> Counts | None:
    """A profile's counted loop (schema 3; None in older runs), any flaw a RunDirError naming its path."""
    got = r.obj("counts", optional=True)
    if got is None:
        return None
    try:
        return Counts.from_json(got.value)
    except (ValueError, TypeError) as exc:
        raise RunDirError(f"{r.file}: {got.where}: {exc}") from None


@dataclass
class SweepPoint(Timing):
    """A case at one size of a sweep: its timed loops, what stopped it there (the other sizes go on), and with
    --sample its profiled process at that size."""

    error: str | None = None
    profile: ProfileProcess | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        data["profile"] = self.profile.to_json() if self.profile else None
        return data

    @classmethod
    def from_json(cls, r: Reader) -> "SweepPoint":
        profile = r.obj("profile", optional=True)
        return cls(**vars(Timing.from_json(r)), error=r.text("error"),
                   profile=ProfileProcess.from_json(profile) if profile else None)


@dataclass
class Operands:
    """What a case's step multiplied at one shape: a short hash of its operands' bytes (``step.operands``),
    how they were made, and how much of them was hashed (child.fingerprint). Runs before 2026-12-01 have none."""

    shape: list[int]
    fingerprint: str
    made: str
    hashed: str

    @classmethod
    def from_json(cls, r: Reader) -> "Operands":
        return cls(shape=r.shape("shape") or [], fingerprint=r.text("fingerprint", ""), made=r.text("made", ""),
                   hashed=r.text("hashed", ""))


@dataclass
class DeviceInfo:
    """The device a process's cases ran on, as the CUDA library it loaded names it (measure/child.device_info);
    all None on the CPU."""

    device_name: str | None = None
    device_index: int | None = None
    pci_bus_id: str | None = None
    cuda_runtime: str | None = None
    cuda_driver_api: str | None = None

    @classmethod
    def of(cls, data: dict) -> "DeviceInfo":
        """From a message of flametool's own child (protocol): its keys as this class names them."""
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})

    @classmethod
    def from_json(cls, r: Reader) -> "DeviceInfo":
        return cls(device_name=r.text("device_name"), device_index=r.count("device_index"),
                   pci_bus_id=r.text("pci_bus_id"), cuda_runtime=r.text("cuda_runtime"),
                   cuda_driver_api=r.text("cuda_driver_api"))


@dataclass
class HostGpu:
    """The GPUs the machine's driver showed the parent (without a CUDA context: measure/envinfo)."""

    device: str | None = None  # the device the run asked for (cuda:0, cpu)
    driver: str | None = None
    cuda_driver_api: str | None = None
    visible: list[str] = field(default_factory=list)  # GPU names in NVML order

    @classmethod
    def from_json(cls, r: Reader) -> "HostGpu":
        return cls(device=r.text("device"), driver=r.text("driver"), cuda_driver_api=r.text("cuda_driver_api"),
                   visible=list(r.get("visible", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                                      "a list of strings", [])))


@dataclass
class Host:
    """The machine and software a run was measured on, as its parent process saw them (measure/envinfo)."""

    python: str = ""
    python_implementation: str = ""
    executable: str = ""
    os: str = ""
    cpu: str = ""
    cpu_count: int | None = None  # CPUs the parent may run on
    gpu: HostGpu = field(default_factory=HostGpu)
    versions: dict[str, str | None] = field(default_factory=dict)  # package -> version (None: not installed)

    @classmethod
    def of(cls, data: dict) -> "Host":
        """A record built in code (tests) from run.json's layout."""
        return cls.from_json(Reader(data, "env", "run.json"))

    @classmethod
    def from_json(cls, r: Reader) -> "Host":
        gpu = r.obj("gpu", optional=True)
        return cls(python=r.text("python", ""), python_implementation=r.text("python_implementation", ""),
                   executable=r.text("executable", ""), os=r.text("os", ""), cpu=r.text("cpu", ""),
                   cpu_count=r.count("cpu_count"), gpu=HostGpu.from_json(gpu) if gpu else HostGpu(),
                   versions=dict(r.get("versions", lambda v: isinstance(v, dict) and all(
                       isinstance(x, str) or x is None for x in v.values()), "an object of versions", {})))


@dataclass
class Environment:
    """One Python environment of a run (`compare --env NAME=PYTHON`): the interpreter as given, what it is, and
    the versions of the cases' libraries in it (and `git describe` of a library imported from a git checkout),
    read by that interpreter before anything ran (environments.probe)."""

    name: str
    python: str  # the interpreter as given on the command line, made absolute: what runs its processes
    executable: str = ""  # sys.executable there (a venv's python, or what a wrapper script runs)
    python_version: str = ""
    versions: dict[str, str | None] = field(default_factory=dict)  # library -> version (None: it has no version)
    describe: dict[str, str] = field(default_factory=dict)  # library -> git describe of its checkout

    @classmethod
    def from_json(cls, r: Reader) -> "Environment":
        strings = lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values())  # noqa: E731
        return cls(name=r.text("name", ""), python=r.text("python", ""), executable=r.text("executable", ""),
                   python_version=r.text("python_version", ""),
                   versions=dict(r.get("versions", lambda v: isinstance(v, dict) and all(
                       isinstance(x, str) or x is None for x in v.values()), "an object of versions", {})),
                   describe=dict(r.get("describe", strings, "an object of strings", {})))


@dataclass
class CaseResult:
    """One case: what it is, its timed loops at the requested shape and at the sample shape (in every
    process of its group), and its profiled process."""

    label: str
    factory: str
    library: str | None
    device: str
    dtype: str
    shape: list[int]
    warmup: int = 0
    ops_per_step: int = 1
    group: int | None = None  # index into Run.groups: the cases it shared its timing processes with
    timing: Timing | None = None
    sample_shape: list[int] | None = None
    sample_shape_reason: str | None = None
    sample_timing: Timing | None = None  # None when the sample shape is the requested shape
    device_info: DeviceInfo = field(default_factory=DeviceInfo)
    profile: ProfileProcess | None = None
    error: str | None = None
    points: list[SweepPoint] = field(default_factory=list)  # a sweep: the case at each size, in order
    operands: list[Operands] = field(default_factory=list)  # per shape built in its first timing process
    env: str | None = None  # the Run.environments entry it ran under (`compare --env`); None: flametool's own

    def operands_at(self, shape: list[int] | None) -> Operands | None:
        return next((o for o in self.operands if o.shape == shape), None)

    @property
    def at_sample_shape(self) -> Timing | None:
        """The timed loops at the shape py-spy sampled: the figure attribution scales shares by."""
        return self.sample_timing if self.sample_timing is not None else self.timing

    @property
    def device_name(self) -> str | None:
        return self.device_info.device_name

    @property
    def sampling(self) -> Sampling | None:
        return self.profile.sampling if self.profile else None

    @property
    def samples(self) -> int | None:
        s = self.sampling
        return s.kept_samples if s else None

    def file(self, kind: str) -> str | None:
        return (self.profile.files if self.profile else {}).get(kind)

    def to_json(self) -> dict:
        data = asdict(self)
        data["timing"] = asdict(self.timing) if self.timing else None
        data["sample_timing"] = asdict(self.sample_timing) if self.sample_timing else None
        data["profile"] = self.profile.to_json() if self.profile else None
        if self.points:
            data["points"] = [p.to_json() for p in self.points]
        else:  # a compare run's results read as they did before sweeps
            data.pop("points")
        if not self.operands:  # a case without step.operands reads as before
            data.pop("operands")
        if self.env is None:  # a run of one environment reads as before
            data.pop("env")
        return data

    @classmethod
    def from_json(cls, r: Reader, label: str) -> "CaseResult":
        timing, sample_timing, profile = r.obj("timing", True), r.obj("sample_timing", True), r.obj("profile", True)
        info = r.obj("device_info", optional=True)
        return cls(
            label=label, factory=r.text("factory", ""), library=r.text("library"), device=r.text("device", ""),
            dtype=r.text("dtype", ""), shape=r.shape("shape") or [], warmup=r.count("warmup", 0),
            ops_per_step=max(1, r.count("ops_per_step", 1)), group=r.count("group"),
            timing=Timing.from_json(timing) if timing else None,
            sample_shape=r.shape("sample_shape"), sample_shape_reason=r.text("sample_shape_reason"),
            sample_timing=Timing.from_json(sample_timing) if sample_timing else None,
            device_info=DeviceInfo.from_json(info) if info else DeviceInfo(),
            profile=ProfileProcess.from_json(profile) if profile else None, error=r.text("error"),
            points=[SweepPoint.from_json(p) for p in r.items("points")],
            operands=[Operands.from_json(o) for o in r.items("operands")], env=r.text("env"),
        )


@dataclass
class Group:
    """Cases whose timed loops ran in the same processes, interleaved (paired), or one case alone."""

    cases: list[str]
    paired: bool
    reason: str  # why these cases share processes, or why this one runs alone
    processes: int = 0  # how many processes finished their loops

    @classmethod
    def from_json(cls, r: Reader) -> "Group":
        cases = r.get("cases", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of labels", [])
        return cls(cases=cases, paired=r.flag("paired", False), reason=r.text("reason", ""),
                   processes=r.count("processes", 0))


@dataclass
class RunConfig:
    """The options a run was made with (config.Config, as run.json records it), typed where readers compute
    with them. ``recorded`` is the object as it was read (checked by Run.from_json): the report shows it,
    and run.json is written back from it as it was."""

    device: str | None = None
    shape: list[int] | None = None
    warmup: int | None = None
    processes: int | None = None
    repeats: int | None = None
    pool_threads: int | None = None
    sample_seconds: int | None = None
    sizes: list[list[int]] | None = None
    pairs: list[list[str]] | None = None
    anchor: str | None = None  # `compare --env`: the case (as named in --libs) every environment's processes time
    op: str | None = None  # --op (ops.py); runs before it are matmul runs
    recorded: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.recorded:  # built in code: recorded as given
            self.recorded = {k: v for k, v in asdict(self).items() if k != "recorded" and v is not None}

    @classmethod
    def of(cls, data: dict[str, Any]) -> "RunConfig":
        return cls(**{f.name: data.get(f.name) for f in fields(cls) if f.name != "recorded"}, recorded=dict(data))

    @property
    def operation(self) -> str:
        """The op the run measured: matmul where run.json does not say (runs before --op)."""
        return self.op or "matmul"

    @property
    def timing_processes(self) -> int:
        """The processes asked for, as the figures' notes count them (1 for a run that does not say)."""
        return self.processes or 1


@dataclass
class AtlasPart:
    """One op of an atlas: the compare run made for it, in the folder `dir` beside the atlas's run.json (a
    name, never a path), or why it has none."""

    op: str
    dir: str
    error: str | None = None

    @classmethod
    def from_json(cls, r: Reader) -> "AtlasPart":
        name = r.get("dir", lambda v: isinstance(v, str) and v not in ("", ".", "..") and "/" not in v and "\0" not in v,
                     "a folder name")
        return cls(op=r.text("op", ""), dir=name or "", error=r.text("error"))


@dataclass
class Run:
    schema: int
    complete: bool
    started: str
    finished: str | None
    command: list[str]
    config: RunConfig  # a dict given here (a run built in code) is read as one
    env: Host  # likewise
    groups: list[Group] = field(default_factory=list)
    results: dict[str, CaseResult] = field(default_factory=dict)
    kind: str = "compare"  # one of KINDS: what made the run, and so which analysis and report it gets
    environments: list[Environment] = field(default_factory=list)  # `compare --env`: each environment, probed
    parts: list[AtlasPart] = field(default_factory=list)  # an atlas: its ops' runs

    def __post_init__(self) -> None:
        if isinstance(self.config, dict):
            self.config = RunConfig.of(self.config)
        if isinstance(self.env, dict):
            self.env = Host.of(self.env)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The compared pairs, (base, head): as configured (--pair), else cases.default_pairs."""
        chosen = self.config.pairs
        if isinstance(chosen, list) and chosen:
            return [(p[0], p[1]) for p in chosen if isinstance(p, list) and len(p) == 2
                    and p[0] in self.results and p[1] in self.results]
        return default_pairs({label: r.factory for label, r in self.results.items()})

    def environment(self, name: str | None) -> Environment | None:
        return next((e for e in self.environments if e.name == name), None)

    def anchor_beside(self, label: str) -> str | None:
        """The anchor case timed in the same processes as `label` (`compare --env`: the anchor's case in the same
        environment); None in a run without environments, or for the anchor itself."""
        r = self.results.get(label)
        anchor = self.config.anchor
        if r is None or r.env is None or not anchor:
            return None
        beside = next((l for l, x in self.results.items() if x.env == r.env and base_label(l) == anchor), None)
        return beside if beside != label and beside is not None and self.paired(label, beside) else None

    def paired(self, a: str, b: str) -> bool:
        """Cases a and b were timed in the same processes, their loops interleaved."""
        ga, gb = self.group_of(a), self.group_of(b)
        return ga is not None and ga is gb and ga.paired

    def group_of(self, label: str) -> Group | None:
        index = self.results[label].group
        return self.groups[index] if index is not None and 0 <= index < len(self.groups) else None

    def to_json(self) -> dict:
        data = {"schema": SCHEMA, "kind": self.kind, "complete": self.complete, "started": self.started,
                "finished": self.finished,
                "command": self.command, "config": self.config.recorded, "env": asdict(self.env),
                "groups": [asdict(g) for g in self.groups],
                "results": {label: r.to_json() for label, r in self.results.items()}} | (
                {"parts": [asdict(p) for p in self.parts]} if self.kind == "atlas" else {})
        if self.environments:  # an addition a reader of schema 2 without it ignores: the schema stays 2
            data["environments"] = [asdict(e) for e in self.environments]
        return data

    @classmethod
    def from_json(cls, data: Any, file: str) -> "Run":
        r = Reader(data, "", file)
        if not isinstance(data, dict) or not isinstance(data.get("schema"), int) or isinstance(data.get("schema"), bool):
            raise RunDirError(f"{file}: not a flametool run.json (no schema number)")
        if data["schema"] > SCHEMA:
            raise RunDirError(f"{file}: schema {data['schema']} is newer than this flametool understands ({SCHEMA}); "
                              "upgrade flametool")
        if not isinstance(data.get("results"), dict):
            raise RunDirError(f"{file}: 'results' is missing or not an object")
        if data["schema"] < 2:
            data = from_schema1(data, file)
            r = Reader(data, "", file)
        results = r.obj("results")
        config = r.obj("config", optional=True)
        if config:  # the options readers compute with (processes, shape, pairs, ...) are checked like the rest
            for key in ("iters", "warmup", "repeats", "rate_hz", "sample_seconds", "processes", "max_processes",
                        "pool_threads", "operand_seed", "cpus"):
                config.count(key)
            for key in ("sample", "keep_going", "cpu_fallback", "isolate", "extend_rounds", "out_is_default"):
                config.flag(key)
            config.shape("shape"), config.shape("sample_shape"), config.text("device"), config.number("extra_seconds")
            config.text("anchor")
            config.text("op")
            config.get("sizes", lambda v: isinstance(v, list) and all(is_shape(x) for x in v), "a list of shapes")
            config.get("dtypes", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                       "an object of strings")
            config.get("pairs", lambda v: isinstance(v, list) and all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in v),
                "a list of [base, head] labels")
        command = r.get("command", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                        "a list of strings", [])
        kind = r.get("kind", lambda v: v in KINDS, " or ".join(KINDS), "compare")
        env = r.obj("env", optional=True)
        return cls(
            schema=data["schema"], kind=kind, complete=r.flag("complete", False), started=r.text("started", ""),
            finished=r.text("finished"), command=command,
            config=RunConfig.of(r.get("config", lambda v: isinstance(v, dict), "an object", {})),
            env=Host.from_json(env) if env else Host(),
            groups=[Group.from_json(g) for g in r.items("groups")],
            environments=[Environment.from_json(e) for e in r.items("environments")],
            parts=[AtlasPart.from_json(p) for p in r.items("parts")] if kind == "atlas" else [],
            results={label: CaseResult.from_json(results.obj(label) if isinstance(v, dict)
                                                 else _not_object(results, label, v), label)
                     for label, v in results.value.items()},
        )


def _not_object(r: Reader, key: str, value: Any) -> Reader:
    raise RunDirError(f"{r.file}: result {key!r} is not an object")


# --- schema 1 ---------------------------------------------------------------------------------------------

def from_schema1(data: dict, file: str) -> dict:
    """A schema 1 run.json as schema 2 JSON. Schema 1 ran each case in its own processes and pooled their
    loops without saying which process ran which, so each case reads as one unpaired group of one process;
    its stored analysis and diff are dropped (they are recomputed with today's rules)."""
    results = {}
    groups = []
    for label, old in data["results"].items():
        if not isinstance(old, dict):
            raise RunDirError(f"{file}: result {label!r} is not an object")
        r = Reader(old, f"results.{label}", file)
        for key in ("cpu_us_per_call", "gpu_us_per_call", "cprofile_us_per_call", "sampled_us_per_call"):
            r.number(key)  # checked here, where the message can still name the field as the file spells it
        r.count("samples"), r.count("rate_hz"), r.count("iters"), r.count("cprofile_calls")
        for key in ("library", "factory", "device", "device_name", "dtype", "error", "bound_note",
                    "sample_shape_reason"):
            r.text(key)
        r.flag("host_bound")
        shape = r.shape("shape")
        sample_shape = r.shape("sample_shape")
        files = r.get("files", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                      "an object of file names", {})
        st = r.obj("sample_timing", optional=True)
        sampling = r.obj("sampling", optional=True)
        if sampling:
            for key in ("slowdown", "behind_seconds"):
                sampling.number(key)
            for key in ("kept_samples", "loop_samples", "total_samples", "calls_per_chunk", "chunks", "threads"):
                sampling.count(key)
        main = _timing1(r, shape)
        sample = _timing1(st, sample_shape) if st else None
        same = sample_shape is None or sample_shape == shape
        at_sample = sample if not same else main
        own = dict(at_sample["processes"][0]) if at_sample else {"cpu_us": [], "gpu_us": [], "slots": []}
        profile = None
        if files or old.get("cprofile_us_per_call") is not None:
            s = dict(sampling.value) if sampling else None
            if s is not None:
                s["sampled_us_per_call"] = old.get("sampled_us_per_call")
                s.setdefault("rate_hz", old.get("rate_hz") or 0)
                s.setdefault("kept_samples", old.get("samples") or 0)
            profile = {"own": own,
                       "calls": (st.value.get("iters") if st else None) or old.get("iters") or 0,
                       "cprofile_us_per_call": old.get("cprofile_us_per_call"), "cprofile_calls": old.get("cprofile_calls"),
                       "files": dict(files), "sampling": s}
        info = {k: old.get(k) for k in ("device_name", "device_index", "pci_bus_id", "cuda_runtime", "cuda_driver_api")
                if old.get(k) is not None}
        groups.append({"cases": [label], "paired": False, "reason": "schema 1: each case in its own processes",
                       "processes": 1})
        results[label] = {
            "factory": old.get("factory") or "", "library": old.get("library"), "device": old.get("device") or "",
            "dtype": old.get("dtype") or "", "shape": shape, "warmup": old.get("warmup") or 0,
            "ops_per_step": old.get("ops_per_step") or 1, "group": len(groups) - 1,
            "timing": main, "sample_shape": sample_shape, "sample_shape_reason": old.get("sample_shape_reason"),
            "sample_timing": None if same else sample, "device_info": info, "profile": profile,
            "error": old.get("error"),
        }
    return {**{k: data.get(k) for k in ("complete", "started", "finished", "command", "config", "env")},
            "schema": 1, "groups": groups, "results": results}


def _timing1(r: Reader, shape: list[int] | None) -> dict | None:
    """A schema 1 timing (median + repeats) as one process's loops; a file with only the median keeps it."""
    if r is None or shape is None:
        return None
    cpu, gpu = r.numbers("cpu_us_per_call_repeats"), r.numbers("gpu_us_per_call_repeats")
    median, gmedian = r.number("cpu_us_per_call"), r.number("gpu_us_per_call")
    if not cpu and median is None:
        return None
    return {"shape": shape, "calls": r.count("iters", 0) or 0,
            "processes": [{"cpu_us": cpu or [median], "gpu_us": gpu or ([gmedian] if gmedian is not None else []),
                           "slots": []}],
            "host_bound": r.flag("host_bound"), "bound_note": r.text("bound_note")}
