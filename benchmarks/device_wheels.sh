#!/usr/bin/env bash
# The wheels the H200 lacks, for Python 3.12, downloaded into the ignored .whl/ that each device call carries
# (benchmarks/h200_check.sh says how they are installed there). What travels to the device (tracked files and
# the carried .whl) may be at most 64 MiB: on 2026-12-04 the tracked files were 43.7 MB and these wheels 23 MB,
# and the call was refused. So nvidia-cuda-cupti's wheel is kept without what flametool's counting never loads:
# libnvperf_host/libnvperf_target (CUPTI opens them for its range profiler only), libcheckpoint, libpcsamplingutil
# and the C headers: 13.1 MB -> 2.3 MB. Not yet run on the H200 in this form (the first call with it was lost with
# its machine): if cupti-python's counting fails there, run this with --full and carry less of something else.
#   bash benchmarks/device_wheels.sh [--full]
# Prints the size that would travel.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
mkdir -p .whl
wheels=(py-spy==0.4.3 snakeviz==2.2.2 tornado==6.6.1 cxxfilt==0.3.0 array-api-compat==1.16.0
        websocket-client==1.9.2 cupti-python==13.4.0 nvidia-cuda-cupti==13.4.92 pyelftools==0.33)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_25_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 -d .whl "${wheels[@]}"
if [ "${1:-}" != "--full" ]; then
    python3 - <<'EOF'
import glob
import zipfile
from pathlib import Path

DROP = ("/libnvperf_host.so", "/libnvperf_target.so", "/libcheckpoint.so", "/libpcsamplingutil.so")
for wheel in glob.glob(".whl/nvidia_cuda_cupti-*.whl"):
    src = zipfile.ZipFile(wheel)
    keep = [i for i in src.infolist() if not i.filename.endswith(DROP) and "/include/" not in i.filename]
    if len(keep) == len(src.infolist()):
        continue  # slimmed already
    data = {i.filename: src.read(i) for i in keep}
    record = next(name for name in data if name.endswith(".dist-info/RECORD"))
    lines = [line for line in data[record].decode().splitlines() if line.split(",")[0] in data]
    data[record] = ("\n".join(lines) + "\n").encode()
    tmp = Path(wheel + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for info in keep:
            out.writestr(info, data[info.filename])
    tmp.replace(wheel)
    print(f"{wheel}: kept {len(keep)} of {len(src.infolist())} files")
EOF
fi
tracked=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
whl=$(du -cb .whl/*.whl | tail -1 | cut -f1)
echo "would travel: tracked $((tracked / 1048576)) MiB + .whl $((whl / 1048576)) MiB = $(((tracked + whl) / 1048576)) MiB (limit 64)"
