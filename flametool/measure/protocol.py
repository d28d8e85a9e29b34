"""What a parent and its child say to each other, typed, as record.py is for run.json: the job the parent
gives (TimeJob, SweepJob, ProfileJob: a JSON object on the child's command line or, for a spare, one line on
its stdin) and the messages the child sends back on its message pipe, one JSON object a line,
{"event": KIND, ...}: Phase, SampleReady, Point, Done (the job's result) and Failed.

A case's code runs in the child and may write to that pipe too, so `decode` is strict: a line that is not
a well-formed message is None (the parent counts it as a stray line), never a half-read message."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Union

from ..workload.cases import CaseSpec
from ..run.counts import Counts
from ..run.record import DeviceInfo, Operands
from ..run.timing import STARTED, Loops

# The loop every job of the child runs (child/loops.py): py-spy's stacks are kept from it on (sampler), and
# counting leaves it out of a case's Python calls; the parent finds it by this name in this file.
ACTIVE_LOOP = "active_loop"
ACTIVE_LOOP_FILE = "flametool/measure/child/loops.py"
# A spare's command line: MSG_FD SPARE PARENT_PID MODULES DEVICE (child/entry.py), its job then read from stdin.
SPARE = "--spare"
# What the parent may write on a spare's stdin before its job: OPEN, to make its CUDA context now (child/preload.
# open_device), where the spare is the next to run (spawn.Spares.open).
OPEN = b"open\n"
# What the parent writes on a profiled child's stdin: GO, to a child given its job ahead (ProfileJob.ahead), for its
# loops to begin; STOP ends the sampled loop (child/loops.py reads both).
GO, STOP = b"go\n", b"stop\n"
# A fork server's command line: SOCKET_FD FORKSERVER PARENT_PID MODULES (child/forkserver.py): it imports MODULES,
# then forks a timing child for each job the parent sends on the socket (measure/forking.py, the parent's side).
FORKSERVER = "--fork-server"
# The CPUs a child may run on (config.cpus of them): set by the parent (spawn.start_child; a forked child's by its
# fork server), read by child/entry.pin_cpus before it imports anything.
CPUS_ENV = "FLAMETOOL_CPUS"
MAX_PATHS = 4096  # entries of a child's sys.path (CaseProfiled.sys_path): far more than any environment has
# A case's error as one line on the terminal and in run.json is at most this long: a 5 MB exception message
# made a 5,000,108-character line and a 15 MB run.json. The whole message goes to the case's log.
MESSAGE_CAP = 1000


def capped(text: str, limit: int = MESSAGE_CAP) -> str:
    """`text` whole if it is short, else its start and how much was left out (the whole is in the case's log)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters; the whole message is in the case's log)"


def _shape(value: Any) -> list[int]:
    if not (isinstance(value, list) and 1 <= len(value) <= 3 and all(isinstance(x, int) for x in value)):
        raise ValueError(f"not a shape: {value!r}")
    return value


def _calls(value: Any) -> dict[str, int] | None:
    if value is None:
        return None
    if not (isinstance(value, dict) and all(isinstance(v, int) for v in value.values())):
        raise ValueError(f"not calls by case: {value!r}")
    return value


def _loops(data: dict) -> Loops:
    return Loops(cpu_us=list(data["cpu_us"]), gpu_us=list(data.get("gpu_us", [])), slots=list(data.get("slots", [])),
                 wall_us=list(data.get("wall_us", [])), all_threads_us=list(data.get("all_threads_us", [])),
                 other_threads_us=list(data.get("other_threads_us", [])))


def _paths(value: Any) -> list[str]:
    """A list of folder paths as the child's sys.path gives them (strings, no NUL): anything else is not one."""
    if not (isinstance(value, list) and len(value) <= MAX_PATHS
            and all(isinstance(p, str) and p and "\0" not in p for p in value)):
        raise ValueError(f"not a list of paths: {str(value)[:80]!r}")
    return value


def _operands(data: dict) -> Operands:
    after = data.get("after")
    return Operands(shape=_shape(data["shape"]), fingerprint=str(data["fingerprint"]), made=str(data["made"]),
                    hashed=str(data["hashed"]), after=None if after is None else str(after))


# --- the job: parent -> child -------------------------------------------------------------------------------

@dataclass
class JobCase:
    """A case as a child builds it: where its factory is, and its dtype."""

    label: str
    case: CaseSpec
    dtype: str

    @classmethod
    def from_json(cls, data: dict) -> "JobCase":
        return cls(str(data["label"]), CaseSpec(**data["case"]), str(data["dtype"]))


