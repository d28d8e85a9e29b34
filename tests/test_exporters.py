"""Exports: speedscope's file format (checked against the schema's required fields) and clean folded stacks."""

import json

import pytest

from checks import one_line_error

from flametool.commands import main
from flametool.render import speedscope as exporters
from flametool.run import folded, sources
from flametool.analyse import naming
from flametool.errors import FlametoolError
from runbuild import make_run, snapshot
from stackgen import folded_text, profile_of

A = ("numpy_matmul.<locals>.step (flametool/cases.py:65);ufunc_generic_fastcall (numpy/_core/_multiarray_umath"
     ".cpython-311-x86_64-linux-gnu.so);sgemm_kernel_HASWELL (libscipy_openblas64_.so) 8\n"
     "numpy_matmul.<locals>.step (flametool/cases.py:65);0x7f01 (libc.so.6);0x7f02 (libc.so.6) 1\n")
B = ("torch_mm.<locals>.step (flametool/cases.py:87);torch::autograd::THPVariable_mm (libtorch_python.so);"
     "at::_ops::mm_out::call (libtorch_cpu.so) 5\n")


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path / "run", {"numpy": (A, 5.0, 1), "torch": (B, 10.0, 0)})


def test_speedscope_file(run, tmp_path, capsys):
    before = snapshot(run)
    out = tmp_path / "profile.speedscope.json"
    assert main.main(["export", str(run), "--format", "speedscope", "-o", str(out)]) == 0
    assert snapshot(run) == before
    doc = json.loads(out.read_text())
    exporters.check_speedscope(doc)  # the schema's required fields, on what was written
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert [p["name"] for p in doc["profiles"]] == ["numpy (us per call)", "torch (us per call)"]
    numpy, torch = doc["profiles"]
    assert numpy["unit"] == "microseconds" and numpy["type"] == "sampled"
    # weights are microseconds per call: a profile adds up to the case's time per call
    assert sum(numpy["weights"]) == pytest.approx(5.0) and numpy["endValue"] == pytest.approx(5.0)
    assert sum(torch["weights"]) == pytest.approx(10.0)
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert "flametool.cases.numpy_matmul.<locals>.step" in names
    assert "[libc.so.6]" in names and naming.LOOP_FRAME in names
    assert "ufunc_generic_fastcall (numpy/_core/_multiarray_umath.so)" in names
    assert not any(n.startswith("0x") for n in names)
    # frames are shared between profiles, each once
    assert len(names) == len(set(names))


def test_speedscope_names_the_run_s_folder_however_it_was_given(run, capsys, monkeypatch):
    """speedscope shows the file's `name` as its title: `export .` named it "flametool " (the name of `.`)."""
    monkeypatch.chdir(run)
    for given in (".", str(run / "..") + "/run", "./"):
        assert main.main(["export", given, "--format", "speedscope", "--case", "torch"]) == 0
        assert json.loads(capsys.readouterr().out)["name"] == "flametool run", given


def test_check_speedscope_catches_missing_fields():
    with pytest.raises(FlametoolError, match="profiles\\[0\\].weights"):
        exporters.check_speedscope({"$schema": exporters.SPEEDSCOPE_SCHEMA, "shared": {"frames": [{"name": "a"}]},
                                    "profiles": [{"type": "sampled", "name": "x", "unit": "microseconds",
                                                  "startValue": 0, "endValue": 1, "samples": [[0]]}]})
    with pytest.raises(FlametoolError, match="out of range"):
        exporters.check_speedscope({"$schema": exporters.SPEEDSCOPE_SCHEMA, "shared": {"frames": []},
                                    "profiles": [{"type": "sampled", "name": "x", "unit": "microseconds",
                                                  "startValue": 0, "endValue": 1, "samples": [[3]], "weights": [1]}]})


