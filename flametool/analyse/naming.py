"""Frame naming: raw py-spy frames -> names people read and diffs can match on (Python modules, Cython
functions demangled, C++ and library frames, runs of bare addresses), and the short forms tables show."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from itertools import groupby
from operator import itemgetter
from typing import Iterable

from ..run.folded import Stack


# --- naming: raw py-spy frames -> names people read and diffs can match on -----------------------------

PY_EXT = re.compile(r"\.pyx?$")
CYTHON_SOURCE = re.compile(r"\.(c|cc|cpp|cxx)$")
HEADER = re.compile(r"\.(h|hh|hpp|hxx|tcc|inc|ipp)$|^[a-z_]+$")  # libstdc++ headers have no extension
ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")
# "cpython-312-x86_64-linux-gnu" and friends: dropped so that runs on two Python versions line up
ABI_TAG = re.compile(r"\.(cpython-[^./]+|abi3|pypy[^./]*)(?=\.so)")
EXTENSION_SO = re.compile(r"^(?P<path>[A-Za-z_][\w/]*)\.so$")
# Cython's C names: __pyx_pw_4cupy_5_core_16_routines_linalg_3matmul, __pyx_getprop_..., ...
PYX_MANGLED = re.compile(r"^_{2,3}pyx_(?:fuse_\d+(?:_\d+)?_{2}pyx_)?(?P<kind>pw|pf|f|getprop|setprop|tp_\w+?)_(?P<rest>\d.*)$")
LOOP_FRAME = "[flametool active loop]"


@dataclass(frozen=True)
class Frame:
    """One frame as analysis sees it. ``name`` is the key frames are matched on across cases and runs."""

    name: str
    file: str  # source file or library as py-spy gave it, line and ABI tag dropped
    kind: str  # python | cython | native | address | inline | loop
    line: int | None = None


def split_location(frame: str) -> tuple[str, str, int | None]:
    """'name (file:line)' -> (name, file, line); line is None for libraries and absent locations."""
    name, sep, loc = frame.rpartition(" (")
    if not sep or not loc.endswith(")"):
        return frame, "", None
    loc = loc[:-1]
    path, colon, line = loc.rpartition(":")
    if colon and line.isdigit():
        return name, path, int(line)
    return name, loc, None


def _cython_modules() -> dict[str, tuple[str, ...]]:
    data = json.loads(resources.files(__package__).joinpath("cython_modules.json").read_text(encoding="utf-8"))
    table: dict[str, list[str]] = {}
    for package, stems in data["modules"].items():
        for stem in stems:
            table.setdefault(stem, []).append(f"{package}.{stem}")
    return {stem: tuple(mods) for stem, mods in table.items()}


CYTHON_MODULES = _cython_modules()


def demangle_pyx(name: str) -> tuple[list[str], str] | None:
    """'__pyx_getprop_4cupy_5_core_4core_13_ndarray_base_itemsize' -> (['cupy','_core','core','_ndarray_base'],
    'itemsize'). Cython writes each scope as <length><name>; what follows the last one is the function.
    Python-visible wrappers (pw, pf) write the function as <index><name> ('3matmul'); the index is dropped,
    and a piece that looked like one more scope ('5least' in '5least_squares_cg') was that index."""
    m = PYX_MANGLED.match(name)
    if not m:
        return None
    rest, scopes = m.group("rest"), []
    while True:
        d = re.match(r"\d+", rest)
        if not d:
            break
        n, start = int(d.group()), d.end()
        if start + n >= len(rest) or rest[start + n] != "_":
            break  # not a scope: the wrapper index of the function name
        scopes.append(rest[start : start + n])
        rest = rest[start + n + 1 :]
    if m.group("kind") in ("pw", "pf") and not rest[:1].isdigit() and len(scopes) > 1:
        rest = f"{scopes.pop()}_{rest}"
    func = re.sub(r"^\d+", "", rest)
    return (scopes, func) if scopes and func else None


class Namer:
    """Turns raw frames into Frames. Built from all stacks of a profile, because the Cython module a
    generated '.cpp' file belongs to can sometimes be read off extension paths seen elsewhere in them."""

    def __init__(self, stacks: Iterable[Stack] = ()) -> None:
        self.seen_modules: dict[str, set[str]] = {}
        for raw in {raw for s in stacks for raw in s.frames}:
            self.observe(raw)
        self.cache: dict[str, Frame] = {}
        # raw frames whose name depended on seen_modules (a Cython file stem the table does not know)
        self.dependent: set[str] = set()
        self._consulted = False

    def observe(self, raw: str) -> None:
        """Note the extension module a raw frame's location names, if any (see module_for)."""
        _, file, _ = split_location(raw)
        m = EXTENSION_SO.match(ABI_TAG.sub("", file))
        if m and "/" in m.group("path"):
            module = m.group("path").replace("/", ".")
            self.seen_modules.setdefault(module.rsplit(".", 1)[-1], set()).add(module)

    def module_for(self, stem: str) -> str | None:
        """The one module a Cython file stem can be, or None when it is unknown or ambiguous.

        A stem the table lists twice (CuPy has both cupy.cuda.stream and cupy_backends.cuda.stream) stays
        unresolved: an extension path seen in the stacks proves that module is loaded, not that the other
        is not. Stems the table does not know are resolved from such paths when only one module fits."""
        known = CYTHON_MODULES.get(stem, ())
        if known:
            return known[0] if len(known) == 1 else None
        self._consulted = True
        seen = self.seen_modules.get(stem, set())
        return next(iter(seen)) if len(seen) == 1 else None

    def frame(self, raw: str) -> Frame:
        got = self.cache.get(raw)
        if got is None:
            self._consulted = False
            got = self.cache[raw] = self._name(raw)
            if self._consulted:
                self.dependent.add(raw)
        return got

    def _name(self, raw: str) -> Frame:
        if raw == LOOP_FRAME:
            return Frame(raw, "", "loop")
        func, file, line = split_location(raw)
        file = ABI_TAG.sub("", file)
        if ADDRESS.match(func):  # one frame per library; '[vdso]' is already bracketed
            return Frame(file if file.startswith("[") else f"[{file or 'unknown'}]", file, "address")
        if PY_EXT.search(file) or file.startswith("<frozen "):
            return Frame(python_name(func, file), file, "python", line)
        if "::" not in strip_templates(func) and CYTHON_SOURCE.search(file):
            stem = file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            return Frame(self.cython_name(func, stem, file), file, "cython", line)
        so = EXTENSION_SO.match(file)
        if so and "::" not in func:
            stem = so.group("path").rsplit("/", 1)[-1]
            module = so.group("path").replace("/", ".")
            if module in CYTHON_MODULES.get(stem, ()):
                return Frame(self.cython_name(func, stem, file), file, "cython", line)
        if file and line is not None and HEADER.search(file.rsplit("/", 1)[-1]):
            return Frame(f"{func} ({file})", file, "inline", line)
        return Frame(f"{func} ({file})" if file else func, file, "native", line)

    def cython_name(self, func: str, stem: str, file: str) -> str:
        demangled = demangle_pyx(func)
        if demangled:  # the mangled name says its module itself
            return ".".join(demangled[0] + [demangled[1]])
        module = self.module_for(stem)
        if module is None:
            return f"{func} ({file})"  # honest: which module this file belongs to is not known
        # py-spy leaves the last module name on cdef functions ('_routines_linalg_tensordot_core')
        if func.startswith(stem + "_") and len(func) > len(stem) + 1:
            func = func[len(stem) + 1 :]
        return f"{module}.{func}"


