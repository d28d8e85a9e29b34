"""Odd inputs and outputs: a report written through a link, into a FIFO, to a full device or a folder; a spoiled
or deeply nested run.json, huge counts in a .folded file; hostile frame names in every view; case files with a
coding cookie or a factory bound under a block. Each ends in one line on stderr starting 'flametool:' and an
exit code, or the right result."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from checks import error_of
from flametool import render
from flametool.analyse import dispatch
from flametool.commands import main
from flametool.run import rundir
from reportruns import hostile_run
from runbuild import make_run, snapshot


def one_line(capsys) -> tuple[str, str]:
    """(stdout, the one stderr line) of a command that failed cleanly."""
    captured = capsys.readouterr()
    return captured.out, error_of(captured.err)


# --- 3: report -o writes through what is there, and says when it cannot ---------------------------------------

@pytest.fixture
def run(tmp_path):
    return hostile_run(tmp_path / "run")


def test_report_output_symlink_is_written_through(run, tmp_path, capsys):
    target = tmp_path / "target.html"
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    assert main.main(["report", str(run), "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_report_output_fifo_is_fed_not_replaced(run, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main.main(["report", str(run), "-o", str(fifo)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and got[0].startswith(b"<!DOCTYPE html>")


def full_device(where: Path) -> Path:
    """A node of /dev/full's device (1, 7) in a temporary folder, so that a regression replaces this
    one and never the machine's /dev/full."""
    node = where / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except (PermissionError, AttributeError):
        pytest.skip("cannot make a device node here (needs root)")
    return node


@pytest.mark.parametrize("command", ["report", "export"])
def test_output_to_a_full_device_is_one_line_and_stays_a_device(run, tmp_path, capsys, command):
    node = full_device(tmp_path)
    before = snapshot(run)
    args = ["report", str(run)] if command == "report" else ["export", str(run), "--format", "speedscope"]
    code = main.main([*args, "-o", str(node)])
    _, line = one_line(capsys)
    assert code == 2
    assert line == f"flametool: {node}: cannot be written (No space left on device)"
    assert stat.S_ISCHR(os.lstat(node).st_mode)  # still the device, not a 120 KB file
    assert snapshot(run) == before


def test_report_output_to_a_folder_is_one_line(run, tmp_path, capsys):
    assert main.main(["report", str(run), "-o", str(tmp_path)]) == 2
    _, line = one_line(capsys)
    assert line == f"flametool: {tmp_path}: cannot be written (Is a directory)"


def test_default_report_stays_atomic(run, tmp_path, capsys):
    """RUN/report.html (no -o) is replaced by rename: a symlink planted there is not followed."""
    outside = tmp_path / "outside.html"
    outside.write_text("keep")
    (run / "report.html").unlink(missing_ok=True)
    (run / "report.html").symlink_to(outside)
    assert main.main(["report", str(run)]) == 0
    assert outside.read_text() == "keep"
    assert not (run / "report.html").is_symlink() and (run / "report.html").read_text().startswith("<!DOCTYPE html>")


# --- 6: every part of run.json a reader loads is checked; derived figures stay finite -----------------------

READERS = ["report", "diff", "export", "snakeviz"]


def read_with(command: str, run: Path, good: Path, tmp_path: Path, monkeypatch) -> int:
    if command == "snakeviz":  # serving is not what is tested: only that the run directory is read and checked
        from flametool.commands import drilldown

        monkeypatch.setattr(drilldown, "serve", lambda *a: 0)
    return main.main({
        "report": ["report", str(run), "-o", str(tmp_path / "out.html")],
        "diff": ["diff", str(good), str(run)],
        "export": ["export", str(run), "--format", "speedscope"],
        "snakeviz": ["snakeviz", str(run)],
    }[command])


def edit(run: Path, change) -> None:
    data = json.loads((run / "run.json").read_text())
    change(data)
    (run / "run.json").write_text(json.dumps(data))  # allow_nan: as an editor or another tool might


def nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


