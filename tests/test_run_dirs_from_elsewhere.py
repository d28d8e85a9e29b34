"""Run directories from elsewhere and the last tracebacks: a link or a FIFO in a run
directory, `-o` onto the run's own files, names the file system refuses, an output encoding that cannot
show '×', a run.json that does not fit in memory, and the catch-all for whatever is left: each ends in
one `flametool:` line and an exit code, and nothing of the run is lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import faultkit as fk
import pytest
from flametool.analyse import compare, dispatch
from flametool.commands import main
from flametool.render.base import Options
from reportruns import hostile_run
from runbuild import snapshot

SECRET = "top secret line 42"  # a line of "text N": what a folded reader would take for a stack


def test_a_link_in_a_run_directory_is_never_followed(tmp_path, capsys):
    """Item 1: `ln -sf /some/file d/alpha.folded; flametool report d` embedded the file in report.html, and
    `export` printed it."""
    run = hostile_run(tmp_path / "d")
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    (run / "alpha.folded").unlink()
    (run / "alpha.folded").symlink_to(secret)
    for argv in (["report", str(run)], ["export", str(run), "--format", "folded"], ["report", str(run), "-o", "-"]):
        code = main.main(argv)
        captured = capsys.readouterr()
        assert SECRET not in captured.out and "secret" not in captured.out, argv
        assert code == 2 and captured.err.count("flametool: ") == 1, captured.err
        assert f"{run / 'alpha.folded'}: a symbolic link" in captured.err
    assert not (run / "report.html").exists()


def test_a_fifo_or_dev_zero_in_a_run_directory_does_not_hang(tmp_path):
    """Item 2: a .folded that is a FIFO blocked the reader, a link to /dev/zero spun it; each is one line now."""
    run = hostile_run(tmp_path / "d")
    (run / "alpha.folded").unlink()
    os.mkfifo(run / "alpha.folded")
    (run / "beta.folded").unlink()
    (run / "beta.folded").symlink_to("/dev/zero")
    proc = fk.run(["report", str(run)], timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "alpha.folded: not a regular file (a FIFO)" in fk.error_line(proc)
    (run / "alpha.folded").unlink()
    (run / "alpha.folded").write_text("step (case.py:1);x (x.py:1) 5\n")
    proc = fk.run(["export", str(run), "--format", "folded"], timeout=60)
    assert proc.returncode == 2 and "beta.folded: a symbolic link" in fk.error_line(proc)


def test_output_onto_the_runs_own_files_is_refused(tmp_path, capsys):
    """Item 3: `report RUN -o RUN/run.json` replaced run.json with HTML; `export -o RUN/alpha.folded` replaced
    py-spy's stacks. Through a link to one of them too. RUN/report.html itself may be written."""
    run = hostile_run(tmp_path / "d")
    (tmp_path / "link.html").symlink_to(run / "alpha.prof")
    before = snapshot(run)
    for argv, victim in ((["report", str(run), "-o", str(run / "run.json")], "run.json"),
                         (["export", str(run), "--format", "folded", "-o", str(run / "alpha.folded")], "alpha.folded"),
                         (["report", str(run), "-o", str(tmp_path / "link.html")], "alpha.prof")):
        assert main.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("flametool: ") == 1 and f"is {run / victim}, a file of the run" in err, err
    assert snapshot(run) == before
    assert main.main(["report", str(run), "-o", str(run / "report.html")]) == 0
    assert (run / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_report_to_standard_output(tmp_path):
    """Item 10: `report -o /dev/stdout > f` put the status line into the page; `-o -` wrote a file named '-'."""
    run = hostile_run(tmp_path / "d")
    for target in ("/dev/stdout", "-"):
        page = tmp_path / "page.html"
        with open(page, "w") as fh:
            proc = subprocess.run([sys.executable, "-m", "flametool", "report", str(run), "-o", target], stdout=fh,
                                  stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=fk.env(PYTHONPATH=str(fk.ROOT)),
                                  timeout=120)
        assert proc.returncode == 0, proc.stderr
        text = page.read_text()
        assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>") and "report: /" not in text
        assert not (tmp_path / "-").exists()
        assert proc.stderr == ("" if target == "-" else "report: /dev/stdout\n")  # the status line: stderr
    assert not (run / "report.html").exists()


TINY = ["--device", "cpu", "--libs", "numpy", "--shape", "16,16,16", "--iters", "200", "--warmup", "20", "--repeats",
        "1", "--processes", "1", "--no-sample"]


def test_a_path_component_too_long_is_one_line(tmp_path):
    """Item 9: a 4,000-character component in --out ended in `OSError: [Errno 36]`."""
    proc = fk.run(["compare", *TINY, "--out", str(tmp_path / ("x" * 4000))])
    assert proc.returncode == 2
    line = fk.error_line(proc)
    assert "cannot be the run directory (File name too long); choose another --out" in line and len(line) < 400
    proc = fk.run(["report", str(tmp_path / ("x" * 4000))])  # and a run directory of such a name
    assert proc.returncode == 2 and "cannot be read (File name too long)" in fk.error_line(proc)


def test_a_non_utf8_out_with_an_ascii_terminal(tmp_path):
    """Item 9: with a non-UTF-8 --out the report could never be written and the retry path printed was unusable;
    with PYTHONIOENCODING=ascii compare measured, then ended in UnicodeEncodeError with no report.html."""
    out = os.path.join(os.fsencode(tmp_path), b"run-\xff")
    proc = subprocess.run([sys.executable, "-m", "flametool", "compare", *TINY, "--out", out], capture_output=True,
                          env=fk.env(PYTHONIOENCODING="ascii"), cwd=fk.ROOT, timeout=300)
    stdout, stderr = proc.stdout.decode("ascii"), proc.stderr.decode("ascii")  # ascii it was asked for
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr
    assert os.path.isfile(os.path.join(out, b"report.html"))
    # the line names the report as a shell gives it back: $'...\xff...' is the same bytes
    shown = f"$'{tmp_path}/run-\\xff/report.html'"
    assert f"report: {shown}" in stdout
    echoed = subprocess.run(["bash", "-c", f"printf %s {shown}"], capture_output=True).stdout
    assert echoed == os.path.join(out, b"report.html")
    assert "\\xd7" in stdout or "x" in stdout  # '×' printed as an escape, not a crash


def test_an_ascii_output_reads_as_text_not_escapes():
    """With PYTHONIOENCODING=ascii, diff's tables came out as '\\u250f\\u2501...' (every box character escaped) and
    its figures as '1.026\\xd7': now the boxes are drawn in ASCII and the symbols written as 'x', '+-' and '->'."""
    samples = fk.ROOT / "samples"
    proc = subprocess.run([sys.executable, "-m", "flametool", "diff", str(samples / "h200-seed-fp16"),
                           str(samples / "h200-seed-as-reported")], capture_output=True,
                          env=fk.env(PYTHONIOENCODING="ascii"), cwd=fk.ROOT, timeout=120)
    stdout = proc.stdout.decode("ascii")
    assert proc.returncode == 0, proc.stderr
    assert "\\u" not in stdout and "\\x" not in stdout, stdout[:2000]
    assert "relative to torch = 1.026x" in stdout and " -> B " in stdout
    assert "| Python " in stdout and "+- 0." in stdout and "+-----" in stdout
    # each table's rows as wide as its box: '+-' is spelled before the table is laid out, not after ('±' written
    # as '+-' by the stream had put the column one character off)
    tables: list[set[int]] = []
    for line in stdout.splitlines():
        if line.startswith(("|", "+")):
            tables[-1].add(len(line.rstrip()))
        elif not tables or tables[-1]:
            tables.append(set())
    assert [t for t in tables if len(t) > 1] == [] and len([t for t in tables if t]) >= 2, tables


def test_the_ascii_fallback_keeps_what_it_cannot_name():
    from flametool.commands.streams import ascii_fallback  # noqa: F401 -- registers "flametool-ascii"

    assert "1.5× ± 2 µs ┃ ╋ ━ █ é".encode("ascii", "flametool-ascii") == b"1.5x +- 2 us | + - # \\xe9"


def test_run_json_too_large_for_memory(tmp_path):
    """Item 9: run.json read under a memory limit ended in MemoryError."""
    run = hostile_run(tmp_path / "d")
    text = (run / "run.json").read_text()
    (run / "run.json").write_text(text.replace('"command": [', '"command": ["' + "x" * (200 << 20) + '", ', 1))
    script = ("import resource, sys\nfrom flametool.commands import main\n"
              "vm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmSize')) * 1024\n"
              "resource.setrlimit(resource.RLIMIT_AS, (vm + (150 << 20),) * 2)\n"
              "sys.exit(main.main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", script, "report", str(run)], capture_output=True, text=True,
                          cwd=fk.ROOT, env=fk.env(), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "run.json: too large to read in the memory this process may use" in fk.error_line(proc)


def test_an_unexpected_exception_is_one_line_and_a_file(tmp_path, capsys, monkeypatch):
    """Done when: any exception nothing expected becomes one `flametool:` line naming where its traceback went,
    and exit code 1."""
    run = hostile_run(tmp_path / "d")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a fault of flametool's own")

    monkeypatch.setattr(compare, "analyse", broken)
    assert main.main(["report", str(run)]) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("flametool: internal error (ZeroDivisionError: a fault of flametool's own); the "
                               "traceback is in ")
    path = Path(lines[0].split("the traceback is in ")[1].split(": please report")[0])
    assert path.parent == tmp_path and "Traceback (most recent call last)" in path.read_text()
    assert "in broken" in path.read_text()


CASES3 = fk.CASES / "process_cases.py"
SWEEP = ["sweep", "--device", "cpu", "--iters", "200", "--warmup", "20", "--repeats", "1", "--processes", "1"]


def test_a_sweep_in_which_every_case_fails_everywhere_exits_1(tmp_path):
    """Item 11: a sweep in which every case fails at every size exited 0."""
    proc = fk.run([*SWEEP, "--sizes", "8,16", "--libs", "", "--case", f"{CASES3}:always_fails", "--out",
                   str(tmp_path / "run")])
    assert proc.returncode == 1, proc.stderr
    assert fk.error_line(proc) == "flametool: case 'always_fails': failed at every size (at 8: factory always_fails " \
                                  "failed: ValueError: no 8x8x8 here)"


def test_sweep_cells_are_matched_by_size_not_position(tmp_path):
    """Item 4: when one case's points are ordered unlike config.sizes (a run.json made or edited elsewhere), its
    cells were taken by index while the pair's were matched by shape: torch's size-32 point showed at size 8. The
    second case is the tests' add_case, not torch (whose import cost each process 1-1.5 s): the cells are matched
    alike whatever the case."""
    import json

    from flametool.render import format as fmt
    from flametool.run import rundir
    from flametool.analyse import sweep
    from flametool.render import sweep_page

    out = tmp_path / "run"
    proc = fk.run([*SWEEP, "--sizes", "8,32", "--libs", "numpy", "--case", f"{fk.CASES / 'user_cases.py'}:add_case",
                   "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "run.json").read_text())
    doc["results"]["add_case"]["points"].reverse()
    (out / "run.json").write_text(json.dumps(doc))
    a = dispatch.analyse_dir(out)
    columns, rows = sweep_page.cells(a)
    host = columns.index("add_case host")
    ratio = columns.index("add_case / numpy wall")
    for row, shape in zip(rows, a.shapes):
        mine = next(p for p in a.curves["add_case"] if p.shape == shape)
        assert row[0].text == a.size_name(shape) and row[host].text == fmt.us(mine.cpu_us)
        pair = next(p for p in a.pairs[0].points if p.shape == shape)
        assert row[ratio].text == fmt.ratio(pair.wall.ratio)
    # and the terminal's table, and the pair itself (matched by shape although the orders differ)
    assert [p.shape for p in a.pairs[0].points] == [[8, 8, 8], [32, 32, 32]]
    data = rundir.load(out)
    at32 = next(p for p in data.results["add_case"].points if p.shape == [32, 32, 32])
    # pooled beside the pair or alone, one figure up to rounding (exp(log x) need not give x back to the last bit)
    assert a.at("add_case", [32, 32, 32]).cpu_us == pytest.approx(sweep.point(at32).cpu_us, rel=1e-12)
    proc = fk.run(["report", str(out), "-o", "-"])
    assert proc.returncode == 0


def test_tables_at_40_columns_never_cut_a_figure(tmp_path):
    """Item 14: at 40 columns the tables elided the figures themselves (`3.… us`). Every figure of the 160-column
    summary is in the 40-column one, whole, and no figure ends in '…'."""
    import re

    from flametool import render

    run = hostile_run(tmp_path / "d")
    a = dispatch.analyse_dir(run)
    wide, narrow = (render.show("terminal", a, Options(width=w, colour=False, view="caller")) for w in (160, 40))
    figure = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?(?: ?(?:us|x|×|%))?(?![\w.])")
    missing = [f for f in set(figure.findall(wide)) if f not in narrow]
    assert not missing, missing
    assert not re.search(r"\d\.?…", narrow), narrow


def test_a_table_wider_than_a_dumb_terminal_is_drawn(monkeypatch):
    """A table wider than the terminal even without its box, on a dumb terminal (TERM=dumb: Emacs' shell, some CI
    logs): rich reads such a console as 80 columns whatever its width is set to, and the search for the width that
    draws every word whole never ended (`flametool diff` spun at full CPU after its first lines)."""
    import io
    import signal

    from rich.console import Console
    from rich.table import Table

    from flametool.render import terminal

    monkeypatch.setenv("TERM", "dumb")
    for name in ("LINES", "COLUMNS"):  # set (pytest-xdist sets them), a height makes rich read the width as set
        monkeypatch.delenv(name, raising=False)
    console = Console(file=io.StringIO(), force_terminal=True, width=40)
    assert console.is_dumb_terminal and console.width == 80  # what rich reads: what made the search endless
    table = Table(title="wide")
    table.add_column("frame")
    table.add_column("code")
    table.add_row("f" * 90, "c" * 70)

    def stuck(*_):
        raise TimeoutError("terminal.show did not return")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(10)
    try:
        terminal.show(console, table)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    drawn = console.file.getvalue()
    assert "f" * 90 in drawn and "c" * 70 in drawn, drawn
    assert console.width == 80  # the console's own width is as it was


def test_a_long_title_does_not_stretch_its_table():
    """A table whose title is longer than its columns are wide was held to the title's width: a sweep's five short
    figures were drawn 160 columns wide. The title is now lines of its own above a table of its own width."""
    import io

    from rich.console import Console

    from flametool.render import terminal

    console = Console(file=io.StringIO(), width=160, color_system=None)
    table = terminal.titled("a title of some length that says what the figures are, " * 3)
    table.add_column("size")
    table.add_column("us")
    table.add_row("16", "0.96")
    terminal.show(console, table)
    drawn = console.file.getvalue().splitlines()
    boxed = [l for l in drawn if l[:1] in "┏┃┡│└"]
    assert boxed and max(len(l) for l in boxed) < 20, drawn
    assert drawn[0].startswith("a title of some length") and len(drawn[0]) > 100, drawn
    # a title no longer than its table stays its title
    console = Console(file=io.StringIO(), width=160, color_system=None)
    table = terminal.titled("short")
    table.add_column("size of the thing measured")
    table.add_row("16")
    terminal.show(console, table)
    assert console.file.getvalue().splitlines()[0].strip() == "short"
