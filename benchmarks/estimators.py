"""Candidate estimators of an anchored change across processes, tried on stored runs (run.json files or run
directories) without measuring again: issue 31's choice of estimator for flametool.run.speedfit.

    python3 benchmarks/estimators.py /work/shared/reference/h200-2026-12-01-ab   # the seven H200 runs, 3 min

Per run (a `compare --env` run: its two environments; two runs of one build: the case in each) it prints
each estimator's ratio, 95% interval and half-width. Then the honesty checks, on pseudo A/Bs drawn from the
processes themselves:
- null: both sides drawn from the processes of one build (every null side, the plant's main side, the two
  runs of one build), n a side: the truth is 1; the share of intervals that exclude it, the median half-width;
- leaning null: the same, but A drawn mostly from the fast processes and B mostly from the slow ones (as a
  run that drew more slow processes on one side): the truth is still 1;
- plant: A from that pool, B from the plant run's planted side: the truth is the plant as measured in B's own
  processes (--plant, 1.086 by default: 8.6% of the call, the reference README), the share of intervals that
  hold it and the median error; "plant, own run": A from the plant run's own main side only (no other run's
  level in it).

Estimators (one figure per process unless said):
  unadjusted  mean log(case / anchor) per side, Welch t (flametool before issue 31)
  fit-med     OLS of log(median case / median anchor) on log(median anchor) + side, Student t from the fit
  fit-mean    the same on each process's mean of per-round logs
  boot-med    fit-med's estimate, interval a bootstrap over each side's processes (refitted)
  rounds-cl   OLS over every round (log ratio on the round's log anchor time + side), process-clustered SE
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flametool.run import speedfit  # noqa: E402

ESTIMATORS = ("unadjusted", "fit-med", "fit-mean", "boot-med", "rounds-cl")


def load(path: Path) -> dict:
    path = Path(path)
    return json.loads((path / "run.json" if path.is_dir() else path).read_text())


def rounds(doc: dict, label: str) -> list[list[float]]:
    """A case's per-process loops (us per call) at the shape its later processes timed (the sample shape)."""
    r = doc["results"][label]
    t = r.get("sample_timing") or r["timing"]
    return [p["cpu_us"] for p in t["processes"] if p.get("cpu_us")]


class Side:
    """One side: each process's rounds of the case and of the anchor."""

    def __init__(self, case: list[list[float]], anchor: list[list[float]], name: str = ""):
        pairs = [(c[:min(len(c), len(a))], a[:min(len(c), len(a))]) for c, a in zip(case, anchor) if c and a]
        self.case = [np.asarray(c, float) for c, _ in pairs]
        self.anchor = [np.asarray(a, float) for _, a in pairs]
        self.name = name
        self.y_med, self.x_med = speedfit.per_process(self.case, self.anchor, "median")
        self.y_mean, self.x_mean = speedfit.per_process(self.case, self.anchor, "mean")

    def take(self, idx) -> "Side":
        s = Side.__new__(Side)
        s.case, s.anchor, s.name = [self.case[i] for i in idx], [self.anchor[i] for i in idx], self.name
        s.y_med, s.x_med, s.y_mean, s.x_mean = self.y_med[idx], self.x_med[idx], self.y_mean[idx], self.x_mean[idx]
        return s

    def __len__(self) -> int:
        return len(self.case)


def rounds_clustered(a: Side, b: Side) -> tuple[float, float, float]:
    """OLS over rounds, clustered by process (CR1 sandwich), t with (processes - 1) df."""
    ys, xs, ss, gs = [], [], [], []
    for g, (side, s) in enumerate([(a, 0)] * len(a) + [(b, 1)] * len(b)):
        i = g if s == 0 else g - len(a)
        c, an = side.case[i], side.anchor[i]
        ys.append(np.log(c) - np.log(an)); xs.append(np.log(an)); ss.append(np.full(len(c), s)); gs.append(np.full(len(c), g))
    y, x, s, g = map(np.concatenate, (ys, xs, ss, gs))
    X = np.column_stack([np.ones_like(x), s, x])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    e = y - X @ coef
    bread = np.linalg.pinv(X.T @ X)
    meat = np.zeros((3, 3))
    G = len(a) + len(b)
    for k in range(G):
        m = g == k
        u = X[m].T @ e[m]
        meat += np.outer(u, u)
    n = len(y)
    cov = bread @ meat @ bread * (G / (G - 1)) * ((n - 1) / (n - 3))
    half = speedfit.t975(G - 1) * math.sqrt(cov[1, 1])
    return math.exp(coef[1]), math.exp(coef[1] - half), math.exp(coef[1] + half)


