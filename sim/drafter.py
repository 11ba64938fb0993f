"""What drafting costs per engine step, by drafter kind (the draft half of step time).

Role: price the draft pass the server charges every step before verification, from the target's cost
table (`CostTable.layer_seconds(B)` = one target-sized layer over B tokens). The pricing rule itself is
`specsched.DraftCost` (shared with the scheduler, which plans depths with it); this module maps a
`DrafterConfig` to it:

- parallel ("dflash", "dspark"): one pass of its `layers` draft layers over the drafted positions (anchor
  + mask tokens: Σ_r d_r, = R·γ with full drafting): layers · layer_cost · layer_seconds(Σ d_r).
- autoregressive ("eagle3", "mtp"): max_r d_r sequential passes of its layers over the drafting requests
  (γ passes over R with full drafting): max d · layers · layer_cost · layer_seconds(#{d_r > 0}); MTP's
  k = γ one-layer module passes are priced like EAGLE-3.
- "none": 0.
- Markov head (DSpark only): γ tiny sequential sampling steps; modelled as `markov_overhead` times an AR
  verify step over the drafting requests, latency(#{d_r > 0}) (paper Fig. 4: +0.2–1.3 % of a round).

With draft = "full" every decoding request drafts γ and the cost is tabulated once per run for
R = 0..max_num_seqs (the per-step lookup is one index); with draft = "adaptive" the server prices each step
from the planned depths with `draft_cost(cfg).seconds(depths, cost)`.

May import: numpy, the standard library, `sim.config`, `specsched` (CostTable, DraftCost).
"""

from __future__ import annotations

import numpy as np

from sim.config import PARALLEL_DRAFTERS, DrafterConfig
from specsched import CostTable, DraftCost


def draft_cost(cfg: DrafterConfig) -> DraftCost:
    """The drafter's pricing rule (see the module doc)."""
    if cfg.effective_gamma == 0:
        return DraftCost("free")
    layers = float(cfg.layer_cost * cfg.effective_layers)
    overhead = cfg.markov_overhead if cfg.name == "dspark" else 0.0
    kind = "parallel" if cfg.name in PARALLEL_DRAFTERS else "autoregressive"
    return DraftCost(kind, layers, overhead)


def draft_seconds_table(cfg: DrafterConfig, cost: CostTable, max_requests: int) -> np.ndarray:
    """float64[max_requests + 1]: draft seconds of one full-drafting step with R = 0..max_requests
    decoding requests (every one drafts γ)."""
    gamma = cfg.effective_gamma
    out = np.zeros(max_requests + 1, dtype=np.float64)
    if gamma == 0 or max_requests == 0:
        return out
    r = np.arange(1, max_requests + 1, dtype=np.int64)
    return np.concatenate([[0.0], draft_cost(cfg).price(r * gamma, r, np.full(r.size, gamma), cost)])
