#!/usr/bin/env bash
# .base: another commit's code (default main), for `h200_check.sh compare-base` to run compare_floor.py on, beside
# `compare` on this checkout, on the same machine in the same call. Carry it: run's carry [".whl", ".base"].
#   bash benchmarks/make_base.sh [COMMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-main}
grep -qx '/.base/' .git/info/exclude 2>/dev/null || echo /.base/ >> .git/info/exclude  # ignored: it travels by carry
rm -rf .base && mkdir -p .base
git archive "$base" flametool templates benchmarks/compare_floor.py benchmarks/noise.py | tar -x -C .base
git rev-parse --short "$base" > .base/VERSION
echo ".base: $(cat .base/VERSION) ($base), $(du -sh .base | cut -f1)"
