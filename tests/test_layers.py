"""Layer rules: every layer named by at least one real frame, inheritance, and the table as data."""

import json

import pytest

from flametool.analyse import layers as ly
from flametool.analyse import naming

namer = naming.Namer()


def layer_of(raw: str) -> str:
    return ly.classify(namer.frame(raw))


@pytest.mark.parametrize("raw, layer", [
    ("torch_mm.<locals>.step (flametool/cases.py:87)", "Python"),
    ("_GUFunc.__call__ (cupy/_core/_gufuncs.py:611)", "Python"),
    ("_PyEval_EvalFrameDefault (libpython3.11.so.1.0)", "Python"),
    ("time_perf_counter (python3.12)", "Python"),
    ("matmul (_routines_linalg.cpp:22480)", "Cython"),
    ("_get_handle (device.cpp:8245)", "Cython"),
    ("gemmEx (cublas.cpp:32057)", "Cython"),
    ("synchronize (stream.cpp:8425)", "Cython"),
    ("deviceSynchronize (cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so)", "Cython"),
    ("get_array_function.isra.0 (numpy/_core/_multiarray_umath.cpython-312-x86_64-linux-gnu.so)", "NumPy"),
    ("torch::autograd::THPVariable_mm (libtorch_python.so)", "PyTorch binding"),
    ("torch::PythonArgParser::raw_parse (libtorch_python.so)", "PyTorch binding"),
    ("torch::FunctionSignature::parse (libtorch_python.so)", "PyTorch binding"),
    ("pybind11::gil_scoped_release::~gil_scoped_release (libtorch_python.so)", "PyTorch binding"),
    ("c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reset_not_null_ (libtorch_python.so)", "PyTorch binding"),
    ("at::_ops::mm_out::call (libtorch_cpu.so)", "PyTorch dispatcher"),
    ("at::_ops::mm_out::redispatch (libtorch_cpu.so)", "PyTorch dispatcher"),
    ("c10::Dispatcher::callBoxed (libtorch_cpu.so)", "PyTorch dispatcher"),
    ("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<x>>::call (libtorch_cpu.so)",
     "PyTorch dispatcher"),
    ("torch::autograd::VariableType::(anonymous namespace)::mm_out_out (libtorch_cpu.so)", "PyTorch dispatcher"),
    ("torch::ADInplaceOrView::(anonymous namespace)::mm_out_out (libtorch_cpu.so)", "PyTorch dispatcher"),
    ("c10::impl::ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard (libc10.so)", "PyTorch dispatcher"),
    ("at::(anonymous namespace)::wrapper_CUDA_mm_out_out (libtorch_cuda.so)", "ATen/CUDA glue"),
    ("at::native::structured_mm_out_cuda::impl (libtorch_cuda.so)", "ATen/CUDA glue"),
    ("at::cuda::getCurrentCUDABlasHandle (libtorch_cuda.so)", "ATen/CUDA glue"),
    ("c10::cuda::GetDevice (libc10_cuda.so)", "ATen/CUDA glue"),
    ("at::cuda::blas::gemm_internal_cublas_half_helper<c10::Half> (libtorch_cuda.so)", "ATen/CUDA glue"),
    ("0x7fa0 (libtorch_cuda.so)", "ATen/CUDA glue"),
    ("cublasGemmEx (libcublas.so.13)", "cuBLAS"),
    ("cublasLtHSHMatmul (libcublasLt.so.13)", "cuBLAS"),
    ("0x7f9d (libcublasLt.so.13)", "cuBLAS"),
    ("cuLaunchKernelEx (libcuda.so.580.159.04)", "CUDA runtime/driver"),
    ("0x7fa6 (libcuda.so.580.159.04)", "CUDA runtime/driver"),
    ("cudaGetDevice (libcudart.so.13)", "CUDA runtime/driver"),
    ("pthread_mutex_lock (libc.so.6)", "C library/allocator"),
    ("malloc (libc.so.6)", "C library/allocator"),
    ("0x7fa0 (libc.so.6)", "C library/allocator"),
    ("__tls_get_addr (ld-linux-x86-64.so.2)", "C library/allocator"),
    ("0x7ffd ([vdso])", "C library/allocator"),
    ("sgemm_kernel_HASWELL (libscipy_openblas64_-32a4b2a6.so)", "CPU BLAS"),
    ("mkl_blas_def_sgemm_kernel_0_zen (libtorch_cpu.so)", "CPU BLAS"),
    ("0x7f00 (libgomp.so.1)", "CPU BLAS"),
    ("something (libmystery.so)", "other"),
    (naming.LOOP_FRAME, "loop"),
])
def test_layer(raw, layer):
    assert layer_of(raw) == layer


def test_header_code_takes_its_callers_layer():
    raw = ["matmul (_routines_linalg.cpp:1)", "Py_DECREF (object.h:706)"]
    names = [namer.frame(r).name for r in raw]
    frames = {n: namer.frame(r) for n, r in zip(names, raw)}
    assert ly.classify(frames[names[1]]) == ly.INHERIT
    assert ly.stack_layers(tuple(names), frames) == ["Cython", "Cython"]
    # at the root there is no caller: 'other'
    assert ly.stack_layers((names[1],), frames) == ["other"]


def test_first_matching_rule_wins_and_rules_are_data():
    text = json.dumps({
        "layers": [{"layer": "A", "about": ""}, {"layer": "B", "about": ""}, {"layer": "other", "about": ""}],
        "rules": [{"name": "^x", "layer": "A"}, {"name": "^xy", "layer": "B"}, {"file": "libb", "kind": "native", "layer": "B"}],
    })
    rules, layer_names = ly.read_rules(text)
    assert list(layer_names) == ["A", "B", "other"]
    assert ly.classify(naming.Frame("xy (liba.so)", "liba.so", "native"), rules) == "A"
    assert ly.classify(naming.Frame("z (libb.so)", "libb.so", "native"), rules) == "B"
    assert ly.classify(naming.Frame("z (libb.so)", "libb.so", "python"), rules) == "other"


def test_a_rule_naming_an_unlisted_layer_is_refused():
    with pytest.raises(ValueError, match="unlisted layer"):
        ly.read_rules(json.dumps({"layers": [], "rules": [{"name": "x", "layer": "Nope"}]}))


def test_shipped_table_loads_and_lists_every_layer_it_uses():
    rules, layer_names = ly.read_rules()
    assert {r.layer for r in rules} - {ly.INHERIT} <= set(layer_names)
    assert ly.OTHER in layer_names
