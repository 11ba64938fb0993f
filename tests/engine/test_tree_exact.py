"""Exact proof: a tree-verified step emits the target's law (Fractions), for widths 2–3, depths 2–3, small
vocabularies, every child rule and prefix-dependent tables; every negative control shows a gap."""

import itertools
from fractions import Fraction

import numpy as np
import pytest

from engine.proof.exact import ToyConf, ToyModel, law_gap, random_weights, target_law, transformed
from engine.proof.tree_controls import (
    WALK_CONTROLS,
    lawful_keep,
    own_prob_keep,
    peeking_keep,
)
from engine.proof.tree_exact import MODES, emitted_law, full_shape, prune, step_law
from engine.sampling import SamplingParams

SHAPES = [[2, 2], [3, 2], [2, 3], [2, 2, 2], [3, 1, 2], [1, 3, 1]]


def _models(seed: int, vocab: int):
    rng = np.random.default_rng(seed)
    target = ToyModel.from_weights(random_weights(rng, vocab, 3), salt=seed)
    draft = ToyModel.from_weights(random_weights(rng, vocab, 3), salt=seed + 7)
    return target, draft


def _gap(target, draft, shape, mode, length, **kw):
    law = emitted_law(target, draft, shape, mode, length=length, **kw)
    return law_gap(law, target_law([target], length=length, prompts=[kw.get("prompt", ())]))


@pytest.mark.parametrize("widths, mode", list(itertools.product(SHAPES, MODES)))
def test_every_enumerated_tree_emits_the_target_law(widths, mode):
    vocab = 3 if sum(widths) <= 6 else 2
    for seed in range(3):
        target, draft = _models(seed * 31 + len(widths), vocab)
        assert _gap(target, draft, full_shape(widths), mode, length=3) == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_one_step_law_is_the_target_law_at_every_depth(mode):
    """The first step alone: the emitted prefix of every depth follows the target (marginal of the step's
    law on its first k tokens, given it emits ≥ k, weighted back by the target's path probability)."""
    target, draft = _models(5, 3)
    law = step_law(target, draft, (1,), full_shape([3, 3, 3]), mode)
    assert sum(law.values()) == 1
    first: dict = {}
    for seq, w in law.items():
        first[seq[0]] = first.get(seq[0], 0) + w
    assert first == {v: x for v, x in enumerate(target((1,))) if x}


@pytest.mark.parametrize("mode", MODES)
def test_pruned_trees_temperatures_and_prompts(mode):
    for seed, cap in itertools.product(range(3), (1, 3, 5)):
        target, draft = _models(100 + seed, 3)
        params = SamplingParams([1.0, 0.5, 0.0][seed], top_k=[0, 2, 0][seed])
        t, d = transformed(target, params), transformed(draft, params)
        shape = prune(full_shape([3, 2]), cap)
        assert _gap(t, d, shape, mode, length=3, prompt=(seed % 3,)) == 0.0


def test_prune_keeps_bfs_prefix():
    assert prune(full_shape([2, 2]), 3) == (((),), ())
    assert prune(full_shape([1, 1, 1]), 3) == full_shape([1, 1, 1])


@pytest.mark.parametrize("name", list(WALK_CONTROLS))
def test_walk_controls_are_caught(name):
    caught = 0
    for seed, widths, mode in itertools.product(range(3), ([2, 2], [3, 1]), MODES):
        target, draft = _models(seed, 3)
        caught += _gap(target, draft, full_shape(widths), mode, length=2, walk=WALK_CONTROLS[name]) > 0
    assert caught >= 6  # biased in most cases (a case can be lossless by luck, e.g. q = p)


def test_firewall_for_nodes():
    """A node budget from confidences known before the node's token: lossless. One that reads the
    node's own token (peeking, or the draft's probability of a sampled token): biased. EAGLE-2's score
    q(x) is lawful for deterministic top-k children only."""
    conf = ToyConf((0.2, 0.6, 0.9, 1.0), salt=3)
    peek = own = 0
    for seed in range(6):
        target, draft = _models(200 + seed, 3)
        shape = full_shape([3, 2])
        for mode in MODES:
            assert _gap(target, draft, shape, mode, 3, keep=lawful_keep(conf)) == 0.0
        assert _gap(target, draft, shape, "topk", 3, keep=own_prob_keep(draft, Fraction(2, 5))) == 0.0
        peek += _gap(target, draft, shape, "sampled", 3, keep=peeking_keep(draft)) > 0
        own += _gap(target, draft, shape, "sampled", 3, keep=own_prob_keep(draft, Fraction(2, 5))) > 0
    assert peek >= 3 and own >= 3


def test_tree_suite_rows_all_hold():
    from engine.proof.tree_suite import tree_rows

    rows = list(tree_rows(np.random.default_rng(3), quick=True))
    assert rows and all(r.ok for r in rows), [r for r in rows if not r.ok]


def test_batch_level_node_budget_is_lossless_and_a_peeking_one_is_not():
    """Two requests, one node budget across the batch from both contexts (lawful); the same budget
    reading the node's own token (peeking) is biased."""
    from engine.proof.tree_exact import batch_emitted_law

    (t1, d1), (t2, d2) = _models(11, 3), _models(12, 3)
    conf = ToyConf((0.1, 0.5, 0.9), salt=5)

    def lawful(ctxs, r, ctx, i, drawn, x):
        share = conf(ctxs[0]) + conf(ctxs[1])
        return (i + 1) * 0.5 <= share * (1.0 if r == 0 else 0.7)

    def peeking(ctxs, r, ctx, i, drawn, x):
        return lawful(ctxs, r, ctx, i, drawn, x) and x != 0

    want = target_law([t1, t2], length=2)
    for mode in MODES:
        law = batch_emitted_law([t1, t2], [d1, d2], full_shape([2, 2]), mode, length=2, keep=lawful)
        assert law_gap(law, want) == 0.0
    bad = batch_emitted_law([t1, t2], [d1, d2], full_shape([2, 2]), "sampled", length=2, keep=peeking)
    assert law_gap(bad, want) > 0
