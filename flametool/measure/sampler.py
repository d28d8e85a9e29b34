"""py-spy, attached by pid to a child while it runs the active loop; bounded in time, never trusted to end.

py-spy ``--native`` stops every thread of the target to unwind it, so the loop runs slower while sampled.
That is why shares of samples, not sampled time, are what analysis turns into microseconds, and why the
time per call while sampled is measured here from the child's own chunk timestamps.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from .. import procs
from ..run import folded, rundir
from ..run.profiled import Sampling
from ..run.perturbation import suggest_rate
from ..errors import FlametoolError
from .config import MIN_SAMPLE_SECONDS
from .protocol import ACTIVE_LOOP_FILE

# the child's wait for its turn (child/loops.py), in the stacks of a process py-spy was attached to ahead
WAIT_FUNCTION = "wait_go"

# py-spy may need several seconds to read the symbol tables of big native libraries before it samples.
# FLAMETOOL_PYSPY_TIMEOUT (seconds) overrides it: tests use a few seconds, slow machines may need more.
ATTACH_SECONDS = 60.0
# After SIGINT py-spy writes what it has; give it this long (at most the attach allowance) before killing it.
FLUSH_SECONDS = 10.0
PYSPY_ENV = "FLAMETOOL_PYSPY"  # a py-spy to use instead of the one found beside Python or on PATH
TIMEOUT_ENV = "FLAMETOOL_PYSPY_TIMEOUT"
REFUSED = re.compile(r"permission denied|operation not permitted|ptrace", re.I)
REFUSED_HINT = ("run as root, or set /proc/sys/kernel/yama/ptrace_scope to 0 "
                "(in a container: --cap-add SYS_PTRACE), or use --no-sample")
BEHIND = re.compile(r"([\d.]+)s behind in sampling")
TOTALS = re.compile(r"Samples: (\d+) Errors: (\d+)")


def pyspy_path() -> str:
    """$FLAMETOOL_PYSPY, else the py-spy installed beside this Python (the one our dependency put there),
    else the one on PATH."""
    chosen = os.environ.get(PYSPY_ENV)
    if chosen:
        if not (Path(chosen).is_file() and os.access(chosen, os.X_OK)):
            raise FlametoolError(f"{PYSPY_ENV}={chosen}: not an executable file")
        return chosen
    local = Path(sys.executable).parent / "py-spy"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("py-spy")
    if not found:
        raise FlametoolError("py-spy is not installed: pip install py-spy (or run with --no-sample)")
    return found


def check_available() -> str:
    """Before anything starts: a py-spy that exists and runs, or one FlametoolError saying how to get one."""
    path = pyspy_path()
    try:
        subprocess.run([path, "--version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise FlametoolError(f"{path} does not run ({exc}): reinstall py-spy (pip install py-spy), "
                             "or run with --no-sample") from None
    return path


def attach_seconds() -> float:
    """How long py-spy may take beyond the sampling time before it is stopped."""
    return seconds_setting(TIMEOUT_ENV, ATTACH_SECONDS)


def seconds_setting(name: str, default: float) -> float:
    """Seconds from the environment variable `name` (default when unset); a bad value is one FlametoolError."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise FlametoolError(f"{name}={text!r}: expected seconds") from None
    if not 0 < value < 1e9:
        raise FlametoolError(f"{name}={text!r}: must be more than 0")
    return value


def is_active_loop(frame: str, loop_function: str) -> bool:
    return folded.frame_function(frame) == loop_function and folded.frame_file(frame).endswith(ACTIVE_LOOP_FILE)


def is_waiting(frame: str) -> bool:
    """The child's wait for its turn (loops.wait_go), where py-spy attached ahead samples it before its window."""
    return folded.frame_function(frame) == WAIT_FUNCTION and folded.frame_file(frame).endswith(ACTIVE_LOOP_FILE)


def keep_inside(raw: list[folded.Stack], loop_function: str) -> tuple[list[folded.Stack], int, int]:
    """Stacks below the innermost active-loop frame, with that frame and everything above it cut off.

    Returns (kept, loop_only, outside): samples in the loop's own bytecode between calls, and samples
    outside the loop (sync, set-up, other threads) are counted, not kept."""
    kept: list[folded.Stack] = []
    loop_only = outside = 0
    for s in raw:
        idx = max((i for i, f in enumerate(s.frames) if is_active_loop(f, loop_function)), default=-1)
        if idx < 0:
            outside += s.count
        elif idx == len(s.frames) - 1:
            loop_only += s.count
        else:
            kept.append(folded.Stack(s.frames[idx + 1 :], s.count))
    return folded.merge(kept), loop_only, outside


