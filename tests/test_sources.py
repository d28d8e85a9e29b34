"""The record of line texts (run/sources.py) and how measure/sources.py fills it: files found in the case folder,
sys.path and --source roots and nowhere else, only the sampled lines read, hostile texts kept harmless, generated
Cython lines mapped to their .pyx lines (on hand-made files, and on a module Cython builds here)."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from flametool.errors import FlametoolError, RunDirError
from flametool.measure import sources as ms
from flametool.run import folded
from flametool.run import sources as rec


# --- the record ----------------------------------------------------------------------------------------

RECORD = rec.Sources({
    "flametool/cases.py": rec.SourceFile("case", "/work/flametool/cases.py", {155: "        return cp.matmul(a, b, out=c)"}),
    "_routines_linalg.cpp": rec.SourceFile("source", "/src/cupy/cupy/_core/_routines_linalg.cpp",
                                           {22480: "  __pyx_t_1 = __pyx_f_4cupy_5_core_16_routines_linalg_matmul(...);"},
                                           {22480: ("cupy/_core/_routines_linalg.pyx", 612)}),
    "cupy/_core/_routines_linalg.pyx": rec.SourceFile("source", "/src/cupy/cupy/_core/_routines_linalg.pyx",
                                                      {612: "    return matmul(a, b, out)"}),
})


def test_saved_and_loaded_as_it_was(tmp_path):
    rec.save(tmp_path, RECORD)
    assert rec.load(tmp_path) == RECORD
    assert json.loads((tmp_path / rec.SOURCES_FILE).read_text())["version"] == rec.VERSION
    assert RECORD.pyx("_routines_linalg.cpp", 22480) == rec.PyxLine("cupy/_core/_routines_linalg.pyx", 612,
                                                                    "    return matmul(a, b, out)")
    assert RECORD.text("flametool/cases.py", 154) is None and RECORD.origin("gone.py") is None
    assert not [p for p in tmp_path.iterdir() if p.name != rec.SOURCES_FILE]  # no temporary file left


def test_a_run_recorded_before_lines_loads_empty(tmp_path):
    assert rec.load(tmp_path) == rec.Sources()
    assert rec.Sources().text("a.py", 1) is None and rec.Sources().pyx("a.cpp", 1) is None


def test_a_link_or_a_fifo_is_refused(tmp_path):
    secret = tmp_path / "secret.json"
    rec.save(tmp_path, RECORD)
    os.replace(tmp_path / rec.SOURCES_FILE, secret)
    (tmp_path / rec.SOURCES_FILE).symlink_to(secret)
    with pytest.raises(RunDirError, match="symbolic link"):
        rec.load(tmp_path)
    (tmp_path / rec.SOURCES_FILE).unlink()
    os.mkfifo(tmp_path / rec.SOURCES_FILE)
    with pytest.raises(RunDirError, match="FIFO"):
        rec.load(tmp_path)


@pytest.mark.parametrize("doc, message", [
    ("[1]", "not a JSON object"),
    ('{"files": {}}', "no version"),
    ('{"version": 99, "files": {}}', "newer flametool"),
    ('{"version": 1, "files": []}', "files is not an object"),
    ('{"version": 1, "files": {"a.py": {"origin": "web", "path": "x"}}}', "origin is not one of"),
    ('{"version": 1, "files": {"a.py": {"origin": "case", "path": "x", "lines": {"0": "t"}}}}', "not a line number"),
    ('{"version": 1, "files": {"a.py": {"origin": "case", "path": "x", "lines": {"1": 5}}}}', "is not a string"),
    ('{"version": 1, "files": {"a.c": {"origin": "case", "path": "x", "pyx": {"1": ["m.pyx"]}}}}', "not \\[file, line\\]"),
    ('{"version": 1, "files": {"a.py": {"origin": "case", "path": "x", "lines": {"1": "t"}}}', "cannot be read as JSON"),
    ('{"version": 1, "files": {}, "x": NaN}', "not a finite number"),
])
def test_a_malformed_record_is_one_line_naming_the_file(tmp_path, doc, message):
    (tmp_path / rec.SOURCES_FILE).write_text(doc)
    with pytest.raises(RunDirError, match=message) as got:
        rec.load(tmp_path)
    assert "\n" not in str(got.value) and str(tmp_path / rec.SOURCES_FILE) in str(got.value)


HOSTILE = "<script>alert(1)</script> & \x1b[2J\x07\r\u2028\u202e" + "x" * 100_000


def test_hostile_text_is_escaped_and_capped_and_markup_left_to_renderers():
    text = rec.clean_text(HOSTILE + "\n")
    assert len(text) == rec.MAX_TEXT and text.endswith("…")
    assert text.startswith("<script>alert(1)</script> & \\x1b[2J\\x07\\x0d\\u2028\\u202e")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)
    assert rec.clean_text(text) == text  # applied again (on load), the same
    assert rec.clean_text("\tif x:\t# tab") == "        if x:   # tab"


def test_hostile_text_written_by_hand_is_cleaned_on_load(tmp_path):
    doc = {"version": 1, "files": {"a.py": {"origin": "case", "path": "/x\x1b", "lines": {"3": HOSTILE}}}}
    (tmp_path / rec.SOURCES_FILE).write_text(json.dumps(doc))
    got = rec.load(tmp_path)
    assert got.text("a.py", 3) == rec.clean_text(HOSTILE) and got.files["a.py"].path == "/x\\x1b"


def test_frame_locations():
    assert rec.location("matmul (_routines_linalg.cpp:22480)") == ("_routines_linalg.cpp", 22480)
    assert rec.location("_GUFunc.__call__ (cupy/_core/_gufuncs.py:685)") == ("cupy/_core/_gufuncs.py", 685)
    assert rec.location("cupy_matmul.<locals>.step (flametool/cases.py:155)") == ("flametool/cases.py", 155)
    for frame in ("cublasGemmEx (libcublas.so.13)", "0x7f77f2e3ec8d (libcublas.so.13)", "[flametool active loop]",
                  "f (a.py:0)", "f (:3)", "f (a.py:x)"):
        assert rec.location(frame) is None


def test_merge_keeps_every_cases_lines():
    a = rec.Sources({"m.py": rec.SourceFile("library", "/m.py", {1: "a"})})
    b = rec.Sources({"m.py": rec.SourceFile("library", "/m.py", {2: "b"}), "n.py": rec.SourceFile("case", "/n.py", {})})
    merged = rec.merge([("x", a), ("y", b)])
    assert merged.files["m.py"].lines == {1: "a", 2: "b"} and set(merged.files) == {"m.py", "n.py"}


# --- finding the lines ---------------------------------------------------------------------------------

def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def numbered(n: int, fmt: str = "line {}") -> str:
    return "".join(fmt.format(i) + "\n" for i in range(1, n + 1))


@pytest.fixture
def tree(tmp_path):
    """A case folder, a site-packages, a --source checkout, and a secret outside them all."""
    case = write(tmp_path / "work" / "case.py", numbered(30, "case {}"))
    site = tmp_path / "site"
    write(site / "lib" / "ops.py", numbered(20, "ops {}"))
    src = tmp_path / "checkout"
    write(src / "pkg" / "_core" / "gen.cpp", numbered(10, "cpp {}"))
    write(src / "pkg" / "_core" / "other.h", numbered(10, "h {}"))
    write(src / "pkg" / "mod.py", numbered(10, "mod {}"))
    write(tmp_path / "secret" / "id_rsa", "PRIVATE KEY\n" * 5)
    return tmp_path, ms.Roots(case, (site,), (src,))


def test_files_are_found_in_the_case_folder_sys_path_and_source_roots(tree):
    root, roots = tree
    got = ms.collect({"case.py": {3}, "lib/ops.py": {2, 19}, "gen.cpp": {4}, "pkg/mod.py": {5}, "other.h": {1},
                      "gone.py": {1}}, roots)
    assert got.text("case.py", 3) == "case 3" and got.origin("case.py") == "case"
    assert got.files["lib/ops.py"].lines == {2: "ops 2", 19: "ops 19"} and got.origin("lib/ops.py") == "library"
    assert got.text("gen.cpp", 4) == "cpp 4" and got.origin("gen.cpp") == "source"  # a native file by its name
    assert got.text("other.h", 1) == "h 1"
    assert got.text("pkg/mod.py", 5) == "mod 5"
    assert "gone.py" not in got.files  # shown as file:line alone
    assert got.files["case.py"].path == str((root / "work" / "case.py").resolve())


def test_a_python_file_by_its_path_suffix_in_a_source_root_but_never_by_its_name_alone(tmp_path):
    src = tmp_path / "checkout"
    write(src / "cupy" / "_core" / "_gufuncs.py", numbered(5))
    write(src / "cupy" / "__init__.py", numbered(5))
    got = ms.collect({"cupy/_core/_gufuncs.py": {2}, "other/__init__.py": {1}}, ms.Roots(source=(src / "cupy",)))
    assert got.text("cupy/_core/_gufuncs.py", 2) == "line 2"
    assert "other/__init__.py" not in got.files


def test_a_name_two_files_fit_alike_is_not_guessed(tmp_path):
    src = tmp_path / "checkout"
    write(src / "a" / "device.cpp", numbered(3, "a {}"))
    write(src / "b" / "device.cpp", numbered(3, "b {}"))
    assert ms.collect({"device.cpp": {1}}, ms.Roots(source=(src,))).files == {}
    assert ms.collect({"b/device.cpp": {1}}, ms.Roots(source=(src,))).text("b/device.cpp", 1) == "b 1"


def test_nothing_is_read_outside_the_roots(tree):
    root, roots = tree
    secret = root / "secret" / "id_rsa"
    # a link inside a root to a file outside it, a path climbing out, an absolute path elsewhere
    (root / "site" / "lib" / "key.py").symlink_to(secret)
    (root / "checkout" / "id_rsa.h").symlink_to(secret)
    (root / "checkout" / "outside").symlink_to(root / "secret", target_is_directory=True)
    wanted = {"lib/key.py": {1}, "../secret/id_rsa": {1}, str(secret): {1}, "id_rsa.h": {1}, "outside/id_rsa": {1},
              "id_rsa": {1}}
    got = ms.collect(wanted, roots)
    assert got.files == {}
    # an absolute path inside a root is read
    inside = root / "site" / "lib" / "ops.py"
    assert ms.collect({str(inside): {1}}, roots).text(str(inside), 1) == "ops 1"


def test_a_fifo_in_a_root_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    assert ms.collect({"pipe.py": {1}}, ms.Roots(sys_path=(tmp_path,))).files == {}


def test_only_the_sampled_lines_are_read_and_a_long_line_only_in_part(tmp_path):
    long = "<b>" + "y" * 100_000 + "\x1b[31m"
    write(tmp_path / "big.py", "first\n" + long + "\n" + "third\r\n" + numbered(1000))
    got = ms.collect({"big.py": {2, 3, 5000}}, ms.Roots(sys_path=(tmp_path,)))
    lines = got.files["big.py"].lines
    assert set(lines) == {2, 3}  # the file has no line 5000
    assert lines[3] == "third" and lines[2].startswith("<b>yyy") and len(lines[2]) == rec.MAX_TEXT


def test_numbered_lines_keeps_a_bounded_head_of_each_line(tmp_path):
    path = write(tmp_path / "f", "a" * (3 * ms.CHUNK) + "\nb\nc")
    with open(path, "rb") as fh:
        got = list(ms.numbered_lines(fh, 10, keep=5))
    assert got == [(1, b"aaaaa"), (2, b"b"), (3, b"c")]
    with open(path, "rb") as fh:
        assert list(ms.numbered_lines(fh, 2, keep=5)) == [(1, b"aaaaa"), (2, b"b")]


GENERATED = """/* Generated by Cython 3.0.11 */
#include "Python.h"

