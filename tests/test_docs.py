"""The user documentation against the tool, mechanically: every option a doc gives a command is one that command
has, docs/options.md names every option of each command, every link between the docs lands on a file and a
heading, the version numbers the docs quote are the tool's, and the counted differences docs/counts.md shows are
what a diff prints. On the text and the parser alone, no measuring."""

from __future__ import annotations

import argparse
import json
import re
from fractions import Fraction
from pathlib import Path

from flametool.analyse import countdiff
from flametool.analyse.summary import VERSION
from flametool.commands import main
from flametool.commands.main import build_parser
from flametool.run.counts import Counts, Tally
from flametool.run.record import SCHEMA

ROOT = Path(__file__).resolve().parent.parent
# What a user reads (the measurement narratives, benchmarks.md, calibration.md, method.md, h200-results.md and
# contributing.md, also quote the options of the scripts in benchmarks/, which are not flametool's)
USER_DOCS = [ROOT / "README.md", *(ROOT / "docs" / f"{name}.md" for name in (
    "options", "troubleshooting", "workloads", "lines", "counts", "report", "run-directory", "sweep",
    "ops-and-atlas", "writing-cases", "glossary", "summary-json"))]
# options of other tools the docs name: py-spy's, pytest-xdist's, docker's
OTHER_TOOLS = {"--native", "--threads", "--dist", "--cap-add"}
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w-])")


def command_actions() -> dict[str, list[list[str]]]:
    """Each command's options, each as its spellings (['-o', '--output'])."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: [a.option_strings for a in p._actions if a.option_strings] for name, p in sub.choices.items()}


def command_options() -> dict[str, set[str]]:
    return {name: {o for spellings in actions for o in spellings} for name, actions in command_actions().items()}


def test_every_option_a_doc_names_is_an_option_of_flametool():
    known = set().union(*command_options().values()) | OTHER_TOOLS
    unknown = [f"{doc.name}: {m.group(0)}" for doc in USER_DOCS for m in OPTION.finditer(doc.read_text())
               if m.group(0) not in known]
    assert not unknown, unknown


def test_every_command_line_in_the_docs_gives_its_command_options_it_has():
    """`flametool diff RUN --base A --head B`, in a code block or inline: each option is one of diff's own (an
    option of compare given to atlas, or one renamed, would read as a working command)."""
    options = command_options()
    wrong = []
    for doc in USER_DOCS:
        text = doc.read_text().replace("\\\n", " ")  # a command continued on the next line
        for m in re.finditer(rf"flametool ({'|'.join(options)})\b([^`\n#|]*)", text):
            wrong += [f"{doc.name}: {m.group(0).strip()}: {o}" for o in re.findall(r"(?<![\w-])-{1,2}[a-z][a-z0-9-]*",
                                                                                    m.group(2))
                      if o not in options[m.group(1)]]
    assert not wrong, wrong


def test_docs_options_md_explains_every_option_of_every_command():
    """Each command's section of docs/options.md names each option its --help lists (the sections of sweep and
    atlas name compare's that they take, then their own)."""
    text = (ROOT / "docs" / "options.md").read_text()
    sections = {m.group(1): m.group(2) for m in re.finditer(r"^## `flametool (\w+)`\n(.*?)(?=^## |\Z)", text,
                                                             re.S | re.M)}
    missing = []
    for command, actions in command_actions().items():
        assert command in sections, f"docs/options.md has no section for {command}"
        named = set(re.findall(r"(?<![\w-])-{1,2}[a-z][a-z0-9-]*", sections[command]))
        missing += [f"{command} {spellings[-1]}" for spellings in actions
                    if spellings != ["-h", "--help"] and not named & set(spellings)]
    assert not missing, missing


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in doc.read_text().splitlines():
        fenced ^= line.startswith("```")
        heading = re.match(r"#+\s+(.*)", line)
        if heading and not fenced:
            s = slug(heading.group(1))
            found.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return found


def test_every_link_between_the_docs_lands_on_a_file_and_a_heading():
    broken = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{doc.name}: {target}: no such file")
            elif fragment and file.suffix == ".md" and fragment not in anchors(file):
                broken.append(f"{doc.name}: {target}: no such heading")
    assert not broken, broken


