"""Algorithm 1 (the DSpark prefix scheduler) as a plain Python loop: the benchmark's baseline.

Kept deliberately naive — one candidate at a time, as the paper writes it — so `bench_specsched` can
show what the vectorized `specsched` policy buys. Not used by any package.
"""

from __future__ import annotations


def dspark_loop(conf: list[list[float]], sps) -> list[int]:
    """conf: R lists of γ conditional confidences; sps: callable B -> steps per second (for these R)."""
    R = len(conf)
    cands = []
    for r, row in enumerate(conf):
        a = 1.0
        for j, c in enumerate(row):
            a *= c
            if a > 0:
                cands.append((-a, j, r))
    cands.sort()
    lengths = [0] * R
    B, tau = R, float(R)
    best = tau * sps(B)
    for neg_a, j, r in cands:
        B += 1
        tau -= neg_a
        theta = tau * sps(B)
        if not theta > best:
            break
        best = theta
        lengths[r] = j + 1
    return lengths
