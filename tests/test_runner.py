"""runner: the child processes run the parent's flametool, whatever the current directory holds."""

import json
import pstats
import subprocess
import sys
from pathlib import Path

import flametool

ROOT = Path(flametool.__file__).resolve().parent.parent
# a flametool package in the directory the run starts from, as in a checkout beside an installed flametool
DECOY = """import pathlib, sys
pathlib.Path(__file__).with_name("imported").write_text(sys.argv[0])
raise SystemExit("the decoy flametool was imported")
"""


def test_children_import_the_parents_flametool(tmp_path):
    decoy = tmp_path / "flametool"
    decoy.mkdir()
    (decoy / "__init__.py").write_text(DECOY)
    (decoy / "child.py").write_text(DECOY)
    out = tmp_path / "run"
    # the parent imports this checkout's flametool explicitly (not from the current directory)
    boot = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from flametool.cli import main_entry; main_entry()"
    proc = subprocess.run([sys.executable, "-c", boot, "compare", "--device", "cpu", "--libs", "numpy,torch",
                           "--no-sample", "--processes", "1", "--repeats", "1", "--iters", "10", "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not (decoy / "imported").exists()
    data = json.loads((out / "run.json").read_text())
    assert all(r["error"] is None for r in data["results"].values())
    # cProfile saw the child's active_loop in the parent's flametool, not in the decoy
    files = {f for f, _, name in pstats.Stats(str(out / "numpy.prof")).stats if name == "active_loop"}
    assert files == {str(ROOT / "flametool" / "child.py")}