/* "pkg/_core/hot.pyx":3
 *
 * def hot_busy(int n):             # <<<<<<<<<<<<<<
 *     cdef long total = 0
 */

static PyObject *__pyx_pf_3hot_hot_busy(int __pyx_v_n) {
  long __pyx_v_total;
  int __pyx_t_1;

  /* "pkg/_core/hot.pyx":5
 *     cdef long total = 0
 *     for i in range(n):
 *         total += i             # <<<<<<<<<<<<<<
 *     return total
 */
  __pyx_v_total = (__pyx_v_total + __pyx_v_i);
  __pyx_t_1 = 0;
}

static int __Pyx_Utility(void) {
  return 0;
}
"""


def test_generated_lines_map_to_the_pyx_line_above_them_in_the_same_function(tmp_path):
    src = tmp_path / "checkout"
    gen = write(src / "pkg" / "_core" / "hot.c", GENERATED)
    write(src / "pkg" / "_core" / "hot.pyx", "import x\n\ndef hot_busy(int n):\n    cdef long total = 0\n"
                                              "    for i in range(n):\n        total += i\n    return total\n")
    lines = GENERATED.split("\n")
    body = 1 + lines.index("  __pyx_v_total = (__pyx_v_total + __pyx_v_i);")
    prologue = 1 + lines.index("  long __pyx_v_total;")
    utility = 1 + lines.index("  return 0;")
    got = ms.collect({"hot.c": {body, prologue, utility}}, ms.Roots(source=(src,)))
    assert got.pyx("hot.c", body) == rec.PyxLine("pkg/_core/hot.pyx", 5, "    for i in range(n):")
    assert got.pyx("hot.c", prologue) == rec.PyxLine("pkg/_core/hot.pyx", 3, "def hot_busy(int n):")
    assert got.pyx("hot.c", utility) is None  # Cython's utility code, after the function ended
    assert got.origin("pkg/_core/hot.pyx") == "source"
    assert ms.cython_lines(gen, {body}) == {body: ms._Mapped("pkg/_core/hot.pyx", 5, "        total += i")}


def test_without_the_pyx_the_text_cython_copied_is_kept(tmp_path):
    write(tmp_path / "hot.c", GENERATED)
    body = 1 + GENERATED.split("\n").index("  __pyx_v_total = (__pyx_v_total + __pyx_v_i);")
    got = ms.collect({"hot.c": {body}}, ms.Roots(sys_path=(tmp_path,)))
    assert got.pyx("hot.c", body) == rec.PyxLine("pkg/_core/hot.pyx", 5, "        total += i")
    assert got.origin("pkg/_core/hot.pyx") == "generated"


def test_a_c_file_cython_did_not_generate_maps_nothing(tmp_path):
    write(tmp_path / "plain.c", GENERATED.replace("/* Generated by Cython 3.0.11 */", "/* mine */"))
    assert ms.collect({"plain.c": {20}}, ms.Roots(sys_path=(tmp_path,))).files["plain.c"].pyx == {}


def test_locations_of_folded_stacks():
    stacks = folded.parse("cupy_matmul.<locals>.step (flametool/cases.py:155);_GUFunc.__call__ (cupy/_core/_gufuncs.py:685);"
                          "matmul (_routines_linalg.cpp:22480);0x7f77 (libcublas.so.13) 3\n"
                          "cupy_matmul.<locals>.step (flametool/cases.py:156) 1\n")
    assert ms.locations(stacks) == {"flametool/cases.py": {155, 156}, "cupy/_core/_gufuncs.py": {685},
                                    "_routines_linalg.cpp": {22480}}


def test_source_roots_are_checked_in_one_line(tmp_path):
    write(tmp_path / "cy" / "gen" / "m.cpp", GENERATED)
    write(tmp_path / "pyx" / "m.pyx", "x = 1\n")
    write(tmp_path / "plain" / "m.c", "int main(void) { return 0; }\n")
    write(tmp_path / "file.txt", "x\n")
    assert ms.check_source_roots([tmp_path / "cy", str(tmp_path / "pyx")]) == [(tmp_path / "cy").resolve(),
                                                                                (tmp_path / "pyx").resolve()]
    for given, message in [(tmp_path / "nope", "no such folder"), ("", "no such folder"), (tmp_path / "file.txt", "not a folder"),
                           (tmp_path / "plain", "holds no Cython sources")]:
        with pytest.raises(FlametoolError, match=message) as got:
            ms.check_source_roots([given])
        assert "\n" not in str(got.value) and str(given) in str(got.value)


# --- a module Cython builds here -------------------------------------------------------------------------

HOT_PYX = """# cython: language_level=3
def cheap(int n):
    return n + 1