SPOILED = {
    "config a list": (lambda d: d.update(config=[1]), "run.json: config is [1], expected an object"),
    "config.processes a string": (lambda d: d["config"].update(processes="5"),
                                  'run.json: config.processes is "5", expected a count'),
    "env a string": (lambda d: d.update(env="x"), 'run.json: env is "x", expected an object'),
    "env.gpu.visible a string": (lambda d: d["env"].update(gpu={"visible": "H200"}),
                                 'run.json: env.gpu.visible is "H200", expected a list of strings'),
    "a device index of -1": (lambda d: d["results"]["alpha"].update(device_info={"device_index": -1}),
                             "run.json: results.alpha.device_info.device_index is -1, expected a count"),
    "huge time per call": (lambda d: d["results"]["alpha"]["timing"]["processes"][0].update(cpu_us=[1e308]),
                           "run.json: results.alpha.timing.processes[0].cpu_us is [1e+308], expected a list of numbers"),
    "tiny time per call": (lambda d: d["results"]["alpha"]["profile"].update(cprofile_us_per_call=1e-300),
                           "run.json: results.alpha.profile.cprofile_us_per_call is 1e-300, expected a number 0 or "
                           "from 1e-06 to 1e+12"),
    "huge count": (lambda d: d["results"]["alpha"]["profile"]["sampling"].update(kept_samples=10**30),
                   "run.json: results.alpha.profile.sampling.kept_samples is 1000000000000000000000000000000, "
                   "expected a count"),
    "NaN in a result": (lambda d: d["results"]["alpha"]["timing"]["processes"][0].update(cpu_us=[float("nan")]),
                        "run.json: results.alpha.timing.processes[0].cpu_us[0] is NaN, not a finite number"),
    "NaN in a stored analysis": (lambda d: d.update(analysis={"alpha": {"us_per_call": float("nan")}}),
                                 "run.json: analysis.alpha.us_per_call is NaN, not a finite number"),
    "Infinity (1e400) in env": (lambda d: d["env"].update(cpu_count=float("inf")),
                                "run.json: env.cpu_count is Infinity, not a finite number"),
    "nested 100 deep": (lambda d: d["env"].update(gpu=nested(100)), "run.json: nested more than 32 levels deep (at env.gpu"),
}


@pytest.mark.parametrize("fault", list(SPOILED))
@pytest.mark.parametrize("command", READERS)
def test_spoiled_run_json_is_one_line(tmp_path, capsys, monkeypatch, command, fault):
    run, good = hostile_run(tmp_path / "run"), hostile_run(tmp_path / "good")
    spoil, expected = SPOILED[fault]
    edit(run, spoil)
    before = snapshot(run)
    code = read_with(command, run, good, tmp_path, monkeypatch)
    _, line = one_line(capsys)
    assert code == 2
    assert line.startswith(f"flametool: {run}/run.json: ") and expected in line, line
    assert snapshot(run) == before


@pytest.mark.parametrize("command", READERS)
def test_json_nested_past_the_recursion_limit_is_one_line(tmp_path, capsys, monkeypatch, command):
    run, good = hostile_run(tmp_path / "run"), hostile_run(tmp_path / "good")
    text = (run / "run.json").read_text()
    (run / "run.json").write_text(text.replace('"env": {', '"deep": ' + "[" * 100_000 + "]" * 100_000 + ', "env": {', 1))
    code = read_with(command, run, good, tmp_path, monkeypatch)
    _, line = one_line(capsys)
    assert code == 2 and line.startswith(f"flametool: {run}/run.json: ") and "nested" in line, line


def test_folded_count_too_large_is_one_line(tmp_path, capsys):
    run = hostile_run(tmp_path / "run")
    (run / "alpha.folded").write_text("step (case.py:1);malloc (libc.so.6) " + "9" * 400 + "\n")
    assert main.main(["export", str(run), "--format", "speedscope"]) == 2
    _, line = one_line(capsys)
    assert line.startswith(f"flametool: {run}/alpha.folded: line 1: count '99999") and "implausibly large" in line


def test_stored_analysis_and_diff_are_not_read_but_recomputed(tmp_path, capsys):
    """The report computes analysis and diff afresh: stored ones of any shape neither crash it nor show."""
    run = hostile_run(tmp_path / "run")

    expected = render.show("html", dispatch.analyse_dir(run))
    edit(run, lambda d: d.update(analysis={"alpha": {"hot_frames": "x", "us_per_call": "nan"}, "beta": [1]},
                                 diff={"base": 1, "layers": None, "frames": {"a": 2}}))
    assert main.main(["report", str(run), "-o", str(tmp_path / "a.html")]) == 0
    edit(run, lambda d: (d.pop("analysis"), d.pop("diff")))
    assert main.main(["report", str(run), "-o", str(tmp_path / "b.html")]) == 0
    strip = lambda html: "\n".join(l for l in html.splitlines() if "generated" not in l and "run directory" not in l)  # noqa: E731
    assert strip((tmp_path / "a.html").read_text()) == strip((tmp_path / "b.html").read_text()) == strip(expected)
    assert ">nan<" not in (tmp_path / "a.html").read_text()