@dataclass
class Job:
    """What every job holds: the device and how each loop is timed."""

    kind: ClassVar[str]
    device: str
    iters: int
    warmup: int
    repeats: int
    extend_rounds: bool = True
    parent_pid: int | None = None  # the child ends itself when this process is gone (procs.tie_to_parent)
    timed_seconds: float = 1.0  # with extend_rounds: each host-bound case's rounds go on until it had this long

    def to_json(self) -> dict:
        return {"job": self.kind, **asdict(self)}

    @staticmethod
    def _common(data: dict) -> dict:
        return dict(device=str(data["device"]), iters=int(data["iters"]), warmup=int(data["warmup"]),
                    repeats=int(data["repeats"]), extend_rounds=bool(data.get("extend_rounds", True)),
                    parent_pid=data.get("parent_pid"), timed_seconds=float(data.get("timed_seconds", 1.0)))


@dataclass
class PlanItem:
    """One shape a timing process times: `calls` per loop by case (None: the child chooses), into the
    timing at the requested shape ("timing") or at the sample shape ("sample_timing"). With `decide`, the
    child then picks the sample shape and, when it differs, times that too."""

    shape: list[int]
    calls: dict[str, int] | None
    key: str
    decide: bool = False


@dataclass
class TimeJob(Job):
    kind: ClassVar[str] = "time"
    cases: list[JobCase] = field(default_factory=list)
    plan: list[PlanItem] = field(default_factory=list)
    sample_shape: list[int] | None = None  # --sample-shape, for `decide`
    op: str = "matmul"  # for `decide`: the op's host-bound shape (ops.py) is sampled when the shape is not

    @classmethod
    def from_json(cls, data: dict) -> "TimeJob":
        plan = [PlanItem(_shape(p["shape"]), _calls(p.get("calls")), str(p["key"]), bool(p.get("decide", False)))
                for p in data["plan"]]
        given = data.get("sample_shape")
        return cls(**cls._common(data), cases=[JobCase.from_json(c) for c in data["cases"]], plan=plan,
                   sample_shape=None if given is None else _shape(given), op=str(data.get("op", "matmul")))


@dataclass
class SweepItem:
    shape: list[int]
    calls: dict[str, int] | None  # processes after the first: the calls per loop the first chose


@dataclass
class SweepJob(Job):
    kind: ClassVar[str] = "sweep"
    cases: list[JobCase] = field(default_factory=list)
    points: list[SweepItem] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict) -> "SweepJob":
        return cls(**cls._common(data), cases=[JobCase.from_json(c) for c in data["cases"]],
                   points=[SweepItem(_shape(p["shape"]), _calls(p.get("calls"))) for p in data["points"]])


@dataclass
class ProfileJob(Job):
    kind: ClassVar[str] = "profile"
    case: JobCase | None = None
    shape: list[int] = field(default_factory=list)
    steps: int | None = None  # calls per loop (None: the child chooses)
    sample: bool = True
    prof_path: str = ""
    max_sample_seconds: float = 0.0
    count: bool = True  # the counted loop after the others (counting.py)
    # given ahead of its turn (while the case before it is sampled): set up and warmed up, the child then waits
    # for GO on its stdin before its loops
    ahead: bool = False
    # ... and, given ahead as the last case profiled, its cProfile and counted loops run before it waits for GO
    # (beside the case before it, which py-spy samples: as that case's counted loop runs beside this one's sampling),
    # so that nothing of the run is left after its own sampled loop (profiling.py)
    count_first: bool = False

    @classmethod
    def from_json(cls, data: dict) -> "ProfileJob":
        return cls(**cls._common(data), case=JobCase.from_json(data["case"]), shape=_shape(data["shape"]),
                   steps=data.get("steps"), sample=bool(data.get("sample", True)), prof_path=str(data["prof_path"]),
                   max_sample_seconds=float(data["max_sample_seconds"]), count=bool(data.get("count", True)),
                   ahead=bool(data.get("ahead", False)), count_first=bool(data.get("count_first", False)))


JOBS: dict[str, type[AnyJob]] = {j.kind: j for j in (TimeJob, SweepJob, ProfileJob)}
AnyJob = Union[TimeJob, SweepJob, ProfileJob]


def encode_job(job: Job) -> str:
    return json.dumps(job.to_json())


def decode_job(text: str | bytes) -> AnyJob:
    data = json.loads(text)
    return JOBS[data["job"]].from_json(data)


# --- what a job found ---------------------------------------------------------------------------------------

