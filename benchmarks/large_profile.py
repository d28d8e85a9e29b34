"""How long `flametool report` and `flametool export --format speedscope` take, and how much memory they
need, on large profiles: a synthetic run directory whose two cases each have a .folded file of N lines.

    python benchmarks/large_profile.py                      # 200,000 and 2,000,000 lines
    python benchmarks/large_profile.py --lines 200000       # one size
    python benchmarks/large_profile.py --keep DIR           # keep the generated run directories in DIR
    python benchmarks/large_profile.py --keep DIR --reuse   # measure on what an earlier --keep left there

The stacks are what `py-spy record --native` writes for a CuPy or PyTorch loop, made up but shaped like the
real ones (tests/data/h200_*.folded.gz): 30-60 frames deep; the case's Python frames with line numbers,
Cython frames in generated .cpp files, PyTorch's long C++ template names, header frames, runs of unnamed
addresses in libcublas/libcublasLt/libcuda, libc at the leaves; a few hundred thousand distinct call paths
(Zipf-weighted, as a long run samples a few paths often and many rarely), and every line a distinct raw
stack (line numbers and addresses vary), counts mostly 1. Generation is seeded: the same N, the same file.

Each command runs in a fresh process, started from a small wrapper that prints the peak resident memory and
CPU time of its child (resource.getrusage(RUSAGE_CHILDREN): ru_maxrss, ru_utime + ru_stime), so the figures
are the command's own; the wall time is the benchmark's clock (on a shared machine, compare the CPU time).
A large run is read by worker processes: the CPU time is theirs and the command's together, ru_maxrss is the
largest one process reached, and "all processes together" is the peak of their sum, sampled from /proc.
Target: a 2,000,000-line file in under 30 s and under 1 GB for each command.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from runbuild import make_run  # noqa: E402  (run.json as rundir writes it)

WRAPPER = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
           "r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_maxrss, r.ru_utime + r.ru_stime, rc)")


# --- the vocabulary: frames as py-spy writes them ----------------------------------------------------------

def _hex(rng: random.Random, base: int) -> str:
    return f"0x{base + rng.randrange(0x2000000):x}"


class Vocabulary:
    def __init__(self, rng: random.Random) -> None:
        words = ["matmul", "tensordot", "dot", "gemm", "copy", "astype", "view", "reshape", "transpose", "empty",
                 "broadcast", "reduce", "elementwise", "launch", "stream", "device", "memory", "alloc", "cast",
                 "contiguous", "strides", "shape", "dtype", "itemsize", "size", "ndim", "check", "prepare", "call"]
        self.rng = rng
        pkgs = ["torch/nn/modules", "torch/_tensor", "cupy/_core", "cupy/linalg", "cupyx/scipy", "numpy/_core",
                "mylib/models", "mylib/ops"]
        # Python: function (pkg/module.py:LINE), each function sampled at a few lines
        self.python = []
        for i in range(400):
            func, module = f"{rng.choice(words)}_{i}", f"{rng.choice(pkgs)}/mod_{i % 97}.py"
            self.python.append(tuple(f"{func} ({module}:{line})" for line in rng.sample(range(10, 3000), rng.randint(2, 6))))
        self.python = [(f"_Wrapper.__call__ ({rng.choice(pkgs)}/_gufuncs.py:{l})",) for l in range(600, 640, 7)] + self.python
        # Cython in generated C++ files (two frames for a def: the wrapper and its implementation, one name)
        cpp = ["core", "_routines_linalg", "_kernel", "_reduction", "cublas", "runtime", "stream", "memory",
               "_routines_math", "_scalar", "_carray", "internal", "_dtype", "_memory_range", "raw"]
        self.cython = []
        for i in range(600):
            stem = rng.choice(cpp)
            func = f"{stem}_{rng.choice(words)}_{i}" if rng.random() < 0.5 else f"{rng.choice(words)}{i}"
            lines = rng.sample(range(1000, 90000), rng.randint(2, 5))
            frames = tuple(f"{func} ({stem}.cpp:{l})" for l in lines)
            self.cython.append(frames if rng.random() < 0.7 else tuple(f"{f};{f}" for f in frames))
        self.cython += [(f"__pyx_pw_4cupy_5_core_4core_10_ndarray_base_{i}{w} (core.cpp:{1000 + i})",)
                        for i, w in enumerate(words)]
        # PyTorch's C++: namespaces and templates, hundreds of characters at times
        ns = ["at::native", "at::_ops", "c10::impl", "torch::autograd", "at::cuda::blas", "c10::cuda", "at::detail",
              "torch::autograd::VariableType::(anonymous namespace)", "at::(anonymous namespace)", "torch::ADInplaceOrView"]
        libs = ["libtorch_cpu.so", "libtorch_cuda.so", "libtorch_python.so", "libc10.so", "libc10_cuda.so"]
        args = "at::Tensor const&, at::Tensor const&, at::Tensor&"
        self.cpp = []
        for i in range(900):
            name = f"{rng.choice(ns)}::{rng.choice(words)}_{i}"
            r = rng.random()
            if r < 0.08:
                name = (f"c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
                        f"c10::CompileTimeFunctionPointer<at::Tensor& (c10::DispatchKeySet, {args}), &{name}>, "
                        f"at::Tensor&, c10::guts::typelist::typelist<c10::DispatchKeySet, {args}> >, "
                        f"at::Tensor& (c10::DispatchKeySet, {args})>::call")
            elif r < 0.3:
                name = f"{name}<c10::Half, {rng.choice(['float', 'c10::BFloat16', 'double'])}>"
            elif r < 0.45:
                name = f"torch::autograd::THPVariable_{rng.choice(words)}_{i}"
            self.cpp.append((f"{name} ({rng.choice(libs)})",))
        headers = ["intrusive_ptr.h", "TensorImpl.h", "stl_vector.h", "object.h", "cublas_api.h", "Dispatcher.h"]
        inlined = ["c10::intrusive_ptr<c10::TensorImpl>::reset_", "Py_DECREF", "std::vector<long, std::allocator<long> >::operator[]",
                   "cublasGemmEx", "c10::Dispatcher::call", "c10::TensorImpl::sizes", "PyTuple_GET_ITEM"]
        self.inline = [tuple(f"{func} ({h}:{l})" for l in rng.sample(range(10, 900), 3))
                       for h in headers for func in rng.sample(inlined, 3)]
        # libraries: named entry points, then runs of unnamed addresses (a pool per library)
        self.entries = {"libcublas.so.13": ["cublasGemmEx", "cublasSetStream_v2", "cublasSetWorkspace_v2", "cublasLtMatmul"],
                        "libcublasLt.so.13": ["cublasLtHSHMatmul", "cublasLtMatmulAlgoGetHeuristic", "cublasLtMatmulDescCreate"],
                        "libcuda.so.1": ["cuLaunchKernel", "cuStreamGetCaptureInfo", "cuEventRecord", "cuMemAlloc_v2"],
                        "libcudart.so.13": ["cudaLaunchKernel", "cudaGetDevice", "cudaStreamGetCaptureInfo"]}
        self.addresses = {lib: [_hex(rng, 0x7F0000000000 + i * 0x10000000) + f" ({lib})" for _ in range(2500)]
                          for i, lib in enumerate(self.entries)}
        self.libc = [(f"{n} (libc.so.6)",) for n in ["malloc", "free", "pthread_mutex_lock", "pthread_mutex_unlock",
                                                      "memcpy", "__tls_get_addr", "sprintf", "pthread_once"]]
        self.libc += [tuple(_hex(rng, 0x7FA650E00000) + " (libc.so.6)" for _ in range(40))]

    def address_run(self, lib: str) -> tuple[str, ...]:
        """Variants of one visit to a library: 1-8 unnamed addresses in a row (analysis makes them one frame)."""
        pool = self.addresses[lib]
        return tuple(";".join(self.rng.sample(pool, self.rng.randint(1, 8))) for _ in range(24))


# --- call paths: segments chosen level by level, each level Zipf-weighted among a few options ------------------

def zipf_cum(n: int, s: float = 1.1) -> list[float]:
    return list(itertools.accumulate(1 / (i + 1) ** s for i in range(n)))


class Generator:
    def __init__(self, seed: int) -> None:
        rng = self.rng = random.Random(seed)
        v = self.v = Vocabulary(rng)
        root = ("<lambda> (seed_repro.py:84)",)
        # level 1: the Python chain from the loop's step (2-8 frames)
        self.level1 = [[root] + rng.sample(v.python, rng.randint(2, 8)) for _ in range(300)]
        # level 2: binding, dispatcher, Cython and header frames (8-24)
        self.level2 = [rng.sample(v.cpp, rng.randint(4, 14)) + rng.sample(v.cython, rng.randint(0, 8))
                       + rng.sample(v.inline, rng.randint(0, 2)) for _ in range(1500)]
        for chain in self.level2:
            rng.shuffle(chain)
        # level 3: into the libraries: an entry point, then runs of addresses, maybe another library (6-16 slots)
        self.level3 = []
        for _ in range(3000):
            chain = []
            for lib in rng.sample(list(v.entries), rng.randint(1, 3)):
                chain.append((f"{rng.choice(v.entries[lib])} ({lib})",))
                chain += [v.address_run(lib) for _ in range(rng.randint(1, 4))]
            self.level3.append(chain)
        # level 4: the leaf, libc (0-3)
        self.level4 = [rng.sample(v.libc, rng.randint(0, 3)) for _ in range(100)]
        # which options each choice leads to
        self.next1 = [rng.sample(range(len(self.level2)), 24) for _ in self.level1]
        self.next2 = [rng.sample(range(len(self.level3)), 16) for _ in self.level2]
        self.next3 = [rng.sample(range(len(self.level4)), 6) for _ in self.level3]
        self.cum = {n: zipf_cum(n) for n in (len(self.level1), 24, 16, 6)}

    def pick(self, n: int) -> int:
        cum = self.cum[n]
        return bisect.bisect(cum, self.rng.random() * cum[-1])

    def line(self) -> str:
        i = self.pick(len(self.level1))
        j = self.next1[i][self.pick(24)]
        k = self.next2[j][self.pick(16)]
        l = self.next3[k][self.pick(6)]
        bits = self.rng.getrandbits(128)
        slots = self.level1[i] + self.level2[j] + self.level3[k] + self.level4[l]
        frames = ";".join([slot[(bits >> (n * 3 % 120)) % len(slot)] for n, slot in enumerate(slots)])
        count = 1 if bits & 0xF else 1 + (bits >> 121) % 12
        return f"{frames} {count}\n"


def generate(path: Path, lines: int, seed: int) -> dict:
    gen = Generator(seed)
    seen: set[int] = set()
    depth = samples = written = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < lines:
            line = gen.line()
            h = hash(line.rpartition(" ")[0])
            if h in seen:  # py-spy writes each distinct stack once, with its count
                continue
            seen.add(h)
            fh.write(line)
            written += 1
            depth += line.count(";") + 1
            samples += int(line.rsplit(" ", 1)[1])
    return {"lines": lines, "mean_depth": depth / lines, "samples": samples, "bytes": path.stat().st_size}


def run_dir(where: Path, lines: int) -> tuple[Path, dict]:
    """A run directory with two sampled cases (cupy-like and torch-like stacks), N lines each, as make_run builds them."""
    where.mkdir(parents=True, exist_ok=True)
    info = {}
    for label, seed in (("cupy", 1), ("torch", 2)):
        info[label] = generate(where / f"{label}.gen", lines, seed)
    texts = {label: "" for label in info}
    run = make_run(where / "run", {label: (texts[label], us, 0) for label, us in (("cupy", 15.2), ("torch", 10.2))})
    data = json.loads((run / "run.json").read_text())
    for label in info:  # the real files, moved in after make_run wrote its run.json around empty ones
        shutil.move(str(where / f"{label}.gen"), run / f"{label}.folded")
        data["results"][label]["profile"]["sampling"]["kept_samples"] = info[label]["samples"]
    (run / "run.json").write_text(json.dumps(data, indent=2))
    (where / INFO).write_text(json.dumps(info))  # written last: its presence means the directory is whole
    return run, info


INFO = "generated.json"


def reused(where: Path) -> tuple[Path, dict] | None:
    """The run directory and figures an earlier run_dir left in `where`, if it finished."""
    try:
        return where / "run", json.loads((where / INFO).read_text())
    except (OSError, ValueError):
        return None


def tree_rss(root: int) -> int:
    """Resident memory in KiB of the processes below `root` together (flametool and its workers), from /proc."""
    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue  # ended meanwhile
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        for kid in [p for p, pp in parent.items() if pp == pid]:
            try:
                total += int(Path(f"/proc/{kid}/statm").read_text().split()[1]) * PAGE_KIB
            except (OSError, ValueError, IndexError):
                continue
            todo.append(kid)
    return total


PAGE_KIB = 4


def measure(args: list[str]) -> tuple[float, float, int, int, int]:
    """(wall seconds, CPU seconds, peak resident memory in KiB of the largest process, peak of all of its
    processes together (sampled every 0.25 s; 0 where /proc is not there), exit code) of `python -m flametool
    ARGS`, run from this checkout in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", WRAPPER, sys.executable, "-m", "flametool", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    together = 0
    while proc.poll() is None:
        if Path("/proc").is_dir():
            together = max(together, tree_rss(proc.pid))
        time.sleep(0.25)
    seconds = time.perf_counter() - t0
    rss, cpu, rc = proc.stdout.read().split()
    return seconds, float(cpu), int(rss), together, int(rc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", default="200000,2000000", help="comma-separated sizes (default 200000,2000000)")
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it (default: a temporary one)")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: measure on the run directories already generated there (generating what is missing)")
    args = parser.parse_args()
    if args.reuse and not args.keep:
        parser.error("--reuse needs --keep DIR")
    sizes = [int(x) for x in args.lines.split(",")]
    tmp = None if args.keep else tempfile.mkdtemp(prefix="flametool-large-")
    base = args.keep or Path(tmp)
    try:
        for n in sizes:
            t0 = time.perf_counter()
            got = reused(base / f"lines-{n}") if args.reuse else None
            how = "reused"
            if got is None:
                shutil.rmtree(base / f"lines-{n}", ignore_errors=True)
                got = run_dir(base / f"lines-{n}", n)
                how = f"generated in {time.perf_counter() - t0:.0f} s"
            run, info = got
            i = info["cupy"]
            print(f"{n:,} lines per case: {i['bytes'] / 1e6:,.0f} MB per .folded, {i['mean_depth']:.1f} frames deep on "
                  f"average, {i['samples']:,} samples; {how}", flush=True)
            for name, cmd in (("report", ["report", str(run), "-o", str(base / f"report-{n}.html")]),
                              ("export speedscope", ["export", str(run), "--format", "speedscope",
                                                     "-o", str(base / f"export-{n}.json")])):
                seconds, cpu, rss, together, rc = measure(cmd)
                status = "" if rc == 0 else f"  (exit code {rc})"
                print(f"  {name:18s} {seconds:7.1f} s ({cpu:.1f} s CPU)  peak {rss / 1024:7,.0f} MiB"
                      f" (all processes together {together / 1024:,.0f} MiB){status}", flush=True)
            if not args.keep:
                shutil.rmtree(base / f"lines-{n}")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
