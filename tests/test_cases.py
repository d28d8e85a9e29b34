"""cases and child.building.fingerprint: the built-in cases multiply the same values, and run.json can tell."""

import io
import json

import numpy as np
from rich.console import Console

from flametool.analyse import compare, dispatch
from flametool.workload import inputs, libraries
from flametool.run import rundir
from flametool.measure.child import building
from flametool.workload.cases import CaseSpec
from flametool.measure.protocol import JobCase
from flametool.run.record import Operands
from flametool.render import html as report
from flametool.render import compare_tables
from runbuild import make_run

LINE = "step;active_loop;matmul 10\n"


def test_numpy_and_torch_multiply_the_same_bytes():
    for dtype in ("float32", "float16", "float64"):
        (sn, _), (st, _) = libraries.numpy_matmul(48, 32, 16, dtype, "cpu"), libraries.torch_mm(48, 32, 16, dtype, "cpu")
        fn, ft = building.fingerprint(sn), building.fingerprint(st)
        assert fn.fingerprint == ft.fingerprint and fn.made == ft.made, dtype
        assert st.operands[0].numpy().tobytes() == sn.operands[0].tobytes()
        # torch holds copies: the two cases do not share memory
        assert st.operands[0].data_ptr() != sn.operands[0].ctypes.data
    assert "rounded to float16" in building.fingerprint(libraries.torch_mm(8, 8, 8, "float16", "cpu")[0]).made


def test_fingerprint_tells_values_apart():
    a, b = np.ones((4, 4), np.float32), np.ones((4, 4), np.float32)

    def step():
        pass

    step.operands = (a, b)
    first = building.fingerprint(step)
    assert first.made == "step.operands of the case" and first.hashed.endswith("every byte")
    b[3, 3] = 2
    assert building.fingerprint(step).fingerprint != first.fingerprint
    # the same bytes as another dtype are other operands
    step.operands = (a.view(np.int32), b)
    assert building.fingerprint(step).fingerprint not in (first.fingerprint,)


def test_a_large_operand_is_hashed_in_part_and_says_so(monkeypatch):
    monkeypatch.setattr(building, "FINGERPRINT_ELEMENTS", 100)
    step, _ = libraries.torch_mm(30, 30, 10, "bfloat16", "cpu")  # bfloat16: hashed as its 16-bit patterns
    found = building.fingerprint(step)
    assert found.hashed == "blake2b of 2 operands, of each, one element in 9, 3"
    assert building.fingerprint(libraries.torch_mm(30, 30, 10, "bfloat16", "cpu")[0]) == found


def test_a_step_without_operands_has_no_fingerprint():
    def step():
        pass

    assert building.fingerprint(step) is None


def test_unlike_operands_are_flagged_in_the_terminal_and_the_report(tmp_path):
    out = make_run(tmp_path / "run", {"numpy": (LINE, 5.0, 0), "mine": (LINE, 6.0, 0), "same": (LINE, 6.0, 0)})
    run = rundir.load(out)
    made = inputs.operands_made("float32")
    run.results["numpy"].operands = [Operands([64, 64, 64], "aaaaaaaaaaaa", made, "every byte")]
    run.results["same"].operands = [Operands([64, 64, 64], "aaaaaaaaaaaa", made, "every byte")]
    run.results["mine"].operands = [Operands([64, 64, 64], "bbbbbbbbbbbb", "step.operands of the case", "every byte")]
    rundir.save(out, run)
    found = compare.unlike_operands(rundir.load(out))
    assert len(found) == 1 and set(found[0].cases) == {"numpy", "mine", "same"}
    buffer = io.StringIO()
    compare_tables.print_summary(dispatch.analyse_dir(out), Console(file=buffer, width=300, color_system=None))
    printed = buffer.getvalue()
    assert "operands differ: at 64,64,64 float32, " in printed
    flat = " ".join(printed.split())  # the line wraps at 300
    assert "mine and " in flat and "bbbbbbbbbbbb" not in flat  # which pair differs, not the fingerprints (run.json)
    caveats = [c for c in report.build(dispatch.analyse_dir(out)).warnings if c.kind == "operands differ"]
    # numpy and same read the same bytes: never named as differing
    assert len(caveats) == 1 and "same and numpy" not in caveats[0].text and "numpy and same" not in caveats[0].text
    # and the summary, in each format, says what the report says (docs/writing-cases.md: "the report and summary
    # flag cases ... whose fingerprints differ"; the summary said nothing of it)
    from flametool import render
    from flametool.analyse import summary

    made = summary.of(dispatch.analyse_dir(out), None)
    assert f"caution: operands differ: {caveats[0].text.rstrip('.')}" in render.show("text", made).splitlines()
    assert f"operands differ: {caveats[0].text.rstrip('.')}" in " ".join(render.show("markdown", made).split()).replace("\\", "")
    assert json.loads(render.show("json", made))["cautions"] == [{"kind": "operands differ", "text": caveats[0].text.rstrip(".")}]
    # the same bytes everywhere (or no fingerprints, as in runs before them): nothing to flag
    run.results["mine"].operands = run.results["numpy"].operands
    rundir.save(out, run)
    assert compare.unlike_operands(rundir.load(out)) == []
    assert not [c for c in report.build(dispatch.analyse_dir(out)).warnings if c.kind == "operands differ"]


def test_operands_that_cannot_be_hashed_leave_the_case_built(capsys):
    class Report:
        def phase(self, *args, **kwargs):
            pass

    errors, operands = {}, {}
    case = JobCase("odd", CaseSpec("odd", "odd_operands", module=__name__), "float32")
    made = building.build([case], [4, 4, 4], "cpu", Report(), errors, operands)
    assert list(made) == ["odd"] and errors == {} and operands == {}
    assert "step.operands could not be hashed" in capsys.readouterr().err


def odd_operands(m, k, n, dtype, device):
    def step():
        pass

    step.operands = (object(), 3)
    return step, lambda: None
