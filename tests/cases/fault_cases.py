"""User cases that fail the way machines do: out of GPU memory, a slow set-up to interrupt, a message
full of markup."""

import time


class OutOfMemoryError(RuntimeError):
    """Named as torch.cuda.OutOfMemoryError is; its message is the one torch writes."""


def oom_case(m, k, n, dtype, device):
    raise OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which "
        "1.23 GiB is free. Including non-PyTorch memory, this process has 138.57 GiB memory in use. Of the "
        "allocated memory 137.50 GiB is allocated by PyTorch, and 12.00 MiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")


def slow_setup_case(m, k, n, dtype, device):
    print("slow_setup_case: setting up", flush=True)
    time.sleep(120)
    raise AssertionError("the test should have stopped this case")


def markup_case(m, k, n, dtype, device):
    raise ValueError("[/bold] <b>bold</b> [red]unclosed \"quoted\" 'x'")
