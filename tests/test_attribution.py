"""Sample shares -> microseconds per call: scaling, the loop's share, uncertainty, closure; and the H200
reference stacks (CuPy vs PyTorch, 256^3 fp16) read the way a CuPy developer expects."""

import gzip
import json
import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from flametool.analyse import attribution as at
from flametool.analyse import treediff as df
from flametool.analyse import flamegraph as flame
from flametool.analyse import layers as ly
from flametool.analyse import nodetree
from flametool.run import folded
from flametool.analyse import naming
from flametool.errors import RunDirError
from runbuild import make_run
from stackgen import STACKS, profile_of

DATA = Path(__file__).parent / "data"

FOLDED = (
    "step (case.py:1);outer (lib/m.py:5);inner (lib/m.py:9) 6\n"
    "step (case.py:1);outer (lib/m.py:5);malloc (libc.so.6) 2\n"
    "step (case.py:1);cublasGemmEx (libcublas.so.13);0x1 (libcublas.so.13) 1\n"
)


def costs(text=FOLDED, us=10.0, loop=1, view="library"):
    """The library view: each frame in its own library's layer (the caller view is tested on its own)."""
    return at.attribute(at.make_profile("c", folded.parse(text), loop, us), view)


def by_frame(c):
    return {f.frame: f for f in c.frames}


def test_share_of_all_loop_samples_times_unsampled_time():
    c = costs()  # 9 kept + 1 in the loop = 10 samples; 10 us per call -> 1 us per sample
    f = by_frame(c)
    assert f["lib.m.inner"].self.us_per_call == pytest.approx(6.0)
    assert f["lib.m.outer"].self.us_per_call == pytest.approx(0.0)
    assert f["lib.m.outer"].total.us_per_call == pytest.approx(8.0)
    assert f["case.step"].total.us_per_call == pytest.approx(9.0)
    assert f["[libcublas.so.13]"].self.samples == 1
    # the loop's own samples are a frame of their own, not spread over step()'s frames
    assert f[naming.LOOP_FRAME].self.us_per_call == pytest.approx(1.0)
    assert f[naming.LOOP_FRAME].layer == "loop"


def test_layers_take_self_time():
    c = costs()
    layers = {k: v.us_per_call for k, v in c.layers.items()}
    assert layers == pytest.approx({"Python": 6.0, "cuBLAS": 1.0, "C library/allocator": 2.0, "loop": 1.0})
    assert list(c.layers) == ["Python", "cuBLAS", "C library/allocator", "loop"]  # layers.json's order


def test_the_caller_view_charges_the_c_library_to_its_caller():
    c = costs(view="caller")
    layers = {k: v.us_per_call for k, v in c.layers.items()}
    # the C library's 2 us were called from Python (test_called_from_says_who_called_the_c_library)
    assert layers == pytest.approx({"Python": 8.0, "cuBLAS": 1.0, "loop": 1.0})
    assert sum(layers.values()) == pytest.approx(10.0)  # nothing lost, only moved
    assert at.attribute(at.make_profile("c", folded.parse(FOLDED), 1, 10.0)).layers.keys() == c.layers.keys()  # the default


def test_binomial_standard_error():
    c = costs()
    inner = by_frame(c)["lib.m.inner"].self
    assert inner.se_us == pytest.approx(math.sqrt(0.6 * 0.4 / 10) * 10.0)
    assert c.layers["loop"].se_us == pytest.approx(math.sqrt(0.1 * 0.9 / 10) * 10.0)
    # a frame with every sample has no sampling error
    assert by_frame(costs(loop=0))["case.step"].total.se_us == pytest.approx(0.0)


def test_closure():
    c = costs()
    closure = c.closure
    assert closure.ratio == pytest.approx(1.0)
    assert closure.within_tolerance
    assert closure.layers_sum_us_per_call == pytest.approx(10.0)
    # samples lost on the way show up as a ratio below 1: here the sampler recorded 12, the file holds 9 + 1
    lost = at.attribute(at.make_profile("c", folded.parse(FOLDED), 1, 10.0, recorded_samples=12))
    assert lost.closure.ratio == pytest.approx(10 / 12)
    assert not lost.closure.within_tolerance
    assert lost.closure.samples_read == 10 and lost.closure.samples_recorded == 12


