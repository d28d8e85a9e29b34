import json
import shutil
from pathlib import Path

import pytest

from flametool.analyse import dispatch
from flametool.run import rundir
from flametool.errors import RunDirError
from runbuild import case_result, new_run

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def test_save_is_atomic_and_reads_back_the_same_records(tmp_path):
    run = new_run({"iters": 1})
    run.results["x"] = case_result("x", 1.5, 10)
    rundir.save(tmp_path, run)
    loaded = rundir.load(tmp_path)
    assert loaded == run  # every field, nested records included
    assert loaded.results["x"].timing.cpu_us_per_call == 1.5
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary left behind


def test_run_json_holds_measurements_only(tmp_path):
    run = new_run()
    run.results["x"] = case_result("x", 1.5, 10)
    rundir.save(tmp_path, run)
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["schema"] == rundir.SCHEMA == 3
    assert "analysis" not in data and "diff" not in data
    # the median is derived, not stored: the loops are
    assert "cpu_us_per_call" not in json.dumps(data["results"]["x"]["timing"])
    assert data["results"]["x"]["timing"]["processes"][0]["cpu_us"] == [1.5]


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "missing"),
        ("{not json", "cannot be read as JSON"),
        ('{"results": {}}', "no schema number"),
        ('{"schema": 99, "results": {}}', "newer"),
        ('{"schema": 1, "results": []}', "'results'"),
        ('{"schema": 2, "results": {"a": {"timing": {"shape": [1, 1, 1], "processes": [{"cpu_us": [1e308]}]}}}}',
         r"results\.a\.timing\.processes\[0\]\.cpu_us is \[1e\+308\], expected a list of numbers"),
        ('{"schema": 2, "config": [], "results": {}}', "config is"),
        # a case spec the workload's lines are looked up from (it reached them: TypeError, an internal error)
        ('{"schema": 2, "config": {"cases": -1}, "results": {}}', r"config\.cases is -1, expected a list of objects"),
        ('{"schema": 2, "config": {"cases": [{"label": "a", "module": 5}]}, "results": {}}', r"config\.cases is"),
        ("[" * 100000 + "]" * 100000, "cannot be read as JSON"),
    ],
)
def test_bad_run_json(tmp_path, content, words):
    if content is not None:
        (tmp_path / "run.json").write_text(content)
    with pytest.raises(RunDirError, match=words):
        rundir.load(tmp_path)


def test_missing_directory(tmp_path):
    with pytest.raises(RunDirError, match="no such run directory"):
        rundir.load(tmp_path / "nope")


def test_schema1_run_reads_into_the_same_records(tmp_path):
    """A schema 1 run directory (the format before paired timing) still loads, analyses and diffs."""
    old = tmp_path / "old"
    shutil.copytree(Path(__file__).parent / "data" / "schema1-run", old)
    run = rundir.load(old)
    assert run.schema == 1 and list(run.results) == ["numpy", "torch"]
    numpy = run.results["numpy"]
    assert numpy.timing.cpu_loops == pytest.approx([5.16696, 5.65058]) and numpy.timing.cpu_us_per_call == pytest.approx(5.40877)
    assert numpy.profile.cprofile_calls and numpy.samples and numpy.file("folded") == "numpy.folded"
    assert all(not g.paired for g in run.groups)  # schema 1 ran each case in its own processes
    a = dispatch.analyse(old, run)
    assert set(a.profiles) == {"numpy", "torch"} and a.pairs[0].diff is not None
    assert a.pairs[0].timing is not None and a.pairs[0].timing.paired is False


def test_run_config_is_typed_when_read_and_written_back_as_read(tmp_path):
    from flametool.run.record import RunConfig
    from runbuild import new_run

    run = new_run({"processes": 3, "pool_threads": 1, "sizes": [[8, 8, 8]], "extra_seconds": 60.0, "mine": "kept"})
    assert isinstance(run.config, RunConfig) and run.config.processes == 3 and run.config.sizes == [[8, 8, 8]]
    rundir.save(tmp_path, run)
    back = rundir.load(tmp_path)
    assert back.config == run.config and back.config.recorded["mine"] == "kept"
    assert new_run({}).config.timing_processes == 1
    assert RunConfig(processes=2).recorded == {"processes": 2}


def test_create_unique_suffixes(tmp_path):
    out = tmp_path / "20250101-000000"
    assert rundir.create(out, unique=True) == out
    assert rundir.create(out, unique=True) == tmp_path / "20250101-000000-2"
    assert rundir.create(out, unique=True) == tmp_path / "20250101-000000-3"
    with pytest.raises(Exception, match="already exists"):
        rundir.create(out)


@pytest.mark.parametrize("sample", ["h200-hostbound-1024", "h200-sweep-fp16", "h200-seed-fp16"])
def test_run_json_is_written_as_asdict_would_write_it(sample):
    """to_json builds its dicts field by field (timing.record_dict) instead of dataclasses.asdict, which deep-copied
    every loop figure: the same JSON for every case of a committed sample, nested records (device_info, operands,
    a sweep's points, the profile) included."""
    from dataclasses import asdict

    run = rundir.load(Path(__file__).resolve().parent.parent / "samples" / sample)
    for r in run.results.values():
        made = r.to_json()
        old = asdict(r)  # as before: every field deep-converted, then the records that write themselves
        # an operand's `after` is written only where the step changed its operands (none of the samples')
        old["operands"] = [{k: v for k, v in o.items() if k != "after" or v is not None} for o in old["operands"]]
        for key in ("timing", "sample_timing"):
            old[key] = None if getattr(r, key) is None else (
                asdict(getattr(r, key)) | {"processes": [p.to_json() for p in getattr(r, key).processes]})
        assert json.dumps({k: v for k, v in made.items() if k not in ("profile", "points")}, sort_keys=True) == \
            json.dumps({k: v for k, v in old.items() if k in made and k not in ("profile", "points")}, sort_keys=True)
        for key in ("timing", "sample_timing"):
            t = getattr(r, key)
            for p in (t.processes if t else []):
                assert json.dumps(p.to_json(), sort_keys=True) == json.dumps(
                    {k: v for k, v in asdict(p).items() if k in p.to_json()}, sort_keys=True)


