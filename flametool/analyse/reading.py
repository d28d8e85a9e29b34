"""Reading a .folded file into normalized stacks (read_normalized), as a stream, and on a large file
in parallel: the file is cut at line boundaries into one byte range per CPU, each range is read and
normalized in a worker process, and the ranges' results are merged in file order.

Reading is the one step whose cost grows with the file rather than with its distinct stacks: a 2-million-
line profile is gigabytes of raw frame names, each of which has to be split off and looked up. Every
distinct raw frame is named once (naming.Namer caches it); what is left is the per-frame lookup, which is
why more cores is what helps. Merging in file order keeps what a single pass gives: stacks in first-seen
order, and per normalized name the Frame of its first raw frame."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Iterable, Iterator

from .. import pool
from ..run import safeopen
from ..errors import RunDirError
from ..run.folded import MAX_COUNT, FoldedLineError, Stack, parse_line
from .naming import Frame, Namer, _first, _Normalizer

READ_CHUNK = 1 << 20  # a megabyte of lines at a time: their objects stay in the caches while they are read
# below this a file is read in this process: starting workers costs more than it saves
PARALLEL_BYTES = 64 << 20


@dataclass
class RangePass:
    """What reading one byte range gives: stacks and frames as _Normalizer keeps them, the extension modules
    its paths named, and the raw frames whose names depended on those (to be checked against every range's)."""

    counts: dict[tuple[str, ...], int]
    frames: dict[str, Frame]
    seen_modules: dict[str, set[str]]
    dependent: dict[str, Frame] = field(default_factory=dict)


def range_chunks(path: Path, start: int, end: int | None) -> Iterator[list[bytes]]:
    """The lines of bytes [start, end) of a folded file (start at a line's start), a few megabytes of them at a
    time, undecoded; only '\n' ends a line (as in folded.parse)."""
    try:
        with safeopen.open_regular(path) as fh:
            fh.seek(start)
            left = None if end is None else end - start
            rest = b""
            while True:
                raw = fh.read(READ_CHUNK if left is None else min(READ_CHUNK, left))
                if left is not None:
                    left -= len(raw)
                if not raw:
                    yield [rest]
                    return
                lines = raw.split(b"\n")
                lines[0] = rest + lines[0]  # the line the last chunk ended in (not the whole chunk copied)
                rest = lines.pop()
                yield lines
    except OSError as exc:
        raise RunDirError(f"{path}: cannot be read ({exc})") from None


def read_range(path: Path, start: int, end: int | None, by_line: bool,
               seen_modules: dict[str, set[str]] | None = None) -> RangePass:
    """Normalize the stacks of one byte range (the whole file: 0, None). With seen_modules, every extension path
    is known before any frame is named (the second round of read_normalized).

    Lines are split as bytes and each distinct raw frame is decoded once, when first met: ';', ' ' and '\n'
    are never part of a UTF-8 character, so the frames are those of the decoded line, and every byte of the
    file is checked (a frame's bytes when it is first met, a count by int(), any other line decoded whole)."""
    namer = Namer()
    if seen_modules is not None:
        namer.seen_modules = {stem: set(mods) for stem, mods in seen_modules.items()}
    norm = _Normalizer(namer, by_line)
    named = norm.keys

    class Keys(dict):
        def __missing__(self, raw: bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RunDirError(f"{path}: cannot be read ({exc})") from None
            got = self[raw] = named[text]
            return got

    key_of = Keys().__getitem__
    counts = norm.counts
    get = counts.get
    number = 0  # lines before this chunk
    for lines in range_chunks(path, start, end):
        for line in lines:
            # parse_line's split, cheaper: the count is after the last space, which is in the last frame
            # when there is one there; anything else (a blank line too) goes the way parse goes, decoded
            parts = line.split(b";")
            last, sep, count = parts[-1].rpartition(b" ")
            n: int | None  # None from slow_count: a line it skips
            try:
                n = int(count) if sep and (last or len(parts) > 1) else -1
            except ValueError:
                n = -1
            if not 0 <= n <= MAX_COUNT:
                n = slow_count(path, line, number + lines.index(line) + 1)
                if n is None:
                    continue
            if n > 0:
                parts[-1] = last
                if by_line:  # _Normalizer.add: only unnamed addresses collapse
                    names: list[str] = []
                    for key, address in map(key_of, parts):
                        if names and address and names[-1] == key:
                            continue
                        names.append(key)
                    key = tuple(names)
                else:  # once per line of the file: C-level iteration only
                    key = tuple(map(_first, groupby(map(key_of, parts))))
                counts[key] = get(key, 0) + n
            else:  # a line of no samples is not read further, but still has to be text
                slow_count(path, line, number + lines.index(line) + 1)
        number += len(lines)
    return RangePass(counts, norm.frames, namer.seen_modules, {raw: namer.cache[raw] for raw in namer.dependent})


def slow_count(path: Path, line: bytes, number: int) -> int | None:
    """The count of a line the fast split did not read, as folded.parse_line reads it (None: a blank line);
    a bad line is the error parse gives, with its line number."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunDirError(f"{path}: cannot be read ({exc})") from None
    if not text or text.isspace():
        return None
    try:
        return parse_line(text).count
    except FoldedLineError as exc:
        raise RunDirError(f"{path}: line {number}: {exc}") from None


def _worker(args: tuple) -> RangePass:
    return read_range(*args)


def line_ranges(path: Path, parts: int) -> list[tuple[int, int | None]]:
    """[start, end) byte ranges that cut the file into about `parts` pieces, each at a line's start."""
    starts = [0]
    with safeopen.open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        for i in range(1, parts):
            fh.seek(max(size * i // parts, starts[-1]))
            fh.readline()  # to the start of the next line ('\n' is never inside a UTF-8 character)
            at = fh.tell()
            if at >= size:
                break
            if at > starts[-1]:
                starts.append(at)
    return [(s, e) for s, e in zip(starts, starts[1:] + [None])]


def read_ranges(path: Path, by_line: bool, seen_modules: dict[str, set[str]] | None) -> list[RangePass]:
    """Every range of the file read, in file order: in worker processes when the file is large and there is
    more than one CPU, here otherwise."""
    size = safeopen.size(path)
    workers = min(pool.cpus(), 8) if size >= PARALLEL_BYTES else 1
    if pool.in_worker:  # a worker already (compare.prepared), one of as many as there are CPUs
        workers = 1
    ranges = line_ranges(path, workers) if workers > 1 else [(0, None)]
    if len(ranges) == 1:
        return [read_range(path, 0, None, by_line, seen_modules)]
    try:
        got = pool.fork_map(_worker, [(path, s, e, by_line, seen_modules) for s, e in ranges], len(ranges))
        if got is not None:
            return got
        return [read_range(path, 0, None, by_line, seen_modules)]  # no fork here (not Linux): one process
    except (RunDirError, pool.WorkerDied):
        # a bad line: read it again here, which numbers the line as a whole-file read does (and a worker that
        # died, killed for its memory perhaps: one process needs less)
        return [read_range(path, 0, None, by_line, seen_modules)]


def read_normalized(path: Path, by_line: bool = False, extra: Iterable[Stack] = ()) -> tuple[list[Stack], dict[str, Frame]]:
    """normalize() of the file's stacks that have frames and samples, then `extra`, read as a stream: the
    same result as normalize([s for s in read(path) if s.frames and s.count > 0] + list(extra)) without
    holding the raw stacks (a profile of two million lines is gigabytes of raw frame names); a large file is
    read in parallel.

    Naming a Cython frame of a file stem the module table does not know can depend on an extension path
    anywhere in the file; such frames are named as they come, and checked against every path once the file
    is read. Should one come out differently, the file is read again with every path known from the start."""
    extra = list(extra)
    seen_modules = None
    for _ in range(2):
        passes = read_ranges(path, by_line, seen_modules)
        namer = Namer()
        for p in passes:  # every extension path the file names
            for stem, modules in p.seen_modules.items():
                namer.seen_modules.setdefault(stem, set()).update(modules)
        norm = _Normalizer(namer, by_line)
        norm.counts.update(passes[0].counts)
        norm.frames.update(passes[0].frames)
        counts, frames = norm.counts, norm.frames
        for p in passes[1:]:  # in file order: the first sighting of a stack or a name is the first range's
            get = counts.get
            for key, n in p.counts.items():
                counts[key] = get(key, 0) + n
            for name, f in p.frames.items():
                frames.setdefault(name, f)
        for s in extra:
            if s.frames and s.count > 0:
                norm.add(s.frames, s.count)
        # a frame named before the path that says its module was read is named again with every path known
        primed = Namer()
        primed.seen_modules = namer.seen_modules
        named = [(raw, f) for p in passes for raw, f in p.dependent.items()]
        named += [(raw, namer.cache[raw]) for raw in namer.dependent]
        if all(primed.frame(raw) == f for raw, f in named):
            break
        seen_modules = namer.seen_modules  # again, with every module path known before any frame is named
    return norm.result()
