"""--sample-seconds takes a fraction of a second (options.seconds_value): kept a whole number where it is one, so
run.json and every line that says it read as before (5, not 5.0); below config.MIN_SAMPLE_SECONDS, or no number,
one line before anything runs; read back from run.json as it was written."""

from __future__ import annotations

import argparse
import json

import pytest

from flametool.commands import main, options
from flametool.measure.config import MIN_SAMPLE_SECONDS
from flametool.run import rundir
from flametool.run.profiled import Sampling
from flametool.run.reader import Reader
from flametool.run.record import RunConfig


@pytest.mark.parametrize("text, value", [("0.5", 0.5), ("5", 5), ("5.0", 5), ("2.25", 2.25), ("1e1", 10)])
def test_a_number_of_seconds_is_kept_whole_where_it_is_one(text, value):
    got = options.seconds_value(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text", ["abc", "inf", "-inf", "nan", "1e400", ""])
def test_what_is_no_number_of_seconds_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="is not a number of seconds"):
        options.seconds_value(text)


@pytest.mark.parametrize("command", ["compare", "sweep", "atlas"])
@pytest.mark.parametrize("given, said", [("0.05", f"--sample-seconds 0.05: must be at least {MIN_SAMPLE_SECONDS:g}"),
                                         ("-1", f"--sample-seconds -1: must be at least {MIN_SAMPLE_SECONDS:g}"),
                                         ("x", "argument --sample-seconds: 'x' is not a number of seconds"),
                                         ("4000", "--sample-seconds 4000: at most 3,600")])
def test_a_bad_window_is_one_line_before_anything_runs(command, given, said, tmp_path, capsys):
    out = tmp_path / "run"
    assert main.main([command, "--device", "cpu", "--libs", "numpy", "--sample-seconds", given, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"flametool: {said}"), err
    assert not out.exists()


def test_a_fraction_is_read_back_as_written_and_a_whole_number_stays_whole():
    fraction = Sampling.from_json(Reader({"command": [], "rate_hz": 200, "seconds": 0.5}, "", "run.json"))
    assert fraction.seconds == 0.5 and fraction.to_json()["seconds"] == 0.5
    # a run written before fractions (or with a whole number) reads an int back, and writes it as it was
    whole = Sampling.from_json(Reader({"command": [], "rate_hz": 100, "seconds": 5.0}, "", "run.json"))
    assert whole.seconds == 5 and type(whole.seconds) is int and json.dumps(whole.to_json()["seconds"]) == "5"
    assert RunConfig.of({"sample_seconds": 0.5}).sample_seconds == 0.5


def test_a_run_json_with_a_window_that_is_no_number_is_one_line(tmp_path):
    from runbuild import make_run

    run = make_run(tmp_path / "r", {"a": ("step (f.py:1);x 10\n", 10.0, 0)})
    data = json.loads((run / "run.json").read_text())
    data["config"]["sample_seconds"] = "half a second"
    (run / "run.json").write_text(json.dumps(data))
    with pytest.raises(rundir.RunDirError, match="sample_seconds"):
        rundir.load(run)
