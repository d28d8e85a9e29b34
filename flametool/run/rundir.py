"""The run directory: the one interface between measuring and everything after it.

A run directory holds ``run.json`` (the records of record.py), one ``<label>.prof`` (cProfile) and one
``<label>.folded`` (py-spy raw folded stacks, filtered to the active loop) per profiled case, and later
``report.html``.  Everything downstream (analysis, report, diff, export, snakeviz) reads only this.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import stat
import tempfile
from pathlib import Path
from typing import Any, TypeGuard

from . import casenames, folded, record, safeopen
from ..errors import FlametoolError, RunDirError, WriteError

SCHEMA = record.SCHEMA
RUN_FILE = "run.json"


# the longest name a group's logs begin with, in bytes: a file name may be 255 (NAME_MAX), and the stem is followed
# by `-timing-NNN.log` or `-sweep-NNN.log`
MOST_STEM = 200


def group_stem(labels: list[str]) -> str:
    """What the logs of processes that built these cases are named after (`numpy+torch` of
    `numpy+torch-timing-2.log`): the labels joined by `+`; where that is too long for a file name (a dozen cases
    of long names), the labels that fit and how many more (`numpy+torch+mine+7-more`). No two groups of a run share
    a case, so the first label alone tells one group's logs from another's."""
    whole = "+".join(labels)
    if len(whole.encode()) <= MOST_STEM:
        return whole
    kept: list[str] = []
    for label in labels:
        stem = "+".join(kept + [label, f"{len(labels) - len(kept) - 1}-more"])
        if kept and len(stem.encode()) > MOST_STEM:
            break
        kept.append(label)
    return "+".join(kept + [f"{len(labels) - len(kept)}-more"])


def prof_path(run: Path, label: str) -> Path:
    return run / f"{label}.prof"


def folded_path(run: Path, label: str) -> Path:
    return run / f"{label}.folded"


def threads_path(folded: Path) -> Path:
    """Where the stacks of the threads other than the caller go, beside the case's own: LABEL.threads.folded."""
    return folded.with_name(folded.name.removesuffix(".folded") + ".threads.folded")


def write_stacks(folded_file: Path, kept: list[folded.Stack], others: list[folded.Stack]) -> None:
    """A sampled case's stack files, each written atomically (write_atomic: a full disk is one line, and no half
    file): its own stacks to LABEL.folded, its other threads' to LABEL.threads.folded (none: no file left from an
    attempt before it)."""
    write_atomic(folded_file, folded.dumps(kept))
    threads = threads_path(folded_file)
    if others:
        write_atomic(threads, folded.dumps(others))
    else:
        threads.unlink(missing_ok=True)


def is_file_name(name: object) -> TypeGuard[str]:
    """`name` (from run.json's `files`) names a file in the run directory itself: no folder, no '..', no NUL."""
    return isinstance(name, str) and name not in ("", ".", "..") and "\0" not in name and Path(name).name == name


