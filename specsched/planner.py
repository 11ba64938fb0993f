"""The one planning sequence around a policy: `Planner.before_draft` (depths), `after_draft` (lengths).

Role: both the simulator's replica (`sim.server`) and the real engine (`engine.loop`) plan every speculative
step through a `Planner`, so the sequence of calls around the policy — which rows are lagged, when this
step's row is recorded, when depths are planned, how the draft pass is priced for the policy, which
lengths come out — is written once:

1. `before_draft(slots, age, prior, cost)`: with draft = "adaptive" and delay ≥ 1, the depth plan from the
   rows of `delay` steps earlier (nothing of this step is known yet); else None (full drafting, or delay 0,
   whose depths can only come from this step's rows: the negative control).
2. the caller drafts (`depths` positions per request, γ each without a plan) and gets conf float64[R, γ];
3. `after_draft(conf, slots, age, prior, cost)`: records this step's rows (only the drafted positions),
   plans the delay-0 depths, prices the draft pass from the depths on `cost` (`DraftCost.seconds`) and
   returns the frozen `StepDecision` (depths, verify lengths, that price), which the simulator's `StepPlan`
   and the engine's `StepOutput` both carry.

Each caller gives the table it plans with (`cost`: for full drafting its draft seconds are the pass's;
with adaptive drafting the pass is priced from the depths on it, its own draft seconds unused), `prior`
(float64[γ] or float64[R, γ]: the stated row of a request younger than `delay`) and `age` (each request's
speculative steps since admission). `context` (seconds): a fixed, depth- and ℓ-independent term the policy
should see (the simulator's KV reads), carried as draft seconds.

May import: numpy, the standard library, `specsched` (cost, draft_cost, stale, policies, depth).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from specsched.cost import CostTable
from specsched.draft_cost import DraftCost
from specsched.stale import StaleBuffer


class StepDecision(NamedTuple):
    """One step's scheduling decision (immutable), for its R decoding requests in batch order.

    depths: int64[R] planned draft depths (draft = "adaptive"), None = full drafting (γ each); lengths:
    int64[R] the policy's verify lengths (ℓ_r ≤ depth_r); draft_s: the draft pass's seconds as the planner
    priced it from the depths on its table (None with full drafting: the table's own draft seconds).
    """

    depths: np.ndarray | None
    lengths: np.ndarray
    draft_s: float | None = None

    def same_as(self, other: StepDecision) -> bool:
        """Whether two decisions are identical (depths, lengths and price, exactly)."""
        if (self.depths is None) != (other.depths is None) or self.draft_s != other.draft_s:
            return False
        same_depths = self.depths is None or np.array_equal(self.depths, other.depths)
        return same_depths and np.array_equal(self.lengths, other.lengths)


class Planner:
    """The policy with its stale buffer, prior and draft cost, called twice a step (module doc).

    policy: a `specsched.Policy` or `AdaptivePolicy`; slots: the batch's capacity (stale-buffer rows by
    slot); gamma: γ; draft: how the draft pass is priced from depths (needed with draft = "adaptive");
    max_batch_tokens: the verify budget (None = unbounded); prior: the default stated row of a young
    request when a call passes none.
    """

    def __init__(
        self,
        policy,
        slots: int,
        gamma: int,
        *,
        draft: DraftCost | None = None,
        max_batch_tokens: int | None = None,
        prior=0.0,
    ) -> None:
        self.policy = policy
        self.adaptive = getattr(policy, "draft", "full") == "adaptive"
        if self.adaptive and draft is None:
            raise ValueError("Planner: an adaptive policy needs `draft` (how to price the draft pass)")
        self.draft = draft
        self.budget = max_batch_tokens
        self.prior = prior
        self.rows = StaleBuffer(slots, gamma, policy.delay) if policy.uses_stale else None
        self._early: tuple[np.ndarray, np.ndarray] | None = None  # (lagged rows, depths) of before_draft

    @property
    def plans_early(self) -> bool:
        """Whether depths are planned before drafting (draft = "adaptive" with delay ≥ 1)."""
        return self.adaptive and self.policy.delay > 0

    def before_draft(self, slots, age, prior=None, cost: CostTable | None = None, context: float = 0.0):
        """int64[R] depths to draft, planned from the rows of `delay` steps earlier, or None (γ each)."""
        self._early = None
        if not self.plans_early:
            return None
        stale = self.rows.lagged(slots, age, self.prior if prior is None else prior)
        depths = self.policy.trusted_depths(stale, cost, self.draft, self.budget, context or None)
        self._early = (stale, depths)
        return depths

    def after_draft(
        self, conf: np.ndarray, slots, age, prior=None, cost: CostTable | None = None, context: float = 0.0
    ) -> StepDecision:
        """The step's decision once conf float64[R, γ] is known (after `before_draft` this step)."""
        policy, budget = self.policy, self.budget
        prior = self.prior if prior is None else prior
        if self.rows is None:
            return StepDecision(None, policy.trusted(conf, cost, None, budget))
        if self._early is not None:
            (stale, depths), self._early = self._early, None
            self.rows.record(slots, age, conf, depths=depths, prior=prior)  # only the drafted positions
        else:
            stale, depths = self.rows.exchange(slots, age, conf, prior), None  # delay 0: the current rows
        if not self.adaptive:
            return StepDecision(None, policy.trusted(conf, cost, stale, budget))
        if depths is None:  # delay 0, the negative control: depths from the current rows
            depths = policy.trusted_depths(stale, cost, self.draft, budget, context or None)
        price = self.draft.seconds(depths, cost)
        return StepDecision(depths, policy.trusted(conf, cost, stale, budget, depths, price + context), price)

    def lengths_many(self, conf: np.ndarray, cost: CostTable) -> np.ndarray:
        """int64[K, R]: `after_draft`'s lengths for K steps of one batch at once (conf float64[K, R, γ]), for
        a policy that reads no stale rows, with full drafting (the simulator's multi-step decode path)."""
        if self.rows is not None:
            raise ValueError("Planner.lengths_many: the policy reads stale rows; plan step by step")
        return self.policy.trusted_many(conf, cost, self.budget)

    def compact(self, keep: np.ndarray, n: int) -> None:
        """Slots 0..n−1 where `keep` move down (requests left the batch): their rows move with them."""
        if self.rows is not None:
            self.rows.compact(keep, n)


#: a run that pays for drafting yet verifies fewer drafts than this per request-step, on average, is flagged
#: (issue 32: the paper's greedy stop on a padded table drafted γ a step and verified 0.03)
IDLE_VERIFIED = 0.05


def idle_drafting(policy: str, gamma: int, verified_per_step: float, draft_share: float) -> str | None:
    """The one-line warning for a run that drafts but verifies (almost) nothing, or None.

    gamma: drafts a request drafts per step at most (0 = no drafter); verified_per_step: drafts verified
    per request-step, on average (NaN: no decode step); draft_share: the draft pass's share of step time
    (0 when nothing was drafted, e.g. adaptive depths of 0)."""
    if gamma <= 0 or not (draft_share > 0.0) or math.isnan(verified_per_step):
        return None
    if verified_per_step >= IDLE_VERIFIED:
        return None
    return (
        f"policy {policy!r} drafted up to {gamma} tokens a step ({draft_share:.0%} of step time) but "
        f"verified {verified_per_step:.3f} per request-step: drafting bought nothing (try a policy that "
        "sizes the batch, policy.draft = 'adaptive', or no drafter)"
    )