THREAD_ROOT = re.compile(r"^thread \((?:0x)?[0-9a-fA-F]+\)(?::\s*(?P<name>.*))?$")


def split_threads(raw: list[folded.Stack], loop_function: str) -> tuple[list[folded.Stack], list[folded.Stack]]:
    """py-spy --threads puts each stack under its thread ('thread (1234): MainThread'). Returns every stack
    without that root (what keep_inside reads, as before --threads), and the stacks of the threads other than
    the caller's (those that never ran the active loop) under a root named by the thread ('[thread w1]'; a
    native thread has no name: '[thread]'), their ids dropped so that two runs line up. Stacks without a
    thread root (an older py-spy) are all kept, and no other thread is told apart."""
    thread_of: list[tuple[str, str | None]] = []  # (id, name) of each stack; ('', None) without a root
    callers: set[str] = set()
    for s in raw:
        m = THREAD_ROOT.match(s.frames[0]) if s.frames else None
        tid, name = (s.frames[0].split(")")[0], m.group("name")) if m else ("", None)
        thread_of.append((tid, name))
        if m and any(is_active_loop(f, loop_function) for f in s.frames):
            callers.add(tid)
    stripped, others = [], []
    for s, (tid, name) in zip(raw, thread_of):
        if not tid:
            stripped.append(s)
            continue
        frames = s.frames[1:] or ("[idle]",)
        stripped.append(folded.Stack(frames, s.count))
        if callers and tid not in callers:
            others.append(folded.Stack((f"[thread {name.strip()}]" if name and name.strip() else "[thread]",)
                                       + s.frames[1:], s.count))
    return stripped, folded.merge(others)


