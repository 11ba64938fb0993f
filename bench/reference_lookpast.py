"""INDEPENDENT REFERENCE of `dspark`'s stop (issue 32): Algorithm 1 with the look-past stop, as a plain loop.

Written from the rule's statement in specsched/dspark.py's docstring, not from its kernels: one candidate at
a time, Θ from `cost.sps(B, R)`. Candidate k (1-based rank in the order survival desc, position j, request
r) is admitted if Θ(k) > max Θ(0..k−1), or else if B = R + k lies on a plateau of the step cost (sps(B)
equals sps(B − 1) or sps(B + 1)) and some prefix m ∈ [k+1, k+63] (m ≤ the slots in room, every slot
counted, zero survival or not) has (τ(k−1) + (m − k + 1)·a_k)·sps(R + m) > max Θ(0..k−1)·(1 + 1e-9); the
first candidate passing neither ends admission. bench/reference_policies.py keeps the paper's greedy stop
(frozen); on a table without plateaus both give the same lengths. Not used by any package.

May import: the standard library.
"""

from __future__ import annotations

#: the rule's constants, stated here independently (a test checks they match specsched.dspark's)
LOOKAHEAD = 64
MARGIN = 1.0 + 1e-9


def dspark_lookpast(conf: list[list[float]], sps, budget: int | None = None) -> list[int]:
    """conf: R lists of γ conditional confidences; sps: callable B -> steps per second (for these R);
    budget: cap on R + admitted tokens (None = none). Returns the verify lengths (R ints)."""
    R = len(conf)
    cands = []
    for r, row in enumerate(conf):
        a = 1.0
        for j, c in enumerate(row):
            a = c if j == 0 else a * c
            if a > 0:
                cands.append((-a, j, r))
    cands.sort()  # survival descending, then position, then request
    n = len(cands) if budget is None else max(0, min(len(cands), budget - R))
    slots = sum(len(row) for row in conf)  # the look-ahead reaches every slot in room, zero or not
    top = slots if budget is None else max(0, min(slots, budget - R))
    lengths = [0] * R
    tau = float(R)
    best = tau * sps(R)
    for k in range(n):  # k candidates admitted so far; this one is rank k + 1
        neg_a, j, r = cands[k]
        a = -neg_a
        theta = (tau + a) * sps(R + k + 1)
        if not theta > best:
            B = R + k + 1
            plateau = sps(B) == sps(B - 1) or (B < R + top and sps(B + 1) == sps(B))
            later = [(tau + i * a) * sps(R + k + i) for i in range(2, LOOKAHEAD + 1) if k + i <= top]
            if not (plateau and any(x > best * MARGIN for x in later)):
                break
        best = max(best, theta)
        tau += a
        lengths[r] = j + 1
    return lengths
