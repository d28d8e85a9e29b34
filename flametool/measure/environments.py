"""`compare --env NAME=PYTHON` (repeatable): the run's cases under each interpreter (a venv with another CuPy
or PyTorch build), labelled CASE@NAME, in processes that alternate between the environments (runner).

Each process of an environment also times an anchor: a case that is the same in every environment (by
default the last case of the run whose library is shown to be one copy in all of them: one version, the same
installed files and the same top-level objects, choose_anchor; --anchor CASE chooses). A
process's host speed multiplies the case and the anchor beside it alike, and fresh processes (and two
environments' processes) run at speeds of their own, so the comparison of cupy@main and cupy@pr is made of
each process's cupy/torch ratio (anchoring.anchored), not of their microseconds.

Everything is checked before anything runs: a NAME=PYTHON that is not one, an interpreter that is missing or
cannot import a case's library (or flametool's child), in one line and exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

from .. import procs as hygiene
from ..workload import builtins, workloads
from ..workload.cases import CaseSpec
from ..errors import FlametoolError
from ..run import sameness
from ..run.record import Environment, env_label
from .importcheck import ANSWER

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
PROBE_SECONDS = 180.0  # importing torch and cupy in a cold environment takes seconds; a hung import, not minutes
PROBE_MAIN = "from flametool.measure.importcheck import main; sys.exit(main(sys.argv[1:]))"  # after spawn.BOOT


def parse(texts: list[str]) -> list[Environment]:
    """Each --env NAME=PYTHON, checked: a name for labels, an interpreter that exists and can be run."""
    envs: list[Environment] = []
    for text in texts:
        name, sep, python = text.partition("=")
        if not sep or not python:
            raise FlametoolError(f"--env {text!r}: expected NAME=PYTHON, e.g. main=/path/to/venv/bin/python")
        if not NAME.fullmatch(name):
            raise FlametoolError(f"--env {text!r}: the name must be ASCII letters, digits, '.', '_' or '-' (it labels "
                                 "the cases: cupy@NAME)")
        if any(e.name == name for e in envs):
            raise FlametoolError(f"--env {text!r}: the name {name!r} is given twice")
        # the path as given, made absolute (not resolved: a wrapper script or a venv's symlink is what runs)
        envs.append(Environment(name=name, python=interpreter(text, python)))
    if len(envs) < 2:
        raise FlametoolError(f"--env {texts[0]!r}: give two environments or more to compare (--env A=PYTHON "
                             "--env B=PYTHON)")
    return envs


MIN_PYTHON = (3, 10)  # pyproject's requires-python


def too_old(python: str) -> str | None:
    """The interpreter's version ("2.7", "3.6") when it is older than flametool runs on, else None: asked in words
    every Python since 2.6 understands (the probe itself is a SyntaxError there)."""
    try:
        got = subprocess.run([python, "-c", "import sys; sys.stdout.write('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = got.stdout.strip().split(".")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return got.stdout.strip() if (int(parts[0]), int(parts[1])) < MIN_PYTHON else None


def interpreter(text: str, python: str) -> str:
    """The interpreter's path: as given, or found on PATH when it has no '/' (python3.12)."""
    path = python if "/" in python else shutil.which(python)
    if path is None or not os.path.exists(path):
        raise FlametoolError(f"--env {text!r}: no such interpreter {python}")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise FlametoolError(f"--env {text!r}: {path} is not an executable file")
    return str(Path(path).absolute())


def library(spec: CaseSpec) -> str | None:
    if spec.xp:  # a workload's case: the library it runs on
        return workloads.LIBRARY[spec.xp]
    return builtins.BUILTIN[spec.label].library if spec.module else None


