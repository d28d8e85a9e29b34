#!/usr/bin/env bash
# Re-records the committed sample runs on a CUDA machine (they came from an NVIDIA H200), with flametool
# itself, then renders their reports. Run from the repository root: bash samples/record.sh [PREFIX]
# Default settings (3 timed loops, 16 s of sampling at 25 Hz per case): about 6 minutes of GPU on an H200.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-h200}
ft() { python3 -m flametool compare "$@"; }

# (c) a host-bound shape, where launch cost is the whole story, with the floors beside the libraries
ft --libs cupy,torch,cublas,cupy-graph,torch-graph --shape 1024,1024,1024 --iters 5000 \
   --out "samples/$prefix-hostbound-1024"
# (a) the seed workload, the same dtype on both sides (fair by default)
ft --out "samples/$prefix-seed-fp16"
# (b) the seed as reported: CuPy float16 against PyTorch bfloat16 (the report flags the mismatch)
ft --dtype cupy=float16,torch=bfloat16 --out "samples/$prefix-seed-as-reported"
# logs are for debugging a run, not for the samples
rm -f samples/"$prefix"-*/*.log
du -sh samples/"$prefix"-*
