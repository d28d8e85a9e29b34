"""Run by another environment's interpreter (`compare --env NAME=PYTHON`, environments.probe) before anything
is measured: can it run flametool's child and import every case, and which versions of the cases' libraries
does it have (and `git describe` of one imported from a git checkout)? Prints one JSON object on its last
line. Standard library only: the environment may have nothing but the cases' own libraries."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

INSTALLED = ("site-packages", "dist-packages")  # a module under these is an installed copy, not a checkout


def git_describe(directory: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(directory), "describe", "--always", "--dirty", "--tags"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def checkout_of(module_file: str | None, distributions: tuple[str, ...]) -> str | None:
    """`git describe` of the checkout a library was imported from: the module's own directories up to the
    first git work tree (an editable install, or PYTHONPATH pointing into a checkout), or, for a copy installed
    from a local directory (pip install ./cupy), the directory its direct_url.json names."""
    if module_file:
        for d in Path(module_file).resolve().parents:
            if d.name in INSTALLED:
                break
            if (d / ".git").exists():
                return git_describe(d)
    for name in distributions:
        try:
            text = importlib.metadata.distribution(name).read_text("direct_url.json")
        except (importlib.metadata.PackageNotFoundError, OSError):
            continue
        try:
            url = json.loads(text or "{}").get("url", "")
        except ValueError:
            continue
        if url.startswith("file://") and (Path(url[len("file://"):]) / ".git").exists():
            return git_describe(Path(url[len("file://"):]))
    return None


def probe(cases: list[dict]) -> dict:
    """cases: [{"label", "module" (its library, built-in) or "file" + "factory" (a user case)}]."""
    from flametool.measure.machine import PACKAGES

    out: dict = {"executable": sys.executable, "python_version": platform.python_version(), "versions": {},
                 "describe": {}, "error": None, "ppid": os.getppid()}  # flametool's pid, unless a wrapper stands between
    try:
        import flametool.measure.child.entry  # noqa: F401 - what each process of the environment runs
        # the child imports numpy only when it makes operands (so that --help need not): it needs it all the same
        import numpy  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"cannot run flametool's child ({type(exc).__name__}: {exc})"
        return out
    for case in cases:
        try:
            if case.get("library"):
                module = importlib.import_module(case["library"])
                version = getattr(module, "__version__", None)
                out["versions"][case["library"]] = str(version) if version is not None else None
                found = checkout_of(getattr(module, "__file__", None), PACKAGES.get(case["library"], ()))
                if found:
                    out["describe"][case["library"]] = found
            else:
                spec = importlib.util.spec_from_file_location(f"flametool_case_{case['factory']}", case["file"])
                assert spec is not None and spec.loader is not None  # a .py file (cases.parse_case): a source loader
                module = importlib.util.module_from_spec(spec)
                sys.path.insert(0, str(Path(case["file"]).parent))
                spec.loader.exec_module(module)
                if not callable(getattr(module, case["factory"], None)):
                    raise TypeError(f"{case['factory']} is not callable")
        except BaseException as exc:  # noqa: BLE001 - a case that does not import is the one line to say
            first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
            what = case.get("library") or f"case {case['label']} ({case['file']})"
            out["error"] = f"cannot import {what} ({type(exc).__name__}{': ' + first if first else ''})"
            return out
    return out


ANSWER = "flametool-importcheck"  # the answer's frame: ANSWER, the nonce the parent gave, then the JSON


def main(argv: list[str]) -> int:
    result = probe(json.loads(argv[0]))
    sys.stdout.flush()
    # framed by the parent's nonce: a line a sitecustomize or a wrapper prints (a JSON log line) is not the answer
    nonce = argv[1] if len(argv) > 1 else ""
    print(f"\n{ANSWER} {nonce} " + json.dumps(result), flush=True)
    return 0
