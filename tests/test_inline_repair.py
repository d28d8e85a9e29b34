"""py-spy puts a chain of inlined header frames between a function and itself (seen in CuPy 14.2 stacks of a
batched 512^3 float16 matmul: `__call__ (_kernel.cpp:30314);Py_DECREF (object.h:701);_Py_IsImmortal
(object.h:243);__call__ (_kernel.cpp:30691);...`). The analysis repairs such sandwiches (the physical frame
is the function itself), counts the samples it repaired, and leaves the .folded file as py-spy wrote it."""

from __future__ import annotations

import pytest

from flametool.analyse import attribution, dispatch, naming
from flametool.run import folded
from flametool.render.base import Options
from flametool.render.compare_tables import TerminalCompare
from runbuild import make_run

# the first frames of a real CuPy 14.2 stack (samples/h200-hostbound-1024/cupy.folded), then the lines
PREFIX = ("cupy_matmul.<locals>.step (flametool/cases.py:115);_GUFunc.__call__ (cupy/_core/_gufuncs.py:685);"
          "_try_fastcall_matmul (cupy/linalg/_product.py:47);matmul (_routines_linalg.cpp:22480)")
SANDWICH = "__call__ (_kernel.cpp:30314);Py_DECREF (object.h:701);_Py_IsImmortal (object.h:243);__call__ (_kernel.cpp:30691)"
LAUNCH = "cudaLaunchKernel (libcudart.so.13);0x7f3c2a1b2c3d (libcuda.so.580.159.04)"
LEAF_INLINE = "__call__ (_kernel.cpp:30314);Py_DECREF (object.h:701);_Py_IsImmortal (object.h:243)"
TEXT = (f"{PREFIX};{SANDWICH};{LAUNCH} 5\n"  # repaired: the launch is the kernel call's, not Py_DECREF's
        f"{PREFIX};{LEAF_INLINE} 3\n"  # a real inlined chain at the leaf: kept
        f"{PREFIX};{SANDWICH};{SANDWICH};{LAUNCH} 2\n")  # two in a row: both repaired


def profile(text: str = TEXT) -> attribution.Profile:
    return attribution.make_profile("cupy", folded.parse(text), 0, 10.0)


def test_sandwiches_are_repaired_and_counted():
    p = profile()
    assert p.repaired_samples == 7 and p.samples == 10
    decref = next(n for n in p.frames if n.startswith("Py_DECREF"))
    call = next(n for n in p.frames if n.endswith("__call__") and "_kernel" in n)
    for s in p.stacks:
        if decref in s.frames:  # only the leaf chain is left under Py_DECREF
            assert s.frames[-2:] == (decref, next(n for n in s.frames if n.startswith("_Py_IsImmortal"))) and s.count == 3
        else:  # the launch sits under the kernel's __call__, once
            assert s.frames.count(call) == 1 and s.frames[s.frames.index(call) + 1].startswith("cudaLaunchKernel")
    costs = attribution.attribute(p)
    totals = {f.frame: f.total.us_per_call for f in costs.frames}
    assert totals[decref] == pytest.approx(3.0)  # not 10: it no longer holds the launches
    assert costs.repaired_samples == 7 and costs.closure.ratio == pytest.approx(1.0)


def test_no_sandwich_no_change():
    text = f"{PREFIX};{LEAF_INLINE} 3\n{PREFIX};{LAUNCH} 4\n"
    p = profile(text)
    assert p.repaired_samples == 0
    stacks, frames = naming.normalize(folded.parse(text))
    assert p.stacks == stacks


def test_the_run_directory_keeps_what_py_spy_wrote(tmp_path):
    run = make_run(tmp_path / "run", {"cupy": (TEXT, 10.0, 0), "torch": ("step (s.py:1);mm (libtorch_cpu.so) 10\n", 8.0, 0)})
    before = (run / "cupy.folded").read_text()
    a = dispatch.analyse_dir(run)
    assert a.cases["cupy"].repaired_samples == 7
    assert (run / "cupy.folded").read_text() == before  # repaired when read, never written back
    printed = TerminalCompare(Options(width=200)).render(a)
    assert "(7 repaired: an inlined header chain py-spy put between a function and itself)" in printed


def test_caller_view_on_real_h200_stacks():
    """The committed H200 run (real py-spy --native stacks of cupy.matmul, torch.mm and cublasGemmEx): by
    default libc, malloc and the locks are charged to whoever called them; the library view keeps them apart;
    nothing is lost either way, and the per-caller split the library view reports is what moved."""
    from pathlib import Path

    a = dispatch.analyse_dir(Path(__file__).resolve().parent.parent / "samples" / "h200-hostbound-1024")
    for label in ("cupy", "torch", "cublas"):
        caller, library = a.cases[label], a.cases_by_library[label]
        mine, theirs = ({l: f.us_per_call for l, f in x.layers.items()} for x in (caller, library))
        libc = theirs["C library/allocator"]
        assert libc > 1.0  # locks and allocation under cuBLAS and the driver: a real share
        assert "C library/allocator" not in mine
        assert sum(mine.values()) == pytest.approx(sum(theirs.values()))
        moved = library.called_from["C library/allocator"]
        for layer, us in moved.items():
            grew = mine[layer] - theirs.get(layer, 0.0)
            assert grew == pytest.approx(us, abs=1e-9), (label, layer)


def test_real_cupy_batched_stacks_from_the_h200():
    """py-spy --native stacks of CuPy 14.2's batched float16 matmul (8 x 1024^3, `cupy.matmul(a, b, out=c)`),
    recorded on the H200 (benchmarks/cases/batched.py:cupy_bmm): the sandwiches are there in real stacks, and
    after the repair no stack has a function, then header frames, then the same function again."""
    import gzip
    from pathlib import Path

    text = gzip.decompress((Path(__file__).parent / "data" / "h200_cupy_bmm.folded.gz").read_bytes()).decode()
    p = attribution.make_profile("cupy_bmm", folded.parse(text), 0, 60.62)
    assert p.samples == 66 and p.repaired_samples == 30
    for s in p.stacks:
        for i, name in enumerate(s.frames):
            later = s.frames[i + 1:]
            if name in later:  # a function twice in one stack: not with only header frames between
                between = later[:later.index(name)]
                assert not all(p.frames[n].file.endswith(".h") for n in between if n in p.frames), s.frames
