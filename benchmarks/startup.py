"""Where the seconds before compare's first timed loop go (issue 21): the parent's start, then the first
child's steps at the seed shape one by one, in a fresh process, alone and with compare's spares importing
beside it.

    python benchmarks/startup.py                 # CUDA: cupy and torch at the seed shape
    python benchmarks/startup.py --spares 6      # with six processes importing cupy and torch beside it
    python benchmarks/startup.py --apart         # the values made in a process of their own (values.Apart), as
                                                 # a fresh timing process makes them since 2026-12-04
    python benchmarks/startup.py --apart --pin   # and page-locked before cupy's copy (an experiment)

Each line is seconds since that process started its step list (the child's steps as child.entry.main and the
built-in factories take them: the values made ahead while the libraries import, then each library's device,
operands and first product). "operand values ready" is said by a thread that waits for them, when they are:
beside the imports, not after them. The parent's part ends with the seconds from `flametool compare` to its
first child's first progress line (its own start, imports, machine record, and the child's start).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import sys, time
t0 = time.perf_counter()
def say(what):
    print(f"  {time.perf_counter() - t0:6.2f}  {what}", flush=True)
sys.path.insert(0, @ROOT@)
from flametool.workload import inputs, libraries, ops
say("import flametool's operands (numpy)")
shape = list(ops.SEED_SHAPE) if not @SHAPE@ else @SHAPE@
m, k, n = shape
inputs.prefetch_shape(shape, "float16", @APART@)  # the values made from here, as the first child does
import threading
def values_ready():
    a, b = inputs.host_operands(m, k, n, "float16")
    say(f"operand values ready ({a.size + b.size:,}, {'apart' if @APART@ else 'by its threads'})")
waiter = threading.Thread(target=values_ready)
waiter.start()
import cupy as cp
say("import cupy")
import torch
say("import torch")
cp.cuda.Device(0).use(); cp.empty(1); cp.cuda.runtime.deviceSynchronize()
say("cupy: CUDA context")
torch.cuda.set_device(0); torch.empty(1, device="cuda"); torch.cuda.synchronize()
say("torch: CUDA context")
waiter.join()
if @PIN@:  # page-locked where they are, so that the copy below goes by DMA instead of through the driver's staging
    for x in inputs.host_operands(m, k, n, "float16"):
        cp.cuda.runtime.hostRegister(x.ctypes.data, x.nbytes, 0)
    say("cupy: host values page-locked (cudaHostRegister)")
step, sync = libraries.cupy_matmul(m, k, n, "float16", "cuda:0"); sync()
say("cupy: operands on the GPU")
step(); sync()
say("cupy: first matmul")
step2, sync2 = libraries.torch_mm(m, k, n, "float16", "cuda:0"); sync2()
say("torch: operands on the GPU (copied from cupy's on the device)")
step2(); sync2()
say("torch: first mm")
"""

SPARE = "import cupy, torch, time; time.sleep(30)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spares", type=int, default=0, help="processes importing cupy and torch beside it")
    parser.add_argument("--shape", default="", help="M,K,N (default: the seed's)")
    parser.add_argument("--apart", action="store_true", help="the values made in a process of their own")
    parser.add_argument("--pin", action="store_true", help="the host values page-locked (cudaHostRegister) before "
                        "cupy copies them: does a registration and a DMA copy beat the copy from pageable memory?")
    args = parser.parse_args()
    shape = [int(x) for x in args.shape.split(",")] if args.shape else []

    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import flametool.commands.main"], cwd=ROOT, check=True)
    print(f"parent: python -c 'import flametool.commands.main': {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    from flametool.measure import machine, sampler
    machine.collect("cuda")
    print(f"parent: machine.collect('cuda'): {time.perf_counter() - t:.2f} s (with the imports)")
    t = time.perf_counter()
    try:
        sampler.check_available()
        print(f"parent: sampler.check_available(): {time.perf_counter() - t:.2f} s")
    except Exception as exc:  # noqa: BLE001 - a probe: say it and go on
        print(f"parent: sampler.check_available(): {exc}")

    probe = Path(tempfile.mkdtemp(prefix="flametool-startup-"))
    t = time.perf_counter()
    first = subprocess.Popen([sys.executable, "-m", "flametool", "compare", "--processes", "1", "--no-sample",
                              "--shape", "64,64,64", "--out", str(probe / "run"), "--progress", "all"],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert first.stdout is not None
    line = ""
    for line in first.stdout:  # its own notes first (no CUDA device, say): the child's line names process 1
        if "process 1/" in line:
            break
    line = line.strip()
    print(f"parent: `flametool compare` to its first child's first line: {time.perf_counter() - t:.2f} s ({line!r})")
    first.kill()  # its children end with it (procs.tie_to_parent)
    first.wait()
    shutil.rmtree(probe, ignore_errors=True)

    spares = [subprocess.Popen([sys.executable, "-c", SPARE]) for _ in range(args.spares)]
    print(f"child (the first process's steps), {args.spares} spares importing beside it:")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", CHILD.replace("@ROOT@", repr(str(ROOT))).replace("@SHAPE@", repr(shape)).replace("@APART@", repr(args.apart)).replace("@PIN@", repr(args.pin))], check=True)
    print(f"  {time.perf_counter() - t:6.2f}  the child's process, start to exit")
    for p in spares:
        p.kill()
        p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