def test_folded_to_stdout_all_cases(run, capsys):
    assert main.main(["export", str(run), "--format", "folded"]) == 0
    text = capsys.readouterr().out
    stacks = folded.parse(text)
    assert sum(s.count for s in stacks) == 9 + 1 + 5
    assert ("numpy", "flametool.cases.numpy_matmul.<locals>.step", "[libc.so.6]") in {s.frames for s in stacks}
    assert {s.frames[0] for s in stacks} == {"numpy", "torch"}


def test_folded_one_case(run, capsys):
    assert main.main(["export", str(run), "--format", "folded", "--case", "torch"]) == 0
    stacks = folded.parse(capsys.readouterr().out)
    assert stacks == [folded.Stack(("flametool.cases.torch_mm.<locals>.step", "torch::autograd::THPVariable_mm (libtorch_python.so)",
                                "at::_ops::mm_out::call (libtorch_cpu.so)"), 5)]


@pytest.mark.parametrize("args, words", [
    (["--format", "svg"], "--format 'svg'"),
    (["--format", "folded", "--case", "jax"], "--case 'jax': no such case"),
])
def test_export_bad_input(run, capsys, args, words):
    before = snapshot(run)
    assert words in one_line_error(capsys, ["export", str(run), *args])
    assert snapshot(run) == before


def test_export_missing_run_and_garbage(run, capsys, tmp_path):
    assert "no such run directory" in one_line_error(capsys, ["export", str(tmp_path / "nope"), "--format", "folded"])
    (run / "torch.folded").write_text("garbage\n")
    before = snapshot(run)
    assert "torch.folded: line 1" in one_line_error(capsys, ["export", str(run), "--format", "speedscope"])
    assert snapshot(run) == before


def test_export_unwritable_output(run, capsys, tmp_path):
    line = one_line_error(capsys, ["export", str(run), "--format", "folded", "-o", str(tmp_path / "no" / "dir" / "f")])
    assert "cannot be written" in line


def test_folded_line_level_view(tmp_path, capsys):
    run = make_run(tmp_path / "run", {"a": ("s (m.py:1);f (lib/k.py:10) 2\ns (m.py:1);f (lib/k.py:12) 1\n", 3.0, 0)})
    assert main.main(["export", str(run), "--format", "folded", "--lines"]) == 0
    assert {s.frames for s in folded.parse(capsys.readouterr().out)} == {("m.s:1", "lib.k.f:10"), ("m.s:1", "lib.k.f:12")}
    assert main.main(["export", str(run), "--format", "folded"]) == 0
    assert folded.parse(capsys.readouterr().out) == [folded.Stack(("m.s", "lib.k.f"), 3)]


def test_speedscope_export_is_the_same_as_frame_by_frame(tmp_path):
    text = folded_text([(["step (case.py:3)", "helper (mypkg/mod.py:10)", "0x7f01 (libcublas.so.13)"], 3),
                        (["step (case.py:3)", "Py_DECREF (object.h:706)", "malloc (libc.so.6)"], 2),
                        (["other_step (/abs/case.py:9)", "matmul (_routines_linalg.cpp:22480)"], 1)])
    profs = [profile_of([(s.frames, s.count) for s in folded.parse(text)], label) for label in ("a", "b")]
    profs[1] = profile_of([(s.frames[::-1], s.count) for s in folded.parse(text)], "b")
    doc = exporters.speedscope(profs, "x")
    index: dict = {}
    frames: list = []
    for p in profs:  # the exporter as it was: an id per frame, one frame at a time
        for s in p.stacks:
            for n in s.frames:
                if n not in index:
                    index[n] = len(frames)
                    frames.append({"name": n, "file": p.frames[n].file} if p.frames[n].file else {"name": n})
    assert doc["shared"]["frames"] == frames
    assert [pr["samples"] for pr in doc["profiles"]] == [[[index[n] for n in s.frames] for s in p.stacks] for p in profs]


