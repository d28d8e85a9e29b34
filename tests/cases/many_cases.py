"""Many user cases at once, as a user with a file of them writes it: long names, several on one library, one
that cannot be built and one slow one (tests/test_many_cases.py)."""

import time

import numpy as np


def _ab(shape, dtype):
    m, k, n = shape if len(shape) == 3 else (shape[0], shape[0], shape[0])
    rng = np.random.default_rng(0)
    return rng.random((m, k)).astype(dtype), rng.random((k, n)).astype(dtype), np.empty((m, n), dtype=dtype)


def np_matmul(shape, dtype, device):
    a, b, out = _ab(shape, dtype)

    def step():
        np.matmul(a, b, out=out)

    step.operands = (a, b)
    return step, lambda: None


def np_dot(shape, dtype, device):
    a, b, _ = _ab(shape, dtype)

    def step():
        np.dot(a, b)

    return step, lambda: None


def numpy_matmul_with_a_freshly_allocated_output_every_single_call(shape, dtype, device):
    a, b, _ = _ab(shape, dtype)

    def step():
        a @ b

    return step, lambda: None


def numpy_dot_of_the_two_operands_returning_a_new_array_each_time_it_is_called(shape, dtype, device):
    return np_dot(shape, dtype, device)


def numpy_matmul_into_a_preallocated_output_array_the_same_for_every_call(shape, dtype, device):
    return np_matmul(shape, dtype, device)


def torch_mm(shape, dtype, device):
    import torch

    a, b, out = (torch.from_numpy(x) for x in _ab(shape, dtype))

    def step():
        torch.mm(a, b, out=out)

    return step, lambda: None


def torch_matmul_through_the_operator_with_an_out_tensor_allocated_each_time(shape, dtype, device):
    import torch

    a, b, _ = (torch.from_numpy(x) for x in _ab(shape, dtype))

    def step():
        a @ b

    return step, lambda: None


def torch_addmm_zero_beta(shape, dtype, device):
    import torch

    a, b, out = (torch.from_numpy(x) for x in _ab(shape, dtype))

    def step():
        torch.addmm(out, a, b, beta=0, out=out)

    return step, lambda: None


def einsum_numpy_contraction_of_two_operands_spelled_as_a_string_ij_jk_ik(shape, dtype, device):
    a, b, out = _ab(shape, dtype)

    def step():
        np.einsum("ij,jk->ik", a, b, out=out)

    return step, lambda: None


def cannot_build_this_one(shape, dtype, device):
    print("cannot_build_this_one: what it printed before it raised")
    raise ValueError("this factory refuses to build")


def slow_sleeper(shape, dtype, device):
    """A slow case: 200 us a call."""
    def step():
        time.sleep(200e-6)

    return step, lambda: None


def busy_10us(shape, dtype, device):
    def step():
        end = time.perf_counter() + 10e-6
        while time.perf_counter() < end:
            pass

    return step, lambda: None
