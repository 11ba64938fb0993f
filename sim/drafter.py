"""What drafting costs per engine step, by drafter kind (the draft half of step time).

Role: price the draft pass the server charges every step before verification, from the target's cost
table (`CostTable.layer_seconds(B)` = one target-sized layer over B tokens). The pricing rule itself is
`specsched.DraftCost` (shared with the scheduler, which plans depths with it); this module maps a
`DrafterConfig` to it. With per-request draft depths d_r (γ each with full drafting):

By `drafter.kind` (default: the built-in name's kind):
- parallel ("dflash", "dspark"): one pass of its `layers` draft layers over the drafted positions (anchor
  + mask tokens: Σ_r d_r, = R·γ with full drafting): layers · layer_cost · layer_seconds(Σ d_r).
- autoregressive ("eagle3"): max_r d_r sequential passes of its layers over the drafting requests
  (γ passes over R with full drafting): max d · layers · layer_cost · layer_seconds(#{d_r > 0}).
  "mtp": k = γ sequential one-layer (MTP-module) passes over R tokens, priced like EAGLE-3.
- free ("none", and e.g. n-gram / suffix lookup): 0.
- Markov head (DSpark only): γ tiny sequential sampling steps; modelled as `markov_overhead` times an AR
  verify step over the drafting requests, latency(#{d_r > 0}) (paper Fig. 4: +0.2–1.3 % of a round).

Measured draft cost (`drafter.cost`) replaces all of the above for any kind but free: a CSV
`tokens,seconds` (drafted positions Σ d_r → seconds of the whole draft pass, read "linear" like a cost
table), a CSV `requests,seconds` (drafting requests → seconds), or a fit file of `phase = draft` rows
(`specbed cost fit`; its context-blind step time at Σ d_r tokens over the drafting requests, at the
server's `tp`).
A CSV with a `context_tokens` column, or a context-aware fit, also prices the drafter's KV reads per
context token (`draft_kv_seconds`; the server charges it on the running requests' context, like the
target's).

With draft = "full" every decoding request drafts γ and the cost is tabulated once per run for
R = 0..max_num_seqs (the per-step lookup is one index); with draft = "adaptive" the server prices each step
from the planned depths with `draft_cost(cfg).seconds(depths, cost)`.

May import: numpy, the standard library, `sim.config`, `specsched` (CostTable, DraftCost, errors, fit).
"""

from __future__ import annotations

import csv

import numpy as np

from sim.config import DrafterConfig
from specsched import CostTable, DraftCost, InputError
from specsched.io import inputs


def load_draft_cost(path: str, *, tp: int = 1) -> tuple[CostTable, str]:
    """The measured draft cost of `drafter.cost` and what it is indexed by: "tokens" (drafted positions)
    or "requests". InputError naming the file (and line/field) if unreadable or neither format."""
    from specsched.fit import fit_table, load_fit

    if path.lower().endswith(".json"):
        try:
            return fit_table(load_fit(path), tp=tp), "fit"
        except InputError as err:
            raise InputError(
                err.message, file=err.file, line=err.line, field=err.field or "drafter.cost"
            ) from None
    text = inputs.read_text(path, what="draft cost", field="drafter.cost", limit=inputs.LIMITS["table"])
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    with inputs.reading(path, field="drafter.cost"):
        header = [h.strip() for h in next(csv.reader(lines[:1]), [])]
    if "tokens" in header and "requests" in header:
        raise InputError(
            "draft cost header names both 'tokens' and 'requests': keep the one it is indexed by",
            file=path,
            line=1,
            field="drafter.cost",
        )
    key = "tokens" if "tokens" in header else "requests" if "requests" in header else None
    if key is None or "seconds" not in header:
        raise InputError(
            f"draft cost header must be 'tokens,seconds' or 'requests,seconds', got {','.join(header)!r}",
            file=path,
            field="drafter.cost",
        )
    return CostTable.from_csv(path, mode="linear", key=key), key


def draft_kv_seconds(cfg: DrafterConfig, *, tp: int = 1) -> float:
    """Seconds per KV token held that the measured draft cost adds to a step (0 without drafter.cost or a
    context column / context-aware fit): the server charges it on the running requests' context."""
    if cfg.cost is None or cfg.effective_gamma == 0:
        return 0.0
    return load_draft_cost(cfg.cost, tp=tp)[0].kv_token_seconds


def draft_cost(cfg: DrafterConfig, *, tp: int = 1) -> DraftCost:
    """The drafter's pricing rule (see the module doc); reads `drafter.cost` when set."""
    kind = cfg.effective_kind
    if cfg.effective_gamma == 0 or kind == "free":
        return DraftCost("free")
    if cfg.cost is not None:
        table, index = load_draft_cost(cfg.cost, tp=tp)
        return DraftCost(kind, measured=table, index=index)
    layers = float(cfg.layer_cost * cfg.effective_layers)
    overhead = cfg.markov_overhead if cfg.name == "dspark" else 0.0
    return DraftCost(kind, layers, overhead)


def draft_seconds_table(
    cfg: DrafterConfig, cost: CostTable, max_requests: int, *, tp: int = 1, drafter: DraftCost | None = None
) -> np.ndarray:
    """float64[max_requests + 1]: draft seconds of one full-drafting step with R = 0..max_requests
    decoding requests (every one drafts γ); `drafter`: the pricing rule (None: `draft_cost(cfg)`)."""
    gamma = cfg.effective_gamma
    out = np.zeros(max_requests + 1, dtype=np.float64)
    if gamma == 0 or max_requests == 0:
        return out
    r = np.arange(1, max_requests + 1, dtype=np.int64)
    rule = draft_cost(cfg, tp=tp) if drafter is None else drafter
    out[1:] = rule.price(r * gamma, r, np.full(r.size, gamma), cost)
    return out