def test_json_writers_refuse_nan_with_one_clear_error(tmp_path):
    from flametool.errors import FlametoolError

    run = make_run(tmp_path / "run", {"a": ("step (case.py:1);malloc (libc.so.6) 5\n", 10.0, 0)})
    data = rundir.load(run)
    before = (run / "run.json").read_bytes()
    data.results["a"].timing.processes[0].cpu_us = [float("nan")]
    with pytest.raises(FlametoolError, match=r"run.json: not written: results.a.timing.processes\[0\].cpu_us\[0\] is NaN, "
                                             "not a finite number"):
        rundir.save(run, data)
    assert (run / "run.json").read_bytes() == before  # the last good run.json is kept


def test_speedscope_weights_stay_finite_at_the_bound(tmp_path, capsys):
    """The largest plausible time per call and count still export as finite JSON numbers."""
    run = make_run(tmp_path / "run", {"a": ("step (case.py:1);malloc (libc.so.6) 999999999999\n"
                                            "step (case.py:1);free (libc.so.6) 1\n", 1e12, 0)})
    edit(run, lambda d: d["results"]["a"]["profile"]["sampling"].update(kept_samples=1))  # far fewer than read
    assert main.main(["export", str(run), "--format", "speedscope"]) == 0
    text = capsys.readouterr().out
    assert "Infinity" not in text and "NaN" not in text
    json.loads(text, parse_constant=lambda c: pytest.fail(c))


# --- 7: names from a run never drive the terminal ------------------------------------------------------------

CLEAR = "\x1b[2J"
HOSTILE_FRAMES = [f"clear{CLEAR}screen (evil.py:1)", "bell\x07ring\x08 (evil.py:2)", "csi\x9b2J (libevil.so)",
                  "rtl\u202eexe.txt (evil.py:3)", "[/bold] markup [red]x (evil.py:4)"]


def hostile_terminal_run(path: Path, us: float, label: str = "alpha") -> Path:
    lines = "".join(f"step (case.py:1);{name} {10 * (i + 1)}\n" for i, name in enumerate(HOSTILE_FRAMES))
    return make_run(path, {label: (lines + "step (case.py:1);malloc (libc.so.6) 50\n", us, 0),
                           "plain": ("step (case.py:1);malloc (libc.so.6) 80\n", 5.0, 0)})


def assert_inert(output: str) -> None:
    assert "\x1b" not in output and "\x9b" not in output and "\x07" not in output and "\u202e" not in output, repr(output)


def test_diff_prints_hostile_frame_names_visibly(tmp_path):
    from conftest import run_cli

    base = hostile_terminal_run(tmp_path / "base", 10.0)
    head = make_run(tmp_path / "head", {"alpha": ("step (case.py:1);malloc (libc.so.6) 50\n", 12.0, 0)})
    proc = run_cli("diff", str(base), str(head), "--case", "alpha")
    assert proc.returncode == 0, proc.stderr
    assert_inert(proc.stdout + proc.stderr)
    assert "\\x1b[2J" in proc.stdout and "\\x9b2J" in proc.stdout and "\\u202e" in proc.stdout
    assert "[/bold] markup [red]x" in proc.stdout  # console markup is printed as text, not read


def test_compare_summary_prints_hostile_names_visibly(tmp_path):
    """What `flametool compare` prints at the end (compare.cmd_compare): the summary, the layers, the frame deltas."""
    import io

    from rich.console import Console

    from flametool.analyse import dispatch
    from flametool.render import compare_tables

    label = f"ev{CLEAR}il"
    run = hostile_terminal_run(tmp_path / "run", 10.0, label)
    data = rundir.load(run)
    a = dispatch.analyse(run, data)
    plain, evil = data.results["plain"], data.results[label]
    plain.error, plain.dtype = f"factory raised {CLEAR}ValueError[/]", "[/x]"
    evil.timing.bound_note, evil.timing.host_bound = f"note {CLEAR}", False
    evil.sample_shape_reason, evil.sample_shape = "why\x1b[1A", [128, 128, 128]
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system=None, width=200)
    compare_tables.print_summary(a, console)
    plain.error = None
    compare_tables.print_layers(a, console)
    printed = buffer.getvalue()
    assert_inert(printed)
    assert "ev\\x1b[2Jil" in printed and "clear\\x1b[2Jscreen" in printed and "factory raised \\x1b[2JValueError[/]" in printed
    assert "why\\x1b[1A" in printed and "bell\\x07ring\\x08" in printed


