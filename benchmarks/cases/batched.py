"""Batched products on a CUDA device, the case issue 12 found CuPy slow at: 8 products of MxK by KxN in one
call, `cupy.matmul(a, b, out=c)` against `torch.bmm(a, b, out=c)`. In CuPy 14.2's stacks of this call py-spy
puts inlined header frames between a function and itself, which the analysis repairs (and counts)."""

BATCH = 8


def cupy_bmm(m, k, n, dtype, device):
    import cupy as cp

    cp.cuda.Device(int(device.partition(":")[2] or 0)).use()
    a = cp.random.rand(BATCH, m, k, dtype=cp.float32).astype(dtype)
    b = cp.random.rand(BATCH, k, n, dtype=cp.float32).astype(dtype)
    out = cp.empty((BATCH, m, n), dtype=dtype)

    def step():
        cp.matmul(a, b, out=out)

    return step, cp.cuda.runtime.deviceSynchronize


def torch_bmm(m, k, n, dtype, device):
    import torch

    dev = torch.device(device)
    dt = getattr(torch, dtype)
    a = torch.rand(BATCH, m, k, device=dev).to(dt)
    b = torch.rand(BATCH, k, n, device=dev).to(dt)
    out = torch.empty(BATCH, m, n, device=dev, dtype=dt)

    def step():
        torch.bmm(a, b, out=out)

    return step, lambda: torch.cuda.synchronize(dev)
