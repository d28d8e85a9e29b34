"""step.ops, the operations one call of a case's step launches, is checked when the case is built: a positive
whole number up to a million, else the case fails in one line (nothing divided by it is saved)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import faultkit as fk
from flametool.measure.child import building

FAULTS = fk.CASES / "fault_cases.py"


def step():
    pass


@pytest.mark.parametrize("ops", [-1, 0, 10**30, float("nan"), "many", 2.5, True, None])
def test_a_bad_step_ops_fails_the_case(ops):
    step.ops = ops
    with pytest.raises(building.FactoryFailed, match=r"step.ops is .*: it must be a positive integer"):
        building.check_ops(step)


@pytest.mark.parametrize("ops", [1, 100, np.int64(4), building.MAX_OPS_PER_STEP])
def test_a_whole_step_ops_is_taken(ops):
    step.ops = ops
    building.check_ops(step)


def test_a_negative_step_ops_through_the_command_line(tmp_path):
    out = tmp_path / "run"
    proc = fk.run(["compare", "--device", "cpu", "--libs", "", "--case", f"{FAULTS}:ops_case", "--no-sample",
                   "--processes", "1", "--repeats", "1", "--iters", "50", "--warmup", "5", "--shape", "16,16,16",
                   "--out", str(out)], fk.env(FLAMETOOL_TEST_OPS="-1"))
    assert proc.returncode == 1
    assert "step.ops is -1: it must be a positive integer" in fk.error_line(proc)
    result = json.loads((out / "run.json").read_text())["results"]["ops_case"]
    assert "step.ops" in result["error"] and not (result.get("timing") or {}).get("processes")
