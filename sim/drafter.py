"""What drafting costs per engine step, by drafter kind (the draft half of step time).

Role: price the draft pass the server charges every step before verification, from the target's cost
table (`CostTable.layer_seconds(B)` = one target-sized layer over B tokens). The drafter always drafts the
full γ for every decoding request, whatever verify lengths the policy then picks.

By `drafter.kind` (default: the built-in name's kind):
- parallel ("dflash", "dspark"): one pass of its `layers` draft layers over R·γ positions (anchor + γ − 1
  mask tokens per request): layers · layer_cost · layer_seconds(R·γ).
- autoregressive ("eagle3"): γ sequential passes of its layers over R tokens:
  γ · layers · layer_cost · layer_seconds(R).
  "mtp": k = γ sequential one-layer (MTP-module) passes over R tokens, priced like EAGLE-3.
- free ("none", and e.g. n-gram / suffix lookup): 0.
- Markov head (DSpark only): γ tiny sequential sampling steps; modelled as `markov_overhead` times an AR
  verify step over the same R requests, latency(R) (paper Fig. 4: +0.2–1.3 % of a round).

Measured draft cost (`drafter.cost`) replaces all of the above for any kind: a CSV `tokens,seconds`
(drafted positions R·γ → seconds of the whole draft pass, read "linear" like a cost table), a CSV
`requests,seconds` (R → seconds), or a fit file of `phase = draft` rows (`specbed cost fit`; its step
time at R·γ tokens over R requests, at the server's `tp`). A CSV with a `context_tokens` column, or a fit,
also prices the drafter's KV reads per context token (`draft_kv_seconds`; the server charges it on the
running requests' context, like the target's).

Everything is tabulated once per run for R = 0..max_num_seqs (the per-step lookup is one index).

May import: numpy, the standard library, `sim.config`, `specsched` (CostTable, errors, fit).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from sim.config import DrafterConfig
from specsched import CostTable, InputError


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
    try:
        lines = [
            ln for ln in Path(path).read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")
        ]
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or err
        raise InputError(f"cannot read draft cost ({reason})", file=path, field="drafter.cost") from None
    header = [h.strip() for h in next(csv.reader(lines[:1]), [])]
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


def _measured(cfg: DrafterConfig, live: np.ndarray, gamma: int, tp: int) -> np.ndarray:
    table, key = load_draft_cost(cfg.cost, tp=tp)
    if key == "requests":
        return table.latency(live)
    if key == "tokens":
        return table.latency(live * gamma)
    return table.step_seconds(live * gamma, live)  # a fit: request_s per request, no context


def draft_seconds_table(cfg: DrafterConfig, cost: CostTable, max_requests: int, *, tp: int = 1) -> np.ndarray:
    """float64[max_requests + 1]: draft seconds of one step with R = 0..max_requests decoding requests."""
    gamma = cfg.effective_gamma
    r = np.arange(max_requests + 1, dtype=np.int64)
    out = np.zeros(max_requests + 1, dtype=np.float64)
    if gamma == 0 or max_requests == 0 or cfg.effective_kind == "free":
        return out
    live = r[1:]
    if cfg.cost is not None:
        out[1:] = _measured(cfg, live, gamma, tp)
        return out
    per_layer = cfg.layer_cost * cfg.effective_layers
    if cfg.effective_kind == "parallel":
        out[1:] = per_layer * cost.layer_seconds(live * gamma)
    else:  # eagle3, mtp: γ sequential passes over R tokens
        out[1:] = gamma * per_layer * cost.layer_seconds(live)
    if cfg.name == "dspark":
        out[1:] += cfg.markov_overhead * cost.latency(live)
    return out
