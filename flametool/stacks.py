"""Folded stacks: py-spy's raw format, one stack a line, frames root first joined by ';', a space, a count."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .errors import RunDirError


@dataclass(frozen=True)
class Stack:
    frames: tuple[str, ...]
    count: int


class FoldedLineError(ValueError):
    pass


def parse_line(line: str) -> Stack:
    body, sep, count = line.rstrip("\n").rpartition(" ")
    if not sep or not body:
        raise FoldedLineError("expected 'frame;frame;... COUNT'")
    try:
        n = int(count)
    except ValueError:
        raise FoldedLineError(f"count {count[:40]!r} is not an integer") from None
    if n < 0:
        raise FoldedLineError("negative count")
    return Stack(tuple(body.split(";")), n)


def parse(text: str, source: str = "<folded>") -> list[Stack]:
    """Parse folded text; a malformed line is an error naming the source and the line number."""
    stacks = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            stacks.append(parse_line(line))
        except FoldedLineError as exc:
            raise RunDirError(f"{source}: line {number}: {exc}") from None
    return stacks


def read(path: Path) -> list[Stack]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: cannot be read ({exc})") from None
    return parse(text, str(path))


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
