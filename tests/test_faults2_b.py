"""Issue 13 ("Faults 2"), items 3, 6, 7, 10 and 12: each reproduced as reported, each now one line on stderr
starting 'flametool:' and an exit code, or the right result."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from flametool import cli, rundir
from reportruns import hostile_run
from runbuild import make_run, snapshot


def one_line(capsys) -> tuple[str, str]:
    """(stdout, the one stderr line) of a command that failed cleanly."""
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flametool: "), captured.err
    assert "Traceback" not in captured.err
    return captured.out, lines[0]


# --- 3: report -o writes through what is there, and says when it cannot ---------------------------------------

@pytest.fixture
def run(tmp_path):
    return hostile_run(tmp_path / "run")


def test_report_output_symlink_is_written_through(run, tmp_path, capsys):
    target = tmp_path / "target.html"
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    assert cli.main(["report", str(run), "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_report_output_fifo_is_fed_not_replaced(run, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert cli.main(["report", str(run), "-o", str(fifo)]) == 0
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
    code = cli.main([*args, "-o", str(node)])
    _, line = one_line(capsys)
    assert code == 2
    assert line == f"flametool: {node}: cannot be written (No space left on device)"
    assert stat.S_ISCHR(os.lstat(node).st_mode)  # still the device, not a 120 KB file
    assert snapshot(run) == before


def test_report_output_to_a_folder_is_one_line(run, tmp_path, capsys):
    assert cli.main(["report", str(run), "-o", str(tmp_path)]) == 2
    _, line = one_line(capsys)
    assert line == f"flametool: {tmp_path}: cannot be written (Is a directory)"


def test_default_report_stays_atomic(run, tmp_path, capsys):
    """RUN/report.html (no -o) is replaced by rename: a symlink planted there is not followed."""
    outside = tmp_path / "outside.html"
    outside.write_text("keep")
    (run / "report.html").unlink(missing_ok=True)
    (run / "report.html").symlink_to(outside)
    assert cli.main(["report", str(run)]) == 0
    assert outside.read_text() == "keep"
    assert not (run / "report.html").is_symlink() and (run / "report.html").read_text().startswith("<!DOCTYPE html>")
