"""Untrusted text: frame names come from whatever code was profiled (file paths, C++ symbols, the user's
own functions). Markup, quotes, line breaks and names thousands of characters long must stay text, keep
JSON valid and folded lines whole; and no input line, however odd, may crash the parser, the naming or
the layer rules: it parses, or it is reported."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from flametool import render
from flametool.analyse import attribution, dispatch, layers
from flametool.commands import main
from flametool.run import folded
from flametool.analyse import naming
from flametool.errors import RunDirError
from runbuild import make_run, snapshot

HOSTILE = [
    "<script>alert('x')</script> (evil.py:1)",
    "[bold red]markup[/] [/] (libmarkup.so)",
    "\"double\" 'single' `back` \\\\ (quotes.py:2)",
    "carriage\rreturn\x0cform\x1cfeed\u2028line\u2029para\x85nel (odd/lib.so)",
    "tab\there &amp <b>bold</b> (html.py:3)",  # no ';': in folded text that separates frames
    "ünïcödé 函数 🔥 (unicode.py:4)",
    "x" * 5000 + " (long.py:5)",
    "std::vector<std::pair<int, " * 200 + "> (libdeep.so)",
]


@pytest.fixture
def run(tmp_path):
    lines = "".join(f"step (case.py:1);{name} {i + 1}\n" for i, name in enumerate(HOSTILE))
    return make_run(tmp_path / "run", {"a": (lines, 10.0, 0), "b": (lines, 12.0, 3)})


def test_hostile_names_survive_the_run_directory(run):
    """What the sampler writes, analysis reads back whole: no line split inside a name."""
    raw = folded.read(run / "a.folded")
    assert [s.frames[1] for s in raw] == HOSTILE


def test_speedscope_export_is_valid_json_with_every_name(run, capsys):
    before = snapshot(run)
    assert main.main(["export", str(run), "--format", "speedscope"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = {f["name"] for f in doc["shared"]["frames"]}
    assert "evil.<script>alert('x')</script>" in names and "[bold red]markup[/] [/] (libmarkup.so)" in names
    assert any("x" * 5000 in n for n in names)
    assert any("\u2028" in n and "\r" in n for n in names)  # JSON carries them escaped and gives them back
    assert snapshot(run) == before


def test_folded_export_keeps_one_stack_a_line(run, capsys):
    assert main.main(["export", str(run), "--format", "folded"]) == 0
    text = capsys.readouterr().out
    stacks = folded.parse(text)
    # one stack a line for any reader: nothing splits a line anywhere else (the loop's own samples are one more)
    assert text.count("\n") == len(text.splitlines()) == len(stacks) == 2 * len(HOSTILE) + 1
    assert sum(s.count for s in stacks) == 2 * sum(range(1, len(HOSTILE) + 1)) + 3
    odd = next(s for s in stacks if any("carriage" in f for f in s.frames))
    assert any(f.startswith("carriage\\rreturn\\x0cform") for f in odd.frames)


def test_terminal_prints_names_as_text(run, capsys, tmp_path):
    other = make_run(tmp_path / "other", {"a": ("step (case.py:1);[bold red]markup[/] [/] (libmarkup.so) 3\n", 8.0, 0)})
    assert main.main(["diff", str(other), str(run), "--case", "a", "--top", "50"]) == 0
    out = capsys.readouterr().out
    assert "[bold red]markup[/] [/]" in out.replace("\n", "")


def test_report_renders_names_as_text(run):
    pytest.importorskip("flametool.render.html")
    html = render.show("html", dispatch.analyse_dir(run))
    assert "<script>alert('x')</script>" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;" in html


# --- properties ----------------------------------------------------------------------------------------------

LINE = hs.text(hs.characters(blacklist_characters="\n"), max_size=200)
# py-spy's frame text, "name (file.ext:line)", built from its parts: the regex r"[\w.<>:~ ]{0,30} \((?:[\w/.-]{0,30}
# \.(?:py|pyx|c|cpp|h|so(?:\.\d+)?)|\[vdso\])(?::\d{1,6})?\)" as hs.from_regex drew it, which took 90% of these
# tests' time (2.5 of 2.8 s for 200 examples) making text
WORD = hs.characters(categories=("L", "N")) | hs.just("_")  # what \w matches
FILE = hs.builds(lambda path, ext: f"{path}.{ext}", hs.text(WORD | hs.sampled_from("/.-"), max_size=30),
                 hs.sampled_from(["py", "pyx", "c", "cpp", "h", "so"]) | hs.integers(0, 99).map(lambda d: f"so.{d}"))
LOCATED = hs.builds(lambda name, where, line: f"{name} ({where}{'' if line is None else f':{line}'})",
                    hs.text(WORD | hs.sampled_from(".<>:~ "), max_size=30), FILE | hs.just("[vdso]"),
                    hs.none() | hs.integers(0, 999_999))
FRAME_TEXT = hs.text(max_size=80) | hs.sampled_from(HOSTILE) | LOCATED


@settings(max_examples=300, deadline=None)
@given(LINE)
def test_any_line_parses_or_is_reported(line):
    try:
        s = folded.parse_line(line)
    except folded.FoldedLineError:
        return
    assert s.count >= 0 and s.frames and all(isinstance(f, str) for f in s.frames)


@settings(max_examples=200, deadline=None)
@given(hs.text(max_size=400))
def test_any_text_parses_or_names_its_line(text):
    try:
        stacks = folded.parse(text, "x.folded")
    except RunDirError as exc:
        assert str(exc).startswith("x.folded: line ")
        return
    assert len(stacks) <= text.count("\n") + 1


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.lists(FRAME_TEXT.filter(lambda f: ";" not in f and "\n" not in f), min_size=1, max_size=6),
                min_size=1, max_size=5), hs.integers(0, 10**9))
def test_dumps_then_parse_gives_the_stacks_back(frame_lists, count):
    stacks = [folded.Stack(tuple(f), count) for f in frame_lists if ";".join(f).strip()]
    assert folded.parse(folded.dumps(stacks)) == stacks


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.lists(FRAME_TEXT, min_size=1, max_size=8), min_size=1, max_size=6), hs.booleans())
def test_naming_and_layers_never_fail(frame_lists, by_line):
    raw = [folded.Stack(tuple(f), 1) for f in frame_lists]
    stacks, frames = naming.normalize(raw, by_line=by_line)
    assert sum(s.count for s in stacks) == len(raw)
    for s in stacks:
        assert all(name in frames for name in s.frames)
        assert all(l in layers.about() or l == layers.OTHER for l in layers.stack_layers(s.frames, frames))
        for name in s.frames:
            assert len(naming.display_name(name, 60)) <= 60
            assert ";" not in folded.folded_safe(name) and len(folded.folded_safe(name).splitlines()) <= 1
    profile = attribution.make_profile("p", raw, 0, 5.0, by_line)
    assert attribution.attribute(profile).us_per_call == 5.0


@settings(max_examples=300, deadline=None)
@given(hs.text(max_size=120))
def test_name_helpers_take_any_text(text):
    naming.demangle_pyx(text)
    folded.frame_function(text), folded.frame_file(text), naming.split_location(text)
    naming.strip_templates(text)
    assert isinstance(naming.Namer().frame(text).name, str)


def test_a_huge_sparse_run_json_is_refused_before_it_is_read(tmp_path, capsys):
    """A 2 GB sparse run.json took about 4 GB of memory to reject (read, then decoded): its size is refused first."""
    from checks import one_line_error
    from flametool.run import rundir

    run = make_run(tmp_path / "r", {"a": ("step (f.py:1);x 10\n", 10.0, 0)})
    with open(run / "run.json", "r+b") as fh:
        fh.truncate(2 * 2**30)
    line = one_line_error(capsys, ["summary", str(run)])
    assert line == (f"flametool: {run / 'run.json'}: 2,048 MiB, larger than any file flametool writes there (at most "
                    f"{rundir.MAX_RUN_JSON // 2**20} MiB is read)")
