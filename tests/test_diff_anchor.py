"""`flametool diff RUN_A RUN_B`'s default anchor (diff.anchor_for): a case whose library is at one version in both
runs before one whose library changed version between them, the runs' own anchor first among those; where
only a case whose library changed is there it is still the anchor, and every view (text, markdown, JSON, the
--fail-above verdict) says that the change relative to it carries that library's change. On hand-built runs."""

from __future__ import annotations

import json
import re

import pytest

from checks import error_of
from flametool.analyse import diff
from flametool.commands import main
from flametool.run import rundir
from flametool.run.record import Environment, Group
from flametool.run.timing import Loops, Timing
import runbuild
from runbuild import case_result, new_run

# per-process speeds of a host: they multiply every case in a process alike
SPEEDS = [1.0, 1.12, 0.93, 1.05, 0.98, 1.21]
NOISE = [1.0, 1.004, 0.997, 1.002, 0.999, 1.003]  # the ratio's own small spread between processes
VERSIONS = {"cupy": "14.0.0", "torch": "2.13.0", "numpy": "2.4.6"}


def timing(us: float, host: float, noise=None) -> Timing:
    noise = noise or [1.0] * len(SPEEDS)
    return Timing([64, 64, 64], 200, [Loops([us * host * s * n, us * host * s * n * 1.001, us * host * s * n * 0.999])
                                      for s, n in zip(SPEEDS, noise)], True)


def saved_run(path, cases: dict[str, float], versions: dict[str, str], host: float = 1.0, noise=None):
    """A run of `cases` (label -> us per call; each its own library) timed in the same processes on a host
    `host` times as slow (not sampled), flametool's own environment recording `versions`."""
    run = new_run(env={"versions": versions})
    run.groups.append(Group(list(cases), True, "hand-built", len(SPEEDS)))
    for label, us in cases.items():
        r = case_result(label, us, 0, group=0, library=label)
        r.timing, r.profile = timing(us, host, noise if label == "torch" else None), None
        run.results[label] = r
    run.complete = True
    path.mkdir(parents=True)
    rundir.save(path, run)
    return path


def diff_cli(capsys, *args):
    code = main.main(["diff", *map(str, args)])
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture
def cupy_rebuilt(tmp_path):
    """A default compare of cupy, torch and numpy, twice: in B cupy is a new version and 20% faster, torch and
    numpy as they were, the host 38% slower. torch's own change is nothing."""
    a = saved_run(tmp_path / "a", {"cupy": 17.0, "torch": 11.0, "numpy": 6.0}, VERSIONS)
    b = saved_run(tmp_path / "b", {"cupy": 17.0 * 0.8, "torch": 11.0, "numpy": 6.0}, VERSIONS | {"cupy": "14.1.0"},
                  host=1.38, noise=NOISE)
    return a, b


def test_the_default_anchor_is_not_the_library_that_changed_version(cupy_rebuilt, capsys):
    """torch relative to cupy (run A's first case beside it) read cupy's 20% gain as torch 25% slower: the
    default is numpy, whose version is the same in both runs, in every view."""
    a, b = cupy_rebuilt
    code, out, err = diff_cli(capsys, a, b, "--case", "torch", "--fail-above", "5")
    text = out.replace("\n", " ")
    assert code == 0, err
    assert re.search(r"torch: B / A relative to numpy = 1\.00[01]×", text) and "relative to cupy" not in text
    assert "(the anchor's)" not in text and "cupy version" not in text  # cupy is neither the case nor its anchor
    assert "relative to numpy: within --fail-above 5%" in error_of(err) and "caution" not in err
    code, out, err = diff_cli(capsys, a, b, "--case", "torch", "--fail-above", "5", "--format", "json")
    pair = json.loads(out)["pairs"][0]
    assert code == 0 and pair["anchor"] == "numpy" and pair["ratio"]["value"] == pytest.approx(1.0, abs=0.002)
    assert pair["verdict"]["outcome"] == "passed" and json.loads(out)["differences"] == []
    code, out, err = diff_cli(capsys, a, b, "--case", "torch", "--fail-above", "5", "--format", "markdown")
    assert code == 0 and "relative to numpy" in out and "relative to cupy" not in out


def test_cupy_s_own_diff_is_relative_to_the_first_case_at_one_version(cupy_rebuilt, capsys):
    a, b = cupy_rebuilt
    result = diff.diff_runs(a, b, "cupy")
    assert result.change is not None and result.change.anchored is not None
    assert result.change.anchored.anchor == "torch"  # run A's first case beside it whose version is the same
    assert result.change.ratio == pytest.approx(0.8, rel=0.003)
    assert [str(d) for d in result.differences] == ["cupy version 14.0.0 in A, 14.1.0 in B"]
    assert result.anchor_moved is None


