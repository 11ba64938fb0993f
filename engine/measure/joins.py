"""The join term of an engine profile: a request joining mid-run costs more than its prompt tokens.

Role: with `ProfileConfig.extra_requests` > 0 each run decodes R + extra requests, R at a time, so the extra
ones join one by one as the first finish; a join step (a request's first step: its whole prompt is fed with
the others' drafts) costs more than its tokens, and the step after it the drafter takes in the prompt's
features. The per-join excess is the mean over join steps of (verify − the clean steps' statistic at that ℓ)
/ joins, plus the same for the draft seconds of the steps right after (`join_s`, by R).

May import: numpy, stdlib.
"""

from __future__ import annotations

import numpy as np


def join_excess(ro, r: int, k: int, clean_verify: float, stat) -> list[float]:
    """Per-join extra seconds of one fixed-ℓ run: for every step where j ≥ 1 requests joined (all R running,
    none capped below ℓ = k), (verify − clean_verify) / j plus, for the step right after it (when it had no
    join), (draft − the clean steps' draft statistic) / j."""
    st, rs = ro.steps, ro.request_steps
    n = st["end_s"].size
    j = np.zeros(n)
    np.add.at(j, rs["step"][rs["first"]], 1)
    capped = np.zeros(n, dtype=bool)
    capped[np.unique(rs["step"][rs["length"] != k])] = True
    full = (st["requests"] == r) & ~capped
    full[0] = False  # the very first step prefills every request at once
    verify = st["end_s"] - st["start_s"] - st["draft_s"]
    clean = full & (j == 0) & (np.concatenate([[0.0], j[:-1]]) == 0)
    if not clean.any():
        return []
    clean_draft = float(stat(st["draft_s"][clean]))
    out = []
    for s in np.flatnonzero(full & (j > 0)):
        extra = verify[s] - clean_verify
        if s + 1 < n and full[s + 1] and j[s + 1] == 0:
            extra += st["draft_s"][s + 1] - clean_draft
        out.extend([extra / j[s]] * int(j[s]))
    return out