def test_recursion_counts_a_sample_once_in_total():
    c = costs("s (m.py:1);a (m.py:2);b (m.py:3);a (m.py:2) 4\n", us=4.0, loop=0)
    assert by_frame(c)["m.a"].total.us_per_call == pytest.approx(4.0)
    assert by_frame(c)["m.a"].self.us_per_call == pytest.approx(4.0)


def test_inherited_layer_follows_the_callers():
    text = ("s (m.py:1);matmul (_routines_linalg.cpp:1);Py_DECREF (object.h:706) 3\n"
            "s (m.py:1);Py_DECREF (object.h:706) 1\n")
    c = costs(text, us=4.0, loop=0)
    assert by_frame(c)["Py_DECREF (object.h)"].layer == "Cython"  # where most of its samples were
    assert c.layers["Cython"].us_per_call == pytest.approx(3.0)
    assert c.layers["Python"].us_per_call == pytest.approx(1.0)


def test_called_from_says_who_called_the_c_library():
    c = costs()
    assert c.called_from["C library/allocator"] == pytest.approx({"Python": 2.0})


def test_the_hottest_frame_comes_first_with_its_layer_and_samples():
    c = costs()
    hot = c.frames[0]
    assert hot.frame == "lib.m.inner" and hot.self.samples == 6 and hot.layer_label == hot.layer
    assert c.layers["Python"].us_per_call == pytest.approx(6.0)
    assert c.closure.ratio == pytest.approx(1.0)


def test_load_profile_reads_the_run_directory(tmp_path):
    run = make_run(tmp_path / "run", {"a": (FOLDED, 10.0, 1)})
    from flametool.run import rundir

    p = at.load_profile(run, rundir.load(run), "a")
    assert p.samples == 10 and p.us_per_call == 10.0
    with pytest.raises(RunDirError, match="no case 'b'"):
        at.load_profile(run, rundir.load(run), "b")


def test_a_truncated_folded_file_fails_closure(tmp_path):
    from flametool.run import rundir

    run = make_run(tmp_path / "run", {"a": (FOLDED, 10.0, 1)})
    (run / "a.folded").write_text(FOLDED.splitlines()[0] + "\n")  # 6 of the 9 kept samples remain
    c = at.attribute(at.load_profile(run, rundir.load(run), "a"))
    assert c.closure.ratio == pytest.approx(7 / 10)
    assert not c.closure.within_tolerance


def test_garbage_folded_is_a_run_dir_error(tmp_path):
    run = make_run(tmp_path / "run", {"a": ("this is not folded\n", 10.0, 0)})
    from flametool.run import rundir

    with pytest.raises(RunDirError, match="a.folded: line 1"):
        at.load_profile(run, rundir.load(run), "a")


# --- the H200 reference: CuPy 14.2 vs PyTorch 2.11, 256^3 fp16 matmul, 5 s of py-spy each ----------------
# Unsampled CPU time per call at that shape, from the reference README (one run each).
H200_US = {"cupy": 17.3, "torch": 14.6}


@pytest.fixture(scope="module")
def h200():
    loops = json.loads((DATA / "h200_loop_samples.json").read_text())
    out = {}
    for lib in ("cupy", "torch"):
        with gzip.open(DATA / f"h200_{lib}.folded.gz", "rt", encoding="utf-8") as fh:
            raw = folded.parse(fh.read(), f"h200_{lib}")
        out[lib] = at.attribute(at.make_profile(lib, raw, loops[lib], H200_US[lib]))
    return out


def test_h200_layers_close(h200):
    for c in h200.values():
        assert abs(c.closure.ratio - 1) < 0.10


def test_h200_cublas_about_equal(h200):
    cublas = {lib: c.layers["cuBLAS"].us_per_call for lib, c in h200.items()}
    assert cublas["cupy"] > 1 and cublas["torch"] > 1
    assert cublas["cupy"] == pytest.approx(cublas["torch"], rel=0.25)


def test_h200_cupy_side_is_cython_and_python(h200):
    cupy, torch = h200["cupy"].layers, h200["torch"].layers
    # CuPy's own host code (the Cython wrapper, the Python gufunc layer) is its biggest library-side layer
    wrapper = cupy["Cython"].us_per_call + cupy["Python"].us_per_call
    assert cupy["Cython"].us_per_call > max(cupy[l].us_per_call for l in ("cuBLAS", "CUDA runtime/driver"))
    torch_own = sum(torch[l].us_per_call for l in ("PyTorch binding", "PyTorch dispatcher", "ATen/CUDA glue", "Python"))
    assert wrapper > 2 * torch_own
    # and each side only has its own library's layers
    assert not {"PyTorch binding", "PyTorch dispatcher", "ATen/CUDA glue"} & set(cupy)
    assert not {"Cython", "NumPy"} & set(torch)