@dataclass
class TimedLoops:
    """One case's loops at one shape in one process."""

    shape: list[int]
    calls: int  # operations per loop
    steps: int  # step() calls per loop
    loops: Loops
    host_bound: bool | None = None
    bound_note: str | None = None

    @classmethod
    def from_json(cls, data: dict) -> "TimedLoops":
        return cls(_shape(data["shape"]), int(data["calls"]), int(data["steps"]), _loops(data["loops"]),
                   data.get("host_bound"), data.get("bound_note"))


@dataclass
class CaseTimed:
    """What a timing process found of one case."""

    ops_per_step: int | None = None
    device_info: DeviceInfo = field(default_factory=DeviceInfo)
    operands: list[Operands] = field(default_factory=list)
    timing: TimedLoops | None = None
    sample_timing: TimedLoops | None = None
    warnings: list[str] = field(default_factory=list)  # what the case did to the measuring (ownclock.Watch)

    @classmethod
    def from_json(cls, data: dict) -> "CaseTimed":
        at = lambda key: TimedLoops.from_json(data[key]) if data.get(key) else None  # noqa: E731
        return cls(data.get("ops_per_step"), DeviceInfo.of(data.get("device_info") or {}),
                   [_operands(o) for o in data.get("operands", [])], at("timing"), at("sample_timing"),
                   [capped(str(w)) for w in data.get("warnings", [])])

    def at(self, key: str) -> TimedLoops | None:
        """The loops at the requested shape ("timing") or at the sample shape ("sample_timing")."""
        return self.timing if key == "timing" else self.sample_timing


@dataclass
class Timed:
    """A TimeJob's result: per case what was timed; the cases that failed, with why; and, with `decide`,
    the shape all of them are sampled at."""

    job: ClassVar[str] = "time"
    cases: dict[str, CaseTimed] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    sample_shape: list[int] | None = None
    sample_shape_reason: str | None = None
    # how the process was started (run.timing.STARTED: fresh or forked): it says so itself (child/entry.py), and
    # run.json records it with each case's loops from it (Loops.started)
    started: str = "fresh"
    forked_from: int | None = None  # forked: its fork server's pid

    def process(self) -> dict:
        """How the process started, as run.json records it with its loops (Loops' fields)."""
        return {"started": self.started, "forked_from": self.forked_from}

    @classmethod
    def from_json(cls, data: dict) -> "Timed":
        given = data.get("sample_shape")
        started = data.get("started", "fresh")
        if started not in STARTED:
            raise ValueError(f"not how a process starts: {started!r}")
        return cls({str(l): CaseTimed.from_json(c) for l, c in data["cases"].items()},
                   {str(l): capped(str(e)) for l, e in data["errors"].items()},
                   None if given is None else _shape(given), data.get("sample_shape_reason"), started,
                   None if data.get("forked_from") is None else int(data["forked_from"]))


@dataclass
class Swept:
    """A SweepJob's result: how many points it measured (each was sent as a Point when measured)."""

    job: ClassVar[str] = "sweep"
    points: int = 0

    @classmethod
    def from_json(cls, data: dict) -> "Swept":
        return cls(int(data["points"]))


@dataclass
class CaseProfiled:
    """A ProfileJob's result: the case's own loops (none when sampled: the parent reads the unsampled time per
    call off the sampled loop's chunks after py-spy's window, profiling.unsampled), its cProfile loop and, when
    sampled, the sampled loop's chunks (start and end on CLOCK_MONOTONIC, which the parent reads too)."""

    job: ClassVar[str] = "profile"
    own: Loops = field(default_factory=lambda: Loops([]))
    calls: int = 0
    cprofile_us_per_call: float = 0.0
    cprofile_calls: int = 0
    chunks: list[list[float]] | None = None
    calls_per_chunk: int | None = None
    counts: Counts | None = None  # the counted loop, after the others
    # the child's sys.path once the case was imported: where the files of its frames are found (measure/sources.py)
    sys_path: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        data = {k: v for k, v in asdict(self).items() if k != "counts"}
        return data | ({"counts": self.counts.to_json()} if self.counts is not None else {})

    @classmethod
    def from_json(cls, data: dict) -> "CaseProfiled":
        return cls(_loops(data["own"]), int(data["calls"]), float(data["cprofile_us_per_call"]),
                   int(data["cprofile_calls"]), data.get("chunks"), data.get("calls_per_chunk"),
                   Counts.from_json(data["counts"]) if data.get("counts") is not None else None,
                   _paths(data.get("sys_path", [])))


RESULTS: dict[str, type[AnyResult]] = {r.job: r for r in (Timed, Swept, CaseProfiled)}
AnyResult = Union[Timed, Swept, CaseProfiled]


