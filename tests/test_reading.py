"""analyse/reading: stacks streamed from a .folded file and named once per distinct frame, checked against the
straightforward reading they replaced (kept here as the reference) on random profiles (stackgen); the bad
lines it reports, as folded.read reports them. Speed and memory are benchmarks/large_profile.py's."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from flametool.run import folded
from flametool.analyse import naming, reading
from stackgen import STACKS, folded_text


def reference_normalize(stacks: list[folded.Stack], by_line: bool = False):
    """stacks.normalize as it was: a Namer of every stack, then a loop over every frame."""
    namer = naming.Namer(stacks)
    frames: dict = {}
    out = []
    for s in stacks:
        names: list[str] = []
        for raw in s.frames:
            f = namer.frame(raw)
            key = naming.with_line(f) if by_line and f.kind != "address" else f.name
            if names and names[-1] == key and (not by_line or f.kind == "address"):
                continue
            frames.setdefault(key, f)
            names.append(key)
        out.append(folded.Stack(tuple(names), s.count))
    return folded.merge(out), frames


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stacks=STACKS, by_line=hs.booleans(), loop=hs.integers(0, 3))
def test_streamed_normalization_is_the_same(tmp_path_factory, stacks, by_line, loop):
    path = tmp_path_factory.mktemp("n") / "p.folded"
    path.write_text(folded_text(stacks), encoding="utf-8")
    extra = [folded.Stack((naming.LOOP_FRAME,), loop)] if loop else []
    usable = [s for s in folded.read(path) if s.frames and s.count > 0] + extra
    expected = reference_normalize(usable, by_line)
    got = reading.read_normalized(path, by_line, extra)
    assert got == expected and list(got[1]) == list(expected[1])  # the stacks, the frames, in the same order
    assert all(got[1][k] == expected[1][k] for k in expected[1])


def test_streamed_naming_reads_again_when_a_later_path_names_a_module(tmp_path):
    """'fast_path (_speedups.c)' is named from an extension path that only a later line shows."""
    path = tmp_path / "p.folded"
    path.write_text("step (c.py:1);fast_path (_speedups.c:120) 3\nstep (c.py:1);x (mypkg/_speedups.cpython-311-x86_64-linux-gnu.so) 1\n")
    stacks, frames = reading.read_normalized(path)
    assert stacks[0].frames == ("c.step", "mypkg._speedups.fast_path")
    assert (stacks, frames) == reference_normalize(folded.read(path))


@pytest.mark.parametrize("text, line", [
    ("a;b 1\n\nc;d x\n", "line 3: count 'x' is not an integer"),
    ("a;b 1\r\nc d;e\n", "line 2: count 'd;e' is not an integer"),
    ("a 1\nnocount\n", "line 2: expected 'frame;frame;... COUNT'"),
    (" 5\n", "line 1: expected 'frame;frame;... COUNT'"),
    ("a -2\n", "line 1: negative count"),
    ("a 1\n" * 3 + "a 99999999999999\n", "line 4: count '99999999999999' is implausibly large"),
])
def test_streamed_read_reports_bad_lines_as_read_does(tmp_path, text, line):
    from flametool.errors import RunDirError

    path = tmp_path / "p.folded"
    path.write_text(text, encoding="utf-8", newline="")
    for reader in (folded.read, reading.read_normalized):
        with pytest.raises(RunDirError) as exc:
            reader(path)
        assert str(exc.value).startswith(f"{path}: {line}"), str(exc.value)