@pytest.fixture
def only_cupy_beside(tmp_path):
    """A default compare of cupy and torch, twice, cupy a new version in B and 20% faster: beside torch in both
    runs there is only cupy."""
    a = saved_run(tmp_path / "a", {"cupy": 17.0, "torch": 11.0}, VERSIONS)
    b = saved_run(tmp_path / "b", {"cupy": 17.0 * 0.8, "torch": 11.0}, VERSIONS | {"cupy": "14.1.0"}, host=1.38,
                  noise=NOISE)
    return a, b


def test_a_case_the_run_ended_before_timing_is_no_anchor(tmp_path, capsys):
    """Run B ended (complete: false) with torch, beside cupy in both runs, not timed: diff --case cupy took torch
    for the anchor and failed with an internal error (AssertionError); cupy is compared unanchored instead."""
    a = saved_run(tmp_path / "a", {"cupy": 17.0, "torch": 11.0}, VERSIONS)
    b = saved_run(tmp_path / "b", {"cupy": 17.0 * 0.8, "torch": 11.0}, VERSIONS)
    run = rundir.load(b)
    run.complete = False
    run.results["torch"].timing = None
    rundir.save(b, run)
    result = diff.diff_runs(a, b, "cupy")
    assert result.change is not None and result.change.anchored is None
    assert result.change.ratio == pytest.approx(0.8, rel=0.003)
    assert "no other case was timed beside cupy in both runs" in (result.change.no_anchor or "")
    code, out, err = diff_cli(capsys, a, b, "--case", "cupy")
    assert code == 0 and "internal error" not in err, err
    assert "--anchor 'torch': not a case timed beside 'cupy' in RUN_B" in error_of(
        diff_cli(capsys, a, b, "--case", "cupy", "--anchor", "torch")[2])


CARRIES = ("the anchor's own change is the host's speed and cupy's change together, and the change relative to cupy "
           "carries both")
NO_OTHER = "no other case timed beside torch in both runs has its library at one version in both"


def test_an_anchor_whose_version_changed_is_said_in_every_view(only_cupy_beside, capsys):
    """Still the anchor (nothing else was timed beside torch), and the text, markdown and JSON say that the figure
    relative to it carries cupy's change; so does the verdict, on standard error and in the summaries."""
    a, b = only_cupy_beside
    said = f"cupy version (the anchor's) 14.0.0 in A, 14.1.0 in B ({CARRIES}; {NO_OTHER})"
    code, out, err = diff_cli(capsys, a, b, "--case", "torch", "--fail-above", "5")
    text = " ".join(out.split())
    assert code == diff.SLOWER_EXIT  # torch / cupy moved 25%: cupy's change, read relative to cupy
    assert re.search(r"relative to cupy = 1\.2[45]\d×", text) and f"A and B differ: {said}" in text
    line = error_of(err)
    assert "relative to cupy: slower by more than --fail-above 5%" in line and line.endswith(f"; caution: {said}")
    code, out, err = diff_cli(capsys, a, b, "--case", "torch", "--fail-above", "5", "--format", "json")
    doc = json.loads(out)
    assert doc["pairs"][0]["anchor"] == "cupy"
    assert doc["differences"] == [{"what": "cupy version (the anchor's)", "base": "14.0.0", "head": "14.1.0",
                                   "unlike": False, "note": f"{CARRIES}; {NO_OTHER}"}]
    assert doc["verdict"]["sentence"].endswith(f"; caution: {said}")
    assert doc["pairs"][0]["verdict"] == doc["verdict"]
    code, out, err = diff_cli(capsys, a, b, "--case", "torch", "--fail-above", "5", "--format", "markdown")
    plain = out.replace("\\", "")
    assert plain.count(said) == 2  # the differences line, and the verdict's
    assert "relative to cupy" in plain


def test_a_given_anchor_is_honoured_and_its_changed_version_said(cupy_rebuilt, capsys):
    a, b = cupy_rebuilt
    result = diff.diff_runs(a, b, "torch", anchor="cupy")
    assert result.change is not None and result.change.anchored is not None
    assert result.change.anchored.anchor == "cupy" and result.change.ratio == pytest.approx(1.25, rel=0.003)
    assert result.anchor_moved is not None and str(result.anchor_moved) == (
        f"cupy version (the anchor's) 14.0.0 in A, 14.1.0 in B ({CARRIES})")  # chosen, not the only one there
    code, out, err = diff_cli(capsys, a, b, "--case", "torch", "--anchor", "cupy", "--fail-above", "5")
    assert code == diff.SLOWER_EXIT and error_of(err).endswith(f"; caution: {result.anchor_moved}")
    result = diff.diff_runs(a, b, "torch", anchor="numpy")
    assert result.change is not None and result.change.anchored is not None
    assert result.change.anchored.anchor == "numpy" and result.anchor_moved is None


