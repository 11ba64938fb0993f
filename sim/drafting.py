"""The draft side of one replica's step: lagged confidence rows, adaptive depths, the drafter's intake.

Role: helpers of `sim.server.Replica._decide`, taking the replica (`rep`: its slot arrays, stale buffer
and deployment `rep.eng`) and the decoding slots `di` of this step (a slice or int64[r]).
- `stale_rows`: the confidences from `delay` steps earlier (full drafting with a stale-reading policy);
- `adaptive_step`: draft = "adaptive": depths planned from the lagged rows, the draft pass priced from them,
  verify lengths chosen within them;
- `intake`: drafter.intake_seconds, a draft pass priced by the drafts each drafting request verified since
  it last drafted (on specbed's CPU engine a longer verify step makes the next draft pass dearer);
- `longest_context`: the longest running context, which a padded engine's steps scale with.

May import: numpy, the standard library.
"""

from __future__ import annotations

import numpy as np


def stale_rows(rep, di, conf: np.ndarray) -> np.ndarray:
    """Record `conf` for the decoding slots `di`; return their confidences from `delay` steps earlier.

    A request younger than `delay` decode steps has no such row: it passes its domain's population
    curve (`model.curves`, a constant known before any token is drafted), never its current row —
    sizing the batch from current confidences is exactly the lookahead bias the delay exists to avoid.
    """
    if isinstance(di, slice):
        di = np.arange(di.start, di.stop)
    age = rep.dsteps[di]  # decode steps since admission
    return rep.hist.exchange(di, age, conf, rep.eng.model.curves[rep.dom[di]])


def adaptive_step(rep, di, conf: np.ndarray) -> tuple[np.ndarray, float]:
    """Plan depths from the lagged rows (delay 0, the negative control: the current ones), price the
    draft pass from them, verify within them; record only drafted positions (the rest hold the prior).
    The policy uses its own table (server.policy_cost, when set); the step is timed with the hardware's.
    """
    eng = rep.eng
    if isinstance(di, slice):
        di = np.arange(di.start, di.stop)
    age = rep.dsteps[di]
    prior = eng.model.curves[rep.dom[di]]
    if eng.policy.delay == 0:
        stale = rep.hist.exchange(di, age, conf, prior)
    else:
        stale = rep.hist.lagged(di, age, prior)
    plan_cost = eng.cost if eng.policy_cost is None else eng.policy_cost
    # The context's KV reads are a fixed (depth- and ℓ-independent) term, carried as draft seconds
    # (draft_s= prices it as plan_cost.with_draft would, keeping the policy's caches on plan_cost).
    context = plan_cost.kv_token_seconds * rep.kv_used
    budget, fixed = eng.max_batch_tokens, (context if context else None)
    depths = eng.policy.trusted_depths(stale, plan_cost, eng.drafter, budget, fixed)
    draft_s = eng.drafter.seconds(depths, eng.cost)
    plan_s = draft_s if eng.policy_cost is None else eng.drafter.seconds(depths, plan_cost)
    lengths = eng.policy.trusted(conf, plan_cost, stale, budget, depths, plan_s + context)
    if eng.policy.delay:
        rep.hist.record(di, age, conf, depths=depths, prior=prior)
    if eng.intake_s:
        draft_s = intake(rep, di[depths > 0], draft_s)
    if eng.draft_context_s:  # every drafting row's context padded to the longest (drafter.padded_...)
        draft_s += eng.draft_context_s * int(np.count_nonzero(depths)) * longest_context(rep)
    return lengths, draft_s


def longest_context(rep) -> int:
    """The longest context among the replica's running requests (prompt + generated tokens): what an
    engine that pads every row's KV to the longest attends over (server / drafter.padded_context_seconds)."""
    n = rep.n
    return int(np.maximum.reduce(rep.inp[:n] + rep.gen[:n])) if n else 0


def intake(rep, slots, draft_s: float) -> float:
    """`draft_s` plus the intake of the requests drafting in `slots` (drafter.intake_seconds): each counts
    1 + the drafts it verified per step since it last drafted, one of them priced in the draft cost and
    `intake_ref` more on average; then their counts restart."""
    eng, pend = rep.eng, rep.pend[slots]
    extra = int(np.add.reduce(pend)) - pend.size * (1.0 + eng.intake_ref)
    rep.pend[slots] = 0
    return max(draft_s + eng.intake_s * extra, 0.0)