def write_atomic(path: Path, text: str, mode: int = 0o644, shown: Path | None = None) -> None:
    """Write via a temporary file in the same folder and rename, so a reader never sees half a file. A write
    that fails is one FlametoolError naming the file (cannot_write; `shown`: the name the user gave it)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise cannot_write(shown or path, exc) from None
    try:
        # a path that is not UTF-8 (--out $'\xff') reaches the page as an escape, not a failed write
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # mkstemp makes it private; a run directory is meant to be shared
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk, no permission: one line; the file as it was is kept
            raise cannot_write(shown or path, exc) from None
        raise


REPORT_FILE = "report.html"


def write_report(run: Path, html: str, output: Path | None = None) -> Path:
    """A run directory's rendered report to RUN/report.html, atomically (a reader never sees half a page,
    and a failed write keeps the last one), or to `output`, the file the user named, written through
    whatever is there (a symlink, a FIFO, a device) as `export -o` does."""
    run = Path(run)
    if output is not None:
        write_output(Path(output), html, run, keep=REPORT_FILE)
        return Path(output)
    path = run / REPORT_FILE
    try:
        write_atomic(path, html)
    except OSError as exc:
        raise FlametoolError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    return path


def write_output(path: Path, text: str, run: Path | None = None, keep: str | None = None) -> None:
    """Write a file the user named (`-o`) as a shell's '>' would, through whatever is there, so a symlink
    keeps pointing where it did, a FIFO is fed, a device (/dev/stdout, /dev/full) is written to and stays a
    device; but a regular file already there (a symlink's target too) is replaced by rename once the new text
    is whole, its mode kept, so that a write that fails (a full disk) leaves it as it was (where its folder
    cannot take a temporary file, it is written through). Any failure, on open or on write (ENOSPC), is one
    FlametoolError naming the path. Files inside a run directory are written with write_atomic, and `-o` never
    replaces one of `run`'s own files (run.json, py-spy's stacks, a profile, a log; `keep` names the one it
    may: report.html)."""
    if run is not None:
        refuse_run_file(path, run, keep)
    target = Path(os.path.realpath(path))
    try:
        there = os.stat(target)
    except (OSError, ValueError):
        there = None
    if there is not None and stat.S_ISREG(there.st_mode) and os.access(target.parent, os.W_OK | os.X_OK):
        write_atomic(target, text, stat.S_IMODE(there.st_mode), shown=path)
        return
    try:
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
    except BrokenPipeError:  # a pipe whose reader stopped reading (-o /dev/stdout | head): as with -o -, not a fault
        return
    except OSError as exc:
        raise FlametoolError(f"{path}: cannot be written ({exc.strerror or exc})") from None


def refuse_run_file(path: Path, run: Path, keep: str | None) -> None:
    """`path` (followed, as the write would follow it) is not a file of the run directory `run`: writing there
    would replace what was measured (`report RUN -o RUN/run.json`, `export -o RUN/torch.folded`)."""
    try:
        target = os.stat(path)
        entries = list(os.scandir(run))
    except (OSError, ValueError):  # nothing there yet (or no run to compare with): nothing can be lost
        return
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if entry.name != keep and (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            raise FlametoolError(f"{path}: is {run / entry.name}, a file of the run; writing it would replace what "
                                 "was measured: choose another -o")


def save(run: Path, data: record.Run) -> None:
    """run.json, atomically; strict JSON only (no NaN or Infinity, which other parsers reject)."""
    doc = data.to_json()
    try:
        text = dumps(doc)
    except ValueError:
        raise FlametoolError(f"{run / RUN_FILE}: not written: {check_tree(doc) or 'a value is not a finite number'}") from None
    if not os.path.isdir(run):  # removed while the run went on (a case that cleans up after itself): made again,
        try:                    # so that what was measured is kept
            os.makedirs(run, exist_ok=True)
        except OSError:
            pass  # the write below says why it cannot be written
    write_atomic(run / RUN_FILE, text + "\n")


def dumps(doc: dict) -> str:
    """run.json's text: indented two spaces, and a run holds hundreds of loop figures per case, so each list of
    numbers on one line ("[1.5, 2.25]"), not one number a line. Each such list is written by json's C encoder
    and the rest by its indenting one (which writes every number on a line of its own, and took 79 ms of a 28 + 28
    --env run's 109 ms save on the CPU machine, with 26 ms more to join the lines up again)."""
    lists: list[str] = []
    clash = False

    def mark(value: Any) -> Any:
        nonlocal clash
        if isinstance(value, str) and LIST_MARK in value:
            clash = True  # a value that holds the mark itself: every number on a line of its own (valid, longer)
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            if value and all(type(x) in (int, float) for x in value):
                lists.append(json.dumps(value, allow_nan=False))
                return f"{LIST_MARK}{len(lists) - 1}{LIST_MARK}"
            return [mark(v) for v in value]
        return value

    marked = mark(doc)
    if clash:
        return json.dumps(doc, indent=2, allow_nan=False)
    return MARKED.sub(lambda m: lists[int(m.group(1))], json.dumps(marked, indent=2, allow_nan=False))


# what stands for a list of numbers until the indented text is made: a string no run.json value holds (NUL)
LIST_MARK = "\x00"
MARKED = re.compile(r'"\\u0000(\d+)\\u0000"')


# run.json holds figures, not stacks: a run of hundreds of processes writes a few megabytes. A larger one (a sparse
# file of gigabytes) is refused before it is read, not after reading it twice over into memory
MAX_RUN_JSON = 256 * 2**20


def load(run: Path | str) -> record.Run:
    """Read and check a run directory's run.json; every problem is one RunDirError naming the file."""
    run = Path(run)
    try:
        found, folder = run.exists(), run.is_dir()
    except OSError as exc:  # a name longer than the file system allows (ENAMETOOLONG), a folder not searchable
        raise RunDirError(f"{shown(run)}: cannot be read ({exc.strerror or exc})") from None
    if not found:
        raise RunDirError(f"{run}: no such run directory")
    if not folder:
        raise RunDirError(f"{run}: not a directory")
    path = run / RUN_FILE
    if not (path.exists() or path.is_symlink()):
        raise RunDirError(f"{path}: missing (is {run} a flametool run directory?)")
    return record.Run.from_json(read_json(path, MAX_RUN_JSON), str(path))


def read_json(path: Path, limit: int) -> object:
    """A JSON file of the run directory (run.json, sources.json, a timeline), as its writer wrote it: a regular
    file only (never through a link), at most `limit` bytes, UTF-8 JSON whose tree check_tree passes; else one
    RunDirError naming the file."""
    try:
        raw = safeopen.read_bytes(path, limit)
        data = json.loads(raw.decode("utf-8"))
    except MemoryError:
        raise RunDirError(f"{path}: too large to read in the memory this process may use "
                          f"({path.lstat().st_size / 2**20:,.0f} MiB; a run writes kilobytes)") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, or an integer of 4300+ digits
        raise RunDirError(f"{path}: cannot be read as JSON ({str(exc)[:100]})") from None
    except RecursionError:
        raise RunDirError(f"{path}: cannot be read as JSON (nested more than {MAX_DEPTH} levels deep)") from None
    problem = check_tree(data)
    if problem:
        raise RunDirError(f"{path}: {problem}")
    return data


def load_profiled(run: Path | str, what: str) -> record.Run:
    """load(), for a command that reads a run's stacks or profiles (`what` it does with them): a sweep made with
    --sample is read as its cases at each of its sizes (casenames.as_cases: cupy@1024, its profile there where it
    has one); a sweep without profiles, or an atlas, says what it is instead of 'no case has stacks'."""
    data = load(run)
    if data.kind == "atlas":
        # the ops' folders there are: a stopped atlas lists the ops it never began, whose folders were never made
        made = [str(Path(run) / p.dir) for p in data.parts if (Path(run) / p.dir / RUN_FILE).is_file()]
        raise FlametoolError(f"{run}: an atlas: each op's run is a folder in it ("
                             + (", ".join(made) or "none was made: the atlas stopped before its first op")
                             + f"); give one of them to {what}")
    if data.kind == "sweep" and casenames.profiled_sizes(data):
        return casenames.as_cases(data)
    if data.kind == "sweep":
        how = ("no case was profiled at any size (--sample profiles each case alone at its host-bound sizes)"
               if data.config.recorded.get("sample") else "made without --sample, it holds timings only")
        raise FlametoolError(f"{run}: a sweep run: {how}, no stacks or profiles to {what} (flametool report "
                             f"{shell_word(run)} shows its timings)")
    if data.kind != "compare":
        raise FlametoolError(f"{run}: a {data.kind} run: it holds timings only, no stacks or profiles to {what} "
                             f"(flametool report {shell_word(run)} shows it)")
    return data


# run.json nests about 8 levels (results.LABEL.profile.sampling.earlier_attempts[0].command[0]); deeper is
# not ours, and would only make a reader recurse until Python stops it
MAX_DEPTH = 32


def check_tree(data: Any) -> str | None:
    """What is wrong with the document as a whole: nesting deeper than MAX_DEPTH, or a number that is not
    finite (NaN, Infinity and 1e400 are accepted by Python's json but are no JSON number). Iterative, so
    that no depth can make it recurse; the path to the value is named."""
    if _clean(data, 1):  # the document as it nearly always is: nothing to name, found without building paths
        return None
    todo: list[tuple[Any, int, Any]] = [(data, 1, None)]
    while todo:
        value, depth, trail = todo.pop()
        if depth > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} levels deep (at {_path(trail)[:100]})"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{_path(trail)} is {json.dumps(value)}, not a finite number"
        if isinstance(value, dict):
            todo.extend((v, depth + 1, (trail, k)) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, depth + 1, (trail, i)) for i, v in enumerate(value))
    return None


