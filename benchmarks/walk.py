"""A reader's walk through flametool as a command first runs: for the first call of each flametool function, the
folder it lives in, in the order those first calls happen; then how often the walk moves between folders and how
often it climbs back up the data path.

This is our own stand-in for `farm-studio walk`, the tool issue 38 cites (not available here); its figures are
this script's, not that tool's, so compare them only with this script's own figures from another commit.

    python3 benchmarks/walk.py report samples/h200-seed-fp16 -o /tmp/x.html
    python3 benchmarks/walk.py --top 12 summary samples/h200-atlas

The command runs in this process (flametool.commands.main.main, its output swallowed) under sys.monitoring
where Python has it (3.12 and later), else sys.setprofile (and threading.setprofile, so a thread's calls count
too). Child processes are not walked: only the parent. Functions count from their first call, module and class
bodies (code run at import) do not; calls made while modules import do.

The folders are flametool's rooms: commands, render, analyse, measure, run, workload, and top-level (errors.py,
procs.py, __init__.py, __main__.py, cases.py). A **move** is two consecutive first-calls in different folders; a
**climb back** is a move to a folder above the current one on the data path workload < run < measure | analyse
< render < commands (measure and analyse stand side by side: a move between them is not a climb; top-level sits
outside the path: a move to or from it is never a climb). It prints the moves, the climbs back, the most frequent
folder-to-folder moves and the most frequent module-to-module ones.

Run it from the repository root (with PYTHONPATH=$PWD to walk a worktree's code).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import io
import sys
import threading
from pathlib import Path
from types import CodeType

RANK = {"workload": 0, "run": 1, "measure": 2, "analyse": 2, "render": 3, "commands": 4}


def where(code: CodeType, package: Path) -> tuple[str, str] | None:
    """(folder, module path under flametool/) of a flametool function's code, None for anything else."""
    try:
        rel = Path(code.co_filename).resolve().relative_to(package)
    except ValueError:
        return None
    folder = rel.parts[0] if len(rel.parts) > 1 else "top-level"
    return folder, rel.as_posix()


def walk(argv: list[str]) -> tuple[int, list[tuple[str, str]]]:
    """Runs `flametool ARGV` here and returns its exit code and the (folder, module) of each function's first call."""
    import flametool  # the package alone (its version): nothing of the commands is imported yet

    package = Path(flametool.__file__).resolve().parent
    seen: set[CodeType] = set()
    steps: list[tuple[str, str]] = []
    lock = threading.Lock()

    def first_call(code: CodeType) -> None:
        if code in seen:
            return
        with lock:
            if code in seen:
                return
            seen.add(code)
            # functions only (comprehensions and lambdas are functions too): a module's or class's body is not
            if not code.co_flags & inspect.CO_OPTIMIZED:
                return
            place = where(code, package)
            if place is not None:
                steps.append(place)

    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        tool = monitoring.PROFILER_ID
        monitoring.use_tool_id(tool, "walk")

        def on_start(code: CodeType, offset: int):
            first_call(code)
            return monitoring.DISABLE  # each code object once: later calls cost nothing

        monitoring.register_callback(tool, monitoring.events.PY_START, on_start)
        monitoring.set_events(tool, monitoring.events.PY_START)
    else:
        def profile(frame, event, arg):
            if event == "call":
                first_call(frame.f_code)

        threading.setprofile(profile)
        sys.setprofile(profile)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            from flametool.commands.main import main

            code = main(argv)
    finally:
        if monitoring is not None:
            monitoring.set_events(tool, 0)
            monitoring.free_tool_id(tool)
        else:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
    if code:
        sys.stderr.write(err.getvalue()[-2000:])
    return code, steps


def climbs(a: str, b: str) -> bool:
    return a in RANK and b in RANK and RANK[b] > RANK[a]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=8, help="how many of the most frequent moves to print")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="flametool's command line (without 'flametool')")
    args = parser.parse_args()
    code, steps = walk(args.command)
    folders = [f for f, _ in steps]
    moves = [(a, b) for a, b in zip(folders, folders[1:]) if a != b]
    module_moves = [(a, b) for (fa, a), (fb, b) in zip(steps, steps[1:]) if fa != fb]
    back = [m for m in moves if climbs(*m)]
    print(f"flametool {' '.join(args.command)}  (exit {code})")
    print(f"  {len(steps)} functions first called, {len(moves)} moves, {len(back)} climbs back")
    print("  folders: " + ", ".join(f"{f} {n}" for f, n in collections.Counter(folders).most_common()))
    print("  most frequent moves (folder -> folder, * a climb back):")
    for (a, b), n in collections.Counter(moves).most_common(args.top):
        print(f"    {n:4d}  {a} -> {b}{'  *' if climbs(a, b) else ''}")
    print("  most frequent moves (module -> module):")
    for (a, b), n in collections.Counter(module_moves).most_common(args.top):
        print(f"    {n:4d}  {a} -> {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
