"""Frame naming: what py-spy writes -> names people read and diffs match on."""

import pytest

from flametool.run import folded

from flametool.analyse import naming
from flametool.errors import RunDirError


def name(raw: str, context: list[str] = ()) -> str:
    namer = naming.Namer([folded.Stack(tuple(context) + (raw,), 1)])
    return namer.frame(raw).name


@pytest.mark.parametrize("raw, expected", [
    # CuPy's Cython: the generated .cpp file's stem says the module
    ("matmul (_routines_linalg.cpp:22480)", "cupy._core._routines_linalg.matmul"),
    # py-spy leaves the last module name on cdef functions; it is the module, not part of the name
    ("_routines_linalg_tensordot_core (_routines_linalg.cpp:15725)", "cupy._core._routines_linalg.tensordot_core"),
    ("_get_handle (device.cpp:8245)", "cupy.cuda.device._get_handle"),
    ("gemmEx (cublas.cpp:32057)", "cupy_backends.cuda.libs.cublas.gemmEx"),
    ("cublas_gemmEx (cublas.cpp:31784)", "cupy_backends.cuda.libs.cublas.gemmEx"),
    ("__Pyx__Import_GetModule (_routines_linalg.cpp:26629)", "cupy._core._routines_linalg.__Pyx__Import_GetModule"),
    # a mangled name carries its full scope: module and class
    ("__pyx_getprop_4cupy_5_core_4core_13_ndarray_base_itemsize (core.cpp:61745)", "cupy._core.core._ndarray_base.itemsize"),
    ("__pyx_pw_4cupy_5_core_16_routines_linalg_3matmul (_routines_linalg.cpp:1)", "cupy._core._routines_linalg.matmul"),
    # a CuPy extension without line info is named from its path
    ("deviceSynchronize (cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so)",
     "cupy_backends.cuda.api.runtime.deviceSynchronize"),
    # ambiguous (cupy.cuda.stream and cupy_backends.cuda.stream): honest, the file is kept
    ("synchronize (stream.cpp:8425)", "synchronize (stream.cpp)"),
    # a Cython file nobody knows
    ("helper (mystery.cpp:10)", "helper (mystery.cpp)"),
    # Python: the path relative to sys.path is the module
    ("_GUFunc.__call__ (cupy/_core/_gufuncs.py:611)", "cupy._core._gufuncs._GUFunc.__call__"),
    ("torch_mm.<locals>.step (flametool/cases.py:87)", "flametool.cases.torch_mm.<locals>.step"),
    ("synchronize (torch/cuda/__init__.py:1152)", "torch.cuda.synchronize"),
    ("getenv (<frozen os>:777)", "os.getenv"),
    ("step (/home/u/case.py:3)", "step (/home/u/case.py)"),
    # bare addresses: one frame per library
    ("0x7f9df823ec8d (libcublas.so.13)", "[libcublas.so.13]"),
    ("0x7fa05538e78c (libcublasLt.so.13)", "[libcublasLt.so.13]"),
    ("0x7ffd1234 ([vdso])", "[vdso]"),
    # native symbols keep their library; the Python ABI tag is dropped so versions line up
    ("at::_ops::mm_out::call (libtorch_cpu.so)", "at::_ops::mm_out::call (libtorch_cpu.so)"),
    ("get_array_function.isra.0 (numpy/_core/_multiarray_umath.cpython-312-x86_64-linux-gnu.so)",
     "get_array_function.isra.0 (numpy/_core/_multiarray_umath.so)"),
    # inline code from headers: the line goes, the header stays
    ("Py_DECREF (object.h:706)", "Py_DECREF (object.h)"),
])
def test_names(raw, expected):
    assert name(raw) == expected


def test_unknown_cython_stem_named_from_an_extension_path_in_the_same_profile():
    raw = "fast_path (_speedups.c:120)"
    assert name(raw) == "fast_path (_speedups.c)"
    assert name(raw, ["x (mypkg/_speedups.cpython-311-x86_64-linux-gnu.so)"]) == "mypkg._speedups.fast_path"


def test_ambiguous_stem_stays_ambiguous_even_with_one_path_seen():
    # seeing cupy_backends' stream extension does not prove a stream.cpp frame is not cupy.cuda.stream
    assert name("synchronize (stream.cpp:8425)", ["x (cupy_backends/cuda/stream.cpython-312-x86_64-linux-gnu.so)"]) \
        == "synchronize (stream.cpp)"


def test_frame_kinds_and_lines():
    namer = naming.Namer()
    f = namer.frame("matmul (_routines_linalg.cpp:22480)")
    assert (f.kind, f.file, f.line) == ("cython", "_routines_linalg.cpp", 22480)
    assert namer.frame("0x7f00 (libcuda.so.1)").kind == "address"
    assert namer.frame("Py_DECREF (object.h:706)").kind == "inline"
    assert namer.frame("cublasGemmEx (libcublas.so.13)").kind == "native"
    assert namer.frame("f (a/b.py:3)").kind == "python"


