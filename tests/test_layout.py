"""The package's folders are the data path, workload -> run record -> measure | analyse -> render -> commands:
each module imports only what sits below it (measure and analyse, side by side on the run record, never each
other), and no two modules import each other, at any depth. Read from the source with ast, imports inside
functions and under TYPE_CHECKING included, so a back-reference cannot hide in a function body."""

from __future__ import annotations

import ast
from pathlib import Path

import flametool

PACKAGE = Path(flametool.__file__).parent

# Layer rules as data: each room and the rooms it may import. The base modules (errors, procs, pool, the version) import no
# other room; `flametool.cases` is the public face of workload/ (the protocol, the built-ins by name), kept for users and
# recorded runs.
MAY_IMPORT: dict[str, set[str]] = {
    "base": set(),
    "workload": {"base"},
    "run": {"base", "workload"},
    "measure": {"base", "workload", "run"},
    "analyse": {"base", "workload", "run"},
    "render": {"base", "workload", "run", "analyse"},
    "commands": {"base", "workload", "run", "measure", "analyse", "render"},
    "top": {"base", "workload", "commands"},
}
# flametool itself holds the version alone
BASE = {"flametool", "flametool.errors", "flametool.procs", "flametool.pool"}
TOP = {"flametool.__main__", "flametool.cases"}


def room(module: str) -> str:
    if module in BASE:
        return "base"
    if module in TOP:
        return "top"
    parts = module.split(".")
    assert parts[0] == "flametool" and len(parts) > 1, f"{module}: a module outside every room"
    assert parts[1] in MAY_IMPORT, f"{module}: {parts[1]}/ is not a room of the layer rules"
    return parts[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every flametool module `path` imports (a `from package import module` counts as the module)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("flametool")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("flametool"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if (PACKAGE.parent / (sub.replace(".", "/") + ".py")).exists()
                          or (PACKAGE.parent / sub.replace(".", "/")).is_dir() else target)
    return found - {name}


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_import_points_down_the_data_path():
    wrong = [f"{m} ({room(m)}) imports {t} ({room(t)})" for m, targets in graph().items() for t in sorted(targets)
             if room(t) != room(m) and room(t) not in MAY_IMPORT[room(m)]]
    assert not wrong, "\n".join(wrong)


def test_no_import_circle():
    edges = {m: {t for t in ts if t != m} for m, ts in graph().items()}
    # a package's __init__ importing its own modules is how a package is made, not a circle
    edges = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in edges.items()}
    seen: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if seen.get(nxt) == 1:
                circles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in seen:
                visit(nxt, path + [nxt])
        seen[node] = 2

    for start in sorted(edges):
        if start not in seen:
            visit(start, [start])
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_the_import_reader_sees_every_form(tmp_path, monkeypatch):
    """The check itself: relative and absolute imports, `from package import module`, and an import inside a
    function are all read, so a back-reference written in any of them is reported."""
    package = tmp_path / "flametool"
    (package / "run").mkdir(parents=True)
    (package / "analyse").mkdir()
    for f in ("__init__.py", "errors.py", "run/__init__.py", "run/rundir.py", "analyse/__init__.py", "analyse/diff.py"):
        (package / f).write_text("")
    (package / "run" / "record.py").write_text(
        "from ..analyse import diff\nfrom . import rundir\nimport flametool.errors\n"
        "def f():\n    from flametool.analyse.diff import x\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", package)
    assert imports(package / "run" / "record.py") == {"flametool.analyse.diff", "flametool.run.rundir",
                                                     "flametool.errors"}
    assert room("flametool.analyse.diff") not in MAY_IMPORT[room("flametool.run.record")]


def test_flametool_cases_is_the_public_face_of_the_workload():
    """flametool.cases (what run.json names, what users import) holds the protocol's own names, finds every
    built-in factory by the name builtins.py gives it, and the names it held before the built-ins moved."""
    import flametool.cases
    from flametool.workload import builtins, cases, inputs, libraries

    assert cases.MODULE == "flametool.cases" and flametool.cases.CaseSpec is cases.CaseSpec
    for name, factory in builtins.factories().items():
        assert getattr(flametool.cases, name) is factory and factory.__name__ == name
    assert flametool.cases.torch_mm is libraries.torch_mm and flametool.cases.host_operands is inputs.host_operands
    assert not hasattr(flametool.cases, "torch_matmul")  # torch's matmul is torch_mm, as run.json records it
