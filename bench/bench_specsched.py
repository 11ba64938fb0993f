"""µs per `plan` call for every policy, R ∈ {1, 16, 64, 256, 1024}, γ = 7, beside a plain-loop Algorithm 1.

Goal (issue 2): `dspark` ≤ 50 µs at R = 256 and ≥ 20× faster than the loop version there.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

import specsched as S
from bench.algorithm1_loop import dspark_loop
from bench.timing import per_call_us

SIZES = (1, 16, 64, 256, 1024)
GAMMA = 7


def _sps(cost: S.CostTable, requests: int, b: int) -> float:
    return cost.sps(b, requests)


def main() -> None:
    cost = S.builtin_cost("h200-v4flash").with_draft(0.002)
    rng = np.random.default_rng(np.random.SeedSequence(2026))
    rows = []
    for R in SIZES:
        conf = rng.beta(8, 2, size=(R, GAMMA))
        stale = rng.beta(8, 2, size=(R, GAMMA))
        row = {"R": R}
        for name in S.POLICIES:
            pol = S.make_policy(name)
            kw = {"stale": stale} if pol.uses_stale else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row[name] = per_call_us(lambda pol=pol, kw=kw, conf=conf: pol(conf, cost, **kw))
        conf_list = conf.tolist()
        sps = functools.partial(_sps, cost, R)
        row["loop"] = per_call_us(lambda conf_list=conf_list, sps=sps: dspark_loop(conf_list, sps), 0.3)
        assert dspark_loop(conf_list, sps) == S.make_policy("dspark")(conf, cost).tolist()
        rows.append(row)
    cols = [*S.POLICIES, "loop"]
    print("µs per plan call (γ = 7, h200-v4flash cost table, Beta(8,2) confidences)")
    print(f"{'R':>6} " + " ".join(f"{c:>13}" for c in cols) + f" {'loop/dspark':>12}")
    for row in rows:
        cells = " ".join(f"{row[c]:13.1f}" for c in cols)
        print(f"{row['R']:>6} {cells} {row['loop'] / row['dspark']:11.1f}x")
    r256 = next(r for r in rows if r["R"] == 256)
    print(
        f"goal: dspark ≤ 50 µs at R=256 -> {r256['dspark']:.1f} µs; "
        f"≥ 20x the loop -> {r256['loop'] / r256['dspark']:.1f}x"
    )
