"""Tree verification: chain = width-1 tree bit for bit, greedy at temperature 0, the target's law per
position (χ²), Triton = torch under the same noise, and clear errors on bad trees."""

from collections import Counter, defaultdict

import pytest
import torch

from engine.proof.stats import chi2_threshold, merged_chi2
from engine.proof.suite_engine import random_verify_inputs
from engine.proof.tree_cases import (
    CHILD_MODES,
    RowBank,
    draft_tree,
    random_bank,
    random_tree_batch,
    shape_parents,
)
from engine.tree_verify import ancestors, chain_tree, node_depths, tree_verify
from engine.verify import rejection_sample

SHAPES = ([2, 2], [3, 1], [1, 1, 1], [2, 1, 2], [3])


@pytest.mark.parametrize("seed", range(6))
def test_chain_is_a_width1_tree_bit_for_bit(seed):
    gen = torch.Generator().manual_seed(seed)
    r, gamma, vocab = 9, 4, 13
    x = random_verify_inputs(gen, r, gamma, vocab)
    ref_tokens, ref_n = rejection_sample(**x)
    d, q, p = x["draft_tokens"], x["draft_probs"], x["target_probs"]
    tokens = torch.cat([torch.zeros(r, 1, dtype=torch.int64), d], 1)
    qt = torch.cat([torch.zeros(r, 1, vocab, dtype=q.dtype), q], 1)
    qt[:, 0, 0] = 1.0
    active = torch.arange(gamma + 1)[None, :] <= x["lengths"][:, None]
    u = torch.cat([torch.zeros(r, 1, dtype=torch.float64), x["uniforms"]], 1)
    emitted, n, path = tree_verify(
        chain_tree(r, gamma), tokens, qt, p, active=active, uniforms=u, exponentials=x["exponentials"]
    )
    assert torch.equal(n, ref_n)
    assert torch.equal(emitted, ref_tokens)
    k = torch.arange(gamma + 1)
    assert torch.equal(path, torch.where(k[None, :] < n[:, None] - 1, k[None, :] + 1, -1))


@pytest.mark.parametrize("widths", SHAPES)
def test_greedy_tree_emits_the_targets_argmax_path(widths):
    gen = torch.Generator().manual_seed(3)
    parents = shape_parents(widths)
    target = random_bank(gen, 4, 6)
    target.rows = torch.nn.functional.one_hot(target.rows.argmax(-1), 6).to(torch.float64)
    draft = random_bank(gen, 4, 6, salt=9)
    for _trial in range(20):
        tokens, q, p, _ = draft_tree(parents, target, draft, "topk", gen)
        par = torch.tensor([0] + parents[1:]).unsqueeze(0)
        emitted, n, _ = tree_verify(par, tokens[None], q[None], p[None], generator=gen)
        path: tuple = ()
        for k in range(int(n[0])):
            assert int(emitted[0, k]) == int(target.row(path).argmax())
            path += (int(emitted[0, k]),)
        # greedy acceptance is as long as the tree allows: the next greedy token is not a child there
        depth = node_depths(par)[0]
        assert int(n[0]) <= int(depth.max()) + 1


def _chi2_by_prefix(emitted, n, bank_rows, max_pos=3):
    """Worst χ²/threshold over (position, prefix) groups: the token at position k given the first k
    emitted tokens must follow the target row of that prefix."""
    groups: dict[tuple, Counter] = defaultdict(Counter)
    for row, m in zip(emitted.tolist(), n.tolist()):
        for k in range(min(m, max_pos)):
            groups[tuple(row[:k])][row[k]] += 1
    worst = 0.0
    for prefix, counts in groups.items():
        total = sum(counts.values())
        if total < 200:
            continue
        probs = bank_rows(prefix)
        obs = torch.tensor([counts.get(v, 0) for v in range(probs.numel())], dtype=torch.float64)
        stat, df = merged_chi2(obs.numpy(), (probs * total).numpy())
        if df:
            worst = max(worst, stat / chi2_threshold(df))
    return worst


@pytest.mark.parametrize("mode", CHILD_MODES)
@pytest.mark.parametrize("widths", [[2, 2], [3, 1]])
def test_tree_emits_the_target_law_chi2(mode, widths):
    gen = torch.Generator().manual_seed(7)
    parents, vocab, trials = shape_parents(widths), 5, 6000
    target = random_bank(gen, 3, vocab, salt=1)
    other = random_bank(gen, 3, vocab, salt=1, scale=1.0)
    draft = RowBank(0.6 * target.rows + 0.4 * other.rows, 1)  # correlated with the target, like a drafter
    built = [draft_tree(parents, target, draft, mode, gen) for _ in range(trials)]
    par = torch.tensor([0] + parents[1:]).expand(trials, len(parents))
    emitted, n, _ = tree_verify(
        par, torch.stack([b[0] for b in built]), torch.stack([b[1] for b in built]),
        torch.stack([b[2] for b in built]), generator=gen,
    )  # fmt: skip
    assert _chi2_by_prefix(emitted, n, target.row) <= 1.0
    assert float(n.double().mean()) > 1.2  # the trees do get accepted


def test_ancestors_and_depths():
    par = torch.tensor([[0, 0, 0, 1, 1, 2]])
    anc = ancestors(par)[0]
    assert anc[3].tolist() == [True, True, False, True, False, False]
    assert anc[5].tolist() == [True, False, True, False, False, True]
    assert node_depths(par)[0].tolist() == [0, 1, 1, 2, 2, 2]


def test_inactive_nodes_are_never_tried():
    gen = torch.Generator().manual_seed(5)
    x = random_tree_batch(gen, shape_parents([2, 2]), 6, 7)
    paths = x.pop("paths")
    active = torch.zeros(6, 7, dtype=torch.bool)
    active[:, 0] = True
    emitted, n, _ = tree_verify(**x, active=active)
    assert n.tolist() == [1] * 6  # root only: the bonus token
    assert paths[0][0] == ()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda x: x["parents"].__setitem__((0, 3), 5), "parents"),
        (lambda x: x["tokens"].__setitem__((1, 2), 99), "tokens"),
        (lambda x: x["draft_probs"].__setitem__((0, 1), 0.0), "draft_probs"),
        (lambda x: x["uniforms"].__setitem__((0, 1), 1.0), "uniforms"),
    ],
)
def test_bad_inputs_name_the_argument(mutate, message):
    x = random_tree_batch(torch.Generator().manual_seed(2), shape_parents([2, 2]), 3, 7)
    x.pop("paths")
    mutate(x)
    with pytest.raises(ValueError, match=message):
        tree_verify(**x)


def test_parent_closed_active_set_is_required():
    x = random_tree_batch(torch.Generator().manual_seed(2), shape_parents([2, 2]), 2, 7)
    x.pop("paths")
    active = torch.ones(2, 7, dtype=torch.bool)
    active[0, 1] = False  # node 3's parent
    with pytest.raises(ValueError, match="parent is not"):
        tree_verify(**x, active=active)
