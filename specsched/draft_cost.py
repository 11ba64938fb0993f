"""What a draft pass costs: `DraftCost` (one step's draft seconds from the planned depths) and
`plan_prices` (the step seconds of every plan of the depth search, tabulated once per table and drafter).

Role: the pricing half of draft-aware scheduling (specsched.depth searches; this prices). A parallel
drafter runs its layers over the drafted positions, an autoregressive one runs max d_r sequential passes
over the drafting requests, a free one (n-gram) costs nothing; optionally a measured draft table instead.
The search's figures are carried ×LEVELS (a power of two, so exactly the unscaled floats ×LEVELS).

May import: numpy, the standard library, specsched.cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from specsched.cost import CostTable

DRAFT_KINDS = ("parallel", "autoregressive", "free")
#: survival resolution of the depth search: plans draft every candidate with survival ≥ g / LEVELS
LEVELS = 256


@dataclass(frozen=True)
class DraftCost:
    """What one draft pass costs, priced from the target's cost table.

    kind: "parallel" (DFlash/DSpark: one pass of `layers` layers over every drafted position),
        "autoregressive" (EAGLE/MTP: one pass per draft position over the drafting requests), "free".
    layers: draft layers in target-layer units (draft layers × relative layer cost); one layer over B
        tokens costs `cost.layer_seconds(B)`.
    overhead: per-step sampling overhead as a fraction of `cost.latency(m)`, m = drafting requests
        (DSpark's Markov head; 0 for the others).
    measured: optional measured draft cost replacing the layer pricing (not for "free"): a table whose
        `latency` is the whole draft pass, indexed by `index` — "tokens" (drafted positions Σ d_r),
        "requests" (drafting requests) or "fit" (`step_seconds(Σ d_r, drafting requests)`).
    own: optional table of ONE pass of a drafter priced from its own shape (`specsched.price.draft_shape`),
        replacing the layer pricing: parallel → own(Σ d_r); autoregressive → max d_r · own(drafting);
        plus position_s per drafted position (rejection sampling), request_s per drafting request (an
        engine's exposed per-request host work) and step_s per drafting step.
    first: optional table of the FIRST of an autoregressive drafter's passes, which runs over every
        verified position (EAGLE in vLLM and SGLang: drafting + positions tokens); with it the draft
        step is first(drafting + positions) + (max d_r − 1) · own(drafting). Needs `own`.
    host_s: the share of step_s that is the engine's exposed host work (the rest is GPU work); with
        request_s and position_s it is what a step's bill names apart (`specsched.stepcost`: draft_host,
        reject). gamma: the full-drafting depth (positions = gamma · drafting when no depths are planned;
        0: the bill does not name the parts apart). verify_kv_s: seconds per KV token held that the
        verify pass's attention kernel adds beyond the decode path's (the bill's verify_kv part).
    """

    kind: str = "parallel"
    layers: float = 1.0
    overhead: float = 0.0
    measured: CostTable | None = None
    index: str = "tokens"
    own: CostTable | None = None
    position_s: float = 0.0
    step_s: float = 0.0
    first: CostTable | None = None
    request_s: float = 0.0
    host_s: float = 0.0
    gamma: int = 0
    verify_kv_s: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in DRAFT_KINDS:
            raise ValueError(f"draft cost: kind must be one of {', '.join(DRAFT_KINDS)}; got {self.kind!r}")
        for key in ("layers", "overhead", "position_s", "step_s", "request_s", "host_s", "verify_kv_s"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v >= 0):
                raise ValueError(f"draft cost: {key} must be a finite number ≥ 0; got {v!r}")
        if self.first is not None and (self.own is None or self.kind != "autoregressive"):
            raise ValueError("draft cost: first needs an autoregressive drafter priced by own")
        if self.host_s > self.step_s or self.gamma < 0:
            raise ValueError("draft cost: host_s must be ≤ step_s and gamma ≥ 0")
        if self.index not in ("tokens", "requests", "fit"):
            raise ValueError(f"draft cost: index must be tokens, requests or fit; got {self.index!r}")

    def named_parts(self, decoding: int, depths=None) -> tuple[float, float]:
        """(exposed host seconds, rejection-sampling seconds) inside the draft seconds of a step with
        `decoding` requests drafting γ each (`depths` None) or `depths` (int64[R]); (0, 0) when the
        parts are not named apart (gamma 0, or nothing drafted)."""
        if not self.gamma or self.own is None:
            return 0.0, 0.0
        if depths is None:
            drafting, positions = decoding, self.gamma * decoding
        else:
            d = np.asarray(depths)
            drafting, positions = int(np.count_nonzero(d)), int(d.sum())
        if not drafting:
            return 0.0, 0.0
        return self.host_s + self.request_s * drafting, self.position_s * positions

    def price(self, positions, drafting, deepest, cost: CostTable) -> np.ndarray:
        """float64[n]: draft seconds of plans with `positions` = Σ d_r, `drafting` = #{d_r > 0} and
        `deepest` = max d_r (int64[n] each; a plan with no draft costs 0)."""
        out = np.zeros(len(positions))
        if self.kind == "free":
            return out
        if self.measured is not None:
            return self._measured(positions, drafting, out)
        if self.own is not None:
            return self._own(positions, drafting, deepest, out)
        # Operation order as layers · layer_seconds(B), so full depths reproduce the full pass to the ulp.
        if self.kind == "parallel" and self.layers:
            out += self.layers * (_latency(cost, positions) / cost.layers)
        elif self.kind == "autoregressive" and self.layers:
            out += (np.asarray(deepest) * self.layers) * (_latency(cost, drafting) / cost.layers)
        if self.overhead:
            out += self.overhead * _latency(cost, drafting)
        out[np.asarray(drafting) == 0] = 0.0
        return out

    def _own(self, positions, drafting, deepest, out: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions, dtype=np.int64)
        if self.kind == "parallel":
            out += _latency(self.own, positions)
        elif self.first is not None:
            drafting = np.asarray(drafting, dtype=np.int64)
            rest = np.maximum(np.asarray(deepest) - 1, 0)
            out += _latency(self.first, drafting + positions) + rest * _latency(self.own, drafting)
        else:
            out += np.asarray(deepest) * _latency(self.own, drafting)
        out += self.position_s * positions + self.step_s
        if self.request_s:
            out += self.request_s * np.asarray(drafting, dtype=np.float64)
        out[np.asarray(drafting) == 0] = 0.0
        return out

    def _measured(self, positions, drafting, out: np.ndarray) -> np.ndarray:
        table = self.measured
        if self.index == "requests":
            out += table.latency(np.asarray(drafting, dtype=np.int64))
        elif self.index == "tokens":
            out += table.latency(np.asarray(positions, dtype=np.int64))
        else:
            drafting = np.asarray(drafting, dtype=np.int64)
            out += table.step_seconds(np.asarray(positions, dtype=np.int64), drafting)
        out[np.asarray(drafting) == 0] = 0.0
        return out

    def seconds(self, depths, cost: CostTable) -> float:
        """Draft seconds of one step whose requests draft `depths` (int64[R] ≥ 0)."""
        d = np.asarray(depths, dtype=np.int64)
        positions = int(d.sum()) if d.size else 0
        if positions == 0 or self.kind == "free":
            return 0.0
        drafting = int(np.count_nonzero(d))
        if self.measured is not None or self.own is not None:
            return float(self.price([positions], [drafting], [int(d.max())], cost)[0])
        # `price` on one plan in Python floats (the same IEEE operations in the same order): the simulator
        # prices every adaptive step, and a dozen tiny numpy calls cost more than the arithmetic.
        lat = cost.latency_range
        out = 0.0
        if self.kind == "parallel" and self.layers:
            out += self.layers * (float(lat(positions, positions)[0]) / cost.layers)
        elif self.kind == "autoregressive" and self.layers:
            out += (int(d.max()) * self.layers) * (float(lat(drafting, drafting)[0]) / cost.layers)
        if self.overhead:
            out += self.overhead * float(lat(drafting, drafting)[0])
        return out


def plan_prices(cost: CostTable, draft: DraftCost, R: int, gamma: int):
    """`prices(positions, drafting, deepest, fixed=None) -> float64[n]`: LEVELS × the step seconds of plans
    over R requests (the target's fixed cost, the draft pass and the verify forward at R + positions), as
    `plan_depths` prices them; fixed (seconds) replaces the table's draft_seconds + request_seconds·R (the
    simulator's per-step context) without a new table. Everything that depends on one count alone is
    tabulated here once per (table, drafter, R, γ), scaled by LEVELS (exact: a power of two) and in the
    operation order of `DraftCost.price`, so the cached and uncached figures are the same floats.
    """
    top = R * gamma
    own = LEVELS * (cost.draft_seconds + cost.request_seconds * R)
    verify = LEVELS * cost.latency_range(R, R + top)  # float64[top + 1] at B = R + positions
    # not separable: price each plan (a fit file; a first pass over drafting + positions tokens)
    if (draft.measured is not None and draft.index == "fit") or draft.first is not None:

        def fit(positions, drafting, deepest, fixed=None):
            out = draft.price(positions, drafting, deepest, cost)
            out += own / LEVELS if fixed is None else fixed
            out += verify[positions] / LEVELS
            return out * LEVELS

        return fit
    per_pos, per_req, per_deep = _draft_parts(cost, draft, R, top)
    if per_req is None and per_deep is None:  # depends on positions alone: one lookup per call
        total = (per_pos + own) + verify

        def by_positions(positions, drafting, deepest, fixed=None):
            if fixed is None:
                return total[positions]
            return (per_pos[positions] + LEVELS * fixed) + verify[positions]

        return by_positions

    def separable(positions, drafting, deepest, fixed=None):
        out = per_pos[positions]
        if per_deep is not None:
            out = out + (deepest * draft.layers) * per_deep[drafting]
        if per_req is not None:
            out += per_req[drafting]
        out += own if fixed is None else LEVELS * fixed
        out += verify[positions]
        return out

    return separable


def _draft_parts(cost: CostTable, draft: DraftCost, R: int, top: int):
    """(float64[top + 1] by positions, float64[R + 1] by drafting requests or None, float64[R + 1]
    multiplied by the deepest depth or None), each ×LEVELS: `DraftCost.price` split by what each term
    depends on, zero where nothing is drafted (positions 0 ⇔ drafting 0: a drafting request drafts its
    position 0)."""
    per_pos = np.zeros(top + 1)
    per_req = per_deep = None
    if draft.kind == "free":
        return per_pos, per_req, per_deep
    if draft.own is not None:
        if draft.kind == "parallel":
            per_pos = draft.own.latency_range(0, top).copy()
        else:  # (deepest · 1.0) · own(drafting)
            per_deep = draft.own.latency_range(0, R).copy()
        per_pos += draft.position_s * np.arange(top + 1) + draft.step_s
        if draft.request_s:
            per_req = draft.request_s * np.arange(R + 1, dtype=np.float64)
    elif draft.measured is not None:
        if draft.index == "tokens":
            per_pos = draft.measured.latency(np.arange(top + 1, dtype=np.int64))
        else:
            per_req = draft.measured.latency(np.arange(R + 1, dtype=np.int64))
    else:
        if draft.kind == "parallel" and draft.layers:
            per_pos = draft.layers * (cost.latency_range(0, top) / cost.layers)
        elif draft.kind == "autoregressive" and draft.layers:
            # (deepest · layers) · (latency(m) / layers_target), as `price` groups it
            per_deep = cost.latency_range(0, R) / cost.layers
        if draft.overhead:
            per_req = draft.overhead * cost.latency_range(0, R)
    for part in (per_pos, per_req, per_deep):
        if part is not None:
            part *= LEVELS
            part[0] = 0.0
    return per_pos, per_req, per_deep


def _latency(cost: CostTable, b) -> np.ndarray:
    """cost.latency(b) for an int64 array b ≥ 0, via the table's dense range (one fancy index)."""
    b = np.asarray(b, dtype=np.int64)
    return cost.latency_range(0, int(b.max()))[b] if b.size else np.zeros(0)
