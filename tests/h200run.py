"""A run directory rebuilt from the H200 reference stacks (tests/data/h200_*.folded.gz: py-spy --native on
plain CuPy and PyTorch loops, 256^3 fp16) and the figures of ../shared/reference/h200-2026-11-29/README.md.

Until flametool records its own GPU samples (samples/), this is the realistic input for the report: real
PyTorch and CuPy stacks, hundreds of distinct ones, C++ names thousands of characters long. It is not a
flametool run (no .prof files, no child timings): run.json says so in its command line.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from flametool.run import rundir
from flametool.run.record import DeviceInfo, Group
from runbuild import case_result, new_run

DATA = Path(__file__).parent / "data"

# (library, CPU us at the seed shape, GPU us there, CPU us at 256^3, cProfile inflation, sampled slowdown)
FIGURES = {
    "cupy": ("cupy", 26.5, 57400.0, 17.3, 1.21, 1.04),
    "torch": ("torch", 14.2, 60400.0, 14.6, 1.17, 3.9),
}


def make_h200_run(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    loops = json.loads((DATA / "h200_loop_samples.json").read_text())
    env = {
        "python": "3.12.3", "python_implementation": "CPython", "os": "Linux (H200 reference machine)",
        "cpu": "reference machine", "cpu_count": None,
        "gpu": {"device": "cuda:0", "driver": "580.159", "cuda_driver_api": "13.0", "visible": ["NVIDIA H200"]},
        "versions": {"cupy": "14.2.0", "torch": "2.11.0+cu130", "numpy": None, "py-spy": "0.4.3", "flametool": None},
    }
    data = new_run({"device": "cuda:0", "shape": [65536, 24576, 12288], "dtypes": {"cupy": "float16", "torch": "float16"},
                    "iters": 250, "rate_hz": 250, "sample_seconds": 5}, env)
    data.command = ["(rebuilt from the H200 reference stacks; not a flametool run)"]
    data.groups.append(Group(list(FIGURES), False, "rebuilt from reference figures measured in separate processes", 1))
    for label, (library, cpu, gpu, sampled_cpu, inflation, slowdown) in FIGURES.items():
        text = gzip.decompress((DATA / f"h200_{label}.folded.gz").read_bytes()).decode()
        (path / f"{label}.folded").write_text(text, encoding="utf-8")
        kept = sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.strip())
        r = case_result(label, cpu, kept, loops[label], shape=[65536, 24576, 12288], dtype="float16",
                        sample_shape=[256, 256, 256], sample_us=sampled_cpu, device="cuda:0", library=library, group=0,
                        device_info=DeviceInfo(device_name="NVIDIA H200", cuda_runtime="13.0"))
        r.timing.processes[0].gpu_us = [gpu]
        r.timing.host_bound = False
        r.timing.bound_note = "GPU time per call is far above CPU time per call: the launch queue hid the host cost"
        r.sample_shape_reason = "the requested shape is not host-bound, so launches were sampled at 256,256,256"
        r.profile.cprofile_us_per_call = sampled_cpu * inflation
        r.profile.sampling.rate_hz = 250
        r.profile.sampling.sampled_us_per_call = sampled_cpu * slowdown
        data.results[label] = r
    data.complete = True
    rundir.save(path, data)
    return path
