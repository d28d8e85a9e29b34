#!/usr/bin/env bash
# Re-records the committed sample runs on a CUDA machine (they came from an NVIDIA H200), with flametool
# itself, then renders their reports. Run from the repository root: bash samples/record.sh [PREFIX]
# Default settings (paired timing in 5+ processes, 16 s of sampling at 25 Hz per case). Each run's wall
# time is printed; the seed shape's default run took about 3 minutes on an H200 (2026-11-30).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-h200}
ft() { local t0=$SECONDS; python3 -m flametool compare "$@"; echo "wall time: $((SECONDS - t0)) s"; }

# (c) a host-bound shape, where launch cost is the whole story, with the floors beside the libraries
ft --libs cupy,torch,cublas,cupy-graph,torch-graph --shape 1024,1024,1024 \
   --pair cupy:torch --pair cublas:cupy --pair cublas:torch --out "samples/$prefix-hostbound-1024"
# (a) the seed workload, the same dtype on both sides (fair by default)
ft --out "samples/$prefix-seed-fp16"
# (b) the seed as reported: CuPy float16 against PyTorch bfloat16 (the report flags the mismatch)
ft --dtype cupy=float16,torch=bfloat16 --out "samples/$prefix-seed-as-reported"
# (d) the sweep from 64 to the seed's size, with the layers at each host-bound size
t0=$SECONDS; python3 -m flametool sweep --sample --out "samples/$prefix-sweep-fp16"; echo "wall time: $((SECONDS - t0)) s"
# (e) the atlas of every op for the three GPU libraries (296 s on the H200 for samples/h200-atlas, 2026-12-02)
t0=$SECONDS; python3 -m flametool atlas --libs cupy,torch,jax --processes 3 --sample-seconds 4 --out "samples/$prefix-atlas"
echo "wall time: $((SECONDS - t0)) s"
# logs are for debugging a run, not for the samples
rm -f samples/"$prefix"-*/*.log samples/"$prefix"-atlas/*/*.log
du -sh samples/"$prefix"-*
