"""A case's profiled process: its own unsampled loops, the cProfile loop, py-spy's sampling of it (Sampling) and the
counted loop (Counts)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from ..errors import RunDirError
from .counts import Counts
from .reader import Reader, whole
from .timing import Loops


@dataclass
class Sampling:
    """What one py-spy record produced, and how far it can be trusted."""

    command: list[str]
    rate_hz: int
    seconds: float  # the window asked for: a whole number where it is one
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
    earlier: list["Sampling"] = field(default_factory=list)  # attempts at a higher rate that fell behind, or none taken
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
            command=command, rate_hz=r.count("rate_hz", 0), seconds=whole(r.number("seconds", 0.0)),
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
        return {"own": self.own.to_json(), "calls": self.calls, "cprofile_us_per_call": self.cprofile_us_per_call,
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
