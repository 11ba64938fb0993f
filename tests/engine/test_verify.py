"""rejection_sample (torch reference): output format invariants, edge noise, errors on bad rows."""

from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.proof.suite_engine import ODD_VOCABS, random_verify_inputs
from engine.verify import accept_prob, match_verify, rejection_sample, residual


def _inputs(seed, r, gamma, vocab, **kw):
    return random_verify_inputs(torch.Generator().manual_seed(seed), r, gamma, vocab, **kw)


@settings(max_examples=80)
@given(st.integers(0, 10**6), st.integers(1, 9), st.integers(0, 5), st.sampled_from(ODD_VOCABS))
def test_output_format_invariants(seed, r, gamma, vocab):
    x = _inputs(seed, r, gamma, vocab)
    tokens, n_emit = rejection_sample(**x)
    lengths, drafts = x["lengths"], x["draft_tokens"]
    assert tokens.shape == (r, gamma + 1) and tokens.dtype == torch.int64
    assert bool(((n_emit >= 1) & (n_emit <= lengths + 1)).all())
    for i in range(r):
        n = int(n_emit[i])
        assert tokens[i, : n - 1].tolist() == drafts[i, : n - 1].tolist()  # the accepted prefix
        assert 0 <= int(tokens[i, n - 1]) < vocab  # one residual-or-bonus token, in range
        assert bool((tokens[i, n:] == -1).all())  # then only placeholders
        if n - 1 < int(lengths[i]):  # a rejection: the emitted token is not the rejected draft...
            p = x["target_probs"][i, n - 1].double()
            q = x["draft_probs"][i, n - 1].double()
            assert float((p - q)[tokens[i, n - 1]]) > 0 or bool((p <= q).all())  # ...but from the residual


def test_acceptance_boundary_and_zero_uniform():
    p = torch.tensor([[[0.25, 0.75], [0.5, 0.5]]])
    q = torch.tensor([[[0.5, 0.5]]])
    d = torch.tensor([[0]])
    e = torch.ones(1, 2, dtype=torch.float64)
    ratio = 0.25 / 0.5
    below = torch.tensor(
        [[torch.nextafter(torch.tensor(ratio, dtype=torch.float64), torch.tensor(0.0)).item()]],
        dtype=torch.float64,
    )
    at = torch.tensor([[ratio]], dtype=torch.float64)
    assert int(rejection_sample(d, q, p, torch.tensor([1]), uniforms=below, exponentials=e)[1][0]) == 2
    assert int(rejection_sample(d, q, p, torch.tensor([1]), uniforms=at, exponentials=e)[1][0]) == 1
    # u = 0 must not accept a token with p = 0 (pytorch#16706 / vllm-ascend#13766)
    p0 = torch.tensor([[[0.0, 1.0], [0.5, 0.5]]])
    zero = torch.zeros(1, 1, dtype=torch.float64)
    tokens, n = rejection_sample(d, q, p0, torch.tensor([1]), uniforms=zero, exponentials=e)
    assert int(n[0]) == 1 and int(tokens[0, 0]) == 1


def test_noise_is_separate_for_acceptance_and_residual():
    x = _inputs(1, 64, 4, 13)
    base_tokens, base_n = rejection_sample(**x)
    other_e = dict(x, exponentials=x["exponentials"].flip(-1).contiguous())
    tokens, n = rejection_sample(**other_e)
    assert torch.equal(n, base_n)  # acceptance never reads the race noise
    assert not torch.equal(tokens, base_tokens)  # the race does


def test_generator_is_deterministic_and_used():
    x = _inputs(2, 16, 3, 7)
    del x["uniforms"], x["exponentials"]
    a = rejection_sample(**x, generator=torch.Generator().manual_seed(9))
    b = rejection_sample(**x, generator=torch.Generator().manual_seed(9))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_ragged_zero_length_draws_bonus_from_row_zero():
    p = torch.tensor([[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]])  # row 0 -> token 1, row 1 -> token 0
    q = torch.tensor([[[1.0, 0.0, 0.0]]])
    tokens, n = rejection_sample(torch.tensor([[0]]), q, p, torch.tensor([0]), generator=torch.Generator())
    assert tokens.tolist() == [[1, -1]] and n.tolist() == [1]


@given(
    st.lists(st.integers(0, 20), min_size=2, max_size=6), st.lists(st.integers(0, 20), min_size=2, max_size=6)
)
def test_tensor_rules_agree_with_exact_rules(pw, qw):
    n = min(len(pw), len(qw))
    pw, qw = pw[:n], qw[:n]
    if sum(pw) == 0 or sum(qw) == 0:
        return
    p = [Fraction(x, sum(pw)) for x in pw]
    q = [Fraction(x, sum(qw)) for x in qw]
    pt = torch.tensor([float(x) for x in p], dtype=torch.float64)
    qt = torch.tensor([float(x) for x in q], dtype=torch.float64)
    acc = accept_prob(pt, qt)
    res = residual(pt, qt)
    exact_res = residual(p, q)
    for v in range(n):
        assert abs(float(acc[v]) - float(accept_prob(p[v], q[v]))) < 1e-15
        assert abs(float(res[v]) - float(exact_res[v])) < 1e-12
        if exact_res[v] == 0 and p[v] <= q[v]:
            assert float(res[v]) == 0.0


@pytest.mark.parametrize("bad", ["nan", "zero", "negative", "unnormalized"])
@pytest.mark.parametrize("which", ["target_probs", "draft_probs"])
def test_bad_rows_raise_a_clear_error(bad, which):
    x = _inputs(3, 4, 3, 9)
    x["lengths"] = torch.tensor([3, 3, 3, 3])
    row = x[which][2, 1]
    row[:] = {"nan": float("nan"), "zero": 0.0, "negative": -0.1, "unnormalized": 0.5}[bad]
    with pytest.raises(ValueError, match=rf"{which}: row \(2, 1\)"):
        rejection_sample(**x)
    tokens, _ = rejection_sample(**x, check=False)  # unchecked: still never an id outside [0, V)
    assert bool(((tokens == -1) | ((tokens >= 0) & (tokens < 9))).all())


def test_unread_rows_may_be_anything():
    x = _inputs(4, 2, 3, 5)
    x["lengths"] = torch.tensor([0, 1])
    x["target_probs"][:, 2:] = float("nan")  # rows beyond ℓ are never read
    x["draft_probs"][:, 1:] = 0.0
    rejection_sample(**x)


def test_input_errors_name_the_argument():
    x = _inputs(5, 2, 2, 5)
    with pytest.raises(ValueError, match="lengths"):
        rejection_sample(**dict(x, lengths=torch.tensor([0, 3])))
    with pytest.raises(ValueError, match="uniforms"):
        rejection_sample(**dict(x, uniforms=x["uniforms"].float()))
    with pytest.raises(ValueError, match="backend"):
        rejection_sample(**x, backend="cuda")
    q = x["draft_probs"].clone()
    x["lengths"] = torch.tensor([2, 2])
    q[0, 0, x["draft_tokens"][0, 0]] = 0.0
    q[0, 0] /= q[0, 0].sum()
    with pytest.raises(ValueError, match="probability 0 under the draft"):
        rejection_sample(**dict(x, draft_probs=q))


def test_match_verify_keeps_drafts_equal_to_the_targets_samples():
    p = torch.tensor([[[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]])
    e = torch.ones(1, 3, 2, dtype=torch.float64)
    tokens, n = match_verify(torch.tensor([[1, 1]]), p, torch.tensor([2]), e)
    assert tokens.tolist() == [[1, 0, -1]] and n.tolist() == [2]