def env_run(versions: dict[str, str | None], libraries: dict[str, str | None], anchor: str | None = "torch"):
    """A run of `compare --env` with one environment, a, in code: its cases (label -> library) at a, timed in the
    same processes, the environment's library versions `versions`, the run's own anchor `anchor`."""
    run = new_run({"anchor": anchor} if anchor else {})
    run.environments.append(Environment(name="a", python="/py/a", versions=versions))
    run.groups.append(Group([f"{l}@a" for l in libraries], True, "hand-built", len(SPEEDS)))
    for label, lib in libraries.items():
        run.results[f"{label}@a"] = case_result(f"{label}@a", 10.0, 0, group=0, library=lib, env="a")
    run.complete = True
    return run


@pytest.mark.parametrize("a_versions, b_versions, anchor, mine, expected", [
    # the runs' own anchor first among the cases at one version in both
    ({}, {}, "torch", False, "torch@a"),
    # not the runs' own anchor where its version changed: run A's first case at one version
    ({}, {"torch": "2.14.0"}, "torch", False, "numpy@a"),
    ({}, {"torch": "2.14.0", "numpy": "2.5.0"}, "torch", True, "jax@a"),
    # a case whose library is not known (none recorded, or no version in either run) before one whose version changed
    ({}, {"torch": "2.14.0", "numpy": "2.5.0", "jax": "0.9.1"}, "torch", True, "mine@a"),
    ({"numpy": None}, {"torch": "2.14.0", "numpy": None, "jax": "0.9.1"}, "torch", False, "numpy@a"),
    # nothing but cases whose version changed: the runs' own anchor, else run A's first, as before
    ({}, {"torch": "2.14.0", "numpy": "2.5.0", "jax": "0.9.1"}, None, False, "numpy@a"),
    ({}, {"torch": "2.14.0", "numpy": "2.5.0", "jax": "0.9.1"}, "torch", False, "torch@a"),
    # a version recorded in one run and not the other: changed
    ({"numpy": None}, {"torch": "2.14.0"}, "torch", False, "jax@a"),
])
def test_the_default_anchor_s_order(a_versions, b_versions, anchor, mine, expected):
    libraries: dict[str, str | None] = {"cupy": "cupy", "numpy": "numpy", "jax": "jax", "torch": "torch"}
    libraries |= {"mine": None} if mine else {}  # a case of your own: its library not recorded
    versions: dict[str, str | None] = {"cupy": "14.0.0", "numpy": "2.4.6", "jax": "0.9.0", "torch": "2.13.0"}
    a, b = (env_run(versions | changed, libraries, anchor) for changed in (a_versions, b_versions))
    assert diff.anchor_for(a, b, "cupy@a", None) == (expected, None)


# --- one run of two environments whose anchor was shown to differ (--anchor given so) ----------------------------

def two_envs(path, numpy_b: str, torch_b: float = 1.0):
    """`compare --env a --env b --anchor numpy`, torch compared: torch the same in both, numpy 2.4.6 from the same
    installed files in both, its top-level objects `numpy_b` in b ("n": as in a; "patched": a sitecustomize
    wrapped numpy.matmul, which made numpy@b 25% slower), torch@b `torch_b` times torch@a. Not sampled, two
    environments' processes."""
    run = new_run({"anchor": "numpy", "pairs": [["torch@a", "torch@b"]], "device": "cpu"})
    for i, (env, surface, slower) in enumerate((("a", "n", 1.0), ("b", numpy_b, 1.25 if numpy_b != "n" else 1.0))):
        run.environments.append(Environment(name=env, python=f"/py/{env}", versions={"numpy": "2.4.6", "torch": "2.13"},
                                            files={"numpy": "record:np", "torch": "record:pt"},
                                            surface={"numpy": surface, "torch": "t"}))
        run.groups.append(Group([f"numpy@{env}", f"torch@{env}"], True, "hand-built", len(SPEEDS)))
        for lib, us in (("numpy", 5.0 * slower), ("torch", 7.0 * (torch_b if i else 1.0))):
            r = case_result(f"{lib}@{env}", us, 0, group=i, library=lib, env=env)
            r.timing, r.profile = timing(us, 1.0, (NOISE[::-1] if i else NOISE) if lib == "torch" else None), None
            run.results[f"{lib}@{env}"] = r
    run.complete = True
    path.mkdir(parents=True)
    rundir.save(path, run)
    return path


