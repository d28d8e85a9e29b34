"""flametool started with a standard stream closed (a cron job, a daemon: `>&-`, `2>&-`, `<&-`): it measures
and saves as usual, says nothing where nothing can be said, and py-spy's samples are kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


import faultkit as fk
import runbuild
from flametool.run import rundir

QUICK = ["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--iters", "50", "--warmup", "5",
         "--processes", "1", "--shape", "16,16,16", "--sample-seconds", "0.5"]


def closed(args: list[str], fds: tuple[int, ...], **kw) -> subprocess.CompletedProcess:
    """flametool with the descriptors `fds` closed in its process from the start (as the shell's `N>&-`);
    whichever of standard output and error stays open is captured."""
    # close in a wrapper python, then start flametool's python: the closed descriptors are inherited closed
    launcher = f"import os, sys; [os.close(fd) for fd in {fds!r}]; os.execv(sys.executable, [sys.executable, '-m', " \
               f"'flametool', *{args!r}])"
    return subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True, env=fk.env(),
                          cwd=fk.ROOT, timeout=120, **kw)


def test_compare_with_every_standard_stream_closed_measures_and_keeps_the_samples(tmp_path):
    """Closed standard input made py-spy's output file descriptor 0, and the samples were lost; closed standard
    output or error ended in a traceback before anything was measured."""
    out = tmp_path / "run"
    proc = closed([*QUICK, "--out", str(out)], (0, 1, 2))
    assert proc.returncode == 0
    run = json.loads((out / "run.json").read_text())
    assert run["complete"] is True
    sampling = run["results"]["numpy"]["profile"]["sampling"]
    assert sampling["kept_samples"] > 0, sampling
    assert (out / "numpy.folded").read_text().strip()
    assert (out / "report.html").is_file()


def test_compare_whose_standard_output_is_full_still_writes_its_report(tmp_path):
    """Standard output that cannot be written (a full disk: /dev/full) fails the run as a fault of the machine
    (exit 2, one line), but report.html, made from run.json, is written first (it was never written)."""
    out = tmp_path / "run"
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "flametool", *QUICK, "--out", str(out)], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=fk.env(), cwd=fk.ROOT, timeout=120)
    assert proc.returncode == 2 and "standard output: cannot be written" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads((out / "run.json").read_text())["complete"] is True
    assert "<html" in (out / "report.html").read_text()


def test_summary_with_standard_output_closed_exits_as_usual(tmp_path):
    base = runbuild.make_run(tmp_path / "base", {"a": ("step (f.py:1);x 10\n", 10.0, 0),
                                                 "b": ("step (f.py:1);y 10\n", 20.0, 0)})
    proc = closed(["summary", str(base)], (1,))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_the_sampler_output_never_takes_a_standard_descriptor():
    code = ("import os; os.close(0); from flametool.measure import sampler; fd, path, named = sampler.raw_output(); "
            "assert fd > 2 and (named or path == f'/proc/self/fd/{fd}'), (fd, path); print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=fk.env(), timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr


def into_a_closed_pipe(args: list[str]) -> subprocess.CompletedProcess:
    """flametool with standard output a pipe whose reader has gone (`| head -c 100` that has had its fill)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "flametool", *args], stdout=write, stderr=subprocess.PIPE,
                              text=True, env=fk.env(), cwd=fk.ROOT, timeout=120)
    finally:
        os.close(write)


def test_report_o_dev_stdout_into_a_pipe_whose_reader_left_is_not_a_fault(tmp_path):
    run = runbuild.make_run(tmp_path / "base", {"a": ("step (f.py:1);x 10\n", 10.0, 0),
                                                "b": ("step (f.py:1);y 10\n", 20.0, 0)})
    proc = into_a_closed_pipe(["report", str(run), "-o", "/dev/stdout"])
    assert proc.returncode == 0, proc.stderr
    assert "flametool:" not in proc.stderr and "Traceback" not in proc.stderr


def test_an_output_file_that_is_a_pipe_whose_reader_left_is_not_a_fault():
    """What `report -o` and `export -o` write through: a reader that went away is no failure to write."""
    read, write = os.pipe()
    os.close(read)
    try:
        rundir.write_output(Path(f"/proc/self/fd/{write}"), "x" * 1_000_000)
    finally:
        os.close(write)


def test_piped_output_takes_the_width_columns_gives(tmp_path):
    """Output that is not a terminal is drawn 160 columns wide (a CI log), unless COLUMNS says how wide: it had
    been ignored, so `COLUMNS=80 flametool diff ... | less` drew tables 160 wide."""
    samples = Path(fk.ROOT) / "samples"
    args = ["diff", str(samples / "h200-seed-as-reported"), str(samples / "h200-hostbound-1024")]
    widths = {}
    for columns in ("", "80", "0"):  # unset, given, and nonsense (ignored)
        environ = fk.env()
        environ.pop("COLUMNS", None)
        if columns:
            environ["COLUMNS"] = columns
        proc = fk.run(args, environ)
        assert proc.returncode == 0, proc.stderr
        widths[columns] = max(len(line) for line in proc.stdout.splitlines())
    assert widths == {"": 160, "80": 80, "0": 160}, widths
