"""`flametool --help` and every `flametool COMMAND --help` build the parser and print without importing numpy,
jinja2 or rich, nor flametool's run record or process control (issue 42: the analyses, the report, the terminal's
tables, run.json's reader and ctypes are imported where they are used). Checked in a fresh interpreter, since this
test process has imported all of them long before. How fast help is, is benchmarks/help_speed.py's to say."""

import subprocess
import sys

# what --help must not import, and why each is left to the command that runs
DEFERRED = {
    "numpy": "the analyses",
    "jinja2": "the report",
    "rich": "the terminal's output (the parser prints its own help)",
    "flametool.run.record": "run.json's reader (measure/config.py names its types for the checker only)",
    "flametool.procs": "ctypes and subprocess, for a command's child processes",
}

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
print(" ".join(m for m in sys.argv[1:] if m in sys.modules) or "none")
"""


def test_help_imports_none_of_the_deferred_modules():
    got = subprocess.run([sys.executable, "-c", PROBE, *DEFERRED], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    imported = got.stdout.split()
    assert imported == ["none"], "imported for --help: " + "; ".join(f"{m} ({DEFERRED[m]})" for m in imported)


def test_the_report_file_written_out_for_help_is_the_run_directorys():
    """report's default page is named in the command (rundir is not imported for --help): rundir's own name."""
    from flametool.commands import report
    from flametool.run import rundir

    assert report.REPORT_FILE == rundir.REPORT_FILE