def test_h200_hot_frames_name_cupy_functions(h200):
    names = {f.frame for f in h200["cupy"].frames}
    for expected in ("cupy._core._routines_linalg.tensordot_core", "cupy._core._gufuncs._GUFunc.__call__",
                     "cupy.linalg._product._try_fastcall_matmul", "cupy_backends.cuda.libs.cublas.gemmEx",
                     "cupy.cuda.device._get_handle", "[libcublasLt.so.13]"):
        assert expected in names
    totals = {f.frame: f.total.us_per_call for f in h200["cupy"].frames}
    # everything below the gufunc's __call__ is most of a call
    assert totals["cupy._core._gufuncs._GUFunc.__call__"] > 0.9 * H200_US["cupy"]
    torch_names = {f.frame for f in h200["torch"].frames}
    assert "at::_ops::mm_out::call (libtorch_cpu.so)" in torch_names
    assert "torch::autograd::THPVariable_mm (libtorch_python.so)" in torch_names


# --- properties: whatever the stacks, the figures add up ---------------------------------------------------

POOL = ["s (case.py:1)", "f (lib/m.py:3)", "matmul (_routines_linalg.cpp:22480)", "Py_DECREF (object.h:706)",
        "0x1 (libcublasLt.so.13)", "0x2 (libcublasLt.so.13)", "cublasGemmEx (libcublas.so.13)", "malloc (libc.so.6)",
        "at::_ops::mm_out::call (libtorch_cpu.so)", "0x3 (libcuda.so.1)", "odd (libodd.so)"]
stacks_st = hs.lists(hs.tuples(hs.lists(hs.sampled_from(POOL), min_size=1, max_size=8), hs.integers(1, 50)),
                     min_size=1, max_size=20)


@settings(max_examples=60, deadline=None)
@given(stacks_st, hs.integers(0, 30), hs.floats(0.5, 500))
def test_layers_always_add_up_to_the_time_per_call(stacks, loop, us):
    raw = [folded.Stack(("s (case.py:1)", *frames), n) for frames, n in stacks]
    c = at.attribute(at.make_profile("p", raw, loop, us))
    assert sum(f.us_per_call for f in c.layers.values()) == pytest.approx(us)
    assert sum(f.self.us_per_call for f in c.frames) == pytest.approx(us)
    assert all(f.self.us_per_call <= f.total.us_per_call + 1e-9 for f in c.frames)
    assert all(0 <= f.self.se_us <= us for f in c.frames)


@settings(max_examples=40, deadline=None)
@given(stacks_st, stacks_st, hs.floats(0.5, 500), hs.floats(0.5, 500))
def test_diff_deltas_add_up(a, b, us_a, us_b):
    from flametool.analyse import treediff

    pa = at.make_profile("a", [folded.Stack(("a (x.py:1)", *f), n) for f, n in a], 0, us_a)
    pb = at.make_profile("b", [folded.Stack(("b (y.py:1)", *f), n) for f, n in b], 0, us_b)
    d = treediff.diff(pa, pb, with_tree=True)
    assert sum(r.delta_us_per_call for r in d.layers) == pytest.approx(us_b - us_a, abs=1e-6)
    assert sum(r.delta_us_per_call for r in d.frames) == pytest.approx(us_b - us_a, abs=1e-6)
    root = d.tree
    root.check()
    ub, uh = d.us_per_sample
    assert root.total[1] * uh == pytest.approx(us_b) and root.total[0] * ub == pytest.approx(us_a)


# --- on random profiles: the figures against the per-frame code they replaced, the graphs against the tree ---

