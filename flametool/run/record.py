"""What a run measured, typed once: the records run.json holds, with to/from JSON.

run.json holds measurements only (what the loops, cProfile and py-spy produced, and the decisions taken
while measuring: which shape was sampled, which cases shared a process). Everything derived from them
(medians, intervals, ratios, layers, frames, diffs) is computed by ``analysis`` when it is needed, so a
change of the layer rules or of the statistics can never leave two views of one run disagreeing.

A new measured field goes here: a field of the record that holds it, read back in its ``from_json``.

Reading is strict: every value is checked as it is read and a bad one is a RunDirError naming its path in
the file (``results.torch.timing.processes[0].cpu_us``; reader.py). The records of a case's timed loops are in
timing.py, of its profiled process in profiled.py; schema 1 files are read into the same records (schema1.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..workload.builtins import default_pairs
from ..workload.ops import OPS, by_n
from ..errors import RunDirError
from .profiled import ProfileProcess, Sampling
from .reader import Reader, is_count, is_shape
from .schema1 import from_schema1
from .timing import Timing, record_dict

SCHEMA = 3  # 3: ProfileProcess.counts (the counted loop); 2 and 1 are still read
# compare: each case at one shape, timed, profiled and sampled; sweep: each case timed at a list of sizes
# (CaseResult.points). Files from before sweeps have no "kind" and are compare runs.
# atlas: one compare run per op in a folder of its own under the atlas's directory (Run.parts).
KINDS = ("compare", "sweep", "atlas")


def a_kind(kind: str) -> str:
    """'a sweep', 'an atlas', 'a compare': a run's kind in a sentence."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


ENV_SEPARATOR = "@"


def env_label(label: str, env: str) -> str:
    """A case as it runs in one environment of `compare --env`: cupy@main."""
    return f"{label}{ENV_SEPARATOR}{env}"


def base_label(label: str) -> str:
    """The case a label names, without its environment: cupy@main -> cupy."""
    return label.rpartition(ENV_SEPARATOR)[0] or label


def size_name(shape: list[int], op: str) -> str:
    """A size as a run of `op` names it (RunConfig.operation, Config.op: an op, or a workload's name), in every
    view and in the name of each file a sweep's --sample writes at it (LABEL@SIZE.prof, LABEL@SIZE.folded): N for
    matmul's NxN by NxN product (ops.by_n), else every figure joined by x: MxKxN, N elements, RxC, and a
    workload's shape as its FUNC takes it (64x64x64: three dimensions, which 64 would not tell from one).

    The files are found by the names run.json records (ProfileProcess.files), never by this: a run written
    before a workload's cube was named 64x64x64 (its files LABEL@64.folded) is read as it was written."""
    if by_n(op) and len(shape) == 3 and shape[0] == shape[1] == shape[2]:
        return str(shape[0])
    return "x".join(map(str, shape))


