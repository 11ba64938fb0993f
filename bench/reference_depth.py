"""FROZEN REFERENCE: `specsched.depth.plan_depths` as of main c58ac71, before the issue-14b fast path.

Kept verbatim (only this docstring and the imports added) so `bench depth` can time today's implementation
side by side with the fast one and tests/specsched/test_depth_fast.py can check that both take identical
decisions. Not used by any package; do not edit.
"""

from __future__ import annotations

import numpy as np

from specsched.cost import CostTable
from specsched.depth import LEVELS, DraftCost
from specsched.policies import _check_budget, check_conf


def plan_depths(
    stale, cost: CostTable, draft: DraftCost, *, max_batch_tokens=None, slack: float = 0.0
) -> np.ndarray:
    """int64[R]: draft depth per request maximising Θ (module doc), from lagged confidences.

    stale: float64[R, γ] (rows from ≥ 1 step earlier, or priors); cost: the target's table (its own
    draft_seconds, if any, is a fixed cost); draft: how the draft pass is priced; max_batch_tokens caps
    R + Σ d_r (every drafted position could be verified); slack ∈ [0, 1): take the deepest plan whose Θ is
    within that fraction of the best (0 = the best plan itself). Raises ValueError on bad input.
    """
    s = check_conf(stale, "stale")
    slack = _check_slack(slack)
    budget = _check_budget(max_batch_tokens)
    R, gamma = s.shape
    if R == 0 or gamma == 0:
        return np.zeros(R, dtype=np.int64)
    # Position-major [γ, R] survival; a column loop is faster than an accumulate over the short axis.
    surv = np.empty((gamma, R))
    surv[0] = s[:, 0]
    for j in range(1, gamma):
        np.multiply(surv[j - 1], s[:, j], out=surv[j])
    level = (surv * LEVELS).astype(np.intp)  # 0..LEVELS; plan g drafts every candidate with level ≥ g
    flat = level.ravel()
    # Per plan, best first: index 0 drafts nothing, index i ≥ 1 drafts levels ≥ LEVELS + 1 − i.
    tokens = _suffix(np.bincount(flat, weights=surv.ravel(), minlength=LEVELS + 1))
    positions = _suffix(np.bincount(flat, minlength=LEVELS + 1))
    drafting = _suffix(np.bincount(level[0], minlength=LEVELS + 1))
    deepest = None
    if draft.kind == "autoregressive":
        deepest = _suffix(np.bincount(level.max(axis=1), minlength=LEVELS + 1))
    seconds = draft.price(positions, drafting, deepest, cost)
    seconds += cost.draft_seconds + cost.request_seconds * R
    seconds += cost.latency_range(R, R + int(positions[-1]))[positions]
    theta = (tokens + R) / seconds
    if budget is not None:
        theta[positions > budget - R] = -np.inf
    best = int(np.argmax(theta))  # first maximum: on equal Θ the plan with fewer drafts
    if slack and best:
        best = int(np.flatnonzero(theta >= theta[best] * (1.0 - slack))[-1])
    if best == 0:
        return np.zeros(R, dtype=np.int64)
    return np.count_nonzero(level >= LEVELS + 1 - best, axis=0).astype(np.int64)


def _check_slack(slack) -> float:
    if isinstance(slack, bool) or not isinstance(slack, (int, float)) or not (0.0 <= slack < 1.0):
        raise ValueError(f"slack: must be a number in [0, 1), got {slack!r}")
    return float(slack)


def _latency(cost: CostTable, b) -> np.ndarray:
    """cost.latency(b) for an int64 array b ≥ 0, via the table's dense range (one fancy index)."""
    b = np.asarray(b, dtype=np.int64)
    return cost.latency_range(0, int(b.max()))[b] if b.size else np.zeros(0)


def _suffix(per_level: np.ndarray) -> np.ndarray:
    """[LEVELS + 1] per-level totals -> [LEVELS + 1] per plan: 0, then Σ over levels ≥ LEVELS, ≥ LEVELS − 1,
    …, ≥ 1 (level 0, survival below 1/LEVELS, is never drafted)."""
    out = np.zeros(per_level.size, dtype=per_level.dtype)
    np.cumsum(per_level[:0:-1], out=out[1:])
    return out