def hot_busy(long n):
    cdef long total = 0
    cdef long i
    for i in range(n):
        total += i * i
    return total
"""


def build_cython(folder: Path) -> Path:
    """hot.pyx -> hot.c (beside it) -> hot.so, built with -g as a source build is; the .so's path."""
    cython = pytest.importorskip("Cython.Compiler.Main", reason="Cython is not installed")
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    write(folder / "hot.pyx", HOT_PYX)
    cython.compile(str(folder / "hot.pyx"), cython.CompilationOptions(language_level=3))
    so = folder / ("hot" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    subprocess.run(["gcc", "-g", "-O0", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    str(folder / "hot.c"), "-o", str(so)], check=True, capture_output=True)
    return so


def test_a_line_of_a_cython_built_module_maps_to_its_pyx_line(tmp_path):
    so = build_cython(tmp_path)
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import hot; print(hot.hot_busy(4), hot.cheap(1))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == ["14", "2"]
    assert so.exists()
    generated = (tmp_path / "hot.c").read_text().split("\n")
    # the C Cython generated for `total += i * i`, inside __pyx_pf_..._hot_busy
    body = 1 + next(i for i, l in enumerate(generated) if "__pyx_v_total = (__pyx_v_total + (__pyx_v_i * __pyx_v_i));" in l)
    cheap = 1 + next(i for i, l in enumerate(generated) if "__Pyx_PyLong_From_long((__pyx_v_n + 1))" in l
                     or "__Pyx_PyInt_From_long((__pyx_v_n + 1))" in l)
    got = ms.collect({"hot.c": {body, cheap}}, ms.Roots(sys_path=(tmp_path,)))
    assert got.pyx("hot.c", body) == rec.PyxLine("hot.pyx", 9, "        total += i * i")
    assert got.pyx("hot.c", cheap) == rec.PyxLine("hot.pyx", 3, "    return n + 1")
    assert got.origin("hot.pyx") == "library"
