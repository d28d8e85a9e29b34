#!/bin/bash
# Issue 34 on the H200: compare of cupy, torch, jax and the driver floor (cuda-launch) at matmul, add and sum with
# the counted loop (kernels and API calls per call), each RUNS times, and whether their counts were identical;
# then an environment B whose sitecustomize.py adds one numpy.zeros call inside cupy.matmul (+1 per step in diff
# and the JSON summary, beside the anchored time difference), RUNS times.
# Run with this branch's flametool/ (FLAMETOOL_TREE, default: this script's repository) and cupti-python on the
# path; outputs under $OUT (default ./h200-counts-out). On the H200 (2026-12-01) a compare of the four cases at
# add or sum took about 43 s with --processes 2; matmul is compared at 1024^3 (compare's default matmul shape on
# a GPU is the seed's 65536,24576,12288, minutes a run).
#   RUNS=3 OPS="matmul add sum" SAMPLE=--no-sample bash benchmarks/h200_counts.sh
# (OP_RUNS and ENV_RUNS set the two kinds of compare apart; SAMPLE="--sample-seconds 3" samples every case too,
# which the threads other than the caller need; PROCESSES the timing processes of the op compares, default 1;
# STOP_AT, seconds since the epoch: start no compare after it, so that a device call ends with what it finished.
# The runs so far are packed into $OUT/runs.tgz after every compare, so a call cut short keeps them.)
set -u
TREE=${FLAMETOOL_TREE:-$(cd "$(dirname "$0")/.." && pwd)}
OUT=${OUT:-$PWD/h200-counts-out}
RUNS=${RUNS:-3}
OP_RUNS=${OP_RUNS:-$RUNS}  # compares of the ops
ENV_RUNS=${ENV_RUNS:-$RUNS}  # compares of environment B against A
OPS=${OPS:-"matmul add sum"}
SAMPLE=${SAMPLE:---no-sample}
LIBS=${LIBS:-cupy,torch,jax,cuda-launch}
ENVB=${ENVB:-1}  # 0: no environment B
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 PYTHONPATH=$TREE${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
W=$(mktemp -d)
cd "$W" || exit 1
python3 -c 'import flametool; print("flametool from", flametool.__file__)'
python3 -c 'import cupti, importlib.metadata as m; print("cupti-python", m.version("cupti-python"))' || echo "no cupti-python: API calls and kernels not counted"
mkdir -p envb/site
cat > envb/site/sitecustomize.py <<'PY'
import numpy as _np
try:
    import cupy as _cp
except ImportError:
    _cp = None
if _cp is not None:
    _orig, _zeros = _cp.matmul, _np.zeros

    def matmul(*args, **kwargs):
        _zeros(1)
        return _orig(*args, **kwargs)

    matmul.__wrapped__ = _orig
    _cp.matmul = matmul
PY
printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' "$W/envb/site" > envb/python
chmod +x envb/python
STOP_AT=${STOP_AT:-0}
late() { [ "$STOP_AT" != 0 ] && [ "$(date +%s)" -ge "$STOP_AT" ] && echo "=== STOP_AT passed: $1 not started"; }
pack() { tar czf "$OUT/runs${TAG:-}.tgz" runs; }
for i in $(seq 1 "$OP_RUNS"); do
  for op in $OPS; do
    late "compare --op $op, run $i" && break 2
    echo "=== compare --op $op, run $i"
    shape=""
    [ "$op" = matmul ] && shape="--shape 1024,1024,1024"
    timeout 300 python3 -m flametool compare --libs "$LIBS" --op "$op" $shape --processes "${PROCESSES:-1}" $SAMPLE \
        --out "runs/$op-$i"
    pack
  done
done
[ "$ENVB" = 1 ] || ENV_RUNS=0
for i in $(seq 1 "$ENV_RUNS"); do
  late "environment B, run $i" && break
  echo "=== environment B (one numpy.zeros more inside cupy.matmul), run $i"
  timeout 300 python3 -m flametool compare --libs cupy,torch --shape 1024,1024,1024 --env a=python3 \
      --env b="$W/envb/python" --processes 2 $SAMPLE --out "runs/env-$i"
  python3 -m flametool diff "runs/env-$i" --base cupy@a --head cupy@b
  python3 -m flametool summary "runs/env-$i" --format json > "runs/env-$i/summary.json"
  python3 - "runs/env-$i/summary.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc["pairs"]:
    if (p["base"], p["head"]) == ("cupy@a", "cupy@b"):
        print("JSON summary cupy@b - cupy@a:", [d["text"] for d in p["counts"]["differences"]],
              "anchored difference_us:", p["difference_us"])
PY
  pack
done
echo "=== counts identical over the runs (kinds python, api, kernel, copy, memset, device-alloc)"
python3 "$TREE/benchmarks/counts_identical.py" runs
pack
