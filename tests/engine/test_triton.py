"""The Triton verifier equals the torch reference bit for bit under injected noise (interpreter on CPU)."""

import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.verify_triton as vt
from engine.proof.suite_engine import ODD_VOCABS, random_verify_inputs
from engine.verify import rejection_sample

pytest.importorskip("triton")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _same(x):
    a = rejection_sample(**x, backend="torch")
    b = rejection_sample(**x, backend="triton")
    assert torch.equal(a[0], b[0]), (a[0], b[0])
    assert torch.equal(a[1], b[1])
    return a


@settings(max_examples=25)
@given(
    st.integers(0, 10**6),
    st.sampled_from([1, 2, 7]),
    st.integers(0, 4),
    st.sampled_from(ODD_VOCABS),
    st.sampled_from([torch.float32, torch.float64]),
)
def test_parity_ragged_lengths_odd_vocab(seed, r, gamma, vocab, dtype):
    x = random_verify_inputs(torch.Generator().manual_seed(seed), r, gamma, vocab, dtype=dtype, device=DEVICE)
    _same(x)


def test_parity_batch_of_many_and_multi_block_vocab():
    gen = torch.Generator().manual_seed(11)
    _same(random_verify_inputs(gen, 24, 3, 37, device=DEVICE))
    _same(random_verify_inputs(gen, 3, 2, vt.MAX_BLOCK_V + 905, device=DEVICE))  # two vocab blocks


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_parity_on_edge_noise():
    gen = torch.Generator().manual_seed(12)
    x = random_verify_inputs(gen, 6, 3, 11, device=DEVICE)
    x["lengths"][:] = 3
    d = x["draft_tokens"]
    p_d = x["target_probs"][:, :3].gather(2, d[..., None])[..., 0].double()
    q_d = x["draft_probs"].gather(2, d[..., None])[..., 0].double()
    x["uniforms"] = torch.clamp(p_d / q_d, max=1.0 - 2**-53)  # exactly at the boundary: reject
    _same(x)
    x["uniforms"] = torch.zeros_like(x["uniforms"])  # u = 0
    x["exponentials"][:, ::3] = 0.0  # E = 0 (inf scores) must not break parity or the id range
    _same(x)


def test_parity_when_the_residual_has_no_mass():
    """p = 0.9995 q (within the normalization tolerance): a rejection leaves max(p - q, 0) = 0 and both
    backends fall back to racing over p."""
    q = torch.tensor([[[0.2, 0.3, 0.5]]], dtype=torch.float64)
    p = torch.cat([q * 0.9995, q], dim=1)
    x = {
        "draft_tokens": torch.tensor([[2]]),
        "draft_probs": q,
        "target_probs": p,
        "lengths": torch.tensor([1]),
        "uniforms": torch.tensor([[0.9999]], dtype=torch.float64),
        "exponentials": torch.tensor([[1.0, 0.1, 1.0]], dtype=torch.float64),
    }
    tokens, n = _same({k: v.to(DEVICE) for k, v in x.items()})
    assert tokens.tolist() == [[1, -1]] and n.tolist() == [1]


def test_missing_triton_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)
    monkeypatch.setattr(vt, "_KERNEL", {})
    x = random_verify_inputs(torch.Generator().manual_seed(0), 1, 1, 3)
    with pytest.raises(vt.TritonUnavailableError, match="backend='torch'"):
        rejection_sample(**x, backend="triton")
