"""The layer rules are data, and every view of a run reads them afresh: change layers.json and the terminal,
the report's layer table, its flame graphs and the frame tables all move together (nothing derived is kept
in run.json to disagree with them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_report import Page

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "h200-seed-fp16"
RULES = ROOT / "flametool" / "analyse" / "layers.json"
NEW = "GEMM library"


def flametool(*args: str, rules: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if rules is not None:
        env["FLAMETOOL_LAYERS"] = str(rules)
    return subprocess.run([sys.executable, "-m", "flametool", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def renamed(tmp_path_factory) -> Path:
    """layers.json with the cuBLAS layer renamed: the same frames, another layer name."""
    data = json.loads(RULES.read_text())
    for entry in data["layers"] + data["rules"]:
        if entry["layer"] == "cuBLAS":
            entry["layer"] = NEW
    path = tmp_path_factory.mktemp("rules") / "layers.json"
    path.write_text(json.dumps(data))
    return path


def layers_in_page(html: str) -> tuple[set[str], set[str], set[str]]:
    """(layer table rows, layers of the flame graphs' nodes, layers of the hot-frame tables' rows)."""
    page = Page(html)
    data = page.flame_data()
    flame = {data["strings"][row[2]] for g in data["graphs"] for row in g["rows"][1:]}
    section = html[html.index('<section id="layers"'):html.index("</section>", html.index('<section id="layers"'))]
    table = {l for l in ("cuBLAS", NEW, "CUDA runtime/driver") if f"</i>{l}</td>" in section}
    frames = html[html.index('<section id="frames"'):]
    frame_layers = {l for l in ("cuBLAS", NEW) if f">{l}</td>" in frames[:frames.index("</section>")]}
    return table, flame, frame_layers


def test_every_view_follows_the_rules(tmp_path, renamed):
    before = flametool("report", str(SAMPLE), "-o", str(tmp_path / "before.html"))
    after = flametool("report", str(SAMPLE), "-o", str(tmp_path / "after.html"), rules=renamed)
    assert before.returncode == 0 and after.returncode == 0, (before.stderr, after.stderr)
    table, flame, frames = layers_in_page((tmp_path / "before.html").read_text())
    assert "cuBLAS" in table and "cuBLAS" in flame and "cuBLAS" in frames and NEW not in flame
    table, flame, frames = layers_in_page((tmp_path / "after.html").read_text())
    assert NEW in table and NEW in flame and NEW in frames
    assert "cuBLAS" not in table and "cuBLAS" not in flame and "cuBLAS" not in frames
    # the terminal, through diff (the same run twice: every layer row, zero deltas)
    diff = flametool("diff", str(SAMPLE), str(SAMPLE), rules=renamed)
    assert diff.returncode == 0, diff.stderr
    assert NEW in diff.stdout and "cuBLAS " not in diff.stdout


def test_bad_rules_file_is_one_line(tmp_path):
    bad = tmp_path / "layers.json"
    bad.write_text('{"layers": [], "rules": [{"layer": "nowhere"}]}')
    for rules in (bad, tmp_path / "missing.json"):
        proc = flametool("report", str(SAMPLE), "-o", str(tmp_path / "r.html"), rules=rules)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("flametool: ") and str(rules.name) in lines[0], proc.stderr


def test_a_catastrophic_pattern_is_stopped_and_named(tmp_path):
    """`(a+)+$` tried on a frame of 40 'a's backtracks for days and hung the report. A rule
    of one's own is tried on a frame for at most a second: one line names the rule and the frame."""
    run = tmp_path / "run"
    from runbuild import make_run

    make_run(run, {"a": ("step (case.py:1);" + "a" * 40 + "b (x.py:1) 5\n", 10.0, 0)})
    data = json.loads(RULES.read_text())
    data["rules"].insert(0, {"layer": data["layers"][0]["layer"], "name": "(a+)+$"})
    rules = tmp_path / "layers.json"
    rules.write_text(json.dumps(data))
    proc = flametool("report", str(run), rules=rules)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"flametool: FLAMETOOL_LAYERS={rules}: rule 1 (name '(a+)+$') took more than 1 s on the "
                               "frame 'x.aaaa"), lines[0]
    assert "(?>a+)+" in lines[0]