def estimate(name: str, a: Side, b: Side, seed: int = 0) -> tuple[float, float | None, float | None, dict]:
    """(ratio b / a relative to the anchor, low, high, extra) by one estimator."""
    if name == "unadjusted":
        r, lo, hi = speedfit.welch_log(a.y_med, b.y_med)
        return r, lo, hi, {}
    if name == "rounds-cl":
        return (*rounds_clustered(a, b), {})
    if name == "fit-mean":
        f = speedfit.fit(a.y_mean, a.x_mean, b.y_mean, b.x_mean)
    else:
        f = speedfit.fit(a.y_med, a.x_med, b.y_med, b.x_med, "bootstrap" if name == "boot-med" else "fit", seed)
    return f.ratio, f.low, f.high, {"slope": f.slope, "overlap": f.overlap, "fit": f}


def runs_in(paths: list[Path]) -> dict[str, Path]:
    out = {}
    for p in paths:
        p = Path(p)
        if p.is_dir() and not (p / "run.json").exists():
            out.update({f.name.removesuffix(".run.json"): f for f in sorted(p.glob("*.run.json"))})
            out.update({d.name: d for d in sorted(p.iterdir()) if (d / "run.json").exists()})
        else:
            out[p.name.removesuffix(".run.json")] = p
    return out


def sides_of(doc: dict, anchor_lib: str = "torch") -> list[tuple[str, Side]] | None:
    """The two environments of a `compare --env` run, each (name, Side) of the non-anchor case; None if not one."""
    envs = [e["name"] for e in doc.get("environments") or []]
    if len(envs) < 2:
        return None
    labels = list(doc["results"])
    out = []
    for env in envs[:2]:
        mine = [l for l in labels if l.endswith(f"@{env}")]
        anchor = next((l for l in mine if l.startswith(anchor_lib + "@")), None)
        case = next((l for l in mine if l != anchor and not l.startswith("unwrapped")), None)
        if anchor is None or case is None:
            return None
        out.append((env, Side(rounds(doc, case), rounds(doc, anchor), f"{case}/{anchor}")))
    return out


def part(side: Side, which: str) -> Side:
    """The side with each process's rounds cut to the first or the last half (what shorter processes would time:
    `--timed-seconds 0.5` keeps the first half)."""
    def cut(v: np.ndarray) -> np.ndarray:
        h = len(v) // 2
        return v[:h] if which == "first half" else v[h:] if which == "last half" else v
    return Side([list(cut(c)) for c in side.case], [list(cut(a)) for a in side.anchor], side.name)


def shorter(runs: dict[str, dict], anchor: str) -> None:
    """Issue 31's item 3, from the runs alone: would shorter processes (more of them a minute) do? Per
    `compare --env` run, fit-mean's residual spread between processes (the per-process sd the interval comes
    from) and its ratio, from all of each process's rounds, the first half (0.5 s a case) and the last half."""
    print("\n== shorter processes: fit-mean from all of each process's rounds, the first half, the last half "
          "(ratio; residual sd between processes)")
    for name, doc in runs.items():
        sides = sides_of(doc, anchor)
        if sides is None:
            continue
        cells = []
        for which in ("all", "first half", "last half"):
            a, b = part(sides[0][1], which), part(sides[1][1], which)
            f = speedfit.fit(a.y_mean, a.x_mean, b.y_mean, b.x_mean)
            cells.append(f"{which}: {f.ratio:.4f} sd {f.residual_sd:.2%}")
        print(f"{name:10} " + "; ".join(cells))


