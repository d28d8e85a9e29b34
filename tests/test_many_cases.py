"""A user with many cases of long names (tests/cases/many_cases.py): the run directory's file names, the terminal's
layout and the views that list every case and pair."""

from __future__ import annotations

from pathlib import Path

from flametool.measure.measurement import case_logs
from flametool.run import rundir

CASES = Path(__file__).parent / "cases" / "many_cases.py"
LONG = ["numpy_matmul_with_a_freshly_allocated_output_every_single_call",
        "einsum_numpy_contraction_of_two_operands_spelled_as_a_string_ij_jk_ik",
        "numpy_dot_of_the_two_operands_returning_a_new_array_each_time_it_is_called",
        "numpy_matmul_into_a_preallocated_output_array_the_same_for_every_call"]


def test_a_group_of_long_names_names_its_logs_within_a_file_name():
    labels = ["numpy", *LONG]
    stem = rundir.group_stem(labels)
    assert len(f"{stem}-timing-100.log".encode()) <= 255
    assert stem == f"numpy+{LONG[0]}+{LONG[1]}+2-more", stem
    assert rundir.group_stem(["numpy", "torch"]) == "numpy+torch"  # as before, where it fits


def test_the_logs_of_a_group_named_in_short_are_found_for_each_of_its_cases(tmp_path):
    groups = [["numpy", *LONG]]
    stem = rundir.group_stem(groups[0])
    for name in (f"{stem}-timing.log", f"{stem}-timing-2.log", "numpy.log"):
        (tmp_path / name).write_text("printed\n")
    found = case_logs(tmp_path, LONG[3], groups)  # a case the short name leaves out
    assert [p.name for p in found] == [f"{stem}-timing-2.log", f"{stem}-timing.log"]
    assert [p.name for p in case_logs(tmp_path, "numpy", groups)] == ["numpy.log"]  # its own, where it has one


def test_many_cases_of_long_names_run(cli, tmp_path):
    """Five cases whose names joined are longer than a file name may be: the first timing process's log was named
    after them all, and the run stopped before it began (`...-timing.log: cannot be written (File name too long)`)."""
    out = tmp_path / "run"
    args = [a for name in LONG for a in ("--case", f"{CASES}:{name}")]
    proc = cli("compare", "--device", "cpu", "--libs", "numpy", *args, "--processes", "1", "--repeats", "1",
               "--iters", "50", "--no-sample", "--no-count", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = rundir.load(out)
    assert all(data.results[label].timing.cpu_us_per_call > 0 for label in ["numpy", *LONG])
