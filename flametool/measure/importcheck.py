"""Run by another environment's interpreter (`compare --env NAME=PYTHON`, environments.probe) before anything
is measured: can it run flametool's child and import every case, and which versions of the cases' libraries
does it have (and `git describe` of one imported from a git checkout)? And, for telling whether a library is
the same copy in every environment (the default anchor, environments.choose_anchor), what its installed files
are (installed_files) and the kinds of its top-level objects (surface). Prints one JSON object on its last
line. Standard library only: the environment may have nothing but the cases' own libraries."""

from __future__ import annotations

import csv
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import types
import zlib
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


def installed_files(module: types.ModuleType, distributions: tuple[str, ...]) -> str | None:
    """What a library's files are, cheaply, for telling two environments' copies apart (a build from a branch can
    keep the release's version string): "record:" and a digest of its distribution's RECORD (each installed
    file's path, sha256 and size, as pip or uv wrote them; not the scripts or the dist-info, whose bytes name the
    environment) where the module was imported from the files that RECORD lists and each still has its recorded
    size, so two environments that installed one wheel read alike; else "at:" and where the copy is (a checkout,
    an editable install, a copy on PYTHONPATH or edited after it was installed), the same only as the very same
    files. None: the module has no file."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).absolute()
    parts = module.__name__.split(".")
    # the directory the top-level package (or module) is in: site-packages, a checkout, a PYTHONPATH entry
    depth = len(parts) if hasattr(module, "__path__") else len(parts) - 1
    if len(path.parents) <= depth:
        return None
    site = path.parents[depth]
    here = path.relative_to(site).as_posix()
    digest = record_digest(site, here, (*distributions, parts[0], parts[0].replace("_", "-")))
    if digest:
        return "record:" + digest
    where = path.parent if hasattr(module, "__path__") else path
    return "at:" + os.path.realpath(where)


def record_digest(site: Path, here: str, names: tuple[str, ...]) -> str | None:
    """The digest of the RECORD (in `site`) that lists `here` (the module's file, relative to `site`), found by
    the distributions' likely names first, else among those installed in `site`; None: none lists it, or one of
    its files is no longer the size it records (edited in place after it was installed)."""
    def listing(dist: importlib.metadata.Distribution) -> str | None:
        try:
            text = dist.read_text("RECORD")
            at = os.path.realpath(str(dist.locate_file("")))
        except (OSError, ValueError):
            return None
        found = text is not None and f"\n{here}," in "\n" + text and at == os.path.realpath(site)
        return text if found else None

    text = None
    for name in dict.fromkeys(names):
        try:
            text = listing(importlib.metadata.distribution(name))
        except (importlib.metadata.PackageNotFoundError, ValueError):
            continue
        if text:
            break
    if not text:
        for dist in importlib.metadata.distributions(path=[str(site)]):
            if (text := listing(dist)) is not None:
                break
    if not text:
        return None
    rows = []
    for row in csv.reader(text.splitlines()):
        if len(row) < 3 or not row[1] or row[0].startswith(("../", "/")) or "__pycache__/" in row[0]:
            continue  # no hash (compiled files, RECORD itself), or outside the package (scripts: their shebang)
        if row[0].split("/", 1)[0].endswith((".dist-info", ".data")):
            continue  # INSTALLER, direct_url.json: how it was installed, not what
        try:
            if row[2] and os.stat(site / row[0]).st_size != int(row[2]):
                return None
        except (OSError, ValueError):
            return None
        rows.append(",".join(row[:3]))
    return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()[:32] if rows else None


def surface(module: types.ModuleType) -> str:
    """A digest of the library's top-level names and what each is (its type, and a function's or class's own
    module and name), read from the module's namespace (no lazy import set off): one copy of a library reads alike
    in every environment, and one whose functions were replaced at start-up (a sitecustomize wrapping
    numpy.matmul) does not, though its version and files are the release's. Submodules are left out: which of
    them are imported depends on the other libraries, not on this one."""
    rows = []
    for name, obj in list(vars(module).items()):
        if name.startswith("__") or isinstance(obj, types.ModuleType):
            continue
        kind = type(obj)
        row = f"{name}:{kind.__module__}.{kind.__qualname__}"
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            try:
                row += f"={obj.__module__}.{obj.__qualname__}"
            except Exception:  # noqa: BLE001 - a class whose __module__ is not text: its type says enough
                pass
        rows.append(row)
    return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()[:32]


def probe(cases: list[dict]) -> dict:
    """cases: [{"label", "module" (its library, built-in) or "file" + "factory" (a user case)}]."""
    from flametool.measure.machine import PACKAGES

    out: dict = {"executable": sys.executable, "python_version": platform.python_version(), "versions": {},
                 "describe": {}, "files": {}, "surface": {}, "error": None,
                 "ppid": os.getppid()}  # flametool's pid, unless a wrapper stands between
    try:
        import flametool.measure.child.entry  # noqa: F401 - what each process of the environment runs
        # the child imports numpy only when it makes operands (so that --help need not): it needs it all the same
        import numpy  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"cannot run flametool's child ({type(exc).__name__}: {exc})"
        return out
    libraries: dict[str, types.ModuleType] = {}
    for case in cases:
        try:
            if case.get("library"):
                module = importlib.import_module(case["library"])
                if case["library"] in libraries:  # a second case of one library (cupy's cublas): read once
                    continue
                libraries[case["library"]] = module
                version = getattr(module, "__version__", None)
                out["versions"][case["library"]] = str(version) if version is not None else None
                found = checkout_of(getattr(module, "__file__", None), PACKAGES.get(case["library"], ()))
                if found:
                    out["describe"][case["library"]] = found
                files = installed_files(module, PACKAGES.get(case["library"], ()))
                if files:
                    out["files"][case["library"]] = files
            else:
                named = f"flametool_case_{case['factory']}_{zlib.crc32(os.path.abspath(case['file']).encode()):08x}"
                spec = importlib.util.spec_from_file_location(named, case["file"])  # as workload/cases.import_file
                assert spec is not None and spec.loader is not None  # a .py file (cases.parse_case): a source loader
                module = importlib.util.module_from_spec(spec)
                sys.path.insert(0, str(Path(case["file"]).parent))
                # in sys.modules while it runs, as workload/cases.import_file does (this file imports no flametool):
                # a @dataclass under `from __future__ import annotations` looks its module up there
                sys.modules[spec.name] = module
                spec.loader.exec_module(module)
                if not callable(getattr(module, case["factory"], None)):
                    raise TypeError(f"{case['factory']} is not callable")
        except BaseException as exc:  # noqa: BLE001 - a case that does not import is the one line to say
            first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
            what = case.get("library") or f"case {case['label']} ({case['file']})"
            out["error"] = f"cannot import {what} ({type(exc).__name__}{': ' + first if first else ''})"
            return out
    # after every case is imported: a case or another library that replaced one of its functions shows too
    for name, module in libraries.items():
        try:
            out["surface"][name] = surface(module)
        except Exception:  # noqa: BLE001 - not known: not shown the same, which is all it decides
            pass
    return out


ANSWER = "flametool-importcheck"  # the answer's frame: ANSWER, the nonce the parent gave, then the JSON


def main(argv: list[str]) -> int:
    result = probe(json.loads(argv[0]))
    sys.stdout.flush()
    # framed by the parent's nonce: a line a sitecustomize or a wrapper prints (a JSON log line) is not the answer
    nonce = argv[1] if len(argv) > 1 else ""
    print(f"\n{ANSWER} {nonce} " + json.dumps(result), flush=True)
    return 0
