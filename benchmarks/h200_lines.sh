#!/bin/bash
# Issues 39 and 40 on the H200: the GPU tests of lines, per-line counts, workloads and the timeline, then the runs
# a user would make, each one's output under $OUT as it finishes (a device call cut short keeps what finished):
#   gpu-tests.txt     pytest -m gpu: test_gpu_lines, test_gpu_workloads (but its atlas) first, then test_gpu, test_gpu_ops
#   mlp.txt           compare --workload mlp --libs cupy,torch,jax: per-line host time and counts, aligned
#   mlp-trace.txt     export --format perfetto of the mlp run's cupy and torch steps, read back with json
#   lines-1024.txt    compare cupy,torch at 1024^3: CuPy's Cython .cpp lines with us per call
#   atlas-wl.txt      atlas --workloads mlp,softmax,layernorm,adam --libs cupy,torch,jax, its test, each one's lines
#   runs.tgz          the run directories (run.json, sources.json, timelines, reports; no .prof/.folded)
# Run from the repository root after the wheels are installed (the device README's lines):
#   WHAT="tests mlp lines atlas" bash benchmarks/h200_lines.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/h200-lines}
mkdir -p "$out/runs"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
ft() { python3 -m flametool "$@"; }
pack() { (cd "$out" && tar czf runs.tgz --exclude='*.prof' --exclude='*.folded' --exclude='*.log' runs); }
for w in ${WHAT:-tests mlp lines atlas}; do
    t0=$SECONDS
    case "$w" in
    tests)
        # written as it goes, not through tail: a call cut off at its limit keeps what the tests printed
        # (2026-12-02: the lines and workloads tests took over 4 minutes with the workloads' GPU atlas)
        { echo "# H200 $(date -u +%F) $(git describe --always --dirty 2>/dev/null)"
          python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_lines.py tests/test_gpu_workloads.py -k "not atlas"
          python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py tests/test_gpu_ops.py
        } > "$out/gpu-tests.txt" 2>&1 ;;
    mlp)
        { ft compare --workload mlp --libs cupy,torch,jax --processes 3 --sample-seconds 4 --out "$out/runs/mlp"
          echo "rc $?"; ft summary "$out/runs/mlp" --format json > "$out/runs/mlp-summary.json"; } > "$out/mlp.txt" 2>&1
        { for c in cupy torch; do ft export "$out/runs/mlp" --format perfetto --case $c -o "$out/runs/mlp-$c.trace.json"; echo "rc $?"; done
          python3 - "$out/runs" <<'PY'
import json, sys, collections
for c in ("cupy", "torch"):
    try:
        t = json.load(open(f"{sys.argv[1]}/mlp-{c}.trace.json"))
    except Exception as e:
        print(c, "unreadable:", e); continue
    ev = t["traceEvents"] if isinstance(t, dict) else t
    ph = collections.Counter(e.get("ph") for e in ev)
    names = collections.Counter(e["name"] for e in ev if e.get("ph") == "X")
    bad = [e for e in ev if e.get("ph") == "X" and not all(k in e for k in ("ts", "dur", "pid", "tid"))]
    flows = collections.defaultdict(set)
    for e in ev:
        if e.get("ph") in ("s", "f"):
            flows[e.get("id")].add(e["ph"])
    print(c, "events", len(ev), "by ph", dict(ph), "X without ts/dur/pid/tid", len(bad),
          "flows paired", sum(1 for v in flows.values() if v == {"s", "f"}), "of", len(flows))
    print(c, "X names", names.most_common(12))
PY
        } > "$out/mlp-trace.txt" 2>&1 ;;
    lines)
        { ft compare --libs cupy,torch --shape 1024,1024,1024 --processes 5 --sample-seconds 6 --out "$out/runs/lines-1024"
          echo "rc $?"; ft summary "$out/runs/lines-1024" --format markdown; } > "$out/lines-1024.txt" 2>&1 ;;
    atlas)
        # the atlas once, then its test reads it (FLAMETOOL_GPU_ATLAS) and each workload's lines are printed
        { ft atlas --workloads mlp,softmax,layernorm,adam --libs cupy,torch,jax --processes 2 --sample-seconds 3 \
              --out "$out/runs/atlas-wl"; echo "rc $?"
          FLAMETOOL_GPU_ATLAS="$out/runs/atlas-wl" python3 -m pytest -q -s -m gpu -p no:cacheprovider \
              tests/test_gpu_workloads.py -k atlas
          for w in mlp softmax layernorm adam; do ft summary "$out/runs/atlas-wl/$w"; done
        } > "$out/atlas-wl.txt" 2>&1 ;;
    esac
    echo "$w: $((SECONDS - t0)) s" | tee -a "$out/times.txt"
    pack
done
