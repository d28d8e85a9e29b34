"""Random profiles for the property tests: stacks from a vocabulary of every kind of frame py-spy writes (Python
with and without a line, C and C++ with a source line, bare addresses, extension modules, [vdso], names with
spaces, brackets and tabs, the loop's own frame), as folded text and as attribution Profiles."""

from __future__ import annotations

from hypothesis import strategies as hs

from flametool.run import folded
from flametool.analyse import attribution as at
from flametool.analyse import naming

VOCABULARY = [
    "step (case.py:3)", "step (case.py:4)", "other_step (/abs/case.py:9)", "helper (mypkg/mod.py:10)",
    "helper (mypkg/mod.py:11)", "matmul (_routines_linalg.cpp:22480)", "matmul (_routines_linalg.cpp:22519)",
    "fast_path (_speedups.c:120)", "fast_path (_speedups.c:121)", "x (mypkg/_speedups.cpython-311-x86_64-linux-gnu.so)",
    "synchronize (stream.cpp:8425)", "0x7f01 (libcublas.so.13)", "0x7f02 (libcublas.so.13)", "0x1 (libc.so.6)",
    "cublasGemmEx (libcublas.so.13)", "Py_DECREF (object.h:706)", "Py_DECREF (object.h:707)",
    "at::_ops::mm_out::call (libtorch_cpu.so)", "malloc (libc.so.6)", "[vdso]", "0x9 ([vdso])", "",
    "weird (name) (lib (x).so)", "tab\there (t.py:1)", naming.LOOP_FRAME,
]
STACKS = hs.lists(hs.tuples(hs.lists(hs.sampled_from(VOCABULARY), min_size=1, max_size=9), hs.integers(0, 4)),
                  min_size=1, max_size=40)


def folded_text(stacks) -> str:
    """Valid folded text (a line of one empty frame has no body: it gets a name), with blank lines in it."""
    return "".join(f"{';'.join(frames) or 'x'} {count}\n" + ("\n" if i % 7 == 3 else "") for i, (frames, count) in enumerate(stacks))


def profile_of(stacks, label="p", us=7.0) -> at.Profile:
    """An analysed case of (frames, count) stacks: 2 loop samples beside them, `us` per call."""
    return at.make_profile(label, [folded.Stack(tuple(f), c) for f, c in stacks], 2, us)
