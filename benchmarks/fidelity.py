"""Can flametool's figures be trusted? One run prints the three checks of the GPU-runs issue:

1. flametool's timed phase vs the seed's plain loop (timing_vs_seed.py; target: within 5%);
2. the loop's time per call while py-spy samples it vs unsampled, per library (target: at most 1.5x),
   with the samples kept in the active loop (target: hundreds in a default run);
3. the closure of the layer sum: layers add up to the measured time per call (target: within 10%).

    python benchmarks/fidelity.py                 # CUDA: cupy and torch, host-bound 1024^3, default sampling
    python benchmarks/fidelity.py --device cpu    # the same checks for numpy and torch on the CPU
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import timing_vs_seed  # noqa: E402  (puts the checkout first on sys.path)

from flametool.analyse import attribution, dispatch  # noqa: E402


def main() -> None:
    parser = timing_vs_seed.build_parser()
    parser.add_argument("--rate", type=int, help="py-spy rate (default: flametool's default for the device)")
    args = timing_vs_seed.resolve(parser.parse_args())
    timing_vs_seed.timing_ratios(args)

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "flametool", "compare", "--device", args.device, "--libs", args.libs,
               "--shape", args.shape, "--dtype", args.dtype, "--iters", str(args.iters), "--out", str(out)]
        if args.rate:
            cmd += ["--rate", str(args.rate)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"flametool compare failed:\n{proc.stderr[-2000:]}")
        analysed = dispatch.analyse_dir(out)  # run.json holds the loops; the closure is computed from them and the stacks
    print("sampling perturbation and closure (flametool compare, default sampling):")
    num = lambda v, f: format(v, f) if v is not None else "n/a"  # noqa: E731
    for label, r in analysed.run.results.items():
        if r.error or r.profile is None:
            print(f"{label:6s} failed: {r.error}")
            continue
        prof, s = r.profile, r.sampling
        costs = analysed.cases.get(label)
        ratio = costs.closure.ratio if isinstance(costs, attribution.CaseCosts) else None
        slowdown = prof.slowdown  # sampled against the same process's own unsampled loops
        print(f"{label:6s} unsampled {num(prof.own_us_per_call, '7.2f')} us, sampled "
              f"{num(s.sampled_us_per_call if s else None, '7.2f')} us: slowdown {num(slowdown, '.2f')}x "
              f"({'ok' if slowdown is not None and slowdown <= 1.5 else 'OVER'} 1.5x) at "
              f"{s.rate_hz if s else '-'} Hz, {s.threads if s else '-'} threads; "
              f"{r.samples} samples in step(); layer sum / measured = "
              + (f"{ratio:.3f} ({'within' if abs(ratio - 1) <= 0.1 else 'OUTSIDE'} 10%)" if ratio else "n/a"))


if __name__ == "__main__":
    main()
