"""`flametool --help` and every `flametool COMMAND --help` build the parser and print without importing numpy or
jinja2 (issue 42: the analyses and the report are imported where they are used). Checked in a fresh interpreter,
since this test process has imported both long before. How fast help is, is benchmarks/help_speed.py's to say."""

import subprocess
import sys

PROBE = """
import contextlib, io, sys
from flametool.commands import main
for argv in [[]] + [[c] for c in main.COMMANDS]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            main.main(argv + ["--help"])
        except SystemExit as exc:
            assert exc.code == 0, (argv, exc.code)
    assert "usage: flametool" in printed.getvalue(), argv
print(" ".join(m for m in ("numpy", "jinja2") if m in sys.modules) or "neither")
"""


def test_help_imports_neither_numpy_nor_jinja2():
    got = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["neither"], f"imported for --help: {got.stdout.strip()}"
