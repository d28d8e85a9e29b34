"""Run directories the report, snakeviz and browser tests share: a real CPU run (made once per test session,
under real py-spy and cProfile), a hand-built one with hostile frame names, and the H200 reference."""

from __future__ import annotations

import cProfile
import shutil
from pathlib import Path

import pytest

from flametool.run import rundir
from h200run import make_h200_run
from runbuild import make_run
from shared import cpu_compare

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
XSS = "<img src=x onerror=alert(1)>"
CLOSER = "</script><script>alert(2)</script>"

_made: dict[str, Path] = {}


def cpu_run_dir(factory: pytest.TempPathFactory) -> Path:
    """`flametool compare --device cpu` (numpy and torch, the defaults, and add_case of one's own); made once in the
    test session and shared by every test module, test_compare_cpu.py's too, whichever xdist worker runs it
    (tests/shared.py)."""
    if not shutil.which("py-spy"):
        pytest.fail("py-spy must be installed for the tests (pip install py-spy)")
    out, proc = cpu_compare(factory)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def h200_run_dir(factory: pytest.TempPathFactory) -> Path:
    if "h200" not in _made:
        _made["h200"] = make_h200_run(factory.mktemp("h200") / "run")
    return _made["h200"]


def write_prof(path: Path) -> int:
    """A real cProfile file of a small loop; returns the number of calls profiled."""
    def step():
        return sum(range(50))

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(200):
        step()
    profiler.disable()
    profiler.dump_stats(str(path))
    return 200


def hostile_run(path: Path) -> Path:
    """Two cases whose frames are named like markup, with a .prof each, analysed as compare would."""
    a = (f"step (case.py:1);{XSS} (evil.py:3);malloc (libc.so.6) 60\n"
         f"step (case.py:1);numpy_thing (_multiarray_umath.so) 240\n")
    b = (f"step (case.py:1);{CLOSER} (evil.py:9);{XSS} (evil.py:3) 150\n"
         f"step (case.py:1);at::native::mm_out (libtorch_cpu.so) 150\n")
    make_run(path, {"alpha": (a, 10.0, 0), "beta": (b, 14.0, 0)})
    data = rundir.load(path)
    for label, r in data.results.items():
        r.profile.cprofile_calls = write_prof(path / f"{label}.prof")
        r.profile.files["prof"] = f"{label}.prof"
    rundir.save(path, data)
    return path


def sample_runs() -> list[Path]:
    return sorted(p.parent for p in SAMPLES.glob("*/run.json")) if SAMPLES.is_dir() else []
