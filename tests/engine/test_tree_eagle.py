"""EAGLE trees (engine.tree_eagle): topk = 1 is exactly the EAGLE chain's drafts; the tree mask keeps a
node's feature a function of its own path; decoding with EAGLE trees is exactly greedy at temperature 0 and
follows the target's law at temperature 1 (χ²); one EAGLE-tree step emits the target's law exactly
(engine.proof.tree_exact, Fractions)."""

from collections import defaultdict
from fractions import Fraction

import numpy as np
import torch

from engine.drafter import TargetHidden
from engine.lm.drafters import EagleHeadDrafter
from engine.lm.eagle import EagleDrafter
from engine.lm.layers import DraftConfig
from engine.model import KVCache, ModelConfig, TinyLM
from engine.proof.exact import law_gap, target_law
from engine.proof.stats import chi2_threshold, merged_chi2
from engine.proof.tree_controls import rejected_mass_reused
from engine.proof.tree_exact import full_shape, step_law
from engine.sampling import SamplingParams
from engine.tree_decode import TreeSpec, tree_generate
from engine.tree_eagle import EagleTree

CFG = ModelConfig(vocab_size=13, d_model=32, n_layers=3, n_heads=2, max_len=96, seed=3, init_scale=0.4)


class _Req:
    def __init__(self, rid, tokens, params):
        self.rid, self.tokens, self.params = rid, tokens, params


def _pair(cfg=CFG, seed=1):
    target = TinyLM(cfg)
    net = EagleDrafter(
        DraftConfig(kind="eagle", layers=1, markov="none"), cfg, target.w, torch.Generator().manual_seed(seed)
    )
    return target, net


def _chain(target, net, ctx, gamma):
    """EagleHeadDrafter's γ drafts at temperature 0, fed the target's features of the whole context."""
    drafter = EagleHeadDrafter(net, target, slots=1, max_len=64)
    req = _Req(0, list(ctx), SamplingParams(0.0))
    e = torch.ones(1, gamma, target.config.vocab_size, dtype=torch.float64)
    drafter.propose([req], 1, e[:, :1])  # first step: marks the request seen
    n = len(ctx)
    cache = KVCache(target.config, 1, n)
    fwd = target.run(torch.tensor([list(ctx)]), torch.tensor([n]), torch.tensor([0]), cache, hidden=True)
    hidden = TargetHidden((0,), (fwd.hidden[: n - 1],))
    return drafter.propose([req], gamma, e, hidden).tokens[0].tolist()


def test_topk1_tree_is_the_eagle_chain():
    target, net = _pair()
    tree = EagleTree(net, target)
    for ctx in ([1, 2, 3], [4, 5, 6, 7, 8, 9, 10], [0, 12]):
        par, toks = tree.draft_tree(ctx, TreeSpec(1, 5))
        assert par == [-1, 0, 1, 2, 3]
        assert toks == _chain(target, net, ctx, 5)


def _path_probs(target, net, ctx, path):
    """Reference, uncached and causal: the head's distribution after the drafted `path`, recomputing every
    pair each step (real pairs (f_t, x_{t+1}) at t + 1, then chain pairs (f̂, x) fed their own predictions)."""
    n = len(ctx)
    cache = KVCache(target.config, 1, n)
    fwd = target.run(torch.tensor([list(ctx)]), torch.tensor([n]), torch.tensor([0]), cache, hidden=True)
    feats = list(fwd.hidden[: n - 1, net.feature_layer].float())
    toks, out = list(ctx[1:]), None
    for k in range(len(path) + 1):
        m = len(toks)
        pos = torch.arange(1, m + 1)[None]
        u = net.pair_input(torch.stack(feats)[None], torch.tensor([toks]), pos)
        empty = u.new_zeros(1, net.layer.heads, 0, net.layer.dh)
        out = net.attend(u, empty, empty, torch.ones(m, m, dtype=torch.bool).tril()[None, None], pos)[0, -1]
        if k < len(path):
            feats.append(out)
            toks.append(path[k])
    return torch.softmax(net.frozen.logits(out).double(), -1)


