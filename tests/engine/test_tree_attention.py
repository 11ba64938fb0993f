"""The tree attention mask: each node's logits equal a causal forward of its path; the chain path is
untouched; committing the accepted path leaves a cache a chain forward continues exactly."""

import torch

from engine.model import KVCache, ModelConfig, TinyLM
from engine.proof.tree_cases import shape_parents
from engine.tree_verify import commit_path

CFG = ModelConfig(vocab_size=11, d_model=16, n_layers=2, n_heads=2, max_len=64, dtype="float64")


def _paths(parents, tokens):
    paths = [[tokens[0]]]
    for j in range(1, len(parents)):
        paths.append(paths[parents[j]] + [tokens[j]])
    return paths


def test_tree_logits_equal_the_path_forward():
    lm = TinyLM(CFG)
    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, 11, (2, 5), generator=gen)
    parents = shape_parents([2, 2])
    tokens = torch.randint(0, 11, (2, len(parents)), generator=gen)
    cache = KVCache(CFG, 2, 64)
    slots = torch.arange(2)
    lm.forward(prompt, torch.full((2,), 5), slots, cache)
    cache.lengths[:] = 5
    par = torch.tensor([0] + parents[1:]).expand(2, len(parents))
    logits = lm.run(tokens, torch.full((2,), len(parents)), slots, cache, parents=par).logits
    for r in range(2):
        for j, path in enumerate(_paths(parents, tokens[r].tolist())):
            full = lm.logits_full(torch.cat([prompt[r], torch.tensor(path)])[None])[0, -1]
            assert torch.allclose(logits[r, j], full, atol=1e-10)


def test_commit_path_then_chain_forward_matches_uncached():
    lm = TinyLM(CFG)
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, 11, (1, 4), generator=gen)
    parents = shape_parents([2, 2])  # 0 -> 1, 2; 1 -> 3, 4; 2 -> 5, 6
    tokens = torch.randint(0, 11, (1, len(parents)), generator=gen)
    cache, slots = KVCache(CFG, 1, 64), torch.arange(1)
    lm.forward(prompt[:, :3], torch.tensor([3]), slots, cache)
    cache.lengths[:] = 3
    tokens[0, 0] = prompt[0, 3]  # the root: the last committed token, not yet cached
    par = torch.tensor([0] + parents[1:])[None]
    lm.run(tokens, torch.tensor([len(parents)]), slots, cache, parents=par)
    path = torch.tensor([[2, 6, -1, -1, -1, -1, -1]])
    commit_path(cache, slots, path, torch.tensor([3]))
    assert int(cache.lengths[0]) == 3 + 1 + 2
    nxt = torch.tensor([[5]])
    got = lm.forward(nxt, torch.tensor([1]), slots, cache)[0, 0]
    seq = torch.cat([prompt[0], tokens[0, [2, 6]], nxt[0]])
    assert torch.allclose(got, lm.logits_full(seq[None])[0, -1], atol=1e-10)
