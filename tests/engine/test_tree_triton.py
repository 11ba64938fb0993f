"""The Triton tree verifier takes the torch reference's decisions under the same noise (CPU: interpreter)."""

import pytest
import torch

from engine.proof.tree_cases import CHILD_MODES, random_tree_batch, shape_parents
from engine.tree_verify import tree_verify

pytest.importorskip("triton")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _same(x, active=None):
    x = {k: v.to(DEVICE) for k, v in x.items() if k != "paths"}
    if active is not None:
        active = active.to(DEVICE)
    a = tree_verify(**x, active=active, backend="torch")
    b = tree_verify(**x, active=active, backend="triton")
    for ta, tb in zip(a, b):
        assert torch.equal(ta, tb), (ta, tb)
    return a


@pytest.mark.parametrize("widths", [[2, 2], [3, 1], [1, 1, 1], [2, 1, 2], []])
@pytest.mark.parametrize("vocab", [1, 2, 7, 33])
def test_parity_shapes_and_vocabs(widths, vocab):
    gen = torch.Generator().manual_seed(len(widths) * 100 + vocab)
    x = random_tree_batch(gen, shape_parents(widths), 6, vocab, modes=CHILD_MODES)
    _same(x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_parity_ragged_active_sets_multi_block_vocab(dtype, monkeypatch):
    import engine.tree_triton as tt

    monkeypatch.setattr(tt, "MAX_BLOCK_V", 16)  # several vocabulary blocks
    gen = torch.Generator().manual_seed(4)
    parents = shape_parents([3, 2])
    x = random_tree_batch(gen, parents, 8, 40, dtype=dtype)
    depth_cut = torch.randint(0, 3, (8,), generator=gen)
    depth = torch.tensor([0] + [1] * 3 + [2] * 6)
    active = depth[None, :] <= depth_cut[:, None]
    _same(x, active)