def _clean(value: Any, depth: int) -> bool:
    """True only where check_tree finds nothing (False: let it walk and name the problem): `value`, at `depth`,
    nested no deeper than MAX_DEPTH and holding no float that is not finite. Recursing at most MAX_DEPTH levels
    (deeper is False before it is entered); json's own types by identity, anything else left to check_tree."""
    kind = type(value)
    if kind is float:
        return math.isfinite(value)
    if kind is dict:
        items = value.values()
    elif kind is list:
        items = value
    else:
        return not isinstance(value, (dict, list, float))
    if not items:
        return True
    if depth >= MAX_DEPTH:  # its items are deeper than MAX_DEPTH
        return False
    for v in items:
        kind = type(v)
        if kind is float:
            if not math.isfinite(v):
                return False
        elif kind is dict or kind is list:
            if not _clean(v, depth + 1):
                return False
        elif kind is not str and kind is not int and kind is not bool and v is not None:
            if isinstance(v, (dict, list, float)):
                return False
    return True


def _path(trail: Any) -> str:
    keys = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text or "the document"


def ensure_new(out: Path) -> None:
    """Refuse to write into an existing, non-empty folder: a run is never overwritten silently."""
    try:
        taken = out.exists() and (not out.is_dir() or any(out.iterdir()))
    except OSError as exc:  # a name longer than the file system allows (ENAMETOOLONG), a folder not readable
        raise FlametoolError(f"{shown(out)}: cannot be the run directory ({exc.strerror or exc}); choose another --out") from None
    if taken and not out.is_dir():
        raise FlametoolError(f"{out}: a file, not a folder; choose another --out")
    if taken:
        raise FlametoolError(f"{out}: already exists and is not empty; choose another --out")