def test_error_lines_print_names_visibly(tmp_path, capsys):
    missing = tmp_path / f"run{CLEAR}"
    assert main.main(["report", str(missing)]) == 2
    _, line = one_line(capsys)
    assert_inert(line)
    assert line == f"flametool: {tmp_path}/run\\x1b[2J: no such run directory"


def test_folded_export_writes_controls_as_escapes(tmp_path, capsys):
    run = hostile_terminal_run(tmp_path / "run", 10.0)
    assert main.main(["export", str(run), "--format", "folded", "--case", "alpha"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out  # (bidi marks are data, not controls)
    assert "clear\\x1b[2Jscreen" in out and "csi\\x9b2J" in out


# --- 10: the up-front --case check: honours coding cookies, sees names bound under if/try/..., wants .py ----

FACTORY_BODY = '''
    import numpy as np
    a = np.ones((m, n), dtype=dtype)

    def step():
        np.add(a, a, out=a)

    return step, lambda: None
'''
LATIN1 = ("# -*- coding: latin-1 -*-\n# caf\xe9: a latin-1 comment\nlabel = 'd\xe9j\xe0 vu'\n\ndef base(m, k, n, dtype, device):"
          + FACTORY_BODY).encode("latin-1")
UNDER = {
    "if": "import sys\nif sys.version_info >= (3,):\n    def base(m, k, n, dtype, device):" + FACTORY_BODY.replace("\n    ", "\n        "),
    "try": "try:\n    import numpy\nexcept ImportError:\n    numpy = None\nelse:\n    def base(m, k, n, dtype, device):"
           + FACTORY_BODY.replace("\n    ", "\n        "),
    "with": "import contextlib\nwith contextlib.suppress(Exception):\n    def base(m, k, n, dtype, device):"
            + FACTORY_BODY.replace("\n    ", "\n        "),
    "for": "def _make(m, k, n, dtype, device):" + FACTORY_BODY + "\nfor base in [_make]:\n    pass\n",
    "assigned in a tuple": "def _make(m, k, n, dtype, device):" + FACTORY_BODY + "\n(base, other) = (_make, None)\n",
}


@pytest.mark.parametrize("where", list(UNDER))
def test_case_factory_bound_under_a_block_is_accepted(tmp_path, where):
    from flametool.workload import cases

    path = tmp_path / "mine.py"
    path.write_text(UNDER[where])
    assert cases.user_case(f"{path}:base").factory == "base"


def test_case_file_with_a_coding_cookie_is_accepted_and_runs(tmp_path):
    from conftest import run_cli

    path = tmp_path / "latin.py"
    path.write_bytes(LATIN1)
    out = tmp_path / "run"
    proc = run_cli("compare", "--device", "cpu", "--libs", "", "--case", f"{path}:base", "--no-sample",
                   "--repeats", "1", "--iters", "20", "--warmup", "2", "--shape", "8,8,8", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert rundir.load(out).results["base"].timing.cpu_us_per_call > 0


@pytest.mark.parametrize("name, content, words", [
    ("good.txt", "def base(m, k, n, dtype, device):" + FACTORY_BODY, "good.txt is not a Python file"),
    ("nested.py", "def outer():\n    def base(m, k, n, dtype, device):\n        pass\n", "defines no base"),
    ("klass.py", "class K:\n    def base(self):\n        pass\n", "defines no base"),
    ("badcookie.py", "# -*- coding: no-such-codec -*-\ndef base(): pass\n", "does not parse"),
    ("notlatin.py", b"# caf\xe9\ndef base(): pass\n", "does not parse"),
    # deeper than Python's parser goes: RecursionError and MemoryError, internal errors before
    ("deep.py", "base = " + "1+" * 200000 + "1\n", "nested too deeply for Python's parser"),
    ("unary.py", "base = " + "-" * 100000 + "1\n", "nested too deeply for Python's parser"),
])
def test_bad_case_file_is_one_line_before_anything_starts(tmp_path, capsys, name, content, words):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = tmp_path / "run"
    code = main.main(["compare", "--device", "cpu", "--libs", "", "--case", f"{path}:base", "--no-sample", "--out", str(out)])
    _, line = one_line(capsys)
    assert code == 2 and words in line, line
    assert not out.exists()