def test_run_json_text_puts_each_list_of_numbers_on_one_line_as_before():
    """rundir.dumps writes a list of numbers by json's C encoder and the rest indented: the text the indented
    encoder and a regular expression that joined each list of numbers onto one line made before, for every kind
    of list a record holds (empty, nested, of bools or None, mixed), but for strings, which it now leaves alone; a
    value holding the mark itself falls back to plain indented JSON; NaN is refused as before."""
    import re

    def before(doc):
        text = json.dumps(doc, indent=2, allow_nan=False)
        lists = re.compile(r"\[\s*(-?[0-9.eE+-]+(?:,\s*-?[0-9.eE+-]+)*)\s*\]")
        return lists.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)

    doc = {"cpu_us": [16.5725, 1e-05, -0.0, 3, 12345678901234], "empty": [], "shapes": [[8, 8, 8], [16, 16, 16]],
           "flags": [True, False], "gaps": [None, 1.0], "mixed": [1, "a"], "nested": {"x": [[1.5], []]},
           "n": 2.5}
    assert rundir.dumps(doc) == before(doc)
    assert json.loads(rundir.dumps(doc)) == doc
    # a string is written as it is: the expression rewrote a list of numbers inside one ("[1,2]" -> "[1, 2]")
    words = {"command": ["flametool", "--note", "a [1,2] in words"]}
    assert json.loads(rundir.dumps(words)) == words and json.loads(before(words)) != words
    odd = {"warnings": [f"{rundir.LIST_MARK}0{rundir.LIST_MARK}"], "cpu_us": [1.0, 2.0]}
    assert json.loads(rundir.dumps(odd)) == odd
    with pytest.raises(ValueError):
        rundir.dumps({"cpu_us": [float("nan")]})


def test_a_file_named_with_o_is_kept_when_its_new_text_cannot_be_written(tmp_path, monkeypatch):
    """`report -o FILE` on a file already there: replaced whole once the new text is written (through a symlink
    to it, which stays a symlink; its mode kept), and left as it was when the write fails (a full disk emptied it
    and left half a page: it was opened with 'w')."""
    import errno
    import os

    from flametool.errors import FlametoolError

    page = tmp_path / "page.html"
    page.write_text("the old page")
    page.chmod(0o600)
    link = tmp_path / "link.html"
    link.symlink_to(page)
    rundir.write_output(link, "the new page")
    assert page.read_text() == "the new page" and link.is_symlink() and (page.stat().st_mode & 0o777) == 0o600

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(FlametoolError, match=r"link\.html: cannot be written \(No space left on device\)"):
        rundir.write_output(link, "a page the disk cannot take")
    assert page.read_text() == "the new page" and sorted(p.name for p in tmp_path.iterdir()) == ["link.html", "page.html"]
    # a file not there yet is written as before
    rundir.write_output(tmp_path / "fresh.html", "a first page")
    assert (tmp_path / "fresh.html").read_text() == "a first page"


@pytest.mark.parametrize("path", ["my run", "-dash", "/tmp/a b/-x", "runs/ok", "it's", b"run-\xff"])
def test_shell_word_is_the_path_a_shell_gives_a_command(tmp_path, path):
    """The commands flametool suggests (`retry with: flametool report RUN`, `flametool report RUN writes the
    report`) named a run directory as it is: `--out "my run"` gave `flametool report my run`, two arguments, and
    `--out -dash` an option. What a shell makes of the word is the path, and no argument starts with '-'."""
    import os
    import subprocess

    word = rundir.shell_word(os.fsdecode(path))
    given = subprocess.run(["bash", "-c", f'printf "%s\\0" {word}'], capture_output=True, check=True).stdout
    raw = os.fsencode(path)
    assert given == (b"./" + raw if raw.startswith(b"-") else raw) + b"\0", word


def test_out_a_dangling_link_is_said_to_be_one(tmp_path):
    """`--out LINK` where LINK names a folder that does not exist was refused as 'already exists and is not empty';
    so was the default --out under a ./flametool-runs that links to nothing (an unmounted disk), after 1,000 names."""
    from flametool.errors import FlametoolError

    link = tmp_path / "latest"
    link.symlink_to(tmp_path / "gone")
    for out, unique in ((link, False), (link / "20261205-085846", True)):
        with pytest.raises(FlametoolError) as refused:
            rundir.create(out, unique=unique)
        assert str(refused.value) == (f"{link}: a symbolic link to {tmp_path / 'gone'}, which does not exist; make "
                                      "that folder, or choose another --out")
    (tmp_path / "gone").mkdir()  # made, the link is the run directory, as a link to an empty folder is
    assert rundir.create(link) == link and (tmp_path / "gone" / "run.json").is_file()
