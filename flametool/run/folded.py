"""Folded stacks, py-spy's raw format: one stack a line, frames root first joined by ';', a space, a count.
Reading and writing them; what the frames are called is naming.py's job."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from . import safeopen
from ..errors import RunDirError


@dataclass(frozen=True)
class Stack:
    frames: tuple[str, ...]
    count: int

    def __reduce__(self) -> tuple[type["Stack"], tuple[tuple[str, ...], int]]:  # pickled as its two fields (a profile sent between processes has 100,000s)
        return Stack, (self.frames, self.count)


class FoldedLineError(ValueError):
    pass


MAX_COUNT = 10**12  # samples on one line; bounded so that sums and shares of counts stay finite floats


def parse_line(line: str) -> Stack:
    body, sep, count = line.rstrip("\n").rpartition(" ")
    if not sep or not body:
        raise FoldedLineError("expected 'frame;frame;... COUNT'")
    return Stack(tuple(body.split(";")), _count(count))


def _count(count: str) -> int:
    try:
        n = int(count)
    except ValueError:
        raise FoldedLineError(f"count {count[:40]!r} is not an integer") from None
    if n < 0:
        raise FoldedLineError("negative count")
    if n > MAX_COUNT:
        raise FoldedLineError(f"count {count[:20]!r}{'...' if len(count) > 20 else ''} is implausibly large "
                              f"(more than {MAX_COUNT:.0e} samples)")
    return n


def parse(text: str, source: str = "<folded>") -> list[Stack]:
    """Parse folded text; a malformed line is an error naming the source and the line number."""
    stacks = []
    # only '\n' ends a line (as dumps writes them): str.splitlines would also split a frame name that
    # holds '\r', '\x0c' or '\u2028', which a file path or a symbol may
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            stacks.append(parse_line(line))
        except FoldedLineError as exc:
            raise RunDirError(f"{source}: line {number}: {exc}") from None
    return stacks


def read(path: Path) -> list[Stack]:
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: cannot be read ({exc})") from None
    return parse(text, str(path))


def read_text(path: Path, errors: str = "strict") -> str:
    """The file as written: no newline translation, so a '\r' inside a frame name stays in it. Only a regular
    file, never through a link (safeopen)."""
    return safeopen.read_bytes(path).decode("utf-8", errors)


# Characters some readers of folded files end a line at (Python's str.splitlines does at all of them)
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# and the other control characters but tab (ESC, CSI, BEL, ...): an export printed on a terminal drives nothing
CONTROLS = "".join(chr(i) for i in (*range(0x20), *range(0x7F, 0xA0)) if chr(i) != "\t")
_FOLDED_SAFE = str.maketrans({";": ",", **{c: c.encode("unicode_escape").decode("ascii") for c in LINE_BREAKS + CONTROLS}})


def folded_safe(name: str) -> str:
    """A frame name that keeps a folded line whole in any reader: ';' (the frame separator) becomes ',',
    line breaks and other control characters are written as escapes ('\\r', '\\x1b'). For exports; run
    directories keep names as py-spy gave them."""
    return name.translate(_FOLDED_SAFE)


def dumps(stacks: Iterable[Stack]) -> str:
    return "".join(f"{';'.join(s.frames)} {s.count}\n" for s in stacks)


def merge(stacks: Iterable[Stack]) -> list[Stack]:
    """Add up the counts of identical stacks, keeping first-seen order."""
    counts: dict[tuple[str, ...], int] = {}
    for s in stacks:
        counts[s.frames] = counts.get(s.frames, 0) + s.count
    return [Stack(f, c) for f, c in counts.items()]


def frame_function(frame: str) -> str:
    """'name (file:line)' -> 'name'."""
    name, sep, _ = frame.rpartition(" (")
    return name if sep else frame


def frame_file(frame: str) -> str:
    """'name (file:line)' -> 'file' ('' when the frame has no location)."""
    _, sep, loc = frame.rpartition(" (")
    if not sep or not loc.endswith(")"):
        return ""
    return loc[:-1].rsplit(":", 1)[0] if ":" in loc else loc[:-1]
