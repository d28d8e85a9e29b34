"""A two-op torch step and a three-op cupy step for tests/test_gpu_lines.py: one line per op, so each line's kernels and API
calls are its own."""


def torch_two_ops(m, k, n, dtype, device):
    import torch

    a = torch.ones((256, 256), device=device)
    b = torch.ones((256, 256), device=device)
    out = torch.empty_like(a)

    def step():
        torch.mm(a, b, out=out)  # OP 1
        torch.add(a, b, out=out)  # OP 2

    return step, torch.cuda.synchronize


def cupy_two_ops(m, k, n, dtype, device):
    import cupy

    a = cupy.ones((256, 256), dtype="float32")
    b = cupy.ones((256, 256), dtype="float32")
    out = cupy.empty_like(a)

    def step():
        cupy.matmul(a, b, out=out)  # OP 1
        cupy.add(a, b, out=out)  # OP 2
        cupy.sum(a)  # OP 3

    return step, cupy.cuda.Device().synchronize