@dataclass
class SweepPoint(Timing):
    """A case at one size of a sweep: its timed loops, what stopped it there (the other sizes go on), and with
    --sample its profiled process at that size."""

    error: str | None = None
    profile: ProfileProcess | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        data["processes"] = [p.to_json() for p in self.processes]
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
    # the same hash after the timed loops, where it differs: the step wrote what it reads (`a += b` in a workload's
    # fn), so each call ran on other values than the last, and the cases on other values than each other's.
    # None where they were the same (or were not read again: runs before 2026-12-05)
    after: str | None = None

    @classmethod
    def from_json(cls, r: Reader) -> "Operands":
        return cls(shape=r.shape("shape") or [], fingerprint=r.text("fingerprint", ""), made=r.text("made", ""),
                   hashed=r.text("hashed", ""), after=r.text("after"))

    def to_json(self) -> dict:
        data = asdict(self)
        if self.after is None:  # operands the loops left as they were read as before
            data.pop("after")
        return data


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
    """The GPUs the machine's driver showed the parent (without a CUDA context: measure/machine)."""

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
    """The machine and software a run was measured on, as its parent process saw them (measure/machine)."""

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
    and what tells one copy of a library from another (its installed files, its top-level objects), read by that
    interpreter before anything ran (environments.probe)."""

    name: str
    python: str  # the interpreter as given on the command line, made absolute: what runs its processes
    executable: str = ""  # sys.executable there (a venv's python, or what a wrapper script runs)
    python_version: str = ""
    versions: dict[str, str | None] = field(default_factory=dict)  # library -> version (None: it has no version)
    describe: dict[str, str] = field(default_factory=dict)  # library -> git describe of its checkout
    # library -> its installed files: "record:DIGEST" of its RECORD, or "at:DIRECTORY" (importcheck.installed_files)
    files: dict[str, str] = field(default_factory=dict)
    surface: dict[str, str] = field(default_factory=dict)  # library -> a digest of its top-level objects' kinds

    @classmethod
    def from_json(cls, r: Reader) -> "Environment":
        strings = lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values())  # noqa: E731
        return cls(name=r.text("name", ""), python=r.text("python", ""), executable=r.text("executable", ""),
                   python_version=r.text("python_version", ""),
                   versions=dict(r.get("versions", lambda v: isinstance(v, dict) and all(
                       isinstance(x, str) or x is None for x in v.values()), "an object of versions", {})),
                   describe=dict(r.get("describe", strings, "an object of strings", {})),
                   files=dict(r.get("files", strings, "an object of strings", {})),
                   surface=dict(r.get("surface", strings, "an object of strings", {})))


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
    # its profiling process failed (died, or could not write its profile): the profile is lost, the timings kept
    profile_error: str | None = None
    # what the run noticed the case did to the measuring (one line each: it changed flametool's clocks, ...)
    warnings: list[str] = field(default_factory=list)
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
        data = record_dict(self, ("timing", "sample_timing", "profile", "points"))
        data["timing"] = self.timing.to_json() if self.timing else None
        data["sample_timing"] = self.sample_timing.to_json() if self.sample_timing else None
        data["profile"] = self.profile.to_json() if self.profile else None
        if self.points:
            data["points"] = [p.to_json() for p in self.points]
        else:  # a compare run's results read as they did before sweeps
            data.pop("points")
        if not self.operands:  # a case without step.operands reads as before
            data.pop("operands")
        else:
            data["operands"] = [o.to_json() for o in self.operands]
        if self.env is None:  # a run of one environment reads as before
            data.pop("env")
        for key in ("profile_error", "warnings"):  # a case without them reads as before
            if not data[key]:
                data.pop(key)
        return data

    @classmethod
    def from_json(cls, r: Reader, label: str) -> "CaseResult":
        timing, sample_timing, profile = r.obj("timing", True), r.obj("sample_timing", True), r.obj("profile", True)
        info = r.obj("device_info", optional=True)
        return cls(
            label=label, factory=r.text("factory", ""), library=r.text("library"), device=r.text("device", ""),
            dtype=r.text("dtype", ""), shape=r.shape("shape") or [], warmup=r.count("warmup", 0),
            ops_per_step=r.get("ops_per_step", lambda v: is_count(v) and v > 0, "a count from 1", 1),
            group=r.count("group"),
            timing=Timing.from_json(timing) if timing else None,
            sample_shape=r.shape("sample_shape"), sample_shape_reason=r.text("sample_shape_reason"),
            sample_timing=Timing.from_json(sample_timing) if sample_timing else None,
            device_info=DeviceInfo.from_json(info) if info else DeviceInfo(),
            profile=ProfileProcess.from_json(profile) if profile else None, error=r.text("error"),
            profile_error=r.text("profile_error"),
            warnings=list(r.get("warnings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                                "a list of strings", [])),
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
    # the timing processes after the first that died or failed (one line each: which, and why): each is one
    # process lost, the group went on from the others
    lost: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        data = asdict(self)
        if not self.lost:  # a run that lost none reads as before
            data.pop("lost")
        return data

    @classmethod
    def from_json(cls, r: Reader) -> "Group":
        strings = lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)  # noqa: E731
        cases = r.get("cases", strings, "a list of labels", [])
        return cls(cases=cases, paired=r.flag("paired", False), reason=r.text("reason", ""),
                   processes=r.count("processes", 0), lost=list(r.get("lost", strings, "a list of strings", [])))


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
    sample_seconds: float | None = None
    sizes: list[list[int]] | None = None
    pairs: list[list[str]] | None = None
    anchor: str | None = None  # `compare --env`: the case (as named in --libs) every environment's processes time
    op: str | None = None  # --op (ops.py); runs before it are matmul runs
    fail_above: float | None = None  # compare --fail-above PCT: the report gives the verdict the run exited with
    recorded: dict[str, Any] = field(default_factory=dict, repr=False)
    # made with the record, so that a reader reads them rather than asks: the op the run measured (matmul where
    # run.json does not say: runs before --op), and the processes asked for as the figures' notes count them (1
    # for a run that does not say)
    operation: str = field(init=False, repr=False, compare=False)
    timing_processes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.operation = self.op or "matmul"
        self.timing_processes = self.processes or 1
        if not self.recorded:  # built in code: recorded as given (the options, not what is made from them)
            given = {f.name for f in fields(self) if f.init and f.name != "recorded"}
            self.recorded = {k: v for k, v in asdict(self).items() if k in given and v is not None}

    @classmethod
    def of(cls, data: dict[str, Any]) -> "RunConfig":
        return cls(**{f.name: data.get(f.name) for f in fields(cls) if f.init and f.name != "recorded"},
                   recorded=dict(data))


def part_word(name: str) -> str:
    """What an atlas's part is called in words: 'op' (one of ops.OPS) or 'workload' (atlas --workloads)."""
    return "op" if name in OPS else "workload"


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


