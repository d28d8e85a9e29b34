import json

import pytest

from flametool import rundir
from flametool.errors import RunDirError


def test_save_is_atomic_and_readable(tmp_path):
    data = rundir.new_run({"iters": 1}, {}, ["flametool"], "now")
    data["results"]["x"] = {"cpu_us_per_call": 1.0}
    rundir.save(tmp_path, data)
    loaded = rundir.load(tmp_path)
    assert loaded["results"]["x"]["cpu_us_per_call"] == 1.0
    assert loaded["results"]["x"]["gpu_us_per_call"] is None  # missing fields are filled in
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary left behind


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "missing"),
        ("{not json", "cannot be read as JSON"),
        ('{"results": {}}', "no schema number"),
        ('{"schema": 99, "results": {}}', "newer"),
        ('{"schema": 1, "results": []}', "'results'"),
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
