"""`topk_budget`: verify the `budget` most promising drafts across the whole batch — the worked example of
adding a policy in one file (docs/policies.md).

Rule: rank every candidate (r, j) of the batch by its survival on the STALE confidences (the rows of
`delay` steps earlier: `stale`), best first, ties by position j then request r, and give each request the
number of the top `budget` candidates that are its own; then cut to `max_batch_tokens` (deepest positions
first, evenly). Because the lengths are a function of rows fixed before this step's drafts exist, no
decision reads a token it admits, its own or another request's: lossless for delay ≥ 1 (`specbed verify`
proves it by exact enumeration at batch 2). With delay = 0 the caller passes the current rows: the lookahead
bias, a negative control, and the proofs catch it.

Parameters: budget (draft tokens verified per step across the batch, 0..10⁶; the name is free because the
function calls its fourth argument `cap`), delay (staleness of the rows, 0..64).

May import: numpy, specsched.registry, specsched.policies (its building blocks).
"""

from __future__ import annotations

import numpy as np

from specsched.policies import _lengths, _ranked, _trim, _warn_current
from specsched.registry import Param, policy


@policy(
    "topk_budget",
    params=[
        Param("budget", 64, 0, 1_000_000, doc="draft tokens verified per step across the batch"),
        Param("delay", 1, 0, 64, doc="steps of staleness of the rows that rank the drafts"),
    ],
    uses_stale=True,
    adaptive_verification=True,
    doc="verify the `budget` drafts of the batch with the highest stale survival",
)
def topk_budget(conf: np.ndarray, cost, stale, cap: int | None, *, budget: int, delay: int) -> np.ndarray:
    """int64[R]: per request, how many of the top-`budget` candidates of the stale survival are its own."""
    if stale is None:
        _warn_current("topk_budget")
        stale = conf
    req, _ = _ranked(stale, keep_zero=True)
    return _trim(_lengths(req, min(budget, req.size), conf.shape[0]), cap)