def reference_attribute(profile: at.Profile) -> at.CaseCosts:
    """attribution.attribute as it was: layers classified on every frame of every stack."""
    per_stack = [ly.stack_layers(s.frames, profile.frames) for s in profile.stacks]
    own: dict = {}
    first_seen: dict = {}
    for s, lays in zip(profile.stacks, per_stack):
        own.setdefault(s.frames[-1], Counter())[lays[-1]] += s.count
        for name, layer in zip(s.frames, lays):
            first_seen.setdefault(name, layer)
    layer_of = {n: (own[n].most_common(1)[0][0] if n in own else l) for n, l in first_seen.items()}
    self_n, total_n, layer_n, callers = Counter(), Counter(), Counter(), {}
    for s, lays in zip(profile.stacks, per_stack):
        self_n[s.frames[-1]] += s.count
        for name in set(s.frames):
            total_n[name] += s.count
        layer_n[lays[-1]] += s.count
        caller = next((l for l in reversed(lays[:-1]) if l != lays[-1]), None)
        if caller:
            callers.setdefault(lays[-1], Counter())[caller] += s.count

    def fig(n):
        return at.Figure(profile.us(n), profile.se(n), n)

    # the layers a frame's own samples went to, most first (a tie: the first stack that ends there)
    charged = {n: [l for l, _ in c.most_common()] for n, c in own.items()}
    frames = [at.FrameCost(name, layer_of[name], fig(self_n[name]), fig(total_n[name]), charged.get(name, []))
              for name in total_n]
    frames.sort(key=lambda f: (-f.self.samples, -f.total.samples, f.frame))
    return at.CaseCosts(profile.label, profile.us_per_call, profile.samples, profile.denominator,
                        total_n.get(naming.LOOP_FRAME, 0), {l: fig(layer_n[l]) for l in ly.order(layer_n)}, frames,
                        {l: {c: profile.us(n) for c, n in cs.most_common()} for l, cs in callers.items()},
                        profile.repaired_samples)


@settings(max_examples=150, deadline=None)
@given(a=STACKS, b=STACKS, threshold=hs.sampled_from([0.0, flame.DISPLAY_THRESHOLD, 0.05, 0.3, 1.0]))
def test_attribution_and_graphs_agree_with_the_tree(a, b, threshold):
    a = [(f, c + 1) for f, c in a]
    b = [(f, c + 1) for f, c in b]
    base, head = profile_of(a, "base", 7.0), profile_of(b, "head", 3.5)
    for p in (base, head):
        assert at.attribute(p) == reference_attribute(p)
        graph = flame.case_graph(p, flame.Strings(), "g", threshold)
        # the root row is the whole profile; drawn and pruned nodes together are every node of the call tree
        assert graph.rows[0][3] == pytest.approx(round(p.us(p.samples), 4))
        assert graph.drawn_nodes - 1 + graph.pruned_nodes == nodetree.count(nodetree.build([p])) - 1
    d = df.diff(base, head, with_tree=True)
    d.tree.check()
    graph = flame.diff_graph(d, flame.Strings(), "d", threshold)
    assert graph.drawn_nodes - 1 + graph.pruned_nodes == nodetree.count(d.tree) - 1


def test_a_case_whose_profiled_process_failed_says_why_it_has_no_stacks():
    """No stacks because its profiled process failed (killed while py-spy sampled it) is said as that, not as
    '--no-sample, or py-spy did not run' (py-spy had run)."""
    from flametool.run.record import CaseResult

    def case(profile_error: str | None) -> CaseResult:
        return CaseResult(label="numpy", factory="t:numpy", library=None, device="cpu", dtype="float32",
                          shape=[8, 8, 8], profile_error=profile_error)

    killed = "profiling alone at 8,8,8: the child process was killed by SIGKILL (exit code -9) before reporting"
    assert at.skip_reason(case(killed)) == f"not sampled: {killed}"
    assert at.skip_reason(case(None)) == "not sampled (--no-sample, or py-spy did not run)"
    # with its run, the reason run.json knows: --no-sample, a sweep without --sample, a run stopped before it
    from runbuild import new_run

    unsampled = new_run({"sample": False})
    assert at.skip_reason(case(None), unsampled) == "not sampled (--no-sample)"
    unsampled.kind = "sweep"
    assert at.skip_reason(case(None), unsampled) == "not sampled (the sweep ran without --sample)"
    stopped = new_run({"sample": True})  # complete: False
    assert at.skip_reason(case(None), stopped) == "not sampled: the run was stopped before its profile was kept"
    assert at.skip_reason(case(killed), stopped) == f"not sampled: {killed}"
    stopped.complete = True
    assert at.skip_reason(case(None), stopped) == "not sampled (py-spy did not run)"