# Why compare stopped adding timing processes with a pair's interval still wider than it was settling it at
# (measure/paired.py), in TimingStop.reason: more processes spreading as these did would not have settled it (up to
# the most it runs); the time for more was spent (--budget); the most it runs were run
STOP_REASONS = ("spread", "budget", "most")


@dataclass
class TimingStop:
    """A decision taken while measuring: the pair whose interval had not settled when compare stopped adding timing
    processes, why, the reach it was settling at (relative: 0.01 is ±1%) and the most processes it runs. (How far
    the interval reaches is the analysis's to compute, as every interval is.)"""

    reason: str  # one of STOP_REASONS
    base: str
    head: str
    limit: float
    most: int  # the most processes compare runs (a side, with --env: Config.max_processes)

    def applies(self, base: str, head: str, reach: float | None) -> bool:
        """Whether it is this pair's, and its interval (reaching `reach` from its ratio, as the analysis computes it)
        is still wider than it was settling at."""
        return (self.base, self.head) == (base, head) and reach is not None and reach > self.limit

    @classmethod
    def from_json(cls, r: Reader) -> "TimingStop":
        return cls(reason=r.get("reason", lambda v: v in STOP_REASONS, " or ".join(STOP_REASONS), "spread"),
                   base=r.text("base", ""), head=r.text("head", ""), limit=r.number("limit", 0.0),
                   most=r.count("most", 0))


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
    timing_stop: TimingStop | None = None  # a pair's interval not settled when the processes stopped: why

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

    def process_starts(self) -> set[str]:
        """How the timing processes were started, as their loops say (Loops.started: fresh, forked); empty for a
        run from before it was recorded."""
        return {p.started for r in self.results.values() for t in (r.timing, r.sample_timing) if t is not None
                for p in t.processes if p.started is not None}

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
                "groups": [g.to_json() for g in self.groups],
                "results": {label: r.to_json() for label, r in self.results.items()}} | (
                {"parts": [asdict(p) for p in self.parts]} if self.kind == "atlas" else {})
        if self.environments:  # an addition a reader of schema 2 without it ignores: the schema stays 2
            data["environments"] = [asdict(e) for e in self.environments]
        if self.timing_stop is not None:  # likewise: a run whose intervals settled reads as before
            data["timing_stop"] = asdict(self.timing_stop)
        return data

    @classmethod
    def from_json(cls, data: Any, file: str) -> "Run":
        r = Reader(data, "", file)
        if not isinstance(data, dict) or "schema" not in data:
            raise RunDirError(f"{file}: not a flametool run.json (no schema number)")
        schema = data["schema"]
        if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
            raise r.fail("schema", schema, f"a whole number from 1 to {SCHEMA} (the schema flametool wrote it in)")
        if data["schema"] > SCHEMA:
            raise RunDirError(f"{file}: schema {data['schema']} is newer than this flametool understands ({SCHEMA}); "
                              "upgrade flametool")
        if not isinstance(data.get("results"), dict):
            raise RunDirError(f"{file}: 'results' is missing or not an object")
        if data["schema"] < 2:
            data = from_schema1(data, file)
            r = Reader(data, "", file)
        results = r.obj("results")
        if any(not label.strip() for label in results.value):
            raise RunDirError(f"{file}: results has a case with an empty label")
        config = r.obj("config", optional=True)
        if config:  # the options readers compute with (processes, shape, pairs, ...) are checked like the rest
            config.number("sample_seconds")  # a fraction of a second allowed (--sample-seconds 0.5)
            for key in ("iters", "warmup", "repeats", "rate_hz", "processes", "max_processes",
                        "pool_threads", "operand_seed", "cpus"):
                config.count(key)
            for key in ("sample", "keep_going", "cpu_fallback", "isolate", "extend_rounds", "out_is_default"):
                config.flag(key)
            config.shape("shape"), config.shape("sample_shape"), config.text("device"), config.number("extra_seconds")
            config.number("fail_above")
            config.text("anchor")
            config.text("op")
            config.get("sizes", lambda v: isinstance(v, list) and all(is_shape(x) for x in v), "a list of shapes")
            config.get("dtypes", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                       "an object of strings")
            # the cases as given (workload.cases.CaseSpec.to_json): the lines of a workload's step are found from them
            config.get("cases", lambda v: isinstance(v, list) and all(
                isinstance(c, dict) and all(x is None or isinstance(x, str) for x in c.values()) for c in v),
                "a list of objects of strings")
            config.get("pairs", lambda v: isinstance(v, list) and all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in v),
                "a list of [base, head] labels")
        command = r.get("command", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                        "a list of strings", [])
        kind = r.get("kind", lambda v: v in KINDS, " or ".join(KINDS), "compare")
        env = r.obj("env", optional=True)
        stop = r.obj("timing_stop", optional=True)
        return cls(
            schema=data["schema"], kind=kind, complete=r.flag("complete", False), started=r.text("started", ""),
            finished=r.text("finished"), command=command,
            config=RunConfig.of(r.get("config", lambda v: isinstance(v, dict), "an object", {})),
            env=Host.from_json(env) if env else Host(),
            groups=[Group.from_json(g) for g in r.items("groups")],
            environments=[Environment.from_json(e) for e in r.items("environments")],
            parts=[AtlasPart.from_json(p) for p in r.items("parts")] if kind == "atlas" else [],
            timing_stop=TimingStop.from_json(stop) if stop is not None else None,
            results={label: CaseResult.from_json(results.obj(label) if isinstance(v, dict)
                                                 else _not_object(results, label, v), label)
                     for label, v in results.value.items()},
        )


def _not_object(r: Reader, key: str, value: Any) -> Reader:
    raise RunDirError(f"{r.file}: result {key!r} is not an object")