def shell_word(path: Path | str) -> str:
    """`path` as one word a shell gives back as the same bytes (shown's $'...' form when not UTF-8), and that a
    command reads as a path, not an option (`--out -x` is given back as ./-x)."""
    if os.fsencode(path).startswith(b"-"):
        path = f"./{os.fsdecode(path)}"
    text = shown(path, most=1 << 62)
    return text if text.startswith("$'") else shlex.quote(text)


def shown(path: Path | str, most: int = 200) -> str:
    """A path to print for a user to type back: as it is when it is UTF-8 and short; a name that is not
    UTF-8 (--out $'\xff') in the shell's $'...' form, which gives back the same bytes; one longer than
    `most` cut in the middle (a 4,000-character name is not read, only recognised)."""
    raw = os.fsencode(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = "$'" + "".join(chr(b) if 0x20 <= b < 0x7F and b not in b"'\\" else f"\\x{b:02x}" for b in raw) + "'"
    return text if len(text) <= most else f"{text[:most // 2]}...{text[-most // 2:]} ({len(text):,} characters)"


# What run.json holds from the moment a run claims its directory until the run writes its own: a valid,
# empty, incomplete run, so a reader in between sees no half file.
CLAIMED: dict[str, Any] = {"schema": SCHEMA, "complete": False, "started": None, "finished": None, "command": [], "config": {},
           "env": {}, "results": {}}
UNIQUE_TRIES = 1000


def create(out: Path, unique: bool = False) -> Path:
    """Make and claim the run directory (an existing empty one is used as is), or say why it cannot be.

    Claiming is one atomic step, creating run.json with O_EXCL in it, so of two runs started on one --out at
    once exactly one gets it and the other is refused (checking that the folder is new, then writing into
    it, let both go on and one lose its results). With `unique` (the default --out, a timestamp of one
    second), a name already taken gets a suffix instead: -2, -3, ... Returns the directory claimed."""
    for n in range(1, UNIQUE_TRIES + 1):
        path = out if n == 1 else out.with_name(f"{out.name}-{n}")
        if claim(path):
            return path
        if not unique:
            break
    if out.exists() and not out.is_dir():
        raise FlametoolError(f"{out}: a file, not a folder; choose another --out")
    raise FlametoolError(f"{out}: already exists and is not empty; choose another --out")


def claim(out: Path) -> bool:
    """True when this process made `out` its run directory; False when it is taken (not empty, or a file)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out / RUN_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        if out.exists():  # run.json is there (another run's), or `out` is a file
            return False
        # `out`, or a folder above it, is a link to nothing (flametool-runs -> an unmounted disk): mkdir says it
        # exists, which was read as taken (`already exists and is not empty`, after 1,000 names tried)
        link = next((p for p in (out, *out.parents) if p.is_symlink() and not p.exists()), None)
        if link is None:  # gone again since (another run's claim undone): taken, as it was
            return False
        raise FlametoolError(f"{shown(link)}: a symbolic link to {shown(os.readlink(link))}, which does not exist; "
                             "make that folder, or choose another --out") from None
    except OSError as exc:
        if out.exists() and not out.is_dir():
            return False
        raise FlametoolError(f"{shown(out)}: cannot create the run directory ({exc.strerror or exc}); choose another --out") from None
    path = out / RUN_FILE
    try:
        # run.json was not there, but other files may be: then the folder is not empty, and not ours
        if any(p.name != RUN_FILE for p in out.iterdir()):
            os.close(fd)
            path.unlink()
            return False
        # a directory that can be made may still not be writable (a full disk): this is the probe
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(CLAIMED) + "\n")
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise cannot_write(path, exc) from None
    return True


def cannot_write(path: Path, exc: OSError) -> WriteError:
    """One line for a file of the run directory that cannot be written (a full disk, no permission)."""
    return WriteError(f"{path}: cannot be written ({exc.strerror or exc}); what was written before is kept")