def python_name(func: str, file: str) -> str:
    """'_GUFunc.__call__' in 'cupy/_core/_gufuncs.py' -> 'cupy._core._gufuncs._GUFunc.__call__'.
    py-spy gives paths relative to sys.path when it can; an absolute path is kept as a location."""
    if file.startswith("<frozen "):
        return f"{file[len('<frozen '):-1]}.{func}"
    if file.startswith("/") or not PY_EXT.search(file):
        return f"{func} ({file})"
    module = PY_EXT.sub("", file).replace("/", ".")
    if module.endswith(".__init__"):
        module = module[: -len(".__init__")]
    return f"{module}.{func}"


def with_line(frame: Frame) -> str:
    """The line-level view's key: the function name and the line py-spy reported."""
    if frame.line is None:
        return frame.name
    if frame.name.endswith(f" ({frame.file})"):  # the location is part of the name already
        return f"{frame.name[:-1]}:{frame.line})"
    if frame.kind == "python":
        return f"{frame.name}:{frame.line}"
    return f"{frame.name} ({frame.file.rsplit('/', 1)[-1]}:{frame.line})"


class _Normalizer:
    """Raw stacks in, normalized and merged stacks out, one at a time (see normalize).

    Each distinct raw frame is named once (Namer caches it) and keyed once (self.keys, raw -> key); a stack
    is then mapped and its runs collapsed by C-level iteration (map, groupby), which is what keeps a profile
    of millions of stacks tractable. `frames` keeps, per key, the Frame of its first raw frame in stream
    order, and `counts` the stacks in first-seen order, exactly as a loop over every frame would."""

    def __init__(self, namer: Namer, by_line: bool) -> None:
        self.namer = namer
        self.by_line = by_line
        self.frames: dict[str, Frame] = {}
        self.counts: dict[tuple[str, ...], int] = {}
        canonical: dict[str, str] = {}  # one object per key: stacks share it, and compare by identity first
        frames = self.frames

        class Keys(dict):
            def __missing__(self, raw: str):
                namer.observe(raw)  # read_normalized checks at the end what this could not know yet
                f = namer.frame(raw)
                key = with_line(f) if by_line and f.kind != "address" else f.name
                key = canonical.setdefault(key, key)
                frames.setdefault(key, f)
                got = self[raw] = (key, f.kind == "address") if by_line else key
                return got

        self.keys = Keys()

    def add(self, raws: Iterable[str], count: int) -> None:
        if self.by_line:  # only unnamed addresses collapse: two calls on the same line stay two frames
            names: list[str] = []
            for key, address in map(self.keys.__getitem__, raws):
                if names and address and names[-1] == key:
                    continue
                names.append(key)
            key_tuple = tuple(names)
        else:
            key_tuple = tuple(map(_first, groupby(map(self.keys.__getitem__, raws))))
        counts = self.counts
        counts[key_tuple] = counts.get(key_tuple, 0) + count

    def result(self) -> tuple[list[Stack], dict[str, Frame]]:
        return [Stack(f, c) for f, c in self.counts.items()], self.frames