def test_the_versions_the_docs_quote_are_the_tools():
    run_dir = (ROOT / "docs" / "run-directory.md").read_text()
    assert f"- `schema` ({SCHEMA})" in run_dir and f"(schema {SCHEMA}, `flametool/run/record.py`" in run_dir
    trouble = (ROOT / "docs" / "troubleshooting.md").read_text()
    assert f"schema {SCHEMA + 1} is newer than this flametool understands ({SCHEMA})" in trouble
    assert f"expected a whole number from 1 to {SCHEMA}`" in trouble
    assert f"version {VERSION}\n" in (ROOT / "docs" / "summary-json.md").read_text().split("\n\n")[0] + "\n"
    assert f"The JSON summary (version {VERSION}," in (ROOT / "docs" / "counts.md").read_text()


def test_the_counted_differences_in_docs_counts_md_are_what_a_diff_prints():
    """The example under 'Structural differences first' (it showed '+1 numpy.zeros (0 -> 1)' after the counted
    differences had become sentences)."""
    text = (ROOT / "docs" / "counts.md").read_text()
    at = text.index("## Structural differences first")
    block = text[text.index("```\n", at) + 4:text.index("\n```", text.index("```\n", at))].splitlines()
    kernel = "nvjet_sm90_hsh_128x64_64x8_1x2_h_bz_NNT"
    base = Counts(10, 10, [Tally("python", "step()", Fraction(1)), Tally("kernel", kernel, Fraction(1))],
                  tracer="cupti-python 13.4.0")
    head = Counts(10, 10, [Tally("python", "step()", Fraction(1)), Tally("python", "numpy.zeros", Fraction(1)),
                           Tally("python", "sitecustomize.matmul", Fraction(1)), Tally("kernel", kernel, Fraction(1))],
                  tracer="cupti-python 13.4.0")
    printed = [f"  counted: {line}" for line in countdiff.lines(countdiff.diff_counts(base, head, "cupy@a", "cupy@b"))]
    assert printed[:len(block)] == block


def test_the_readme_s_lines_example_quotes_the_lines_of_its_case_file():
    """The Cython example's `line_cases.py:N  code` rows: line N of tests/cases/line_cases.py holds that code (it
    read line_cases.py:41 after the file had moved the call to 45)."""
    readme = (ROOT / "README.md").read_text()
    source = (ROOT / "tests" / "cases" / "line_cases.py").read_text().splitlines()
    rows = re.findall(r"^ \S+\s+line_cases\.py:(\d+)\s+(.+?)\s{2,}", readme, re.M)
    assert rows
    assert all(source[int(n) - 1].strip() == code for n, code in rows), rows


# --- docs/summary-json.md against `summary --format json` of the committed runs ------------------------------------

SUMMARY_JSON = ROOT / "docs" / "summary-json.md"
# keys a document carries only where they apply (docs/summary-json.md says when): not in every object of their kind
OPTIONAL_KEYS = {"by_line", "by_line_kinds", "corrupted", "aligned_lines"}


def summary_documents(capsys) -> list[dict]:
    """What summary and diff --format json write for the committed runs: a run (samples/), a run with counted loops
    (tests/data/h200-sum-counts), an anchored diff with a speed adjustment and a verdict, a sweep and an atlas."""
    samples = ROOT / "samples"
    runs = [["summary", str(samples / "h200-seed-as-reported")], ["summary", str(ROOT / "tests" / "data" / "h200-sum-counts")],
            ["diff", str(samples / "h200-seed-as-reported"), str(samples / "h200-seed-fp16"), "--case", "cupy",
             "--fail-above", "1"],
            ["summary", str(samples / "h200-sweep-fp16")], ["summary", str(samples / "h200-atlas")]]
    docs = []
    for argv in runs:
        main.main([*argv, "--format", "json"])
        docs.append(json.loads(capsys.readouterr().out))
    return docs


def summary_example() -> dict:
    text = SUMMARY_JSON.read_text()
    return json.loads(text[text.index("```json\n") + 8:text.index("\n```", text.index("```json\n"))])


def objects(doc, path: str = "") -> list[tuple[str, dict]]:
    """Every object of a JSON document with its path ('.pairs[].counts'), a map keyed by labels or kinds (a
    `versions`, a line's `counts`) and the example's placeholders ({"...": "the same for the head"}) left out."""
    found: list[tuple[str, dict]] = []
    if isinstance(doc, dict):
        if "..." in doc or path.endswith((".versions", ".describe", ".clocks", ".counts.python", ".delta", ".cases")) \
                or re.search(r"\.(by_line\[\]|rows\[\])\.counts$|\.(outside|lines_sum|step)$", path):
            return found
        found.append((path, doc))
        for key, value in doc.items():
            found += objects(value, f"{path}.{key}")
    elif isinstance(doc, list):
        for item in doc:
            found += objects(item, f"{path}[]")
    return found


