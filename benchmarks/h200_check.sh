#!/usr/bin/env bash
# The H200 checks, each one's output kept under $OUT (or /tmp/h200-check) as it goes, so a device call cut off
# at its limit still returns what finished. A device call runs at most 10 minutes: on 2026-12-04 the GPU tests took
# 325 s, compare 115-125 s, repro 80 s, startup about 70 s (more with values_apart.py and the --warm-shape runs),
# calibrate 1-1.5 min a run: `gpu compare` in one call, `startup compare repro` in another, and `envs` in another (as many processes as compare --env chooses, up to 24 a side, each timing three
# cases: 175-251 s a run at 6696e25, so plan on two calls; run it as
# `timeout 580 bash benchmarks/h200_check.sh envs` so that the call returns what finished). Cut off before its
# third run, it continues in a second call: copy the returned envs-runs/ into an ignored folder of the checkout
# (say .envs-runs), carry it, and run `python3 benchmarks/envs.py --out .envs-runs`: the complete runs are
# kept, the rest measured.
#   gpu-tests.txt      the GPU tests (pytest -m gpu), first: the code paths no CPU run takes
#   compare-floor.txt  benchmarks/compare_floor.py --extra='--iters 250' (issue 42: wall / floor, target 1.2)
#                      and noise.py --by-tenth on its run; COMPARE_RUNS=N runs it N times (compare-floor-2.txt, ...)
#   noise.txt          benchmarks/noise.py on that run (the ratio's spread between processes and within each)
#   floor-diff.txt     benchmarks/floor_diff.py: compare-floor-base.txt beside compare-floor.txt (and -2, ...)
#   compare-floor-base.txt  compare_floor.py of the code in .base (another commit's, carried): the same machine's
#                      figure before a change, in the same call (COMPARE_RUNS=N: -2, ... too)
#   ab                 compare-base and compare alternated, COMPARE_RUNS (default 2) runs of each: about 8 minutes
#                      for two of each (115-125 s a run), so `timeout 590 bash benchmarks/h200_check.sh ab` in a call alone
#   repro.txt          benchmarks/paired_repro.py at 4096^3 (GPU-bound: timed again at the host-bound sample
#                      shape in every process), --no-sample, three runs: do the ratios hold from run to run?
#   envs.txt           benchmarks/envs.py, three runs of three environments (issue 19's targets)
#   calibrate.txt      benchmarks/calibrate.py, issue 31's null and planted A/Bs (cal/: the runs, to carry
#                      into the next call as .cal-runs: `timeout 590 bash benchmarks/h200_check.sh calibrate`)
#   startup.txt        benchmarks/startup.py at the seed's shape alone and with 6 spares importing beside it, and
#                      benchmarks/setup_split.py at 1024^3, the context made first or not, a product at 64^3 or at
#                      1024^3 made first or not, and benchmarks/values_apart.py (the seed's values beside the
#                      imports, by the process's threads or a process of their own), and benchmarks/start_split.py
#                      (the parent's steps before its first child: compare_floor's "start" phase read 0.8-1.8 s)
#                      and benchmarks/handoff_split.py (a hand-off between timing processes, step by step: 0.26-0.33 s)
#                      (issue 42, item 1: where the first process's set-up and a later process's go; about 3 minutes)
# The wheels the device lacks (py-spy, snakeviz, tornado, cxxfilt, array-api-compat, websocket-client, cupti-python,
# nvidia-cuda-cupti, pyelftools: cupti-python imports it; without it the counted loops fell back to
# torch.profiler, and the workloads' GPU atlas test failed, 2026-12-04): `bash benchmarks/device_wheels.sh`
# downloads them into the ignored .whl/ and prints what would travel (at most 64 MiB). Each call starts with
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
# Run from the repository root, after those lines:
#   bash benchmarks/h200_check.sh [gpu|compare|compare-base|ab|repro|envs|calibrate|startup ...]  (default: gpu compare
#   repro envs, in order)
# Each of gpu and compare is cut off after GPU_TESTS_SECONDS (450) and COMPARE_SECONDS (300): a check that hangs
# leaves the others their time, and its output so far comes back ("rc 124"). On 2026-12-04 (session 12) a call of
# `gpu compare` never answered and its machine was given back with nothing returned.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/h200-check}
mkdir -p "$out"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
what=("$@")
[ ${#what[@]} -eq 0 ] && what=(gpu compare repro envs)
# the device's checkout is the session's first commit with the working tree copied over it: -dirty says so
head=$(git describe --always --dirty 2>/dev/null || echo "?")
# floor SIDE K: compare_floor.py's K-th run into compare-floor$SIDE[-K].txt, SIDE "" (this checkout) or -base (the
# code in .base); noise.py on its run, whose profiles are dropped (run.json and the report come back)
floor() {
    local side=$1 k=$2 tail code=$PWD label=$head
    tail=$([ "$k" = 1 ] && echo "" || echo "-$k")
    if [ "$side" = -base ]; then code=$PWD/.base; label=".base ($(cat .base/VERSION 2>/dev/null || echo "?"))"; fi
    local run="$out/compare$side-run$tail"
    { echo "# H200, $(date -u +%F), $label: python3 benchmarks/compare_floor.py --extra='--iters 250' (run $k)"
      (cd "$code" && PYTHONPATH="/tmp/site:$code" timeout -k 10 "${COMPARE_SECONDS:-300}" python3 \
          benchmarks/compare_floor.py --extra="--iters 250" --out "$run"); echo "rc $?"; } \
        > "$out/compare-floor$side$tail.txt" 2>&1
    python3 benchmarks/noise.py "$run" --by-tenth > "$out/noise$side$tail.txt" 2>&1
    rm -rf "$run"/*.prof "$run"/*.folded
}
for w in "${what[@]}"; do
    started=$SECONDS
    case "$w" in
    gpu)
        { echo "# H200, $(date -u +%F), $head: python3 -m pytest -q -m gpu -p no:randomly --durations=25 tests"
          timeout -k 10 "${GPU_TESTS_SECONDS:-450}" python3 -m pytest -q -m gpu -p no:randomly --durations=25 tests; echo "rc $?"; } \
            > "$out/gpu-tests.txt" 2>&1 ;;
    compare)
        # COMPARE_RUNS (default 1) runs one after the other: item 1's figure moved 1.207-1.238 between runs
        for k in $(seq 1 "${COMPARE_RUNS:-1}"); do floor "" "$k"; done ;;
    compare-base)
        # compare_floor.py of the code in .base, on this machine, in this call: the figure before a change, beside
        # `compare` on the change. Made here, in the checkout, by `bash benchmarks/make_base.sh [BASE]`, and carried
        # (its own folder first on every sys.path: the children's too)
        for k in $(seq 1 "${COMPARE_RUNS:-1}"); do floor -base "$k"; done ;;
    ab)
        # compare-base and compare alternated, COMPARE_RUNS (default 2) of each: the host's speed drifts within a
        # call, and one run of each is a before/after as wide as the change sought (floor-diff.txt: the means)
        for k in $(seq 1 "${COMPARE_RUNS:-2}"); do floor -base "$k"; floor "" "$k"; done ;;
    repro)
        { echo "# H200, $(date -u +%F), $head: python3 benchmarks/paired_repro.py --shape 4096,4096,4096 --extra=--no-sample"
          python3 benchmarks/paired_repro.py --shape 4096,4096,4096 --extra=--no-sample; echo "rc $?"; } \
            > "$out/repro.txt" 2>&1 ;;
    envs)
        { echo "# H200, $(date -u +%F), $head: python3 benchmarks/envs.py"
          python3 benchmarks/envs.py --out "$out/envs-runs"; echo "rc $?"; } > "$out/envs.txt" 2>&1
        find "$out/envs-runs" -name '*.log' -delete ;;
    calibrate)
        # issue 31: 10 null and 5 planted compare --env runs, resumable: runs of earlier calls carried in as
        # .cal-runs (copy the last call's returned cal/ there); no run starts after CAL_MINUTES (default 7: a run
        # took 1.2-2.0 min on 2026-12-01)
        { echo "# H200, $(date -u +%F), $head: python3 benchmarks/calibrate.py --nulls 10 --plants 5"
          python3 benchmarks/calibrate.py --seed-from .cal-runs --out "$out/cal" --nulls 10 --plants 5 \
              --max-minutes "${CAL_MINUTES:-7}"; echo "rc $?"; } > "$out/calibrate.txt" 2>&1 ;;
    startup)
        { echo "# H200, $(date -u +%F), $head: python3 benchmarks/startup.py [--spares 6]; setup_split.py [--context-first]"
          # a fresh machine's first imports read the libraries from disk (startup.py's first child: cupy 2.5 s, torch
          # 7 s, 2026-12-04, against 0.6 s for both in a compare after the GPU tests): read once before anything is timed
          python3 -c "import time; t = time.perf_counter(); import cupy, torch; print(f'warming the page cache: import cupy, torch: {time.perf_counter() - t:.1f} s')"
          python3 benchmarks/startup.py; python3 benchmarks/startup.py --apart; python3 benchmarks/startup.py --apart --pin
          python3 benchmarks/startup.py --spares 6 --apart
          python3 benchmarks/setup_split.py --runs 4; python3 benchmarks/setup_split.py --runs 4 --context-first
          python3 benchmarks/setup_split.py --runs 4 --context-first --warm-shape 64,64,64
          python3 benchmarks/setup_split.py --runs 4 --context-first --warm-shape 1024,1024,1024
          python3 benchmarks/values_apart.py --runs 3
          python3 benchmarks/start_split.py --runs 3  # the parent's steps before its first child, and that child's start
          python3 benchmarks/handoff_split.py --runs 2  # from one timing process's result to the next one's loops
          echo "rc $?"; } > "$out/startup.txt" 2>&1 ;;
    *) echo "h200_check.sh: unknown check '$w' (gpu, compare, compare-base, ab, repro, envs, calibrate, startup)"; exit 2 ;;
    esac
    echo "$w: $((SECONDS - started)) s"
done
# where both ran (compare-base and compare, in this call or an earlier one into the same $OUT): the change, phase by phase
# (each run of each: the base's first, the change's means against theirs)
if [ -f "$out/compare-floor-base.txt" ] && [ -f "$out/compare-floor.txt" ]; then
    bases=("$out/compare-floor-base.txt" $(ls "$out"/compare-floor-base-[0-9]*.txt 2>/dev/null))
    python3 benchmarks/floor_diff.py --before ${#bases[@]} "${bases[@]}" "$out/compare-floor.txt" \
        $(ls "$out"/compare-floor-[0-9]*.txt 2>/dev/null) > "$out/floor-diff.txt" 2>&1
fi
true
