"""The draft side of one replica's step: lagged confidence rows, adaptive depths, the drafter's intake.

Role: helpers of `sim.server.Replica._decide`, taking the replica (`rep`: its slot arrays, stale buffer
and deployment `rep.eng`) and the decoding slots `di` of this step (a slice or int64[r]).
- `stale_rows`: the confidences from `delay` steps earlier (full drafting with a stale-reading policy);
- `adaptive_step`: draft = "adaptive": depths planned from the lagged rows, the draft pass priced from them,
  verify lengths chosen within them;
- `draft_part`: the step's draft part, priced by the deployment's `StepCost` from the drafting requests,
  their `intake` (drafter.intake_seconds: the drafts each verified since it last drafted; on specbed's CPU
  engine a longer verify step makes the next draft pass dearer) and the longest context;
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
    step, plan = eng.step, eng.planned
    # The context's KV reads are a fixed (depth- and ℓ-independent) term, carried as draft seconds
    # (draft_s= prices it as plan.cost.with_draft would, keeping the policy's caches on plan.cost).
    context = plan.cost.kv_token_seconds * rep.kv_used
    budget, fixed = eng.max_batch_tokens, (context if context else None)
    depths = eng.policy.trusted_depths(stale, plan.cost, step.drafter, budget, fixed)
    draft_s = step.drafter.seconds(depths, step.cost)
    plan_s = draft_s if eng.plan is None else step.drafter.seconds(depths, plan.cost)
    lengths = eng.policy.trusted(conf, plan.cost, stale, budget, depths, plan_s + context)
    if eng.policy.delay:
        rep.hist.record(di, age, conf, depths=depths, prior=prior)
    return lengths, _draft(rep, depths.size, di[depths > 0], int(np.count_nonzero(depths)), depths, draft_s)


def draft_part(rep, di, r: int) -> float:
    """The draft part of a full-drafting step whose r decoding slots `di` all draft γ (`StepCost.draft`)."""
    return _draft(rep, r, di, r)


def _draft(rep, r: int, slots, drafting: int, depths=None, base: float | None = None) -> float:
    step = rep.eng.step
    taken = intake(rep, slots) if step.intake_s else 0
    longest = longest_context(rep) if step.draft_context_s else 0
    return step.draft(r, depths=depths, drafting=drafting, intake=taken, longest=longest, base=base)


def longest_context(rep) -> int:
    """The longest context among the replica's running requests (prompt + generated tokens): what an
    engine that pads every row's KV to the longest attends over (server / drafter.padded_context_seconds)."""
    n = rep.n
    return int(np.maximum.reduce(rep.inp[:n] + rep.gen[:n])) if n else 0


def intake(rep, slots) -> int:
    """The drafts the requests drafting in `slots` verified since they last drafted, each counted 1 + per
    step (drafter.intake_seconds, priced by `StepCost.draft`); then their counts restart."""
    taken = int(np.add.reduce(rep.pend[slots]))
    rep.pend[slots] = 0
    return taken
