"""Time to answer on the CPU: the default `flametool compare` and a 4-size sweep, each against its target.

    python benchmarks/cpu_speed.py                 # both
    python benchmarks/cpu_speed.py --only sweep    # one of them
    python benchmarks/cpu_speed.py --extra='--pool-threads 1'

Each command runs once in a fresh process (its progress lines shown with the seconds since it started) and
its wall time is printed against the target of issue 21 on the 2-core machine: the default compare under
45 s, `flametool sweep --device cpu --sizes 8,32,128,512` under 60 s.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_floor import run_timed  # noqa: E402

COMMANDS = {
    "compare": (["compare", "--device", "cpu"], 45.0),
    "sweep": (["sweep", "--device", "cpu", "--sizes", "8,32,128,512"], 60.0),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=COMMANDS, help="run one of the two")
    parser.add_argument("--extra", default="", help="options added to both commands")
    args = parser.parse_args()
    figures = []
    with tempfile.TemporaryDirectory(prefix="flametool-cpu-speed-") as tmp:
        for name, (argv, target) in COMMANDS.items():
            if args.only and name != args.only:
                continue
            code, wall = run_timed([*argv, *shlex.split(args.extra), "--out", str(Path(tmp) / name)])
            figures.append(f"{name}: {wall:.1f} s (target: under {target:g} s; {wall / target:.2f} of it)"
                           + ("" if code == 0 else f"; exited with {code}"))
    print("\n".join(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