def fmt(r, lo, hi) -> str:
    if lo is None:
        return f"{r:.4f} (no interval)"
    return f"{r:.4f} ({lo:.4f}-{hi:.4f}) +-{(hi - lo) / 2 / r * 100:.1f}%"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="+", type=Path, help="run.json files, run directories, or folders of either")
    p.add_argument("--plant", type=float, default=1.086, help="the plant's true ratio (default 1.086)")
    p.add_argument("--draws", type=int, default=300, help="pseudo A/Bs per check (0: no checks)")
    p.add_argument("--per-side", default="5,8", help="processes a side in the checks")
    p.add_argument("--anchor", default="torch")
    args = p.parse_args()
    runs = {name: load(path) for name, path in runs_in(args.runs).items()}
    pool: list[Side] = []  # processes of one build, each a Side of one process
    planted: list[Side] = []
    plant_main: list[Side] = []  # the plant run's own main side
    print("== each run, b / a relative to the anchor (ratio, 95% interval, half-width)")
    print(f"{'run':10} " + " ".join(f"{e:34}" for e in ESTIMATORS) + " slope (fit-med, fit-mean)")
    singles = []
    for name, doc in runs.items():
        sides = sides_of(doc, args.anchor)
        if sides is None:
            case = next(l for l in doc["results"] if l != args.anchor)
            singles.append((name, Side(rounds(doc, case), rounds(doc, args.anchor), case)))
            continue
        row = [estimate(e, sides[0][1], sides[1][1]) for e in ESTIMATORS]
        print(f"{name:10} " + " ".join(f"{fmt(*r[:3]):34}" for r in row) + f" {row[1][3]['slope']:+.3f} {row[2][3]['slope']:+.3f}")
        is_plant = "plant" in name
        for k, (env, s) in enumerate(sides):
            target = planted if is_plant and k == 1 else pool
            target.extend(s.take([i]) for i in range(len(s)))
            if is_plant and k == 0:
                plant_main.extend(s.take([i]) for i in range(len(s)))
    for i in range(len(singles) - 1):
        (na, a), (nb, b) = singles[i], singles[i + 1]
        row = [estimate(e, a, b) for e in ESTIMATORS]
        print(f"{nb + '/' + na:10} " + " ".join(f"{fmt(*r[:3]):34}" for r in row) + f" {row[1][3]['slope']:+.3f} {row[2][3]['slope']:+.3f}")
    for _, s in singles:
        pool.extend(s.take([i]) for i in range(len(s)))
    if not pool:
        return 0
    shorter(runs, args.anchor)
    # why not one point per round: within a process, a round's own anchor time carries that round's noise, which
    # enters log(case / anchor) with the opposite sign
    within = []
    for s in pool + planted:
        x, y = np.log(s.anchor[0]), np.log(s.case[0]) - np.log(s.anchor[0])
        if np.ptp(x) > 0:
            within.append(np.polyfit(x - x.mean(), y - y.mean(), 1)[0])
    w = np.array(within)
    print(f"\nslope of log(case / anchor) on each round's log anchor time within one process, over {len(w)} "
          f"processes: median {np.median(w):+.3f}, quartiles {np.percentile(w, 25):+.3f} to {np.percentile(w, 75):+.3f}, "
          f"negative in {np.mean(w < 0):.0%}")
    if args.draws <= 0:
        return 0
    rng = np.random.default_rng(31)
    speed = np.array([s.x_med[0] for s in pool])
    slow = speed > np.median(speed)

    def merge(sides: list[Side]) -> Side:
        m = Side.__new__(Side)
        m.case = [c for s in sides for c in s.case]
        m.anchor = [a for s in sides for a in s.anchor]
        m.name = ""
        for k in ("y_med", "x_med", "y_mean", "x_mean"):
            setattr(m, k, np.concatenate([getattr(s, k) for s in sides]))
        return m

    def draw(n: int, lean: float | None = None, source: list[Side] | None = None) -> Side:
        src = source or pool
        if lean is None:
            idx = rng.choice(len(src), n, replace=False)
        else:  # lean: the share drawn from the slow half
            k = int(round(lean * n))
            idx = np.concatenate([rng.choice(np.flatnonzero(slow), k, replace=False),
                                  rng.choice(np.flatnonzero(~slow), n - k, replace=False)])
        return merge([src[i] for i in idx])

    print(f"\n== honesty on pseudo A/Bs ({args.draws} draws each; pool of one build: {len(pool)} processes; "
          f"planted side: {len(planted)} processes; plant truth {args.plant})")
    print(f"{'check':24} " + " ".join(f"{e:24}" for e in ESTIMATORS))
    for n in [int(v) for v in args.per_side.split(",")]:
        checks = [(f"null, {n} a side", lambda: (draw(n), draw(n)), 1.0),
                  (f"leaning null, {n} a side", lambda: (draw(n, 0.2), draw(n, 0.8)), 1.0)]
        if len(planted) >= n:
            checks.append((f"plant, {n} a side", lambda: (draw(n), draw(n, source=planted)), args.plant))
        if len(planted) >= n and len(plant_main) >= n:
            checks.append((f"plant, own run, {n} a side",
                           lambda: (draw(n, source=plant_main), draw(n, source=planted)), args.plant))
        for label, make, truth in checks:
            res = {e: [] for e in ESTIMATORS}
            for k in range(args.draws):
                a, b = make()
                for e in ESTIMATORS:
                    if e == "boot-med" and k >= 100:  # 2,000 refits a draw: the first 100 draws say enough
                        continue
                    r, lo, hi, _ = estimate(e, a, b, seed=int(rng.integers(1 << 30)))
                    if lo is not None:
                        res[e].append((r, lo, hi))
            cells = []
            for e in ESTIMATORS:
                v = np.array(res[e])
                miss = np.mean((v[:, 1] > truth) | (v[:, 2] < truth))
                half = np.median((v[:, 2] - v[:, 1]) / 2 / v[:, 0]) * 100
                err = np.median(np.abs(v[:, 0] - truth)) / (truth - 1) * 100 if truth != 1 else np.median(np.abs(v[:, 0] - 1)) * 100
                cells.append(f"miss {miss:4.0%} hw {half:3.1f}% " + (f"err {err:3.0f}%" if truth != 1 else f"|d| {err:3.1f}%"))
            print(f"{label:24} " + " ".join(f"{c:24}" for c in cells))
    print("miss: share of intervals without the truth (5% is honest); hw: median half-width; err: median |error| "
          "as a share of the plant; |d|: median |ratio - 1|; boot-med over the first 100 draws")
    return 0


if __name__ == "__main__":
    sys.exit(main())
