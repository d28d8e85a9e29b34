"""A small Cython module built for the tests as a source build is (Cython from PyPI, the machine's gcc, -g): the
.pyx, the .c Cython generated beside it and the extension module."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

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
HOT_LINE = 9  # `total += i * i`
HOT_TEXT = "        total += i * i"


def build(folder: Path, name: str = "hot") -> Path:
    """NAME.pyx -> NAME.c (beside it) -> the extension module, built with -g -O0; the module's path."""
    cython = pytest.importorskip("Cython.Compiler.Main", reason="Cython is not installed")
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.pyx").write_text(HOT_PYX)
    cython.compile(str(folder / f"{name}.pyx"), cython.CompilationOptions(language_level=3))
    so = folder / (name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    # compiled from its folder, by its name: the line table names the file as a build tree does (NAME.c)
    subprocess.run(["gcc", "-g", "-O0", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    f"{name}.c", "-o", so.name], check=True, capture_output=True, cwd=folder)
    return so