@pytest.mark.parametrize("mangled, scopes, func", [
    ("__pyx_getprop_4cupy_5_core_4core_13_ndarray_base_itemsize", ["cupy", "_core", "core", "_ndarray_base"], "itemsize"),
    ("__pyx_f_4cupy_5_core_16_routines_linalg_tensordot_core", ["cupy", "_core", "_routines_linalg"], "tensordot_core"),
    ("__pyx_pw_8implicit_4_als_5least_squares_cg", ["implicit", "_als"], "least_squares_cg"),
])
def test_demangle_pyx(mangled, scopes, func):
    assert naming.demangle_pyx(mangled) == (scopes, func)


def test_demangle_pyx_leaves_other_names():
    assert naming.demangle_pyx("matmul") is None
    assert naming.demangle_pyx("__Pyx_PyObject_GetAttrStr") is None


def test_function_view_groups_lines_and_collapses_runs():
    raw = [
        folded.Stack(("s (case.py:1)", "matmul (_routines_linalg.cpp:22480)", "matmul (_routines_linalg.cpp:22519)",
                  "cublasGemmEx (libcublas.so.13)", "0x1 (libcublas.so.13)", "0x2 (libcublas.so.13)"), 2),
        folded.Stack(("s (case.py:1)", "matmul (_routines_linalg.cpp:22480)", "cublasGemmEx (libcublas.so.13)",
                  "0x9 (libcublas.so.13)"), 3),
    ]
    stacks, frames = naming.normalize(raw)
    # the def wrapper and its implementation are one call; the addresses one visit to the library
    assert stacks == [folded.Stack(("case.s", "cupy._core._routines_linalg.matmul", "cublasGemmEx (libcublas.so.13)",
                                "[libcublas.so.13]"), 5)]
    assert frames["[libcublas.so.13]"].kind == "address"


def test_line_view_keeps_lines_apart():
    raw = [folded.Stack(("s (case.py:1)", "f (m.py:10)"), 1), folded.Stack(("s (case.py:1)", "f (m.py:12)"), 1),
           folded.Stack(("s (case.py:1)", "matmul (_routines_linalg.cpp:22480)", "0x1 (libc.so.6)", "0x2 (libc.so.6)"), 1)]
    stacks, _ = naming.normalize(raw, by_line=True)
    assert {s.frames for s in stacks} == {
        ("case.s:1", "m.f:10"), ("case.s:1", "m.f:12"),
        ("case.s:1", "cupy._core._routines_linalg.matmul (_routines_linalg.cpp:22480)", "[libc.so.6]"),
    }


def test_non_adjacent_recursion_is_kept():
    stacks, _ = naming.normalize([folded.Stack(("a (m.py:1)", "b (m.py:2)", "a (m.py:1)"), 1)])
    assert stacks[0].frames == ("m.a", "m.b", "m.a")


@pytest.mark.parametrize("full, short", [
    ("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer"
     "<at::Tensor& (c10::DispatchKeySet, at::Tensor const&), &torch::autograd::VariableType::(anonymous namespace)::mm_out_out>>"
     ">::call (libtorch_cpu.so)", "c10::impl::wrap_kernel_functor_unboxed_<…>::call (libtorch_cpu.so)"),
    ("torch::autograd::VariableType::(anonymous namespace)::mm_out_out (libtorch_cpu.so)",
     "torch::autograd::VariableType::{anon}::mm_out_out (libtorch_cpu.so)"),
    ("seed_repro.<lambda>", "seed_repro.<lambda>"),  # Python's <lambda>, <locals> are not templates
    ("flametool.cases.torch_mm.<locals>.step", "flametool.cases.torch_mm.<locals>.step"),
    ("get_array_function.isra.0 (numpy/_core/_multiarray_umath.so)", "get_array_function.isra.0 (_multiarray_umath.so)"),
    ("std::operator<< (libstdc++.so.6)", "std::operator<< (libstdc++.so.6)"),
])
def test_display_name(full, short):
    assert naming.display_name(full) == short


def test_display_name_drops_leading_namespaces_when_too_long():
    full = "aaaaaaaa::bbbbbbbbbbbb::cccccccccccccc::dddddddddddddddd::eeeeeeeeeeeee::function_name (libx.so)"
    short = naming.display_name(full, width=50)
    assert len(short) <= 50 and short.startswith("…::") and short.endswith("::function_name (libx.so)")


def test_garbage_folded_is_one_error_naming_the_line():
    with pytest.raises(RunDirError, match=r"x.folded: line 2: count"):
        folded.parse("a;b 1\na;b many\n", "x.folded")
