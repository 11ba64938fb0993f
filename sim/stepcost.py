"""A config's step price: `step_cost(cfg, cost)` maps the config keys of `specsched.stepcost.TERMS` to one.

Role: the only place the simulator reads the config keys that price a step (cost.prefill_request_seconds,
pad_token_seconds, padded_context_seconds; drafter.intake_seconds, intake_tokens, padded_context_seconds,
cost): one `StepCost` per table a run times (the hardware's) or plans with (cost.policy_table). The draft
terms are off without drafting (γ = 0). `term_values(cfg)` reads the same keys back by term name and
`term_settings(terms)` writes them (the twin's measured terms into its config).

May import: numpy, the standard library, `sim.config`, `sim.drafter`, `sim.deploy.draft`, `specsched`.
"""

from __future__ import annotations

import numpy as np

from sim.config import SimConfig
from sim.drafter import draft_cost, draft_kv_seconds, draft_seconds_table
from specsched import CostTable
from specsched.stepcost import TERMS, StepCost

#: the terms that are part of the draft pass (off when nothing is drafted)
DRAFT_TERMS = ("draft_context_s", "intake_s")


def term_values(cfg: SimConfig) -> dict[str, float]:
    """Each `TERMS` entry's value in `cfg` (float), by term name; the draft terms 0 when γ = 0."""
    out = {}
    for term, (key, _) in TERMS.items():
        section, name = key.split(".")
        value = float(getattr(getattr(cfg, section), name))
        out[term] = 0.0 if term in DRAFT_TERMS and not cfg.drafter.effective_gamma else value
    return out


def term_settings(terms: dict[str, float]) -> dict[str, dict[str, float]]:
    """{section: {key: value}}: the config keys behind `terms` (term name -> value, `TERMS`), to build the
    config sections with (`ServerConfig(**settings["server"])`); every section of `TERMS` is present."""
    out: dict[str, dict[str, float]] = {key.split(".")[0]: {} for key, _ in TERMS.values()}
    for term, value in terms.items():
        section, name = TERMS[term][0].split(".")
        out[section][name] = float(value)
    return out


def step_cost(cfg: SimConfig, cost: CostTable) -> StepCost:
    """The `StepCost` of `cfg`'s steps timed (or planned) with the target table `cost`."""
    from sim.deploy.draft import own_drafter

    tp = cfg.server.tp or 1
    budget = cfg.server.max_num_batched_tokens
    own = own_drafter(cfg)  # drafter.model: priced from its own shape
    drafter = own[0] if own is not None else draft_cost(cfg.drafter, tp=tp)
    return StepCost(
        cost=cost,
        draft_s=draft_seconds_table(cfg.drafter, cost, cfg.server.max_num_seqs, tp=tp, drafter=drafter),
        latency=np.asarray(cost.latency(np.arange(budget + 1)), dtype=np.float64),
        drafter=drafter,
        draft_kv_s=own[1] if own is not None else draft_kv_seconds(cfg.drafter, tp=tp),
        tree_kv_s=cfg.drafter.tree_penalty * cost.kv_token_seconds if cfg.drafter.topk > 1 else 0.0,
        **term_values(cfg),
    )