def thread_count(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:  # gone, or no /proc: the count is a hint, not a requirement
        return None


def record(pid: int, rate_hz: int, seconds: float, loop_function: str, out: Path, spy: "Spy | None" = None,
           since: float | None = None) -> Sampling:
    """Sample `pid` for `seconds` of py-spy's sampling (`spy`: a py-spy attached to it already, at this rate, while
    it waited for its turn; `since`: when its loop began, the window's earliest start); write the kept stacks to
    `out`. Never raises for a py-spy failure: the Sampling says what happened, so what was measured before
    survives."""
    seconds = max(MIN_SAMPLE_SECONDS, seconds)
    if spy is not None and (spy.pid != pid or spy.sampling.rate_hz != rate_hz):
        spy.discard()
        spy = None
    spy = spy or Spy.attach(pid, rate_hz, seconds)
    sampling = spy.sampling
    try:
        if not spy.run(seconds, since):
            return sampling
        raw = read_raw(spy.fd)
    finally:  # what py-spy wrote is read above, or not kept (the run is being stopped)
        spy.discard()
    # stacks of a process that waited for its turn (a spare attached to ahead: loops.wait_go) are from before its
    # window, not of it
    raw = [s for s in raw if not any(is_waiting(f) for f in s.frames)]
    sampling.total_samples = sum(s.count for s in raw)
    raw, others = split_threads(raw, loop_function)
    kept, sampling.loop_samples, sampling.outside_samples = keep_inside(raw, loop_function)
    sampling.kept_samples = sum(s.count for s in kept)
    sampling.other_samples = sum(s.count for s in others)
    rundir.write_stacks(out, kept, others)  # the stacks handed to the run directory at once, both files
    if not sampling.complete and sampling.total_samples and not sampling.refused:
        assert sampling.error is not None  # Spy.run says why it did not complete
        sampling.error += f"; kept the {sampling.total_samples} samples it wrote"
    return sampling


class Spy:
    """A `py-spy record` attached to a process, sampling until it is told to stop (SIGINT: it writes what it has
    and exits). Attached ahead (profiling.py: a process that waits for its turn), its start-up (reading the
    native libraries' symbols: 0.75-0.95 s for torch's on the H200) is not in the window's way."""

    def __init__(self, pid: int, sampling: Sampling, fd: int, raw_path: str, named: bool) -> None:
        self.pid, self.sampling, self.fd, self.raw_path, self.named = pid, sampling, fd, raw_path, named
        self.proc: subprocess.Popen | None = None
        self.output: Output | None = None
        self.launched = time.monotonic()  # attach() sets it again after py-spy's launch: its start-up counts from there

    @classmethod
    def attach(cls, pid: int, rate_hz: int, seconds: float) -> "Spy":
        """py-spy started on `pid`; where it cannot be (not installed, not startable) the Sampling says why."""
        fd, raw_path, named = raw_output()
        spy = cls(pid, Sampling(command=[], rate_hz=rate_hz, seconds=seconds), fd, raw_path, named)
        try:
            # no --duration: it samples until told to stop, so the window is `seconds` of the clock (a duration
            # counts samples, which py-spy spaces at random: 400 at 25 Hz took 16 +- 0.8 s)
            spy.sampling.command = [pyspy_path(), "record", "--pid", str(pid), "--native", "--threads", "--rate",
                                    str(rate_hz), "--format", "raw", "--output", raw_path]
        except FlametoolError as exc:
            spy.sampling.error = str(exc)
            return spy
        spy.sampling.threads = thread_count(pid)
        try:
            # its own session: a terminal's Ctrl-C reaches the parent only, which stops py-spy and all it started
            spy.proc = subprocess.Popen(spy.sampling.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True,
                                        pass_fds=() if named else (fd,))
        except OSError as exc:
            spy.sampling.error = f"py-spy could not start: {exc}"
            return spy
        procs.track(spy.proc.pid)  # its own session and group: Ctrl-Z stops it with flametool
        spy.output = Output(spy.proc)
        spy.launched = time.monotonic()
        return spy

    def run(self, seconds: float, since: float | None = None) -> bool:
        """Let it sample for `seconds` from its start (or from `since`, when that is later), then stop it; never
        longer than attach_seconds() to start and FLUSH_SECONDS to write; fill in what happened. False when py-spy
        did not start."""
        proc, output, sampling = self.proc, self.output, self.sampling
        if proc is None or output is None:
            return False
        allowance = attach_seconds()
        late = "start sampling"
        try:  # from here on a stop (Ctrl-C, SIGTERM) stops py-spy too, however soon it comes
            began = output.wait_start(proc, self.launched + allowance - time.monotonic())
            if began is None:  # its output ended before it sampled (it is exiting: refused, say), or it is late
                wait_unpaused(proc, max(0.0, self.launched + allowance - time.monotonic()))
            if began is not None:
                began = max(began, since or began)
                late = "finish"
                try:
                    wait_unpaused(proc, began + seconds - time.monotonic())
                except subprocess.TimeoutExpired:  # the window is over: it writes what it has and exits
                    interrupt(proc)
                    wait_unpaused(proc, min(FLUSH_SECONDS, allowance))
            sampling.complete = True
        except subprocess.TimeoutExpired:
            within = allowance if late == "start sampling" else seconds + allowance
            sampling.error = (f"py-spy did not {late} within {within:.0f} s; stopped it and kept what it wrote (a "
                              "lower --rate helps a py-spy that falls behind)")
            procs.kill_tree(proc, grace=min(FLUSH_SECONDS, allowance), first=signal.SIGINT, group=True)
        finally:
            self._stop()
        ended = time.monotonic()
        output.thread.join(timeout=2)
        lines = output.lines
        sampling.behind_seconds = output.behind_seconds
        sampling.exit_code = proc.returncode
        sampling.output_tail = lines[-5:]
        totals = next((TOTALS.search(l) for l in reversed(lines) if TOTALS.search(l)), None)
        if totals:
            sampling.pyspy_samples, sampling.pyspy_errors = int(totals.group(1)), int(totals.group(2))
        start = output.marks.get("start", ended - seconds)
        sampling.window = (max(start, since or start), output.marks.get("end", ended))
        if proc.returncode != 0 and sampling.complete:
            sampling.complete = False
            sampling.refused = bool(REFUSED.search(" ".join(lines)))
            sampling.error = explain_failure(lines, proc.returncode)
        return True

    def _stop(self) -> None:
        """Interrupted (Ctrl-C, SIGTERM) while waiting, or anything py-spy left: never leave it behind."""
        if self.proc is not None:
            with procs.signals_deferred():
                procs.kill_tree(self.proc, grace=0, first=signal.SIGKILL, group=True)
                procs.untrack(self.proc.pid)

    def discard(self) -> None:
        """py-spy stopped (if it still runs) and its output file closed: what it wrote was read, or is not wanted.
        Once: a descriptor closed twice could be another file's by then."""
        self._stop()
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        try:
            os.close(fd)
        except OSError:
            pass
        if self.named:
            Path(self.raw_path).unlink(missing_ok=True)


def raw_output() -> tuple[int, str, bool]:
    """Where py-spy writes its raw stacks: (a descriptor open on it, the path py-spy is given, whether that path
    is a name in the temporary directory). On Linux the file has no name from the start (O_TMPFILE, or a name
    removed at once) and py-spy writes it through /proc/self/fd/N, the descriptor it inherits: nothing is left
    in the temporary directory whatever ends flametool, SIGKILL included. Elsewhere, a named temporary file
    that record() removes."""
    folder = tempfile.gettempdir()
    if os.path.isdir("/proc/self/fd"):
        try:
            fd = os.open(folder, getattr(os, "O_TMPFILE") | os.O_RDWR, 0o600)
        except (AttributeError, OSError):  # a file system without O_TMPFILE: a name, removed at once
            fd, path = tempfile.mkstemp(prefix="flametool-pyspy-", suffix=".txt")
            os.unlink(path)
        fd = above_standard(fd)
        return fd, f"/proc/self/fd/{fd}", False
    fd, path = tempfile.mkstemp(prefix="flametool-pyspy-", suffix=".txt")
    return fd, path, True


def above_standard(fd: int) -> int:
    """`fd`, moved above 0, 1 and 2 if it is one of them (flametool started with a standard stream closed
    gets the lowest free descriptor): handed to py-spy as its standard input, output or error, its samples
    would go elsewhere."""
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


class Output:
    """py-spy's own output (start, totals, "behind" warnings on stdout; errors on stderr), read as it comes
    and timestamped: when it started and stopped sampling is the window the loop's chunks are matched to."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.marks: dict[str, float] = {}
        self.behind_seconds = 0.0
        self.started = threading.Event()  # its "Sampling process" line came, or its output ended
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None  # Spy.attach starts py-spy with a pipe on its stdout
        for line in proc.stdout:
            now = time.monotonic()
            self.lines.append(line.rstrip())
            if "Sampling process" in line:
                self.marks.setdefault("start", now)
                self.started.set()
            elif line.startswith("py-spy> Wrote") or "Samples:" in line:
                self.marks.setdefault("end", now)
            m = BEHIND.search(line)
            if m:
                self.behind_seconds = max(self.behind_seconds, float(m.group(1)))
        self.started.set()

    def wait_start(self, proc: subprocess.Popen, timeout: float) -> float | None:
        """When py-spy began to sample (its "Sampling process" line), waiting up to `timeout` seconds (the time
        flametool was stopped by Ctrl-Z not counted); None when it did not by then, or ended first."""
        deadline = time.monotonic() + timeout
        paused = procs.paused_seconds()
        while not self.started.wait(max(0.0, min(0.5, deadline - time.monotonic()))):
            deadline += procs.paused_seconds() - paused
            paused = procs.paused_seconds()
            if time.monotonic() >= deadline or proc.poll() is not None and not self.thread.is_alive():
                break
        return self.marks.get("start")


def interrupt(proc: subprocess.Popen) -> None:
    """SIGINT to py-spy's process group (its own session): py-spy, or a wrapper and the py-spy it runs, stop
    sampling and write what they have, as at a terminal's Ctrl-C."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except OSError:  # its group is gone (it exited): nothing to tell
        pass


def wait_unpaused(proc: subprocess.Popen, timeout: float) -> None:
    """proc.wait(timeout), the time flametool (and py-spy with it) was stopped by Ctrl-Z not counted."""
    deadline = time.monotonic() + timeout
    paused = procs.paused_seconds()
    while True:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            return
        except subprocess.TimeoutExpired:
            if procs.paused_seconds() == paused:
                raise
            deadline += procs.paused_seconds() - paused
            paused = procs.paused_seconds()


def read_raw(fd: int) -> list[folded.Stack]:
    """py-spy's raw output, from the start of the file open on `fd`; a line cut short by a killed py-spy says
    nothing reliable and is skipped."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    text = b"".join(chunks).decode("utf-8", "replace")
    raw: list[folded.Stack] = []
    for line in text.split("\n"):  # only newlines end a line: a frame name may hold other separators
        try:
            raw.append(folded.parse_line(line))
        except folded.FoldedLineError:
            continue
    return raw


def explain_failure(lines: list[str], code: int) -> str:
    text = " ".join(lines)
    if REFUSED.search(text):  # py-spy 0.4 says "Permission Denied: Try running again with elevated permissions"
        return f"py-spy was not allowed to attach (ptrace refused): {REFUSED_HINT}"
    # its error with its causes (with RUST_BACKTRACE set, py-spy prints a stack backtrace after them, whose last
    # line, '7: main', said nothing), else its last words, not its progress line
    starts = [i for i, l in enumerate(lines) if l.strip().startswith("Error:")]
    if starts:
        told = itertools.takewhile(lambda l: not l.strip().startswith("Stack backtrace:"), lines[starts[-1]:])
        last = " ".join(l.strip() for l in told if l.strip())
    else:
        last = next((l.strip() for l in reversed(lines) if l.strip() and "Sampling process" not in l), "")
    said = f": {last[:300]}" if last else ""
    if re.search(r"os error (28|122)\b", last):  # ENOSPC, EDQUOT: not the run directory's disk, the temporary one
        said += (f" (py-spy writes its stacks in the temporary directory, {tempfile.gettempdir()}, before flametool "
                 "reads them: free space there, or set TMPDIR to a folder with room)")
    if code < 0 or code > 128:  # killed by a signal (a shell reports 128 + the signal number)
        number = -code if code < 0 else code - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"py-spy crashed ({name}, exit code {code}){said}"
    return f"py-spy exited with code {code}{said}"


def sampled_us_per_call(chunks: list[list[float]], calls: int, window: tuple[float, float] | None) -> float | None:
    """Host time per call over the chunks that ran wholly inside the sampling window."""
    if not chunks or window is None:
        return None
    start, end = window
    inside = [(t0, t1) for t0, t1 in chunks if t0 >= start and t1 <= end]
    if not inside:
        # chunks longer than the window: take those that overlap it by more than half
        inside = [(t0, t1) for t0, t1 in chunks if min(t1, end) - max(t0, start) > (t1 - t0) / 2]
    if not inside:
        return None
    return sum(t1 - t0 for t0, t1 in inside) * 1e6 / (len(inside) * calls)


def record_keeping_up(pid: int, rate_hz: int, seconds: float, loop_function: str, out: Path,
                      say: Callable[[str], None], spy: Spy | None = None, since: float | None = None) -> Sampling:
    """record(), and when py-spy falls behind, once more at half the rate while the loop still runs: a
    sampler that cannot keep up stops the process longer than it samples it. The retry's stacks replace
    the first attempt's; the first attempt stays in run.json (earlier_attempts). `spy`, `since`: record()'s, for
    the first attempt."""
    sampling = record(pid, rate_hz, seconds, loop_function, out, spy, since)
    lower = suggest_rate(rate_hz, None, True)
    if sampling.behind_seconds > 0 and not sampling.refused and lower is not None and lower < rate_hz:
        say(f"py-spy fell {sampling.behind_seconds:.1f} s behind at {rate_hz} Hz; sampling again at {lower} Hz")
        retry = record(pid, lower, seconds, loop_function, out)
        retry.earlier = [replace(sampling, rate_hz=rate_hz)]
        sampling = retry
    elif took_none(sampling):
        # its first native stack reads the symbols of the libraries in it (libtorch_cpu's: seconds of CPU on a
        # loaded 2-core machine), which can take a short window whole: the loop still runs, so once more, where
        # the symbols are in the page cache (seen on the CPU machine under load at --sample-seconds 0.5, torch's
        # first window of three runs in four, 2026-12-05)
        say(f"py-spy took no samples in its {sampling.seconds:g} s window (its start-up ran through it); sampling "
            "again")
        retry = record(pid, rate_hz, seconds, loop_function, out)
        retry.earlier = [sampling]
        sampling = retry
    return sampling


def took_none(sampling: Sampling) -> bool:
    """Whether py-spy sampled for its whole window without taking a sample (not refused, not failed)."""
    taken = sampling.pyspy_samples if sampling.pyspy_samples is not None else sampling.total_samples
    return sampling.complete and not sampling.refused and taken == 0
