"""µs per `plan` call, R ∈ {1, 6, 64, 256, 1024}, γ = 7, on FRESH arrays, beside the frozen reference.

Every call gets a different conf array (a pool of 256 drawn up front, cycled), so a sort never sees the
input it saw last call. Columns: every policy through its public (checked) call; `dspark` through the
trusted fast path the simulator uses; `dspark` of the frozen pre-issue-15 implementation
(bench/reference_policies.py) and the speed-up over it; the plain-loop Algorithm 1.

Goals (issue 15): `dspark` ≤ 50 µs at R = 256 and ≤ 10 µs at R = 6 (fresh arrays). Last, the same on a
CUDA-graph staircase (b300x8-v4pro, capture limit 1024), where `dspark`'s bucket rule (issue 32) is active:
its cost beside the frozen greedy stop, which admits nothing there. Figures are CPU (process)
time per call; on a shared machine even those are inflated (caches, frequency), so read the ratios.

May import: numpy, the standard library, specsched, bench.
"""

from __future__ import annotations

import functools
import time
import warnings

import numpy as np

import specsched as S
from bench import reference_policies as ref
from bench.algorithm1_loop import dspark_loop

SIZES = (1, 6, 64, 256, 1024)
GAMMA = 7
POOL = 256


def _sps(cost: S.CostTable, requests: int, b: int) -> float:
    return cost.sps(b, requests)


def per_call_fresh_us(fn, pool: list, min_seconds: float = 0.2) -> float:
    """CPU µs per `fn(item)`, cycling over `pool` (one warm-up pass; then passes until `min_seconds`).

    Process (CPU) time, not wall time: on a shared machine the wall clock also counts other jobs' slices."""
    for item in pool:
        fn(item)
    n, start = 0, time.process_time()
    while True:
        for item in pool:
            fn(item)
        n += len(pool)
        elapsed = time.process_time() - start
        if elapsed >= min_seconds:
            return elapsed / n * 1e6


def _row(R: int, cost: S.CostTable, rng: np.random.Generator) -> dict:
    confs = [rng.beta(8, 2, size=(R, GAMMA)) for _ in range(POOL)]
    stale = rng.beta(8, 2, size=(R, GAMMA))
    row: dict = {"R": R}
    for name in S.POLICIES:
        pol = S.make_policy(name)
        kw = {"stale": stale} if pol.uses_stale else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row[name] = per_call_fresh_us(lambda c, pol=pol, kw=kw: pol(c, cost, **kw), confs)
    fast, slow = S.make_policy("dspark"), ref.make_policy("dspark")
    row["trusted"] = per_call_fresh_us(lambda c: fast.trusted(c, cost), confs)
    row["reference"] = per_call_fresh_us(lambda c: slow(c, cost), confs)
    lists = [c.tolist() for c in confs[:16]]
    sps = functools.partial(_sps, cost, R)
    row["loop"] = per_call_fresh_us(lambda c: dspark_loop(c, sps), lists, 0.1)
    for c, lst in zip(confs[:16], lists):  # the three implementations agree on these very inputs
        want = slow(c, cost).tolist()
        assert fast(c, cost).tolist() == want == fast.trusted(c, cost).tolist() == dspark_loop(lst, sps)
    return row


def _staircase(rng: np.random.Generator) -> None:
    """CPU µs per trusted `dspark` call on a padded table (the bucket rule at work) beside the greedy stop."""
    cost = S.builtin_cost("b300x8-v4pro").with_draft(0.002)
    fast, greedy = S.make_policy("dspark"), ref.make_policy("dspark")
    print("on a CUDA-graph staircase (b300x8-v4pro): trusted dspark (bucket rule) vs the greedy stop")
    for R in (8, 64, 256):
        confs = [rng.beta(8, 2, size=(R, GAMMA)) for _ in range(POOL)]
        ours = per_call_fresh_us(lambda c: fast.trusted(c, cost), confs)
        theirs = per_call_fresh_us(lambda c: greedy(c, cost), confs)
        admitted = float(np.mean([fast.trusted(c, cost).sum() for c in confs[:16]]))
        stalled = float(np.mean([greedy(c, cost).sum() for c in confs[:16]]))
        print(f"  R={R:>4}: {ours:7.1f} µs (verifies {admitted:6.1f} drafts)  greedy {theirs:7.1f} µs "
              f"(verifies {stalled:6.1f})")  # fmt: skip


def main() -> None:
    cost = S.builtin_cost("h200-v4flash").with_draft(0.002)
    rng = np.random.default_rng(np.random.SeedSequence(2026))
    rows = [_row(R, cost, rng) for R in SIZES]
    cols = [*S.POLICIES, "trusted", "reference", "loop"]
    print(f"CPU µs per plan call (γ = 7, h200-v4flash, Beta(8,2) conf, fresh arrays: a pool of {POOL})")
    print("  trusted = dspark's fast path without checks; reference = dspark before issue 15 (bench/)")
    print(f"{'R':>6} " + " ".join(f"{c:>13}" for c in cols) + f" {'ref/dspark':>11}")
    for row in rows:
        cells = " ".join(f"{row[c]:13.1f}" for c in cols)
        print(f"{row['R']:>6} {cells} {row['reference'] / row['dspark']:10.1f}x")
    _staircase(rng)
    by_r = {row["R"]: row for row in rows}
    for R, goal in ((256, 50), (6, 10)):
        r = by_r[R]
        print(
            f"goal: dspark ≤ {goal} µs at R={R} -> {r['dspark']:.1f} µs public, "
            f"{r['trusted']:.1f} µs trusted "
            f"(reference {r['reference']:.1f} µs, {r['reference'] / r['dspark']:.1f}x) [shared machine: "
            "absolute figures inflated]"
        )