def probe(envs: list[Environment], specs: list[CaseSpec]) -> list[Environment]:
    """Each environment's interpreter imports flametool's child and every case (in parallel); what it found is
    recorded in its Environment. One that cannot: FlametoolError, before anything runs."""
    from .spawn import BOOT, child_env, framed_answer

    wanted = [{"label": s.label, "library": library(s), "file": s.file, "factory": s.factory} for s in specs]
    if any(s.xp and workloads.LIBRARY[s.xp] != "jax" for s in specs):  # their namespaces (workloads.COMPAT)
        wanted.append({"label": "array-api-compat", "library": workloads.COMPAT, "file": None, "factory": ""})
    # each in a process group of its own, marked (procs.MARKER): a wrapper script that runs Python without exec
    # has it as a child, which is stopped with the script however the probe ends (a timeout, SIGTERM, Ctrl-C)
    token = uuid.uuid4().hex
    procs: list[tuple[Environment, subprocess.Popen]] = []
    found = []
    # started inside the try: a SIGTERM between one start and the next (CI, 2026-12-04: right after the second
    # started) skipped the clean-up, and left a wrapper's shell and its Python running; one that comes inside a
    # Popen, before it returns, is found by the token (kill_marked)
    try:
        for e in envs:
            procs.append((e, subprocess.Popen([e.python, "-c", BOOT + PROBE_MAIN, json.dumps(wanted), token],
                                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True, errors="backslashreplace",  # what prints bytes is no Python
                                              env=child_env(token=token), **hygiene.own_group())))
        for e, proc in procs:
            given = f"--env {e.name + '=' + e.python!r}"
            try:
                stdout, stderr = proc.communicate(timeout=PROBE_SECONDS)
            except subprocess.TimeoutExpired:
                raise FlametoolError(f"{given}: importing the cases took more than {PROBE_SECONDS:.0f} s") from None
            got = framed_answer(stdout, f"{ANSWER} {token} ")  # its own answer, not any line that looks like JSON
            if got is None:
                last = next((l.strip() for l in reversed(stderr.splitlines()) if l.strip()), f"exit {proc.returncode}")
                old = too_old(e.python) if "SyntaxError" in stderr or "ImportError" in stderr else None
                if old:
                    raise FlametoolError(f"{given}: Python {old} is too old for flametool (it needs Python "
                                         f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer in every environment)")
                raise FlametoolError(f"{given}: could not be run as Python ({last[:200]})")
            if got.get("ppid") != os.getpid():
                raise FlametoolError(
                    f"{given}: {e.python} runs Python as a child of its own, not in its place: flametool must be "
                    "Python's parent (to stop, time and sample it); if it is a script, run Python with exec "
                    '(exec /path/to/python "$@"), so that Python replaces the script')
            if got.get("error"):
                hint = f"; {workloads.INSTALL} there" if workloads.COMPAT in str(got["error"]) else ""
                raise FlametoolError(f"{given}: {got['error']}{hint}")
            found.append(Environment(name=e.name, python=e.python, executable=str(got.get("executable") or ""),
                                     python_version=str(got.get("python_version") or ""),
                                     versions=dict(got.get("versions") or {}), describe=dict(got.get("describe") or {}),
                                     files=dict(got.get("files") or {}), surface=dict(got.get("surface") or {})))
    finally:
        with hygiene.signals_deferred():
            for _, proc in procs:
                hygiene.kill_tree(proc, grace=0, first=signal.SIGKILL, group=True)
            hygiene.kill_marked(token)
    return found


