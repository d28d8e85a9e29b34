"""Every command that reads a run directory, on every way one can be broken: one line naming the file,
exit code 2, no traceback, and nothing in the folder changed."""

from __future__ import annotations

import json
import marshal
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from flametool.commands import main
from flametool.run import rundir
from reportruns import hostile_run
from runbuild import snapshot

COMMANDS = [c for c in ("diff", "export", "report", "snakeviz")
            if c in main.build_parser()._subparsers._group_actions[0].choices]


def argv(command: str, run: Path, good: Path) -> list[str]:
    return {
        "diff": ["diff", str(good), str(run)],
        "export": ["export", str(run), "--format", "speedscope"],
        "report": ["report", str(run)],
        "snakeviz": ["snakeviz", str(run)],
    }[command]


def _edit_json(run: Path, change) -> None:
    data = json.loads((run / "run.json").read_text())
    change(data)
    (run / "run.json").write_text(json.dumps(data))


# fault -> (what it does to the run, the file the error must name, the commands that read that file)
RUN_JSON_READERS = {"diff", "export", "report", "snakeviz"}
FOLDED_READERS = {"diff", "export", "report"}
PROF_READERS = {"report", "snakeviz"}
FAULTS = {
    "missing folder": (lambda run: __import__("shutil").rmtree(run), "{run}", RUN_JSON_READERS),
    "a file, not a folder": (lambda run: (__import__("shutil").rmtree(run), run.write_text("x")), "{run}", RUN_JSON_READERS),
    "missing run.json": (lambda run: (run / "run.json").unlink(), "run.json", RUN_JSON_READERS),
    "empty run.json": (lambda run: (run / "run.json").write_text(""), "run.json", RUN_JSON_READERS),
    "corrupt run.json": (lambda run: (run / "run.json").write_text('{"schema": 1, "results": {'), "run.json", RUN_JSON_READERS),
    "run.json not text": (lambda run: (run / "run.json").write_bytes(b"\xff\xfe\x00garbage"), "run.json", RUN_JSON_READERS),
    "run.json a list": (lambda run: (run / "run.json").write_text("[1, 2]"), "run.json", RUN_JSON_READERS),
    "newer schema": (lambda run: _edit_json(run, lambda d: d.update(schema=rundir.SCHEMA + 1)), "run.json", RUN_JSON_READERS),
    "results not an object": (lambda run: _edit_json(run, lambda d: d.update(results=[1])), "run.json", RUN_JSON_READERS),
    "truncated .folded": (lambda run: (run / "alpha.folded").write_bytes((run / "alpha.folded").read_bytes()[:-25]),
                          "alpha.folded", FOLDED_READERS),
    "garbage .folded": (lambda run: (run / "alpha.folded").write_bytes(b"\x00\x01\xff\xfe garbage\n\x89PNG"),
                        "alpha.folded", FOLDED_READERS),
    "missing .folded": (lambda run: (run / "alpha.folded").unlink(), "alpha.folded", FOLDED_READERS),
    ".folded a folder": (lambda run: ((run / "alpha.folded").unlink(), (run / "alpha.folded").mkdir()),
                         "alpha.folded", FOLDED_READERS),
    ".folded outside the run": (lambda run: _edit_json(run, lambda d: d["results"]["alpha"]["profile"]["files"].update(folded="../x.folded")),
                                "run.json", FOLDED_READERS),
    ".prof pstats cannot read": (lambda run: (run / "alpha.prof").write_bytes(b"not a profile \x00\xff"), "alpha.prof", PROF_READERS),
    "truncated .prof": (lambda run: (run / "alpha.prof").write_bytes((run / "alpha.prof").read_bytes()[:40]), "alpha.prof", PROF_READERS),
    # a run directory from elsewhere holds links, FIFOs and crafted files
    ".folded a link to a file": (lambda run: _link(run / "alpha.folded", _outside(run, "secret 7\n")), "alpha.folded", FOLDED_READERS),
    ".folded a link to /dev/zero": (lambda run: _link(run / "alpha.folded", "/dev/zero"), "alpha.folded", FOLDED_READERS),
    ".folded a FIFO": (lambda run: ((run / "alpha.folded").unlink(), os.mkfifo(run / "alpha.folded")), "alpha.folded", FOLDED_READERS),
    "run.json a link": (lambda run: _link(run / "run.json", _outside(run, (run / "run.json").read_text())), "run.json", RUN_JSON_READERS),
    "run.json a FIFO": (lambda run: ((run / "run.json").unlink(), os.mkfifo(run / "run.json")), "run.json", RUN_JSON_READERS),
    ".prof a link": (lambda run: _link(run / "alpha.prof", _outside(run, (run / "alpha.prof").read_bytes())), "alpha.prof", PROF_READERS),
    "NUL in files.folded": (lambda run: _edit_json(run, lambda d: d["results"]["alpha"]["profile"]["files"].update(folded="a\0b")),
                            "run.json", FOLDED_READERS),
    ".prof with a string for a time": (lambda run: _craft_prof(run / "alpha.prof", 3, "1.0"), "alpha.prof", PROF_READERS),
    ".prof with NaN for a time": (lambda run: _craft_prof(run / "alpha.prof", 2, float("nan")), "alpha.prof", PROF_READERS),
}


