"""The χ² check that an engine's outputs follow the target's own law (shared by the loop tests)."""

import itertools
import math

import numpy as np
import torch

from engine.proof.stats import chi2_threshold, merged_chi2
from engine.sampling import probs_from_logits


def assert_follows_target_law(target, out: dict, params, length: int, n: int) -> None:
    """`out` (rid -> tokens) of n requests with prompt (0, 1), `length` new tokens over a 3-token vocabulary,
    is distributed as plain sampling from `target` (merged-bin χ² at the suite's threshold)."""
    seqs = list(itertools.product(range(3), repeat=length))
    law = []
    for s in seqs:
        p = probs_from_logits(target.logits_full(torch.tensor([[0, 1, *s]]))[0], params)
        law.append(math.prod(float(p[1 + t, s[t]]) for t in range(length)))
    counts = np.zeros(len(seqs))
    for toks in out.values():
        counts[seqs.index(tuple(toks))] += 1
    stat, df = merged_chi2(counts, np.array(law) * n)
    assert stat < chi2_threshold(df), (stat, df)
