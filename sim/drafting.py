"""The draft side of one replica's step: lagged confidence rows, adaptive depths, the drafter's intake.

Role: helpers of `sim.server.Replica._decide`, taking the replica (`rep`: its slot arrays, `Planner` and
deployment `rep.eng`) and the decoding slots `di` of this step (a slice or int64[r]).
- `decide`: the step's `specsched.StepDecision` from the replica's planner (the one planning sequence,
  shared with the engine): lagged rows, depths with draft = "adaptive", verify lengths;
- `draft_part`: the step's draft part, priced by the deployment's `StepCost` from the drafting requests,
  their `intake` (drafter.intake_seconds: the drafts each verified since it last drafted; on specbed's CPU
  engine a longer verify step makes the next draft pass dearer) and the longest context;
- `longest_context`: the longest running context, which a padded engine's steps scale with.

May import: numpy, the standard library, `specsched` (planner).
"""

from __future__ import annotations

import numpy as np

from specsched.planner import StepDecision


def decide(rep, di, r: int, conf: np.ndarray) -> StepDecision:
    """The step's decision for its r decoding slots `di` (conf float64[r, γ]) from the replica's `Planner`.

    A stale-reading policy is given the rows of `delay` steps earlier; a request younger than that passes
    its domain's population curve (`model.curves`, a constant known before any token is drafted), never
    its current row — sizing the batch from current confidences is exactly the lookahead bias the delay
    exists to avoid. With draft = "adaptive" depths are planned from those rows before the verify lengths
    (the acceptance model drew all γ positions; only the drafted ones are recorded) on the policy's own
    table (cost.policy_table, when set), the context's KV reads a fixed term of it; the step itself is
    timed with the hardware's (`draft_part`).
    """
    eng, planner = rep.eng, rep.planner
    if planner.rows is None:
        return planner.after_draft(conf, None, None, None, eng.view(r, rep.kv_used))
    slots = np.arange(di.start, di.stop) if isinstance(di, slice) else di
    age, prior = rep.dsteps[slots], eng.model.curves[rep.dom[slots]]
    if not planner.adaptive:
        return planner.after_draft(conf, slots, age, prior, eng.view(r, rep.kv_used))
    table = eng.planned.cost
    # The context's KV reads are a fixed (depth- and ℓ-independent) term, carried as draft seconds
    # (priced as table.with_draft would, keeping the policy's caches on the table).
    context = table.kv_token_seconds * rep.kv_used
    planner.before_draft(slots, age, prior, table, context)
    return planner.after_draft(conf, slots, age, prior, table, context)


def draft_part(rep, di, r: int, decision: StepDecision) -> float:
    """The draft part of the step (`StepCost.draft`): full drafting, γ for each of the r slots `di`, or
    the planned depths, priced on the hardware's table (the planner's price when it planned on it)."""
    depths = decision.depths
    if depths is None:
        return _draft(rep, r, di, r)
    step = rep.eng.step
    base = decision.draft_s if rep.eng.plan is None else step.drafter.seconds(depths, step.cost)
    slots = (np.arange(di.start, di.stop) if isinstance(di, slice) else di)[depths > 0]
    return _draft(rep, r, slots, int(np.count_nonzero(depths)), depths, base)


def _draft(rep, r: int, slots, drafting: int, depths=None, base: float | None = None) -> float:
    step = rep.eng.step
    taken = intake(rep, slots) if step.intake_s else 0
    longest = longest_context(rep) if step.draft_context_s else 0
    return step.draft(r, depths, drafting, taken, longest, base)


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