def _outside(run: Path, content) -> Path:
    """A file beside the run directory (any file of the machine a link in it could name)."""
    target = run.parent / f"outside-{len(list(run.parent.iterdir()))}"
    (target.write_bytes if isinstance(content, bytes) else target.write_text)(content)
    return target


def _link(path: Path, target) -> None:
    path.unlink()
    path.symlink_to(target)


def _craft_prof(path: Path, index: int, value) -> None:
    """A valid marshalled cProfile table whose first entry has `value` for its own (index 2) or cumulative
    (index 3) time."""
    table = marshal.loads(path.read_bytes())
    key = next(iter(table))
    entry = list(table[key])
    entry[index] = value
    table[key] = tuple(entry)
    path.write_bytes(marshal.dumps(table))


@pytest.fixture
def good(tmp_path):
    return hostile_run(tmp_path / "good")


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("command", COMMANDS)
def test_bad_run_directory(tmp_path, good, capsys, monkeypatch, command, fault):
    spoil, names, readers = FAULTS[fault]
    run = hostile_run(tmp_path / "bad")
    spoil(run)
    before = snapshot(run) if run.is_dir() else run.read_bytes() if run.exists() else None
    if command == "snakeviz":  # a run it can serve would block the test: serving is not what is tested here
        from flametool.commands import drilldown

        monkeypatch.setattr(drilldown, "serve", lambda *a: 0)
    code = main.main(argv(command, run, good))
    captured = capsys.readouterr()
    after = snapshot(run) if run.is_dir() else run.read_bytes() if run.exists() else None
    assert after == before, "the command changed the run directory"
    assert "Traceback" not in captured.err
    if command not in readers:
        assert code == 0, captured.err  # it does not need the broken file
        return
    lines = [l for l in captured.err.splitlines() if l.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("flametool: "), captured.err
    assert names.format(run=run) in lines[0]


# --- any run.json: a value of any type anywhere in a result never makes a command crash ----------------------

JSON = hs.recursive(hs.none() | hs.booleans() | hs.integers(-10, 10**6) | hs.floats(allow_nan=True) | hs.text(max_size=12),
                    lambda inner: hs.lists(inner, max_size=3) | hs.dictionaries(hs.text(max_size=8), inner, max_size=3),
                    max_leaves=6)
FIELDS = ["timing", "timing.processes", "timing.processes.0.cpu_us", "timing.calls", "sample_timing", "profile",
          "profile.files", "profile.sampling", "profile.sampling.kept_samples", "profile.sampling.loop_samples",
          "profile.own", "profile.cprofile_calls", "error", "dtype", "shape", "sample_shape", "library", "group",
          "device_info"]


def _set(result: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    for key in parents:
        result = result[int(key)] if isinstance(result, list) else result[key]
    if isinstance(result, list):
        result[int(last)] = value
    else:
        result[last] = value


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=hs.sampled_from(FIELDS), value=JSON, command=hs.sampled_from([c for c in COMMANDS if c != "snakeviz"]))
def test_any_value_in_run_json_is_an_error_or_a_result(tmp_path_factory, capsys, field, value, command):
    run = hostile_run(tmp_path_factory.mktemp("fuzz") / "run")
    good = hostile_run(tmp_path_factory.mktemp("fuzz") / "good")
    _edit_json(run, lambda d: _set(d["results"]["alpha"], field, value))
    before = snapshot(run)
    args = argv(command, run, good) + (["-o", str(tmp_path_factory.mktemp("out") / "r.html")] if command == "report" else [])
    code = main.main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code in (0, 1, 2), err
    if code == 2:
        assert len([l for l in err.splitlines() if l.startswith("flametool: ")]) == 1, err
    assert snapshot(run) == before
