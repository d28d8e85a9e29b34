"""`compare --env NAME=PYTHON` with interpreters that are not plain Pythons: a program that prints bytes that
are no text, and wrapper scripts that run Python without `exec` (the shell stays as its parent)."""

from __future__ import annotations

import sys

from checks import one_line_error


def script(path, body: str):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_an_interpreter_that_prints_garbage_cannot_be_run_as_python(capsys, tmp_path):
    garbage = script(tmp_path / "garbage", f"exec {sys.executable} -c \"import sys; "
                                           "sys.stdout.buffer.write(bytes(range(256)) * 12); "
                                           "sys.stderr.buffer.write(bytes(range(255, -1, -1)) * 12)\"\n")
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--env", f"a={sys.executable}",
                                   "--env", f"b={garbage}", "--out", str(tmp_path / "run")])
    assert line.startswith(f"flametool: --env 'b={garbage}': could not be run as Python")
    assert not (tmp_path / "run").exists()