# --- messages: child -> parent ------------------------------------------------------------------------------

@dataclass
class Phase:
    """What the child is doing now, for the progress line (and the watchdog: any message is a sign of life)."""

    event: ClassVar[str] = "phase"
    phase: str  # import, setup, warmup, timed, point, cprofile
    shape: list[int] | None = None
    label: str | None = None
    calls: int | None = None  # warmup: calls
    repeat: int | None = None  # timed: round `repeat` of `of`
    index: int | None = None  # point: size `index` of `of`
    of: int | None = None
    seconds: float | None = None  # timed, the first extra round: each case is timed until it had this long

    def fields(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict) -> "Phase":
        known = {k: data[k] for k in ("shape", "label", "calls", "repeat", "index", "of", "seconds")
                 if k in data}
        return cls(phase=str(data["phase"]), **known)


class _OneField:
    """A message of one field, read through `convert`."""

    convert: ClassVar[type]
    fields = asdict
    if TYPE_CHECKING:  # what each subclass is: a dataclass of that one field
        __dataclass_fields__: ClassVar[dict[str, Any]]

        def __init__(self, value: Any) -> None: ...

    @classmethod
    def from_json(cls, data: dict):
        (only,) = dataclasses.fields(cls)
        return cls(cls.convert(data[only.name]))


@dataclass
class SampleReady(_OneField):
    """The child's sampled loop is running: sample this pid, then write 'stop' to its stdin."""

    event: ClassVar[str] = "sample_ready"
    convert: ClassVar[type] = int
    pid: int


@dataclass
class PointCase:
    """One case at one sweep point: its loops, or why it has none there."""

    error: str | None = None
    calls: int = 0
    steps: int = 0
    loops: Loops | None = None
    operands: Operands | None = None

    def to_json(self) -> dict:
        if self.error is not None:
            return {"error": self.error}
        assert self.loops is not None  # a case without an error has its loops
        out = {"calls": self.calls, "steps": self.steps, "loops": asdict(self.loops)}
        return out | ({"operands": asdict(self.operands)} if self.operands else {})

    @classmethod
    def from_json(cls, data: dict) -> "PointCase":
        if "error" in data:
            return cls(error=str(data["error"]))
        return cls(None, int(data["calls"]), int(data["steps"]), _loops(data["loops"]),
                   _operands(data["operands"]) if "operands" in data else None)


@dataclass
class Point:
    """A sweep's size, sent as soon as it is measured (a run stopped at a later size keeps it)."""

    event: ClassVar[str] = "point"
    index: int
    ops_per_step: dict[str, int]
    device_info: DeviceInfo
    cases: dict[str, PointCase]

    def fields(self) -> dict:
        return {"index": self.index, "ops_per_step": self.ops_per_step, "device_info": asdict(self.device_info),
                "cases": {l: c.to_json() for l, c in self.cases.items()}}

    @classmethod
    def from_json(cls, data: dict) -> "Point":
        return cls(int(data["index"]), dict(data["ops_per_step"]), DeviceInfo.of(data["device_info"]),
                   {str(l): PointCase.from_json(c) for l, c in data["cases"].items()})


@dataclass
class Done:
    """The job's result: the child's last word."""

    event: ClassVar[str] = "result"
    result: AnyResult

    def fields(self) -> dict:
        result = self.result.to_json() if hasattr(self.result, "to_json") else asdict(self.result)
        return {"job": self.result.job, "result": result}

    @classmethod
    def from_json(cls, data: dict) -> "Done":
        return cls(RESULTS[data["job"]].from_json(data["result"]))


@dataclass
class Failed(_OneField):
    """The job failed: one line saying why."""

    event: ClassVar[str] = "error"
    convert: ClassVar[type] = str
    message: str


Message = Union[Phase, SampleReady, Point, Done, Failed]
MESSAGES: dict[str, type[Message]] = {m.event: m for m in (Phase, SampleReady, Point, Done, Failed)}
MESSAGE_START = '{"event": '


def encode(message: Message) -> str:
    """One line for the message pipe."""
    return json.dumps({"event": message.event, **message.fields()}) + "\n"


def decode(line: str) -> Message | None:
    """One message from the child, or None for a line that is not one. A message that follows stray bytes on
    the same line (a case's output without a newline) is still found."""
    for start in (0, line.rfind(MESSAGE_START)):
        if start < 0:
            continue
        try:
            data = json.loads(line[start:])
            return MESSAGES[data["event"]].from_json(data)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return None


RESULT_OF: dict[type, type] = {TimeJob: Timed, SweepJob: Swept, ProfileJob: CaseProfiled}  # what each job returns
