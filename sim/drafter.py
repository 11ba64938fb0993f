"""What drafting costs per engine step, by drafter kind (the draft half of step time).

Role: price the draft pass the server charges every step before verification, from the target's cost
table (`CostTable.layer_seconds(B)` = one target-sized layer over B tokens). The drafter always drafts the
full γ for every decoding request, whatever verify lengths the policy then picks.

- parallel ("dflash", "dspark"): one pass of its `layers` draft layers over R·γ positions (anchor + γ − 1
  mask tokens per request): layers · layer_cost · layer_seconds(R·γ).
- autoregressive ("eagle3"): γ sequential passes of its layers over R tokens:
  γ · layers · layer_cost · layer_seconds(R).
- "mtp": k = γ sequential one-layer (MTP-module) passes over R tokens, priced like EAGLE-3.
- "none": 0.
- Markov head (DSpark only): γ tiny sequential sampling steps; modelled as `markov_overhead` times an AR
  verify step over the same R requests, latency(R) (paper Fig. 4: +0.2–1.3 % of a round).

- by request count: a setup that profiles its draft pass (a `CostTable` indexed by requests, e.g.
  `specsched.builtin_draft_cost`) replaces all of the above: draft_seconds(R) = per_request.latency(R).

Everything is tabulated once per run for R = 0..max_num_seqs (the per-step lookup is one index).

May import: numpy, the standard library, `sim.config`, `specsched` (CostTable).
"""

from __future__ import annotations

import numpy as np

from sim.config import PARALLEL_DRAFTERS, DrafterConfig
from specsched import CostTable


def draft_seconds_table(
    cfg: DrafterConfig, cost: CostTable, max_requests: int, *, per_request: CostTable | None = None
) -> np.ndarray:
    """float64[max_requests + 1]: draft seconds of one step with R = 0..max_requests decoding requests.

    per_request: a draft pass profiled by request count (`latency(R)` in seconds), used instead of the
    layer pricing when the drafter drafts at all."""
    gamma = cfg.effective_gamma
    r = np.arange(max_requests + 1, dtype=np.int64)
    out = np.zeros(max_requests + 1, dtype=np.float64)
    if gamma == 0 or max_requests == 0:
        return out
    live = r[1:]
    if per_request is not None:
        out[1:] = per_request.latency(live)
        return out
    per_layer = cfg.layer_cost * cfg.effective_layers
    if cfg.name in PARALLEL_DRAFTERS:
        out[1:] = per_layer * cost.layer_seconds(live * gamma)
    else:  # eagle3, mtp: γ sequential passes over R tokens
        out[1:] = gamma * per_layer * cost.layer_seconds(live)
    if cfg.name == "dspark":
        out[1:] += cfg.markov_overhead * cost.latency(live)
    return out
