"""The run directory's record of source lines, ``sources.json`` beside run.json: for every file:line that holds
samples, the text of that line (not the file), where the file was found, and for a line of Cython's generated
C/C++ the ``.pyx`` line it was generated from, with that line's text. The views (report, diff, export on a
laptop) read lines from here, never from source files, so they show what the measuring host had.

measure/sources.py makes it (reading only the lines it needs, inside the roots it is given); analyse/lines.py
reads it. A run recorded before lines were kept has no sources.json: it loads as an empty record, and its
lines show as file:line alone.

The texts are data from files anyone can write (a case file, a library, a --source checkout): each is kept to
MAX_TEXT characters, and control characters (ESC, CR, line and paragraph separators, bidirectional overrides)
are written as escapes, so that no view's output is driven by them; markup ('<', '&') is left as it is, for each
renderer to escape in its own way. The loader applies the same rules again (a shared run directory may hold a
sources.json written by hand)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from . import rundir
from ..errors import RunDirError

SOURCES_FILE = "sources.json"
VERSION = 1
MAX_TEXT = 200  # characters of a line kept: a listing shows a line, not a minified script
MAX_LINE = 10**9  # line numbers above this are not a source's
MAX_SOURCES_JSON = 64 * 2**20  # a record of line texts is kilobytes; a larger file is refused unread

# where a file's lines were read: the case's own file, a library found on the child's sys.path, a --source root,
# or the text Cython copied into its generated source (the .pyx itself not found)
ORIGINS = ("case", "library", "source", "generated")

# control characters but tab, C1 controls, the line breaks some readers honour, and the bidirectional controls
# that make a line read otherwise than it runs ("trojan source"); tabs are expanded first
_ESCAPED = [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF]
_ESCAPES = str.maketrans({c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _ESCAPED})


def clean_text(text: str) -> str:
    """A line's text as every view may show it: the line break dropped, tabs expanded, control characters
    escaped, at most MAX_TEXT characters (a longer one cut, ending in '…'). Applying it twice changes nothing."""
    text = text.rstrip("\r\n").expandtabs(8).translate(_ESCAPES)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def same_file(a: str, b: str) -> bool:
    """Whether two names of a file name one file: py-spy strips a sys.path entry from a Python file's path, the
    counted loop and a case's spec keep more of it ('flametool/workload/builtin_workloads.py', 'mywork.py',
    '/home/me/mywork.py'), so one is the other or a tail of it."""
    a, b = a.replace("\\", "/"), b.replace("\\", "/")
    return a == b or a.endswith("/" + b.lstrip("/")) or b.endswith("/" + a.lstrip("/"))


def location(frame: str) -> tuple[str, int] | None:
    """'name (file:line)' -> (file, line); None for a frame without a line (a library, an address, the loop)."""
    _, sep, loc = frame.rpartition(" (")
    if not sep or not loc.endswith(")"):
        return None
    path, colon, line = loc[:-1].rpartition(":")
    if not colon or not path or not line.isdigit() or not 0 < int(line) <= MAX_LINE:
        return None
    return path, int(line)


@dataclass(frozen=True)
class PyxLine:
    """The .pyx line a generated C/C++ line came from (Cython's source comment above it)."""

    file: str  # as Cython wrote it in the comment: 'cupy/_core/_routines_linalg.pyx'
    line: int
    text: str | None  # None: the .pyx was not found and the comment held no text


@dataclass(frozen=True)
class SourceFile:
    """One file the frames name, keyed in Sources by the name the frames give it."""

    origin: str  # one of ORIGINS
    path: str  # where it was read, for a person (the measuring host's path)
    lines: dict[int, str] = field(default_factory=dict)  # line -> its text (clean_text)
    pyx: dict[int, tuple[str, int]] = field(default_factory=dict)  # generated line -> (.pyx file, .pyx line)
    # the short functions kept whole (their def line to their last, every line's text), def line -> last line:
    # a listing of one shows it from its `def` to its last line, not from its first sampled line to its last
    functions: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LineText:
    """What the record holds of one file:line: its text (None: its file was not found), where its file was read
    (ORIGINS; None: not found), and the .pyx line a generated C/C++ line came from."""

    text: str | None
    origin: str | None
    pyx: PyxLine | None


@dataclass(frozen=True)
class Sources:
    files: dict[str, SourceFile] = field(default_factory=dict)
    version: int = VERSION
    # case label -> the files that case read from another copy than `files` holds (one name, another path: two
    # --env builds of a library, whose 'mylib/core.py' is two files with other lines at one number)
    cases: dict[str, dict[str, SourceFile]] = field(default_factory=dict)

    def for_case(self, label: str) -> Sources:
        """The record as the case `label` read its files: its own copy of a file where it read another."""
        own = self.cases.get(label)
        return Sources({**self.files, **own}, self.version) if own else self

    def look_up(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], LineText]:
        """Each file:line's text, origin and .pyx line, all at once: what a reader of many lines asks."""
        return {(file, line): LineText(self.text(file, line), self.origin(file), self.pyx(file, line))
                for file, line in keys}

    def text(self, file: str, line: int) -> str | None:
        """The line's text, or None where its file was not found (the views show file:line alone)."""
        found = self.files.get(file)
        return found.lines.get(line) if found else None

    def function(self, file: str, lines: Iterable[int]) -> tuple[int, int] | None:
        """The function kept whole (its def line and its last) that holds all of `lines`, the innermost; None
        where none was kept (a long one, a library's, a run recorded before functions were kept)."""
        found = self.files.get(file)
        lines = list(lines)
        if found is None or not lines:
            return None
        holding = [(a, b) for a, b in found.functions.items() if a <= min(lines) and max(lines) <= b]
        return min(holding, key=lambda span: span[1] - span[0]) if holding else None

    def origin(self, file: str) -> str | None:
        found = self.files.get(file)
        return found.origin if found else None

    def pyx(self, file: str, line: int) -> PyxLine | None:
        """The .pyx line a generated C/C++ line maps to, with its text where known."""
        found = self.files.get(file)
        target = found.pyx.get(line) if found else None
        if target is None:
            return None
        return PyxLine(target[0], target[1], self.text(*target))

    def to_json(self) -> dict[str, Any]:
        # "cases" only where a case read its own copy: a flametool before it reads past it (and shows `files`)
        return {"version": self.version, "files": _files_json(self.files)} | (
            {"cases": {label: _files_json(files) for label, files in sorted(self.cases.items())}} if self.cases else {})

    @classmethod
    def from_json(cls, data: Any, where: str) -> Sources:
        """The record from its JSON; anything not as to_json writes it is one RunDirError naming `where`."""
        def bad(what: str) -> RunDirError:
            return RunDirError(f"{where}: {what}")

        if not isinstance(data, dict):
            raise bad("not a JSON object")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise bad("no version number")
        if version > VERSION:
            raise bad(f"version {version}, written by a newer flametool (this one reads version {VERSION})")
        if version < 1:
            raise bad(f"version {version} is not a version of it")
        files = data.get("files")
        if not isinstance(files, dict):
            raise bad("files is not an object")
        cases = data.get("cases", {})  # optional: none where no case read a copy of its own
        if not isinstance(cases, dict) or not all(isinstance(f, dict) for f in cases.values()):
            raise bad("cases is not an object of objects")

        def bad_in(label: str) -> Callable[[str], RunDirError]:
            return lambda what: bad(f"cases[{_short(label)}].{what}")

        return cls(_files_from_json(files, bad), VERSION,
                   {label: _files_from_json(f, bad_in(label)) for label, f in cases.items()})