def test_the_registry_is_the_renderers_and_gives_exports_options():
    """render.REGISTRY (data, read without importing a renderer) names each renderer's class, whose own `name`
    and `kind` it repeats; `export --format` offers and explains what the registry lists for stacks."""
    from flametool import render

    for r in render.REGISTRY:
        cls = render.renderer_class(r.where)
        assert (cls.name, cls.kind.__name__) == (r.format, r.result), r
    assert render.EXPORTS == ("speedscope", "folded", "perfetto") and render.SUMMARIES == ("text", "markdown", "json")
    export = main.build_parser()._subparsers._group_actions[0].choices["export"]  # type: ignore[union-attr]
    (fmt,) = [a for a in export._actions if a.dest == "format"]
    assert fmt.help == ("speedscope (JSON, weights in us per call) or folded (sample counts); "
                        "perfetto (one step's CUDA timeline: needs CUPTI)")
    assert render.formats_help("Summary", default="text").startswith("text (the default), markdown (a pull-request")


@pytest.mark.parametrize("fmt", ["speedscope", "perfetto"])
def test_a_sweep_or_an_atlas_says_what_it_is_in_every_export_format(capsys, tmp_path, fmt):
    """export --format perfetto of a sweep said it needs CUPTI: a sweep without --sample holds timings only, as the
    other formats say (a sweep with it is exported: test_sweep_profiles.py)."""
    from pathlib import Path

    from checks import one_line_error
    from flametool.run import rundir

    samples = Path(__file__).resolve().parent.parent / "samples"
    if not (samples / "h200-sweep-fp16").is_dir():
        pytest.skip("the sweep sample is not recorded")
    timed = tmp_path / "timed"  # the sample's timings, as a sweep without --sample records them
    timed.mkdir()
    run = rundir.load(samples / "h200-sweep-fp16")
    run.config.recorded["sample"] = False
    for r in run.results.values():
        for t in r.points:
            t.profile = None
    rundir.save(timed, run)
    line = one_line_error(capsys, ["export", str(timed), "--format", fmt])
    assert "a sweep run: made without --sample, it holds timings only" in line, line
    line = one_line_error(capsys, ["export", str(samples / "h200-atlas"), "--format", fmt])
    assert "an atlas: each op's run is a folder in it" in line, line


def test_a_stopped_atlas_names_only_the_op_folders_it_made(tmp_path, capsys):
    """export, diff and snakeviz of an atlas name its ops' folders to give instead; a stopped atlas's run.json lists
    the ops it never began too, whose folders were never made (the line named /tmp/at/copy, which was not there)."""
    from pathlib import Path

    from checks import one_line_error

    atlas = Path(__file__).resolve().parent.parent / "samples" / "h200-atlas"
    if not atlas.is_dir():
        pytest.skip("the atlas sample is not recorded")
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    (stopped / "run.json").write_text((atlas / "run.json").read_text())
    (stopped / "matmul").mkdir()
    (stopped / "matmul" / "run.json").write_text((atlas / "matmul" / "run.json").read_text())
    line = one_line_error(capsys, ["export", str(stopped), "--format", "folded"])
    assert f"each op's run is a folder in it ({stopped / 'matmul'}); give one of them to export" in line, line
    (stopped / "matmul" / "run.json").unlink()
    line = one_line_error(capsys, ["diff", str(stopped), "--base", "cupy", "--head", "torch"])
    assert "none was made: the atlas stopped before its first op" in line, line


