"""How long `py-spy record --native` takes beyond its --duration on a library's loop, and on which side of it:
the seconds to its "Sampling process" line (attaching: reading the native libraries' symbols) and to its exit.

    python benchmarks/pyspy_attach.py                 # CUDA: a cupy and a torch loop at 1024^3 float16
    python benchmarks/pyspy_attach.py --libs torch --device cpu

Each library's loop runs in a process of its own; py-spy is attached twice (the second time the page cache is
warm), --rate 25 --duration 4. On the H200 (2026-12-03): cupy 0.04-0.05 s to sampling, exit 3.6-4.4 s; torch
0.75-0.95 s to sampling, exit 4.8-5.3 s (benchmarks/results/h200-2026-12-03b/call1-pyspy-overhead.txt).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

LOOPS = {
    "cupy": ("import cupy as cp\n"
             "a = cp.ones((1024, 1024), cp.float16); b = a.copy(); o = a.copy()\n"
             "print('ready', flush=True)\n"
             "while True:\n"
             "    for _ in range(250): cp.matmul(a, b, out=o)\n"
             "    cp.cuda.runtime.deviceSynchronize()\n"),
    "torch": ("import torch, sys\n"
              "dev = sys.argv[1]\n"
              "a = torch.ones(1024, 1024, dtype=torch.float16 if dev != 'cpu' else torch.float32, device=dev)\n"
              "b = a.clone(); o = a.clone()\n"
              "print('ready', flush=True)\n"
              "while True:\n"
              "    for _ in range(250): torch.mm(a, b, out=o)\n"
              "    torch.cuda.synchronize() if dev != 'cpu' else None\n"),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--libs", default="cupy,torch")
    p.add_argument("--device", default="cuda")
    p.add_argument("--tries", type=int, default=2)
    args = p.parse_args()
    for lib in args.libs.split(","):
        loop = subprocess.Popen([sys.executable, "-c", LOOPS[lib], args.device], stdout=subprocess.PIPE, text=True)
        assert loop.stdout is not None
        loop.stdout.readline()
        time.sleep(1)
        try:
            for attempt in range(args.tries):
                t0 = time.monotonic()
                spy = subprocess.Popen(["py-spy", "record", "--pid", str(loop.pid), "--native", "--threads", "--rate",
                                        "25", "--duration", "4", "--format", "raw", "-o", "/dev/null"],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                assert spy.stdout is not None
                for line in spy.stdout:
                    if line.strip():
                        print(f"{lib} try {attempt}: {time.monotonic() - t0:6.2f} {line.rstrip()[:100]}", flush=True)
                spy.wait()
                print(f"{lib} try {attempt}: {time.monotonic() - t0:6.2f} exit {spy.returncode}", flush=True)
        finally:
            loop.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