_first = itemgetter(0)


def normalize(stacks: list[Stack], by_line: bool = False) -> tuple[list[Stack], dict[str, Frame]]:
    """Stacks of normalized names (function level unless by_line), merged, and what each name is.

    Runs of the same name collapse into one frame: six unnamed addresses in a row in libcublas are one
    visit to '[libcublas.so.13]', and a Cython def wrapper calling its own C implementation is one call.
    A self-recursive Python function shows once per run too; its time is unchanged."""
    norm = _Normalizer(Namer(stacks), by_line)
    for s in stacks:
        norm.add(s.frames, s.count)
    return norm.result()


def repair_sandwiches(stacks: list[Stack], frames: dict[str, Frame]) -> tuple[list[Stack], int]:
    """Undo a misnesting py-spy makes of functions inlined from headers: the same function on both sides of
    a chain of header frames (``__call__ (_kernel.cpp:30314);Py_DECREF (object.h:701);_Py_IsImmortal
    (object.h:243);__call__ (_kernel.cpp:30691);...``, CuPy 14.2). The physical frame is the function itself,
    so the chain and the repeated function are dropped: ``__call__;...``. Otherwise the header frame would
    appear to hold everything the function calls after it. Returns the stacks, merged, and how many samples
    were repaired. Run directories keep the .folded as py-spy wrote it; this is done when it is read."""
    repaired = 0
    out: dict[tuple[str, ...], int] = {}
    inline = {key for key, f in frames.items() if f.kind == "inline"}
    name_of = {key: f.name for key, f in frames.items()}
    # keys are names, except in the line-level view (a name and its line)
    as_names = (lambda keys: keys) if all(k == n for k, n in name_of.items()) else (lambda keys: map(name_of.__getitem__, keys))
    for s in stacks:
        # a sandwich needs a header frame and a name twice: most stacks have neither, and are kept as they are
        # after two C-level checks instead of a loop over their frames
        if inline.isdisjoint(s.frames) or len(set(as_names(s.frames))) == len(s.frames):
            out[s.frames] = out.get(s.frames, 0) + s.count
            continue
        names = list(s.frames)
        changed = False
        i = 0
        while i < len(names) - 2:
            j = i + 1
            while j < len(names) and frames[names[j]].kind == "inline":
                j += 1
            if j > i + 1 and j < len(names) and frames[names[j]].name == frames[names[i]].name:
                del names[i + 1 : j + 1]  # the header chain and the function's second appearance
                changed = True
                continue  # the same frame may open another sandwich
            i += 1
        if changed:
            repaired += s.count
        key = tuple(names)
        out[key] = out.get(key, 0) + s.count
    return [Stack(f, c) for f, c in out.items()], repaired


# --- display: long C++ names shortened, the full name kept elsewhere -------------------------------------

# pure, and asked of the same names again and again (every case of a run, every op of an atlas, each table of a
# page): a name is folded once a process
@functools.lru_cache(maxsize=1 << 16)
def strip_templates(name: str) -> str:
    """Replace each outermost '<...>' with '<…>' (operator<, operator<< are left alone)."""
    if "<" not in name:
        return name
    out, depth = [], 0
    i = 0
    while i < len(name):
        ch = name[i]
        if ch == "<" and not name[:i].endswith("operator") and not name[:i].endswith("operator<"):
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
        i += 1
    return "".join(out) if depth == 0 else name


@functools.lru_cache(maxsize=1 << 16)  # pure: as strip_templates
def display_name(name: str, width: int = 72) -> str:
    """A short form for tables: templates folded, '(anonymous namespace)' as '{anon}', and when still too
    long, the leading namespaces dropped ('…::Class::method')."""
    # only C++ names have templates; '<locals>' and '<lambda>' in Python names stay
    short = strip_templates(name).replace("(anonymous namespace)", "{anon}") if "::" in name else name
    func, sep, where = short.rpartition(" (")
    if sep and "/" in where:  # the library's file name says enough: 'numpy/_core/_umath.so' -> '_umath.so'
        short = f"{func} ({where.rsplit('/', 1)[-1]}"
    if len(short) <= width:
        return short
    func, sep, where = short.rpartition(" (")
    head = func if sep else short
    tail = f" ({where}" if sep else ""
    parts, dropped = head.split("::"), False
    while len(parts) > 1 and len(("…::" if dropped else "") + "::".join(parts) + tail) > width:
        parts.pop(0)
        dropped = True
    short = ("…::" if dropped else "") + "::".join(parts) + tail
    return short if len(short) <= width else short[: width - 1] + "…"
