"""`compare --env NAME=PYTHON` (repeatable): the run's cases under each interpreter (a venv with another CuPy
or PyTorch build), labelled CASE@NAME, in processes that alternate between the environments (runner).

Each process of an environment also times an anchor: a case that is the same in every environment (by
default the last case of the run whose library has one version in all of them; --anchor CASE chooses). A
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
from ..run.record import Environment, env_label
from .importcheck import ANSWER

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
PROBE_SECONDS = 180.0  # importing torch and cupy in a cold environment takes seconds; a hung import, not minutes
PROBE_BOOT = ("import sys; sys.path.append(sys.path.pop(0)); "
              "from flametool.measure.importcheck import main; sys.exit(main(sys.argv[1:]))")


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
    from .spawn import child_env

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
            procs.append((e, subprocess.Popen([e.python, "-c", PROBE_BOOT, json.dumps(wanted), token],
                                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True, errors="backslashreplace",  # what prints bytes is no Python
                                              env=child_env(token=token), **hygiene.own_group())))
        for e, proc in procs:
            given = f"--env {e.name + '=' + e.python!r}"
            try:
                stdout, stderr = proc.communicate(timeout=PROBE_SECONDS)
            except subprocess.TimeoutExpired:
                raise FlametoolError(f"{given}: importing the cases took more than {PROBE_SECONDS:.0f} s") from None
            frame = f"{ANSWER} {token} "  # its own answer, not any line that looks like JSON
            line = next((l for l in reversed(stdout.splitlines()) if l.startswith(frame)), None)
            try:
                got = json.loads(line[len(frame):]) if line else None
            except ValueError:
                got = None
            if not isinstance(got, dict):
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
                                     versions=dict(got.get("versions") or {}), describe=dict(got.get("describe") or {})))
    finally:
        with hygiene.signals_deferred():
            for _, proc in procs:
                hygiene.kill_tree(proc, grace=0, first=signal.SIGKILL, group=True)
            hygiene.kill_marked(token)
    return found


def choose_anchor(envs: list[Environment], specs: list[CaseSpec], given: str | None) -> str:
    """The case every environment's processes time beside the others: --anchor, else the last built-in case
    whose library has one version in every environment."""
    labels = [s.label for s in specs]
    if given is not None:
        if given not in labels:
            raise FlametoolError(f"--anchor {given!r}: no case named {given!r} in this run ({', '.join(labels)})")
        if len(specs) < 2:
            raise FlametoolError(f"--anchor {given!r}: the run needs another case to compare beside the anchor")
        return given
    same = [s.label for s in specs if (lib := library(s)) and len({e.versions.get(lib) for e in envs}) == 1
            and envs[0].versions.get(lib) is not None]
    if len(specs) >= 2 and same:
        return same[-1]
    shown = "; ".join(f"{e.name}: " + ", ".join(f"{lib} {v}" for lib, v in e.versions.items()) for e in envs)
    raise FlametoolError("--env: no case to anchor on (a case whose library has one version in every environment, "
                         f"beside the case compared; {shown or 'no library versions'}): add one to --libs (e.g. "
                         "torch) or name one with --anchor CASE")


def anchor_versions(envs: list[Environment], specs: list[CaseSpec], anchor: str) -> str | None:
    """A warning when the anchor's library is not one version in every environment (an --anchor given so): its own
    change is then the host's speed and the library's change together, and the anchored ratio carries both."""
    spec = next((s for s in specs if s.label == anchor), None)
    lib = library(spec) if spec is not None else None
    if lib is None or len({e.versions.get(lib) for e in envs}) == 1:
        return None
    shown = ", ".join(f"{e.versions.get(lib) or 'no version'} in {e.name}" for e in envs)
    return (f"warning: the anchor {anchor} is {lib} {shown}: its own change is then the host's speed and {lib}'s "
            "change together, and the anchored ratio carries both; anchor on a case whose library is the same in "
            "every environment")


def expand(specs: list[CaseSpec], envs: list[Environment]) -> list[CaseSpec]:
    """Every case in every environment, labelled CASE@NAME, environment by environment."""
    return [CaseSpec(env_label(s.label, e.name), s.factory, s.module, s.file, e.name, s.xp) for e in envs for s in specs]


def default_pairs(specs: list[CaseSpec], envs: list[Environment], anchor: str) -> list[list[str]]:
    """Each case but the anchor, in the first environment against each other one."""
    return [[env_label(s.label, envs[0].name), env_label(s.label, e.name)]
            for s in specs if s.label != anchor for e in envs[1:]]

