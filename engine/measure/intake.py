"""The intake term of an engine profile: a draft pass after a longer verify step costs more.

Role: a draft pass after a step that verified more drafts costs more (on specbed's CPU engine the draft
seconds follow the drafts each request verified in its previous step, not the ones it accepted: the verify
forward's size carries over into the next pass; measured in docs/notes/2026-12-01-engine-terms.md). Over the
clean steps at each profiled R (all ℓ), the draft seconds are regressed on Σ of the drafts each request
verified in its previous step: the slope (seconds per draft, floored at 0) and the mean drafts per drafting
request of those steps go into the profile (`intake_s`, `intake_tokens`; sim drafter.intake_seconds /
intake_tokens), so a twin charges a long-verifying policy's dearer draft passes and an `ar` run's cheaper
ones.

May import: numpy, stdlib.
"""

from __future__ import annotations

import numpy as np


def intake_tokens(ro) -> np.ndarray:
    """float64[steps]: per step, Σ over its requests of the drafts each verified in its previous step (0
    after a request's first step, its prefill: the prompt's intake is the join cost's)."""
    rs = ro.request_steps
    order = np.lexsort((rs["step"], rs["rid"]))  # by request, then step
    rid, acc, first = rs["rid"][order], rs["length"][order], rs["first"][order]
    prev = np.zeros(order.size)
    follows = (rid[1:] == rid[:-1]) & ~first[:-1]
    prev[1:][follows] = acc[:-1][follows]
    out = np.zeros(ro.steps["end_s"].size)
    np.add.at(out, rs["step"][order], prev)
    return out


def intake_fit(r: int, pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """(seconds per extra token taken in, floored at 0; mean extra tokens per drafting request) from the
    clean steps' (extra tokens, draft seconds) at R = r: the least-squares slope."""
    x = np.concatenate([p[0] for p in pairs])
    y = np.concatenate([p[1] for p in pairs])
    var = float(np.var(x)) if x.size > 1 else 0.0
    slope = float(np.mean((x - x.mean()) * (y - y.mean()))) / var if var > 0 else 0.0
    return max(slope, 0.0), float(x.mean()) / r if x.size else 0.0