def named_in_table() -> tuple[set[str], list[re.Pattern]]:
    """The words in `code` in docs/summary-json.md's field table, and its patterns (`*_self_us`, `self_*`)."""
    table = "\n".join(line for line in SUMMARY_JSON.read_text().splitlines() if line.startswith("| "))
    words: set[str] = set()
    patterns = []
    for span in re.findall(r"`([^`]+)`", table):
        for word in re.findall(r"[\w*]+", span):
            if "*" in word:
                patterns.append(re.compile(word.replace("*", r"\w+") + "$"))
            else:
                words.add(word)
    return words, patterns


def test_every_field_a_json_summary_writes_is_explained_in_docs_summary_json_md(capsys):
    """Each key of the real documents and of the page's example is named in the field table (`python_version`,
    `ops_per_step`, `missing`, `threshold_pct`, `base_bytes` and speed_adjustment's `method` were written and
    shown in the example, and explained nowhere)."""
    words, patterns = named_in_table()
    keys = {(key, path) for doc in [*summary_documents(capsys), summary_example()]
            for path, obj in objects(doc) for key in obj}
    unexplained = sorted({f"{path}.{key}" for key, path in keys
                          if key not in words and not any(p.match(key) for p in patterns)})
    assert not unexplained, unexplained


def test_docs_summary_json_md_example_has_the_fields_and_types_a_summary_writes(capsys):
    """Each object of the example has the keys its kind has in a real document (fields added to the tool and not
    to the example, or kept in the example after the tool dropped them, fail here), each value of the type the tool
    writes (null aside), and its counted rows' `text` is what the tool writes for them (it showed `+1 numpy.zeros
    (0 -> 1)` after those lines had become sentences)."""
    always: dict[str, set[str]] = {}  # the keys every object of a kind has
    ever: dict[str, set[str]] = {}  # and those some have (a tally's `bytes`: where memory moves)
    types: dict[str, set[str]] = {}
    for doc in summary_documents(capsys):
        for path, obj in objects(doc):
            always[path] = always.get(path, set(obj)) & set(obj)
            ever.setdefault(path, set()).update(obj)
            for key, value in obj.items():
                if value is not None:
                    types.setdefault(f"{path}.{key}", set()).add("number" if type(value) in (int, float) else type(value).__name__)
    example = summary_example()
    wrong = []
    for path, obj in objects(example):
        lacks = always.get(path, set()) - set(obj) - OPTIONAL_KEYS
        unwritten = set(obj) - ever[path] - OPTIONAL_KEYS if path in ever else set()
        if lacks or unwritten:
            wrong.append(f"{path or 'top'}: the example lacks {sorted(lacks)}, has {sorted(unwritten)} never written")
        for key, value in obj.items():
            kind = "number" if type(value) in (int, float) else type(value).__name__
            if value is not None and f"{path}.{key}" in types and kind not in types[f"{path}.{key}"]:
                wrong.append(f"{path}.{key}: example {kind}, written {sorted(types[f'{path}.{key}'])}")
    assert not wrong, wrong
    counts = example["pairs"][0]["counts"]
    base, head = (Counts(10, 10, [Tally(r["kind"], r["name"], Fraction(r[side])) for r in counts["differences"] + counts["same"]
                                  if r[side] != "0"], tracer="cupti-python 13.4.0") for side in ("base", "head"))
    diffed = countdiff.diff_counts(base, head, counts["base"], counts["head"])
    assert diffed is not None
    rows = countdiff.to_json(diffed)
    assert [r["text"] for r in counts["differences"] + counts["same"]] == \
        [r["text"] for r in rows["differences"] + rows["same"]]


def test_docs_contributing_md_folder_listing_names_every_module():
    """Each module of flametool/ is in contributing.md's listing of where the code is (a module named there as
    `name.py`, `name.Class` or by a pattern such as `report_*.py`); twenty, counting.py, lines.py and anchoring.py
    among them, were missing from it."""
    text = (ROOT / "docs" / "contributing.md").read_text()
    listing = text[text.index("```\nflametool/"):text.index("\n```", text.index("```\nflametool/"))]
    named = set(re.findall(r"\b(\w+)\.(?:py\b|[A-Z])", listing))
    patterns = [re.compile(p.replace("*", r"\w+") + "$") for p in re.findall(r"\b(\w*\*\w*)\.py\b", listing)]
    missing = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "flametool").rglob("*.py")
                     if p.stem not in ("__init__", "__main__") and p.stem not in named
                     and not any(pat.match(p.stem) for pat in patterns))
    assert not missing, missing
