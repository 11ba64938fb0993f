"""The tree rows of `specbed verify`: exact tree laws, walk controls, the node firewall, χ² of the verifier.

Role: `tree_rows(rng, quick)` yields engine.proof.table Rows, in seconds: `engine.proof.suite.run_suite`'s
last section ("trees", on its own child stream of the suite's seed), so `specbed verify` prints them.

May import: numpy, stdlib, engine.proof.*.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from fractions import Fraction

import numpy as np

from engine.proof.exact import ToyConf, ToyModel, law_gap, random_weights, target_law
from engine.proof.table import Row
from engine.proof.tree_controls import WALK_CONTROLS, lawful_keep, own_prob_keep, peeking_keep
from engine.proof.tree_exact import MODES, emitted_law, full_shape
from engine.proof.tree_stats import SOFT_TOPK, tree_chi2

WIDTHS = ([2, 2], [3, 2], [2, 2, 2], [3, 1, 2])


def _gap(target, draft, shape, mode, **kw) -> float:
    law = emitted_law(target, draft, shape, mode, length=3, **kw)
    return law_gap(law, target_law([target], length=3))


def tree_rows(rng: np.random.Generator, quick: bool = False) -> Iterator[Row]:
    cases = []
    for widths, mode in itertools.product(WIDTHS[: 2 if quick else 4], MODES):
        vocab = 3 if sum(widths) <= 6 else 2
        target = ToyModel.from_weights(random_weights(rng, vocab, 3), int(rng.integers(1000)))
        draft = ToyModel.from_weights(random_weights(rng, vocab, 3), int(rng.integers(1000)))
        cases.append((target, draft, full_shape(widths), mode))
    gaps = [_gap(*c) for c in cases]
    yield Row("trees: exact law = target law (widths 2–3, depths 2–3)", len(gaps), max(gaps) == 0,
              f"max TV {max(gaps):.3g}")  # fmt: skip
    for name, walk in WALK_CONTROLS.items():
        caught = sum(_gap(*c, walk=walk) > 0 for c in cases)
        yield Row(f"trees: control caught: {name}", len(cases), caught > 0, f"biased in {caught} cases")
    conf = ToyConf((0.2, 0.6, 0.9, 1.0), salt=3)
    lawful = max(_gap(*c, keep=lawful_keep(conf)) for c in cases)
    yield Row("trees: firewall: node budget from prior confidences", len(cases), lawful == 0,
              f"max TV {lawful:.3g}")  # fmt: skip
    sampled = [c for c in cases if c[3] == "sampled"]
    peek = sum(_gap(*c, keep=peeking_keep(c[1])) > 0 for c in sampled)
    own = sum(_gap(*c, keep=own_prob_keep(c[1], Fraction(2, 5))) > 0 for c in sampled)
    yield Row("trees: firewall: peeking node budgets detected", 2 * len(sampled), peek + own > 0,
              f"peeking biased {peek}, q(own token) biased {own}")  # fmt: skip
    trials = 2000 if quick else 6000
    worst = max(tree_chi2(s, mode=m, trials=trials)[0] for s, m in zip((0, 1, 2), MODES))
    yield Row("trees: χ² per prefix of tree_verify [torch]", 3, worst <= 1, f"max χ²/threshold {worst:.2f}")
    bad = tree_chi2(0, mode="topk", trials=trials, control=SOFT_TOPK)[0]
    yield Row(f"trees: control caught: {SOFT_TOPK} (χ²)", 1, bad > 1, f"χ²/threshold {bad:.1f}")