def test_an_export_of_a_run_without_stacks_says_why(tmp_path, capsys):
    """`export` of a run made with --no-sample said 'no case has stacks to export' and no more (diff said 'not
    sampled (--no-sample)'); now the one line says why, case by case, exit 2 as before."""
    out = tmp_path / "nosample"
    assert main.main(["compare", "--device", "cpu", "--libs", "numpy", "--no-sample", "--processes", "1",
                      "--repeats", "1", "--iters", "50", "--out", str(out)]) == 0
    capsys.readouterr()
    line = one_line_error(capsys, ["export", str(out), "--format", "speedscope"])
    assert line.endswith("no case has stacks to export: numpy: not sampled (--no-sample)"), line
    # one case named: the reason run.json knows, not '--no-sample, or py-spy did not run'
    line = one_line_error(capsys, ["export", str(out), "--format", "folded", "--case", "numpy"])
    assert line.endswith("case 'numpy' cannot be analysed: not sampled (--no-sample)"), line
    # a failed case, and one whose sampling kept no samples inside step(), by hand
    from flametool.run import rundir

    hand = make_run(tmp_path / "hand", {"numpy": (A, 5.0, 0), "torch": (B, 10.0, 0)})
    run = rundir.load(hand)
    run.results["numpy"].error = "factory numpy failed: ValueError: no"
    run.results["torch"].profile.sampling.kept_samples = 0
    rundir.save(hand, run)
    line = one_line_error(capsys, ["export", str(hand), "--format", "speedscope"])
    assert line.endswith("no case has stacks to export: numpy: the case failed; torch: py-spy kept no samples "
                         "inside step()"), line


def test_speedscope_lines_gives_each_frame_its_line(run, capsys):
    """`export --lines --format speedscope`: each frame gave its `file` but its line only inside its name
    ('step:65'); speedscope's Frame takes a `line`, given now where py-spy reported one. The name keeps the line
    (speedscope draws only names), and a function-level export gives none (a function is many lines)."""
    assert main.main(["export", str(run), "--format", "speedscope", "--lines"]) == 0
    doc = json.loads(capsys.readouterr().out)
    exporters.check_speedscope(doc)
    frames = {f["name"]: f for f in doc["shared"]["frames"]}
    assert frames["flametool.cases.numpy_matmul.<locals>.step:65"] == {
        "name": "flametool.cases.numpy_matmul.<locals>.step:65", "file": "flametool/cases.py", "line": 65}
    assert frames["flametool.cases.torch_mm.<locals>.step:87"]["line"] == 87
    assert "line" not in frames["[libc.so.6]"] and "line" not in frames[naming.LOOP_FRAME]
    assert main.main(["export", str(run), "--format", "speedscope"]) == 0
    assert not any("line" in f for f in json.loads(capsys.readouterr().out)["shared"]["frames"])


def test_speedscope_lines_name_a_generated_line_by_the_pyx_line_it_came_from(tmp_path, capsys):
    """`export --lines --format speedscope`: a Python frame's `file` was named from its sys.path entry
    ('cupy/_core/_gufuncs.py') and a generated C++ line's by its bare name ('_linalg.cpp', line 120), though the run's
    record (sources.json) maps that line to the .pyx line it came from, as the lines views show it (and as py-spy
    names a .pyx line it maps itself). Now such a frame's `file` and `line` are the .pyx's, named as Cython names it;
    its name keeps the generated line; a line the record does not map keeps the name the stacks give."""
    stack = ("_GUFunc.__call__ (cupy/_core/_gufuncs.py:685);matmul (_linalg.cpp:120) 6\n"
             "_GUFunc.__call__ (cupy/_core/_gufuncs.py:685);matmul (_linalg.cpp:121);helper (_linalg.cpp:900) 4\n")
    run = make_run(tmp_path / "run", {"cupy": (stack, 5.0, 0)})
    sources.save(run, sources.Sources({
        "_linalg.cpp": sources.SourceFile("source", "/src/cupy/_core/_linalg.cpp", {120: "__pyx_t_1 = gemm();"},
                                          {120: ("cupy/_core/_linalg.pyx", 612), 121: ("cupy/_core/_linalg.pyx", 612)}),
        "cupy/_core/_linalg.pyx": sources.SourceFile("source", "/src/cupy/_core/_linalg.pyx", {612: "gemm(a, b)"})}))
    assert main.main(["export", str(run), "--format", "speedscope", "--lines"]) == 0
    doc = json.loads(capsys.readouterr().out)
    exporters.check_speedscope(doc)
    places = {f["name"]: (f.get("file"), f.get("line")) for f in doc["shared"]["frames"]}
    assert places == {"cupy._core._gufuncs._GUFunc.__call__:685": ("cupy/_core/_gufuncs.py", 685),
                      "matmul (_linalg.cpp:120)": ("cupy/_core/_linalg.pyx", 612),
                      "matmul (_linalg.cpp:121)": ("cupy/_core/_linalg.pyx", 612),
                      "helper (_linalg.cpp:900)": ("_linalg.cpp", 900)}, places
    # by function, a frame is many lines: its file as the stacks name it, no line
    assert main.main(["export", str(run), "--format", "speedscope"]) == 0
    frames = json.loads(capsys.readouterr().out)["shared"]["frames"]
    assert {f.get("file") for f in frames} == {"cupy/_core/_gufuncs.py", "_linalg.cpp"}
    assert not any("line" in f for f in frames)