def choose_anchor(envs: list[Environment], specs: list[CaseSpec], given: str | None,
                  paired: set[str] | frozenset[str] = frozenset()) -> tuple[str, str | None]:
    """The case every environment's processes time beside the others, and a line saying why when it was not
    given: --anchor, else the last built-in case whose library is shown to be one copy in every environment
    (sameness.apart), not a case of --pair (`paired`: the cases they compare, without their environments), and, where
    another such case is there, not one whose library is that of a case it would be compared beside (cublas,
    cupy's, beside cupy). None shown so: FlametoolError asking for --anchor. A version that reads alike is not
    enough: two builds of one library can report one version string, and an anchor on the library that changed
    reads its change as the host's speed."""
    labels = [s.label for s in specs]
    if given is not None:
        if given not in labels:
            raise FlametoolError(f"--anchor {given!r}: no case named {given!r} in this run ({', '.join(labels)})")
        if len(specs) < 2:
            raise FlametoolError(f"--anchor {given!r}: the run needs another case to compare beside the anchor")
        return given, None
    libs = {s.label: library(s) for s in specs}
    why = {lib: sameness.apart(envs, lib) for lib in dict.fromkeys(l for l in libs.values() if l)}
    same = [s.label for s in specs if (lib := libs[s.label]) and why[lib] is None and s.label not in paired]

    def compared(label: str) -> set[str | None]:
        """The libraries of the cases compared beside `label` as the anchor: those of --pair, else every other."""
        return {libs[l] for l in labels if l != label and (l in paired if paired else True)}

    apart_libs = [label for label in same if libs[label] not in compared(label)]
    if len(specs) >= 2 and same:
        anchor = (apart_libs or same)[-1]
        lib = libs[anchor]
        assert lib is not None  # a case of `same` has a library
        version = envs[0].versions.get(lib)
        line = (f"anchor: {anchor} ({lib} {version or '(no version)'} is the same in every environment: one version, "
                "the same installed files, the same top-level objects)")
        if skipped := [l for l in same if l not in apart_libs] if apart_libs else []:
            line += f"; not {', '.join(skipped)}, whose library a case compared beside it shares"
        if not apart_libs:
            line += f"; {lib} is also the library of a case compared beside it (no case of another library is the same)"
        others = [text for l, x in why.items() if x is not None and l != lib for text in [x[1]]]
        if others:
            line += "; not " + "; ".join(others)
        return anchor, line + "; --anchor CASE to choose another"
    shown = "; ".join([text for x in why.values() if x is not None for text in [x[1]]]
                      + [f"{l}: compared in --pair" for l in labels if l in paired and (lib := libs[l]) and why[lib] is None])
    if len(specs) < 2:
        raise FlametoolError(f"--env: no case to anchor on: the run needs a case beside {labels[0]} that is the same "
                             "in every environment (add one to --libs, e.g. torch, and name it with --anchor CASE)")
    raise FlametoolError("--env: no case to anchor on: no case of --libs is shown to be the same in every environment "
                         "(one version, the same installed files, the same top-level objects"
                         + (f"; {shown}" if shown else "") + "), and a version alone does not show it: name a case "
                         "that is the same with --anchor CASE (or add one to --libs, e.g. torch)")


def anchor_warning(envs: list[Environment], specs: list[CaseSpec], anchor: str) -> str | None:
    """A warning when the anchor's library (an --anchor given so) is known to differ between the environments (its
    version, its installed files, or its top-level objects): its own change is then the host's speed and the
    library's change together, and the anchored ratio carries both (every view of the run says so too:
    sameness.anchor_caution)."""
    spec = next((s for s in specs if s.label == anchor), None)
    found = sameness.differs(envs, anchor, library(spec) if spec is not None else None)
    return (f"warning: {found}; anchor on a case whose library is the same in every environment"
            if found is not None else None)


def expand(specs: list[CaseSpec], envs: list[Environment]) -> list[CaseSpec]:
    """Every case in every environment, labelled CASE@NAME, environment by environment."""
    return [CaseSpec(env_label(s.label, e.name), s.factory, s.module, s.file, e.name, s.xp) for e in envs for s in specs]


def default_pairs(specs: list[CaseSpec], envs: list[Environment], anchor: str) -> list[list[str]]:
    """Each case but the anchor, in the first environment against each other one."""
    return [[env_label(s.label, envs[0].name), env_label(s.label, e.name)]
            for s in specs if s.label != anchor for e in envs[1:]]