def _files_json(files: dict[str, SourceFile]) -> dict[str, Any]:
    return {name: {"origin": f.origin, "path": f.path,
                   "lines": {str(n): t for n, t in sorted(f.lines.items())},
                   "pyx": {str(n): [p, m] for n, (p, m) in sorted(f.pyx.items())}}
            | ({"functions": {str(a): b for a, b in sorted(f.functions.items())}} if f.functions else {})
            for name, f in sorted(files.items())}


def _files_from_json(files: dict[str, Any], bad: Callable[[str], RunDirError]) -> dict[str, SourceFile]:
    out: dict[str, SourceFile] = {}
    for name, doc in files.items():
        if not name or not isinstance(doc, dict):
            raise bad(f"files[{_short(name)}] is not an object")
        origin, path = doc.get("origin"), doc.get("path")
        if origin not in ORIGINS:
            raise bad(f"files[{_short(name)}].origin is not one of {', '.join(ORIGINS)}")
        if not isinstance(path, str):
            raise bad(f"files[{_short(name)}].path is not a string")
        lines, pyx = doc.get("lines", {}), doc.get("pyx", {})
        if not isinstance(lines, dict) or not isinstance(pyx, dict):
            raise bad(f"files[{_short(name)}]: lines and pyx are objects")
        texts: dict[int, str] = {}
        for key, text in lines.items():
            if not isinstance(text, str):
                raise bad(f"files[{_short(name)}].lines[{_short(key)}] is not a string")
            texts[_line_number(key, bad, name)] = clean_text(text)
        mapped: dict[int, tuple[str, int]] = {}
        for key, target in pyx.items():
            if not (isinstance(target, list) and len(target) == 2 and isinstance(target[0], str) and target[0]
                    and isinstance(target[1], int) and not isinstance(target[1], bool)
                    and 0 < target[1] <= MAX_LINE):
                raise bad(f"files[{_short(name)}].pyx[{_short(key)}] is not [file, line]")
            mapped[_line_number(key, bad, name)] = (target[0], target[1])
        # optional (a run recorded before it has none; a flametool before it reads past it)
        spans = doc.get("functions", {})
        if not isinstance(spans, dict):
            raise bad(f"files[{_short(name)}].functions is not an object")
        functions: dict[int, int] = {}
        for key, last in spans.items():
            first = _line_number(key, bad, name)
            if not (isinstance(last, int) and not isinstance(last, bool) and first <= last <= MAX_LINE):
                raise bad(f"files[{_short(name)}].functions[{_short(key)}] is not its function's last line")
            functions[first] = last
        out[name] = SourceFile(origin, clean_text(path), texts, mapped, functions)
    return out