def test_check_speedscope_checks_a_frame_s_optional_fields():
    doc = {"$schema": exporters.SPEEDSCOPE_SCHEMA, "shared": {"frames": [{"name": "a", "file": "f.py", "line": "3"}]},
           "profiles": [{"type": "sampled", "name": "x", "unit": "microseconds", "startValue": 0, "endValue": 1,
                         "samples": [[0]], "weights": [1]}]}
    with pytest.raises(FlametoolError, match=r"shared.frames\[0\].line"):
        exporters.check_speedscope(doc)
    doc["shared"]["frames"][0]["line"] = 3
    exporters.check_speedscope(doc)


def test_speedscope_lines_map_each_builds_generated_line_by_its_own_pyx(tmp_path, capsys):
    """`compare --env A=... --env B=...` of two builds of one Cython library: both builds' stacks name
    `_linalg.cpp:120`, generated from .pyx line 612 in A and from 640 in B (B added lines above it). sources.json
    keeps B's copy apart (`cases`), but the export mapped every profile's frames by the first copy: B's
    `matmul (_linalg.cpp:120)` was given A's line 612, a line B's build does not run there. Each profile's frames
    now map by its own case's copy: one frame name, two frames, each build's profile pointing at its own."""
    stack = "step (bench.py:5);matmul (_linalg.cpp:120) 6\nstep (bench.py:5) 4\n"
    run = make_run(tmp_path / "run", {"s@A": (stack, 5.0, 0), "s@B": (stack, 6.0, 0)})

    def build(root: str, pyx_line: int) -> sources.Sources:
        return sources.Sources({
            "bench.py": sources.SourceFile("case", "/w/bench.py", {5: "    matmul(a, b)"}),
            "_linalg.cpp": sources.SourceFile("library", f"{root}/cupy/_core/_linalg.cpp", {120: "gemm();"},
                                              {120: ("cupy/_core/_linalg.pyx", pyx_line)}),
            "cupy/_core/_linalg.pyx": sources.SourceFile("library", f"{root}/cupy/_core/_linalg.pyx",
                                                         {pyx_line: "gemm(a, b)"})})

    sources.save(run, sources.merge([("s@A", build("/A", 612)), ("s@B", build("/B", 640))]))
    assert set(sources.load(run).cases) == {"s@B"}  # as the measuring parent writes it
    assert main.main(["export", str(run), "--format", "speedscope", "--lines"]) == 0
    doc = json.loads(capsys.readouterr().out)
    exporters.check_speedscope(doc)
    frames = doc["shared"]["frames"]
    for profile, line in zip(doc["profiles"], (612, 640)):
        assert profile["name"].startswith(("s@A", "s@B")[line == 640])
        leaves = {frames[s[-1]]["name"]: frames[s[-1]] for s in profile["samples"]}
        assert leaves["matmul (_linalg.cpp:120)"] == {
            "name": "matmul (_linalg.cpp:120)", "file": "cupy/_core/_linalg.pyx", "line": line}, leaves
    # the frames both builds name alike stay one frame
    assert [f["name"] for f in frames] == ["bench.step:5", "matmul (_linalg.cpp:120)", "matmul (_linalg.cpp:120)"], frames
