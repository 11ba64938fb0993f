"""Depth planning: how many drafts each request drafts this step, chosen before drafting.

Role: the draft half of the scheduler. A verify-length policy (specsched.policies) decides, after
drafting, how many drafts each request verifies; here, BEFORE drafting and from lagged information only,
an adaptive policy decides each request's draft depth d_r ∈ 0..γ so that the drafter does not pay for
drafts nobody will verify. Depth 0 means a plain decoding step for that request (no draft). Verify
lengths are then chosen as today with ℓ_r ≤ d_r.

Objective (Θ with the draft pass priced from the depths), over the candidates (r, j) of the stale survival
s[r, j] = Π_{i≤j} stale[r, i]:

    Θ(d) = (R + Σ_r Σ_{j<d_r} s[r, j]) / (draft_seconds + request_seconds·R + draft(d) + latency(R + Σ d_r))

where draft(d) is `DraftCost.seconds`: a parallel drafter runs its layers over Σ d_r positions, an
autoregressive one runs max d_r sequential passes over the requests with d_r > 0, a free one (n-gram)
costs nothing; plus a per-step sampling overhead (DSpark's Markov head) over the drafting requests
(priced in `specsched.draft_cost`).

Search: the plans are thresholds on the stale survival, g / LEVELS for g = LEVELS..1 (plus "draft
nothing"): plan g drafts every candidate with s ≥ g / LEVELS, so tied candidates are drafted or refused
together and the plan never depends on row order. Θ is evaluated for all of them at once, about twenty
numpy calls: the survival ×LEVELS (a column loop whose first column is scaled by LEVELS, a power of two,
so every figure is the unscaled float ×LEVELS exactly) truncates straight to levels; one weighted
histogram gives the tokens per level and one more the positions and drafting requests; suffix sums
(np.add.accumulate) give every plan's totals; the step seconds are lookups in tables cached per (table,
drafter, R, γ) (`specsched.draft_cost.plan_prices`). The first maximum wins (on equal Θ the plan with
fewer drafts). Decisions are identical to the frozen pre-fast-path plan (tests/specsched/test_depth_fast.py).
Speed is bounded by numpy's fixed cost per call, not by the arrays' size (figures:
docs/notes/2026-11-30-adaptive-drafting.md, `python -m bench depth`). The simulator calls the unchecked
`trusted_depths` and `AdaptivePolicy.trusted`, passing each step's draft price as a number (`draft_s`) so
the caches, keyed by table, keep hitting; the public calls validate.

Slack (the hedge): the plan prices every drafted position as verified, but verification later sees the
CURRENT confidences and verifies what pays on those. Refusing to draft a position the fresh confidences
would have verified loses a token; drafting one that is then declined loses only its draft cost, which is
small beside a verify step unless the drafter is dear. So an adaptive policy takes the DEEPEST plan whose
estimated Θ is within `slack` (default 10 %) of the best; where drafting is dear (past the knee of a
saturating table) the plans that draft lose far more than that and it still drafts nothing (slack 0 against
0.1, measured: docs/notes/2026-11-30-adaptive-drafting.md).
Depths are then d_r = #{j : s[r, j] ≥ the plan's threshold}, a prefix of each row because s is
non-increasing along j. Zero-survival candidates are never drafted.

Losslessness: depths are a function of `stale` (rows from ≥ 1 step earlier, or a prior: see
specsched.stale), the cost table and the drafter's cost — all fixed before this step's drafts exist — so
restricting drafting and verification to them cannot change the target's output distribution. Planning
depths from the current step's confidences (delay = 0) is the negative control and is marked lossy.

May import: numpy, the standard library, specsched.cost, specsched.draft_cost, specsched.policies,
specsched.registry.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from specsched.cost import CostTable
from specsched.draft_cost import LEVELS, DraftCost, plan_prices
from specsched.policies import Policy, _check_budget, _int_param, check_call, check_conf, make_base_policy
from specsched.registry import get

DRAFT_MODES = ("full", "adaptive")
#: default hedge of adaptive policies (see the module doc, "Slack")
SLACK = 0.1


def plan_depths(
    stale, cost: CostTable, draft: DraftCost, *, max_batch_tokens=None, slack: float = 0.0, prices=None
) -> np.ndarray:
    """int64[R]: draft depth per request maximising Θ (module doc), from lagged confidences.

    stale: float64[R, γ] (rows from ≥ 1 step earlier, or priors); cost: the target's table (its own
    draft_seconds, if any, is a fixed cost); draft: how the draft pass is priced; max_batch_tokens caps
    R + Σ d_r (every drafted position could be verified); slack ∈ [0, 1): take the deepest plan whose Θ is
    within that fraction of the best (0 = the best plan itself); prices: `plan_prices(cost, draft, R, γ)`,
    cached by the caller (None computes it). Raises ValueError on bad input.
    """
    s = check_conf(stale, "stale")
    slack = _check_slack(slack)
    budget = _check_budget(max_batch_tokens)
    R, gamma = s.shape
    if R == 0 or gamma == 0:
        return np.zeros(R, dtype=np.int64)
    if prices is None:
        prices = plan_prices(cost, draft, R, gamma)
    return _plan(s, prices, budget, slack, draft.kind == "autoregressive")


def _plan(s: np.ndarray, prices, budget: int | None, slack: float, deep: bool, fixed=None) -> np.ndarray:
    """`plan_depths` on checked input (s float64[R, γ], R, γ ≥ 1; deep: price the deepest depth, for an
    autoregressive drafter; fixed: None or the step's fixed seconds, see `plan_prices`).

    Everything is carried ×LEVELS (a power of two, so every product, sum and quotient below is the
    reference's float scaled exactly): survival·LEVELS truncates straight to the level, the weighted
    histogram gives LEVELS·tokens, and Θ = (LEVELS·tokens + LEVELS·R) / (LEVELS·seconds) is the same float.
    """
    R, gamma = s.shape
    surv = _survival(s)
    # Levels 0..LEVELS (plan g drafts every candidate with level ≥ g; LEVELS + 1 stays empty, so the
    # suffix sums start at 0 = "draft nothing"), then row 0 again, shifted by LEVELS + 2: one histogram
    # gives positions and drafting requests per level.
    level = np.empty((gamma + 1, R), dtype=np.intp)
    level[:gamma] = surv  # truncation, as astype(intp)
    np.add(level[0], LEVELS + 2, out=level[gamma])
    # Per plan, best first: index 0 drafts nothing, index i ≥ 1 drafts levels ≥ LEVELS + 1 − i.
    theta = _suffix(np.bincount(level[:gamma].ravel(), weights=surv.ravel(), minlength=LEVELS + 2))
    positions, drafting = _suffix(np.bincount(level.ravel(), minlength=2 * (LEVELS + 2)).reshape(2, -1))
    deepest = _suffix(np.bincount(level[:gamma].max(axis=1), minlength=LEVELS + 2)) if deep else None
    theta += R * LEVELS
    theta /= prices(positions, drafting, deepest, fixed)
    if budget is not None:
        theta[positions > budget - R] = -np.inf
    best = int(theta.argmax())  # first maximum: on equal Θ the plan with fewer drafts
    if slack and best:  # the deepest plan within `slack` of the best
        best = LEVELS - int((theta[::-1] >= theta[best] * (1.0 - slack)).argmax())
    if best == 0:
        return np.zeros(R, dtype=np.int64)
    return np.add.reduce(level[:gamma] >= LEVELS + 1 - best, axis=0, dtype=np.int64)


def _survival(s: np.ndarray) -> np.ndarray:
    """LEVELS × the survival, position-major float64[γ, R], of rows s float64[R, γ] (R, γ ≥ 1): the first
    column is scaled (exact, a power of two), so every product is the unscaled one's float ×LEVELS."""
    R, gamma = s.shape
    if R <= 64:  # one accumulate call: measured faster while numpy's per-call overhead dominates
        surv = s.T.copy()
        surv[0] *= LEVELS
        return np.multiply.accumulate(surv, axis=0, out=surv)
    surv = np.empty((gamma, R))  # a column loop beats a strided accumulate at large R
    np.multiply(s[:, 0], LEVELS, out=surv[0])
    for j in range(1, gamma):
        np.multiply(surv[j - 1], s[:, j], out=surv[j])
    return surv


def _check_slack(slack) -> float:
    if isinstance(slack, bool) or not isinstance(slack, (int, float)) or not (0.0 <= slack < 1.0):
        raise ValueError(f"slack: must be a number in [0, 1), got {slack!r}")
    return float(slack)


def _suffix(per_level: np.ndarray) -> np.ndarray:
    """[..., LEVELS + 2] per-level totals (level LEVELS + 1 empty) -> [..., LEVELS + 1] per plan: 0, then Σ
    over levels ≥ LEVELS, ≥ LEVELS − 1, …, ≥ 1 (level 0, survival below 1/LEVELS, is never drafted)."""
    return np.add.accumulate(per_level[..., :0:-1], axis=-1)  # cumsum's own loop, without its wrapper


@dataclass(frozen=True, eq=False)
class AdaptivePolicy:
    """A verify-length policy that also plans draft depths (`make_policy(name, draft="adaptive")`).

    Call `depths(stale, cost, draft)` before drafting (the plan, hedged by `slack`), then
    `policy(conf, cost, stale=..., depths=d)` after: the base policy picks verify lengths on `conf` with
    the positions past d_r zeroed, and ℓ_r ≤ d_r always. Without `depths` it is the base policy (full
    drafting). `delay`: staleness of the rows the caller passes as `stale` (the base policy's own delay
    when it has one); `lossless` needs delay ≥ 1.
    """

    base: Policy
    delay: int
    slack: float = SLACK
    # plan_prices per (cost table, drafter, R, γ), filled on first use: {table: {(draft, R, γ): prices}}
    _prices: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary, repr=False)
    # {γ: float64[γ + 1, γ]}: row d is 1 at positions < d, else 0 (the verify mask of depth d)
    _tri: dict = field(default_factory=dict, repr=False)

    draft = "adaptive"
    uses_stale = True

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def params(self) -> Mapping[str, object]:
        return self.base.params

    @property
    def lossless(self) -> bool:
        return self.base.lossless and self.delay >= 1

    def depths(self, stale, cost: CostTable, draft: DraftCost, *, max_batch_tokens=None) -> np.ndarray:
        """int64[R]: the depth plan (`plan_depths` with this policy's slack and cached prices)."""
        s = check_conf(stale, "stale")
        budget = _check_budget(max_batch_tokens)
        if not isinstance(cost, CostTable):
            raise ValueError(f"cost: expected a specsched.CostTable, got {type(cost).__name__}")
        if not isinstance(draft, DraftCost):
            raise ValueError(f"draft: expected a specsched.DraftCost, got {type(draft).__name__}")
        return self.trusted_depths(s, cost, draft, budget)

    def trusted_depths(
        self, stale: np.ndarray, cost: CostTable, draft: DraftCost, budget: int | None = None, draft_s=None
    ) -> np.ndarray:
        """`depths` without input checks, for the simulator and the engine (stale float64[R, γ] in [0, 1]
        by construction; budget a positive int or None). draft_s (seconds): replaces the table's
        draft_seconds, as `cost.with_draft(draft_s)` would, but keeps the prices cached per `cost`."""
        R, gamma = stale.shape
        if R == 0 or gamma == 0:
            return np.zeros(R, dtype=np.int64)
        by_key = self._prices.get(cost)
        if by_key is None:
            by_key = self._prices[cost] = {}
        prices = by_key.get((draft, R, gamma))
        if prices is None:
            prices = by_key[(draft, R, gamma)] = plan_prices(cost, draft, R, gamma)
        fixed = None if draft_s is None else draft_s + cost.request_seconds * R
        return _plan(stale, prices, budget, self.slack, draft.kind == "autoregressive", fixed)

    def __call__(self, conf, cost: CostTable, *, stale=None, max_batch_tokens=None, depths=None):
        conf, stale, budget = check_call(conf, cost, stale, max_batch_tokens)
        if depths is not None:
            d = np.asarray(depths)
            R, gamma = conf.shape
            if d.shape != (R,) or not np.issubdtype(d.dtype, np.integer):
                raise ValueError(f"depths: expected int64[{R}], got {d.dtype}{list(d.shape)}")
            if d.size and not (d.min() >= 0 and d.max() <= gamma):
                raise ValueError(f"depths: values must be in 0..{gamma}, got {d.min()}..{d.max()}")
            depths = d.astype(np.int64, copy=False)
        return self.trusted(conf, cost, stale, budget, depths)

    def trusted(
        self,
        conf: np.ndarray,
        cost: CostTable,
        stale: np.ndarray | None = None,
        budget: int | None = None,
        depths: np.ndarray | None = None,
        draft_s=None,
    ) -> np.ndarray:
        """The call without input checks (conf, stale as for `Policy.trusted`; depths int64[R] in 0..γ or
        None for full drafting). draft_s (seconds): verify on `cost.with_draft(draft_s)` without building
        it (`Policy.trusted_priced`: nothing cached for a price that changes every step)."""
        use = stale if self.base.uses_stale else None
        R, gamma = conf.shape
        if depths is not None and R:
            if depths.max() <= 0:  # nobody drafts: plain decoding steps
                return np.zeros(R, dtype=np.int64)
            if depths.min() < gamma:  # full depths need no mask; conf·1 = conf and conf·0 = 0 exactly
                tri = self._tri.get(gamma)
                if tri is None:
                    tri = self._tri[gamma] = np.tri(gamma + 1, gamma, -1)
                conf = conf * tri.take(depths, axis=0)
        if draft_s is None:
            lengths = self.base.trusted(conf, cost, use, budget)
        else:
            lengths = self.base.trusted_priced(conf, cost, draft_s, use, budget)
        return lengths if depths is None else np.minimum(lengths, depths)

    def __repr__(self) -> str:
        return f"{self.base!r}"[:-1] + f", draft='adaptive', delay={self.delay}, slack={self.slack!r})"


def make_policy(name: str, draft: str = "full", **params):
    """A configured policy by name (see POLICIES). Unknown names or parameters raise ValueError.

    draft: "full" (the drafter drafts γ for every request: the paper's behaviour; a `Policy`) or "adaptive"
    (the policy also plans each request's draft depth from lagged confidences: an `AdaptivePolicy`).
    """
    if draft == "full":
        return make_base_policy(name, **params)
    return adaptive(name, draft, params)


def adaptive(name: str, draft: str, params: dict):
    """`make_policy(name, draft=..., **params)` for draft ≠ "full" (see the module doc).

    A policy that plans no depths ("ar", `PolicySpec.plans_depths`) ignores the draft mode; a negative
    control ("lookahead", `PolicySpec.control`) refuses it. Policies without a `delay` parameter take one
    here (default 1: the previous step's confidences); every adaptive policy takes `slack` (default SLACK).
    """
    if draft not in DRAFT_MODES:
        raise ValueError(f"policy '{name}': draft must be one of {', '.join(DRAFT_MODES)}; got {draft!r}")
    if draft == "full":
        return make_base_policy(name, **params)
    spec = get(name)
    if spec.control:
        raise ValueError(f"policy '{name}' is a negative control of verify sizing; it takes draft='full'")
    own_delay = spec.param("delay") is not None  # its own delay gives the staleness of its rows
    ours = {"slack"} | (set() if own_delay else {"delay"})
    base = make_base_policy(name, **{k: v for k, v in params.items() if k not in ours})
    if not spec.plans_depths:  # e.g. "ar": nothing to draft, the mode changes nothing
        return base
    delay = base.delay if own_delay else _int_param(name, "delay", params.get("delay", 1), 0)
    try:
        slack = _check_slack(params.get("slack", SLACK))
    except ValueError as err:
        raise ValueError(f"policy '{name}': parameter {err}") from None
    return AdaptivePolicy(base, delay, slack)

