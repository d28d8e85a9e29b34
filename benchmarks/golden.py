"""Every output flametool makes of the committed run directories (samples/ and tests/data/), written to one
folder, a file per view: the terminal's tables (at 80 and 160 columns, and at 80 in ASCII), report.html, summary
in each format, the exports, and diffs (the text one at 160 and 80 columns). A refactor that must keep outputs byte for byte runs this before and after and
compares the folders: `python3 benchmarks/golden.py OUT_DIR` then `diff -r BEFORE AFTER`.

Run it from the repository root; it prints how many files it wrote. Each view runs through the command line
(flametool.commands.main.main), as a user would, so the words around the tables are kept too."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

RUNS = ["samples/h200-atlas", "samples/h200-hostbound-1024", "samples/h200-seed-as-reported",
        "samples/h200-seed-fp16", "samples/h200-sweep-fp16", "samples/h200-sweep-same-operands",
        "tests/data/h200-sum-counts", "tests/data/schema1-run"]


STAMP = re.compile(r"report generated \S+ by")  # the page says when it was made: the one line that may differ


def cli(argv: list[str]) -> str:
    from flametool.commands.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return f"exit {code}\n--- stdout\n{STAMP.sub('report generated (time) by', out.getvalue())}\n--- stderr\n{err.getvalue()}"


def terminal(run: str, width: int, ascii: bool = False) -> str:
    """The terminal's view of a stored run, as compare/sweep/atlas print it at the end on a terminal `width` columns
    wide (laid out at that width: it was laid out at 160 and its lines wrapped at 80), `ascii`: on an output that
    takes ASCII only (PYTHONIOENCODING=ascii)."""
    from flametool import render
    from flametool.analyse import dispatch
    from flametool.render.base import Options

    return render.show("terminal", dispatch.analyse_dir(run), Options(width=width, ascii=ascii))


def main(out_dir: str) -> int:
    out = Path(out_dir).resolve()
    os.chdir(Path(__file__).resolve().parent.parent)  # the run paths are the repository's
    out.mkdir(parents=True, exist_ok=True)
    os.environ["COLUMNS"] = "160"
    written = 0

    def put(name: str, text: str) -> None:
        nonlocal written
        (out / name).write_text(text, encoding="utf-8")
        written += 1

    for run in RUNS:
        tag = run.replace("/", "_")
        for width, ascii in ((80, False), (160, False), (80, True)):
            name = f"{tag}.terminal{width}{'.ascii' if ascii else ''}.txt"
            try:
                put(name, terminal(run, width, ascii))
            except Exception as exc:  # noqa: BLE001 - the failure is an output too
                put(name, f"raised {type(exc).__name__}: {exc}")
        put(f"{tag}.report.html", cli(["report", run, "-o", "-"]))
        for fmt in ("text", "markdown", "json"):
            put(f"{tag}.summary.{fmt}", cli(["summary", run, "--format", fmt]))
        for fmt in ("speedscope", "folded"):
            put(f"{tag}.export.{fmt}", cli(["export", run, "--format", fmt]))
            put(f"{tag}.export-lines.{fmt}", cli(["export", run, "--format", fmt, "--lines"]))
    pairs = [("samples/h200-seed-fp16", "samples/h200-seed-as-reported", "cupy"),
             ("samples/h200-seed-fp16", "samples/h200-hostbound-1024", "torch")]
    for a, b, case in pairs:
        for fmt in ("text", "markdown", "json"):
            put(f"diff_{Path(a).name}_{Path(b).name}_{case}.{fmt}", cli(["diff", a, b, "--case", case, "--format", fmt]))
        os.environ["COLUMNS"] = "80"
        put(f"diff_{Path(a).name}_{Path(b).name}_{case}.text80", cli(["diff", a, b, "--case", case]))
        os.environ["COLUMNS"] = "160"
    for run, base, head in [("samples/h200-hostbound-1024", "cupy", "torch"), ("tests/data/h200-sum-counts", "cupy", "torch")]:
        for fmt in ("text", "json"):
            put(f"diff_{Path(run).name}_{base}_{head}.{fmt}", cli(["diff", run, "--base", base, "--head", head, "--format", fmt]))
    print(f"golden: {written} files in {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):  # `--help` is not a folder
        sys.exit("usage: python3 benchmarks/golden.py [OUT_DIR]   (default /tmp/golden; then diff -r BEFORE AFTER)")
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/golden"))