def _line_number(key: str, bad: Callable[[str], RunDirError], name: str) -> int:
    if not (key.isascii() and key.isdigit() and 0 < int(key) <= MAX_LINE):
        raise bad(f"files[{_short(name)}]: {_short(key)} is not a line number")
    return int(key)


def _short(text: str) -> str:
    return json.dumps(text[:60] + ("..." if len(text) > 60 else ""))


def merge(records: Iterable[tuple[str, Sources]]) -> Sources:
    """One record of several, each (its case's label, its record): a file's lines and mappings together, the
    first origin kept. A case that read a file of that name from another path (its --env build of the library:
    'mylib/core.py' of two checkouts, other lines at one number) keeps its copy apart, in `cases`."""
    files: dict[str, SourceFile] = {}
    cases: dict[str, dict[str, SourceFile]] = {}
    for label, record in records:
        for name, f in record.files.items():
            known = files.get(name)
            if known is not None and known.path != f.path:
                known = cases.get(label, {}).get(name)
                cases.setdefault(label, {})[name] = f if known is None else _joined(known, f)
            else:
                files[name] = f if known is None else _joined(known, f)
    return Sources(files, VERSION, cases)


def _joined(known: SourceFile, f: SourceFile) -> SourceFile:
    """Two records of one file (its path) as one: the lines and mappings of both, the first origin kept."""
    return SourceFile(known.origin, known.path, {**f.lines, **known.lines}, {**f.pyx, **known.pyx},
                      {**f.functions, **known.functions})


def path(run: Path) -> Path:
    return Path(run) / SOURCES_FILE


def save(run: Path, record: Sources) -> None:
    """sources.json, atomically (rundir.write_atomic)."""
    rundir.write_atomic(path(run), json.dumps(record.to_json(), indent=1, ensure_ascii=False, allow_nan=False) + "\n")


def load(run: Path | str) -> Sources:
    """The run's record of line texts; a run without sources.json (recorded before lines were kept) has an
    empty one. A link, FIFO or device is refused (safeopen), as is anything not as save writes it: one
    RunDirError naming the file."""
    file = path(Path(run))
    if not (file.exists() or file.is_symlink()):
        return Sources()
    return Sources.from_json(rundir.read_json(file, MAX_SOURCES_JSON), str(file))