def test_each_expanded_nodes_children_are_the_top_k_after_its_own_path():
    target, net = _pair()
    par, toks = EagleTree(net, target).draft_tree([3, 1, 4, 1, 5], TreeSpec(3, 3))
    assert all(p < i for i, p in enumerate(par)) and len(par) == 3 + 3 * 3 + 3 * 3
    expanded = sorted(set(par))
    assert len(expanded) == 1 + 3 + 3  # the root and the 3 best frontier nodes of depths 1 and 2
    for node in expanded:
        path, i = [], node
        while i >= 0:
            path.insert(0, toks[i])
            i = par[i]
        with torch.no_grad():
            want = torch.topk(_path_probs(target, net, [3, 1, 4, 1, 5], path), 3).indices.tolist()
        assert [toks[c] for c, p in enumerate(par) if p == node] == want


def test_greedy_eagle_tree_decoding_is_the_targets_greedy_continuation():
    target, net = _pair()
    prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9]]
    want = []
    for p in prompts:
        seq = list(p)
        for _ in range(10):
            seq.append(int(target.logits_full(torch.tensor([seq]))[0, -1].argmax()))
        want.append(seq[len(p) :])
    for spec in (TreeSpec(1, 3), TreeSpec(2, 3), TreeSpec(3, 2, 5)):
        out, _, _ = tree_generate(target, EagleTree(net, target), prompts, 10, spec, SamplingParams(0.0))
        assert out == want


def test_sampled_eagle_tree_decoding_follows_the_target_law():
    cfg = ModelConfig(vocab_size=4, d_model=16, n_layers=2, n_heads=2, max_len=32, seed=5, logit_scale=1.5)
    target, net = _pair(cfg, seed=2)
    n = 1000
    out, _, _ = tree_generate(
        target, EagleTree(net, target), [[1]] * n, 2, TreeSpec(2, 2), SamplingParams(1.0), seed=4
    )
    p1 = torch.softmax(target.logits_full(torch.tensor([[1]]))[0, -1].double(), -1)
    p2 = torch.softmax(target.logits_full(torch.tensor([[1, a] for a in range(4)]))[:, -1].double(), -1)
    expected = (p1[:, None] * p2).reshape(-1).numpy() * n
    counts = np.bincount([4 * a + b for a, b in out], minlength=16)
    stat, df = merged_chi2(counts, expected)
    assert stat <= chi2_threshold(df)


def _fractions(row):
    """A float row as exact Fractions summing to 1 (the last entry takes the rounding)."""
    out = [Fraction(float(x)).limit_denominator(10**9) for x in row[:-1]]
    return tuple(out + [1 - sum(out)])


def test_eagle_tree_step_emits_the_targets_law_exactly():
    """engine.proof.tree_exact on the EAGLE tree k2 d2 (the full [2, 2] tree with deterministic top-k
    children): one verify step, continued by the target, gives the target's law of 3 tokens, in Fractions."""
    cfg = ModelConfig(vocab_size=4, d_model=16, n_layers=2, n_heads=2, max_len=32, seed=5, logit_scale=1.5)
    target, net = _pair(cfg, seed=2)
    prompt = (1, 3)
    par, toks = EagleTree(net, target).draft_tree(prompt, TreeSpec(2, 2))
    assert par == [-1, -1, 0, 0, 1, 1]  # k2 d2 expands both depth-1 nodes: the full [2, 2] tree
    with torch.no_grad():

        def p_row(ctx):
            return _fractions(
                torch.softmax(target.logits_full(torch.tensor([ctx]))[0, -1].double(), -1).tolist()
            )

        def q_row(ctx):
            return _fractions(_path_probs(target, net, prompt, list(ctx[len(prompt) :])).tolist())

        for node in (-1, 0, 1):  # the drafted tree is the top-2 of q_row at each expanded node
            path = () if node < 0 else (toks[node],)
            order = sorted(range(4), key=lambda v: (-q_row(prompt + path)[v], v))[:2]
            assert [toks[i] for i, p in enumerate(par) if p == node] == order
        want = target_law([p_row], length=3, prompts=[prompt])
        for walk, exact in ((None, True), (rejected_mass_reused, False)):  # and a negative control
            step = step_law(p_row, q_row, prompt, full_shape([2, 2]), "topk", walk=walk)
            law = defaultdict(Fraction)
            for emitted, pr in step.items():
                seqs = [(emitted, pr)]
                for _ in range(3 - len(emitted)):
                    seqs = [
                        (s + (v,), w * pv) for s, w in seqs for v, pv in enumerate(p_row(prompt + s)) if pv
                    ]
                for s, w in seqs:
                    law[(s,)] += w
            assert (law_gap(dict(law), want) == 0.0) == exact