def test_a_run_whose_anchor_differs_between_environments_says_so_in_every_view(tmp_path, capsys):
    """The warning before the run ('the anchor numpy is ... not the same top-level objects') was said once, on
    standard error, and nothing after it: summary's verdict read 'passed' (torch@b 20% faster relative to a numpy
    made slower) with no word of it, in the CI line, the pull-request comment and the JSON alike."""
    patched = two_envs(tmp_path / "patched", "patched")
    carries = ("the anchor numpy is numpy 2.4.6 in every environment and the same files, but not the same top-level "
               "objects")
    assert main.main(["summary", str(patched), "--fail-above", "5"]) == 0
    out, err = capsys.readouterr()
    assert carries in error_of(err) and "; caution: " in error_of(err)
    assert f"caution: anchor differs: {carries}" in out
    assert main.main(["summary", str(patched), "--fail-above", "5", "--format", "markdown"]) == 0
    assert carries in capsys.readouterr().out
    assert main.main(["summary", str(patched), "--fail-above", "5", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [c["kind"] for c in got["cautions"]] == ["anchor differs"] and got["cautions"][0]["text"].startswith(carries)
    assert "; caution: " + carries in got["pairs"][0]["verdict"]["sentence"]
    # the same numpy in both: no caution
    same = two_envs(tmp_path / "same", "n")
    assert main.main(["summary", str(same), "--fail-above", "5", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["cautions"] == [] and "caution" not in got["pairs"][0]["verdict"]["sentence"]


@pytest.mark.parametrize("recorded, complete, finished, advice", [
    # compare --fail-above that ran out of its budget undecided: a longer one, in seconds. Its 6 processes a side
    # were its --processes, which may run past the budget: they took at most the whole run, 45 s, 7.5 s each; the 9
    # that would settle it 67.5 s, up to 70
    ({"fail_above": 5.0, "budget": 30.0, "processes": 6}, True, "2026-11-29T00:00:45+00:00",
     "(it adds processes until the verdict is decided) and a longer budget, --budget 70 (9 processes a side at this "
     "run's 7.5 s a process a side)"),
    # past its --processes (4): it stopped within its budget, 30 s for 6 a side, 5.0 s each: 45 s, up to 50
    ({"fail_above": 5.0, "budget": 30.0, "processes": 4}, True, "2026-11-29T00:01:40+00:00",
     "(it adds processes until the verdict is decided) and a longer budget, --budget 50 (9 processes a side at this "
     "run's 5.0 s a process a side)"),
    # no budget recorded, or no time it took (not finished): no time to go by, the words as they were
    ({"fail_above": 5.0}, True, "2026-11-29T00:00:45+00:00",
     "(it adds processes until the verdict is decided) and a longer --budget SECONDS"),
    ({"fail_above": 5.0, "budget": 30.0, "processes": 6}, True, None,
     "(it adds processes until the verdict is decided) and a longer --budget SECONDS"),
    # made without --fail-above (--processes 6): no budget ran out; --fail-above adds the processes
    ({}, True, None, "(it adds processes until the verdict is decided)"),
    # interrupted (Ctrl-C) part-way: it did not run out of anything
    ({"fail_above": 5.0, "budget": 30.0}, False, None, "(it adds processes until the verdict is decided); this run "
                                                       "did not finish (run.json complete: false)"),
])
def test_an_inconclusive_run_s_advice_names_what_stopped_it(tmp_path, capsys, recorded, complete, finished, advice):
    """summary --fail-above of a run undecided at PCT asked for 'a longer --budget SECONDS' whatever had stopped it:
    of a run interrupted at 2 + 2 of its 8 + 8 processes, and of one made without --fail-above, whose budget never
    ran out either. Where the budget ran out it named no budget, though the processes that would settle it and the
    time the run's took were known: now it names one."""
    path = two_envs(tmp_path / "run", "n", torch_b=1.047)
    run = rundir.load(path)
    run.config.recorded.update(recorded)
    run.complete, run.finished = complete, finished
    rundir.save(path, run)
    assert main.main(["summary", str(path), "--fail-above", "5"]) == diff.INCONCLUSIVE_EXIT
    line = error_of(capsys.readouterr().err)
    assert line.endswith("; to decide it, compare again with --fail-above 5 " + advice), line


def test_an_environments_run_says_its_intervals_are_over_each_sides_processes(tmp_path):
    """The headline's note on what the intervals cover said 'over this run's 4 processes' of a run of 4 + 4 (each
    environment's): an anchored pair's are over both sides' processes."""
    from flametool.analyse import dispatch
    from flametool.render import format as fmt

    run = runbuild.env_run_dir(tmp_path / "envs", [1.5, 1.52, 1.49, 1.51], [1.6, 1.62, 1.58, 1.61])
    note = fmt.speed_note(dispatch.analyse_dir(run).pairs)
    assert note is not None and "95% intervals over this run's 4 + 4 processes" in note, note


def test_an_anchor_that_is_not_the_same_on_both_sides_is_not_read_as_the_host_s_speed(tmp_path, only_cupy_beside,
                                                                                        capsys):
    """The 'not anchored' line said "numpy's own change 1.250×: the host ran 25.0% slower in torch@b's processes"
    of an anchor known to differ between the environments (a sitecustomize made numpy@b slower), and of a diff
    whose anchor's library changed version between the runs: that change may be the library's, not the host's.
    An anchor that is the same on both sides still reads as the host's speed."""
    from flametool.analyse import dispatch
    from flametool.render import format as fmt

    differs = "but its library is not the same on both sides, so this may be that library's own change, not the host's speed"
    patched = two_envs(tmp_path / "patched", "patched")
    a = dispatch.analyse_dir(patched)
    lines = fmt.pair_lines(a.pairs[0], a.run, a.run.config.timing_processes)  # compare's and the report's
    assert re.search(r"numpy's own change 1\.2\d\d×: numpy ran 2\d\.\d% slower in torch@b's processes, " + differs,
                     lines[1]), lines[1]
    assert "the host ran" not in " ".join(lines)
    for form in ("text", "markdown"):  # the summary's line beside the change
        main.main(["summary", str(patched), "--format", form])
        out = " ".join(capsys.readouterr().out.replace("\\", "").split())
        assert differs in out and not re.search(r"the host ran [\d.]+%", out), form
    # diff of two cases of the run: as the run's own views say it, and its verdict ends with the caution too
    code, out, err = diff_cli(capsys, patched, "--base", "torch@a", "--head", "torch@b", "--fail-above", "50")
    assert differs in " ".join(out.split()) and "the host ran" not in out
    assert "; caution: the anchor numpy is numpy 2.4.6" in error_of(err)
    # diff of two runs whose only anchor, cupy, changed version between them
    a_run, b_run = only_cupy_beside
    code, out, err = diff_cli(capsys, a_run, b_run, "--case", "torch")
    text = " ".join(out.split())
    assert re.search(r"cupy's own change 1\.1\d\d×: cupy ran 1\d\.\d% slower in B, " + differs, text), text
    assert "the host ran" not in text
    # the same numpy in both environments: its own change is the host's speed, as before
    same = dispatch.analyse_dir(two_envs(tmp_path / "same", "n"))
    lines = fmt.pair_lines(same.pairs[0], same.run, same.run.config.timing_processes)
    assert re.search(r"numpy's own change [01]\.\d\d\d×: the host ran [\d.]+% (slower|faster) in torch@b's processes$",
                     lines[1]), lines[1]


@pytest.mark.parametrize("pythons, options", [
    # each run's interpreter, as its run recorded it (flametool's own: sys.executable), one with a space: quoted
    (("/venvs/main/bin/python", "/venvs/my pr/bin/python"), "--env A=/venvs/main/bin/python --env "
                                                            "B='/venvs/my pr/bin/python'"),
    # one interpreter for both (the builds told apart otherwise) or none recorded: the placeholders, as before
    (("/usr/bin/python3", "/usr/bin/python3"), "--env A=PYTHON_A --env B=PYTHON_B"),
    (("", "/usr/bin/python3"), "--env A=PYTHON_A --env B=PYTHON_B"),
])
def test_a_diff_s_advice_names_the_interpreters_the_runs_ran_under(tmp_path, capsys, pythons, options):
    """diff RUN_A RUN_B undecided advised 'flametool compare --env A=PYTHON_A --env B=PYTHON_B ...' though each
    run.json records the interpreter it ran under."""
    paths = []
    for name, python in zip("ab", pythons):
        path = saved_run(tmp_path / name, {"cupy": 17.0, "torch": 11.0}, VERSIONS, noise=NOISE)
        run = rundir.load(path)
        run.env.executable = python
        rundir.save(path, run)
        paths.append(path)
    code, out, err = diff_cli(capsys, *paths, "--case", "torch", "--fail-above", "0")  # the interval holds 1.000
    line = error_of(err)
    assert code == diff.INCONCLUSIVE_EXIT, line
    assert f"time both builds in one run: flametool compare {options} --fail-above 0 adds processes" in line, line
