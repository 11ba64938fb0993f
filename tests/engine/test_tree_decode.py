"""Tree decoding in the small engine: exactly greedy at temperature 0 (any tree shape, batched, ragged
prompts); at temperature 1 the first two tokens follow the target's law (χ²); trees accept more than
chains with the self-speculative drafter."""

import numpy as np
import torch

from engine.model import ModelConfig, TinyLM
from engine.proof.stats import chi2_threshold, merged_chi2
from engine.sampling import SamplingParams
from engine.tree_decode import TreeSpec, draft_tree, tree_generate

CFG = ModelConfig(vocab_size=13, d_model=32, n_layers=3, n_heads=2, max_len=96, seed=3, init_scale=0.4)


def _greedy(lm, prompt, n):
    seq = list(prompt)
    for _ in range(n):
        seq.append(int(lm.logits_full(torch.tensor([seq]))[0, -1].argmax()))
    return seq[len(prompt) :]


def test_draft_tree_is_bfs_and_parent_closed():
    lm = TinyLM(CFG)
    par, toks = draft_tree(lm.truncated(1), [1, 2, 3], TreeSpec(3, 3, 7))
    assert len(par) == len(toks) == 7
    assert all(p < i for i, p in enumerate(par))


def test_greedy_tree_decoding_is_the_targets_greedy_continuation():
    lm = TinyLM(CFG)
    prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9]]
    want = [_greedy(lm, p, 12) for p in prompts]
    for spec in (TreeSpec(1, 3), TreeSpec(2, 3), TreeSpec(3, 2, 5)):
        out, steps, emitted = tree_generate(lm, lm.truncated(1), prompts, 12, spec, SamplingParams(0.0))
        assert out == want
        assert emitted >= 36


def test_sampled_tree_decoding_follows_the_target_law():
    cfg = ModelConfig(vocab_size=4, d_model=16, n_layers=2, n_heads=2, max_len=32, seed=5, logit_scale=1.5)
    lm = TinyLM(cfg)
    n = 1000
    out, _, _ = tree_generate(lm, lm.truncated(1), [[1]] * n, 2, TreeSpec(2, 2), SamplingParams(1.0), seed=4)
    p1 = torch.softmax(lm.logits_full(torch.tensor([[1]]))[0, -1].double(), -1)
    seqs = torch.tensor([[1, a] for a in range(4)])
    p2 = torch.softmax(lm.logits_full(seqs)[:, -1].double(), -1)
    expected = (p1[:, None] * p2).reshape(-1).numpy() * n
    counts = np.bincount([4 * a + b for a, b in out], minlength=16)
    stat, df = merged_chi2(counts, expected)
    assert stat <= chi2_threshold(df)


def test_trees_accept_more_than_chains():
    lm = TinyLM(CFG)
    prompts = [[i % 13, (3 * i) % 13] for i in range(8)]
    taus = {}
    for name, spec in (("chain", TreeSpec(1, 3)), ("tree", TreeSpec(3, 3))):
        _, steps, emitted = tree_generate(lm, lm.truncated(1), prompts, 16, spec, SamplingParams(1.0), seed=1)
        taus[name] = emitted / steps
    assert taus["tree"] > taus["chain"]
