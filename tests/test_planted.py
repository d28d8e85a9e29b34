"""A planted cost is found: a real `flametool compare` on the CPU under real py-spy, numpy against numpy plus
a busy-wait of a known length in a function with a distinctive name. The diff must show that function at
that many microseconds per call. Then `diff` and `export` on the same real run directory."""

import json
import sys
from pathlib import Path

import pytest

from flametool.analyse import dispatch
from flametool.commands import main
from flametool.run import folded
from runbuild import snapshot

CASES = Path(__file__).parent / "cases" / "planted_cases.py"
sys.path.insert(0, str(CASES.parent))
from planted_cases import PLANTED_US  # noqa: E402

# a planted cost measured to within its interval: a second worker beside it moves the figure it checks
pytestmark = pytest.mark.serial

BUSY = "planted_busy_wait_20us"


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory, cli):
    out = tmp_path_factory.mktemp("planted") / "run"
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", "--case", f"{CASES}:numpy_plus_planted",
               "--sample-seconds", "3", "--rate", "200", "--repeats", "1", "--iters", "2000", "--processes", "2",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


def test_compare_analyses_and_diffs(planted_run):
    out, stdout = planted_run
    a = dispatch.analyse_dir(out)
    assert set(a.cases) == set(a.profiles) == {"numpy", "numpy_plus_planted"}
    for label, x in a.cases.items():
        assert x.closure().within_tolerance, x.closure()
        # layers add up to the case's paired time per call at the sampled shape (pooled over its processes)
        assert sum(f.us_per_call for f in x.layers.values()) == pytest.approx(a.sample_timings[label].cpu_us)
        assert x.frames and x.frames[0].self.samples > 0 and x.frames[0].layer
    assert a.first_diff.base == "numpy" and a.first_diff.head == "numpy_plus_planted"
    # the two were timed in the same processes: the planted cost shows in the paired difference too
    (pair,) = a.pairs
    assert pair.timing.paired is True and pair.timing.units == 2
    assert pair.timing.diff_us == pytest.approx(PLANTED_US, rel=0.25), pair.timing
    # the layer table is printed after the summary (rows, not titles: titles wrap on narrow terminals)
    assert "CPU BLAS" in stdout and "total (measured)" in stdout


def test_planted_cost_found_at_its_size(planted_run):
    out, _ = planted_run
    frames = dispatch.analyse_dir(out).first_diff.frames
    rows = [r for r in frames if r.frame.endswith(BUSY)]
    assert len(rows) == 1, [r.frame for r in frames[:10]]
    found = rows[0].delta_total_us_per_call
    assert found == pytest.approx(PLANTED_US, rel=0.15), rows[0]
    assert rows[0].base_total_us_per_call == 0


def test_diff_and_export_on_a_real_run(planted_run, capsys, tmp_path):
    out, _ = planted_run
    before = snapshot(out)
    assert main.main(["diff", str(out), str(out), "--fail-above", "1"]) == 0
    assert main.main(["export", str(out), "--format", "speedscope", "-o", str(tmp_path / "s.json")]) == 0
    doc = json.loads((tmp_path / "s.json").read_text())
    assert len(doc["profiles"]) == 2 and doc["profiles"][1]["unit"] == "microseconds"
    assert main.main(["export", str(out), "--format", "folded", "-o", str(tmp_path / "f.folded")]) == 0
    stacks = folded.parse((tmp_path / "f.folded").read_text())
    assert any(s.frames[-1].endswith(BUSY) or BUSY in ";".join(s.frames) for s in stacks)
    assert snapshot(out) == before
    capsys.readouterr()
