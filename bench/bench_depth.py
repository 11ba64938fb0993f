"""µs added to a policy call by depth planning (draft="adaptive"), R ∈ {16, 64, 256, 1024}, γ = 7.

Fresh inputs: every call gets a different (conf, stale) pair (a pool of Beta(8, 2) arrays drawn up front,
cycled); best of 9 passes over the pool (load-robust: the minimum is the pass least disturbed by other
work). Side by side in one run, so read the columns as ratios on a shared machine:

- checked (what a library user calls): the plain `dspark` call, the frozen pre-fast-path depth plan
  (bench/reference_depth.py), `depths`, and depths + the verify call on the masked confidences;
- trusted (what the simulator calls every step; `trusted_depths`, `AdaptivePolicy.trusted`): the plain
  `dspark.trusted` against trusted depths + trusted masked verify;
- simulator step at R = 256, as sim.server decides one step: full drafting (`trusted` on the replica's
  cached view), adaptive before this change (checked calls on two throw-away `with_draft` tables a step)
  and after (trusted calls, the step's draft price passed as a number), on a plain and a context-aware
  table (kv_token_seconds > 0, where the old per-step table also missed the plan's price cache).

Goal (issue 14): planning depths adds ≤ 15 µs to a policy call at R = 256, γ = 7. It is read on the
trusted pair (the simulator and the engine plan on that path, and full drafting's own per-step call there
is `trusted`, so it compares like with like); the checked pair is printed beside it.
"""

from __future__ import annotations

import time

import numpy as np

import specsched as S
from bench import reference_depth
from specsched.depth import DraftCost

SIZES = (16, 64, 256, 1024)
GAMMA = 7
POOL = 64


def best_us(fn, pool: list, passes: int = 9) -> float:
    """µs per `fn(*item)`: the fastest of `passes` passes over `pool` (after one warm-up pass)."""
    for item in pool:
        fn(*item)
    best = float("inf")
    for _ in range(passes):
        start = time.perf_counter()
        for item in pool:
            fn(*item)
        best = min(best, time.perf_counter() - start)
    return best / len(pool) * 1e6


def _rows(cost, view, drafter, full, adaptive, rng) -> dict:
    print(f"{'':>6} {'checked calls':-^44}   {'trusted calls':-^32}")
    print(
        f"{'R':>6} {'dspark':>8} {'ref plan':>8} {'depths':>8} {'adaptive':>8} {'added':>8}"
        f"   {'dspark':>7} {'depths':>7} {'adaptive':>8} {'added':>7}"
    )
    added = {}
    for R in SIZES:
        pool = [(rng.beta(8, 2, size=(R, GAMMA)), rng.beta(8, 2, size=(R, GAMMA))) for _ in range(POOL)]
        base = best_us(lambda c, s: full(c, view), pool)
        old = best_us(lambda c, s: reference_depth.plan_depths(s, cost, drafter, slack=0.1), pool)
        plan = best_us(lambda c, s: adaptive.depths(s, cost, drafter), pool)
        both = best_us(
            lambda c, s: adaptive(c, view, stale=s, depths=adaptive.depths(s, cost, drafter)), pool
        )
        t_base = best_us(lambda c, s: full.trusted(c, view), pool)
        t_plan = best_us(lambda c, s: adaptive.trusted_depths(s, cost, drafter), pool)
        t_both = best_us(
            lambda c, s: adaptive.trusted(c, view, s, None, adaptive.trusted_depths(s, cost, drafter)), pool
        )
        added[R] = (both - base, t_both - t_base)
        print(
            f"{R:>6} {base:8.1f} {old:8.1f} {plan:8.1f} {both:8.1f} {both - base:8.1f}"
            f"   {t_base:7.1f} {t_plan:7.1f} {t_both:8.1f} {t_both - t_base:7.1f}"
        )
    return added


def _sim_steps(cost, drafter, full, adaptive, rng) -> None:
    """One step's decision as sim.server takes it, R = 256 (kv: the context the replica holds)."""
    R, kv = 256, 256 * 1024
    pool = [(rng.beta(8, 2, size=(R, GAMMA)), rng.beta(8, 2, size=(R, GAMMA))) for _ in range(POOL)]
    print(f"simulator step at R = {R} (µs): full drafting | adaptive, old call pattern | adaptive, trusted")
    for label, table in (("plain", cost), ("context-aware", _kv(cost))):
        context = table.kv_token_seconds * kv
        view = table.with_draft(table.draft_seconds + context)  # the replica's cached view per R

        def before(c, s, table=table, context=context):
            fixed = table.with_draft(context) if context else table
            d = adaptive.depths(s, fixed, drafter)
            plan_s = drafter.seconds(d, table)
            return adaptive(c, table.with_draft(plan_s + context), stale=s, depths=d)

        def after(c, s, table=table, context=context):
            d = adaptive.trusted_depths(s, table, drafter, None, context if context else None)
            plan_s = drafter.seconds(d, table)
            return adaptive.trusted(c, table, s, None, d, plan_s + context)

        for c, s in pool[:8]:
            assert np.array_equal(before(c, s), after(c, s))  # the same decisions, only faster
        t_full = best_us(lambda c, s, view=view: full.trusted(c, view), pool)
        t_before, t_after = best_us(before, pool), best_us(after, pool)
        print(f"  {label:>14}: {t_full:8.1f} | {t_before:8.1f} | {t_after:8.1f}  ({t_after / t_before:.2f}×)")


def _kv(cost: S.CostTable) -> S.CostTable:
    """`cost` with a per-KV-token context cost (a context-aware table, as fitted ones are)."""
    return S.CostTable(
        cost.tokens,
        cost.seconds,
        mode=cost.mode,
        layers=cost.layers,
        name=f"{cost.name}+kv",
        draft_seconds=cost.draft_seconds,
        request_seconds=cost.request_seconds,
        kv_token_seconds=2e-9,
    )


def main() -> None:
    cost = S.builtin_cost("h200-v4flash")
    view = cost.with_draft(0.002)
    drafter = DraftCost("parallel", 5.0, 0.007)
    full = S.make_policy("dspark")
    adaptive = S.make_policy("dspark", draft="adaptive")
    rng = np.random.default_rng(np.random.SeedSequence(14))
    print(f"µs per call (γ = {GAMMA}, h200-v4flash, 5-layer parallel drafter, fresh Beta(8,2) inputs)")
    added = _rows(cost, view, drafter, full, adaptive, rng)
    _sim_steps(cost, drafter, full, adaptive, rng)
    checked, trusted = added[256]
    print(
        f"goal: depth planning adds ≤ 15 µs at R=256 -> trusted (the goal's reading) {trusted:.1f} µs, "
        f"checked {checked:.1f} µs (shared machine: compare columns)"
    )


if __name__ == "__main__":
    main()
