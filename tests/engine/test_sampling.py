"""The sampling module (one transform for plain decoding, drafting and verification) and keyed noise."""

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine.noise import SALT_DRAFT, SALT_SAMPLE, keyed_exponentials, keyed_uniforms
from engine.proof.stats import chi2_threshold, merged_chi2
from engine.sampling import SamplingParams, exact_transform, probs_from_logits, race, sample
from tests.engine.strategies import sampling_params


@st.composite
def prob_and_params(draw):
    vocab = draw(st.integers(2, 8))
    w = draw(st.lists(st.integers(0, 9), min_size=vocab, max_size=vocab).filter(lambda x: sum(x) > 0))
    return [Fraction(x, sum(w)) for x in w], draw(sampling_params(vocab))


def _near_cut(p, params) -> bool:
    """True when the top-p cut lies within float rounding of a cumulative sum (ambiguous in floats)."""
    if params.top_p >= 1.0 or params.greedy:
        return False
    w = exact_transform(p, SamplingParams(params.temperature, params.top_k))
    cum = Fraction(0)
    for i in sorted(range(len(w)), key=lambda i: (-w[i], i)):
        cum += w[i]
        if abs(cum - Fraction(params.top_p)) < Fraction(1, 10**9):
            return True
    return False


@settings(max_examples=200)
@given(prob_and_params())
def test_torch_transform_matches_exact_transform(case):
    p, params = case
    assume(not _near_cut(p, params))
    logits = torch.tensor([math.log(x) if x else -math.inf for x in p], dtype=torch.float64)
    got = probs_from_logits(logits, params)
    want = exact_transform(p, params)
    assert [bool(g > 0) for g in got] == [w > 0 for w in want]  # same support exactly
    assert torch.allclose(got, torch.tensor([float(w) for w in want], dtype=torch.float64), atol=1e-12)


def test_per_row_params_and_greedy_ties():
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0], [1.0, 3.0, 3.0, 0.0]])
    probs = probs_from_logits(logits, [SamplingParams(0.0), SamplingParams(1.0, top_k=1)])
    assert probs[0].tolist() == [0.0, 1.0, 0.0, 0.0]  # greedy: first argmax
    assert probs[1].tolist() == [0.0, 1.0, 0.0, 0.0]  # top-1: stable sort keeps the lower id
    with pytest.raises(ValueError, match="params"):
        probs_from_logits(logits, [SamplingParams()] * 3)


@pytest.mark.parametrize(
    "kwargs, field",
    [({"temperature": -1}, "temperature"), ({"top_k": -2}, "top_k"), ({"top_p": 0.0}, "top_p")],
)
def test_sampling_params_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SamplingParams(**kwargs)


def test_keyed_noise_is_deterministic_batch_free_and_salted():
    a = keyed_uniforms(7, torch.tensor([3, 4]), torch.tensor([10, 10]), SALT_SAMPLE, 5)
    b = keyed_uniforms(7, torch.tensor([4]), torch.tensor([10]), SALT_SAMPLE, 5)
    assert torch.equal(a[1], b[0])  # a key's noise does not depend on what else is in the batch
    assert not torch.equal(a[0], a[1])
    c = keyed_uniforms(7, torch.tensor([3]), torch.tensor([10]), SALT_DRAFT, 5)
    assert not torch.equal(a[0], c[0])
    e = keyed_exponentials(1, 2, 3, 4, 1000)
    assert bool((e > 0).all()) and bool(torch.isfinite(e).all())


def test_keyed_uniforms_are_uniform():
    u = keyed_uniforms(0, torch.arange(2000), torch.arange(2000) * 7, SALT_SAMPLE, 100).flatten()
    counts = torch.bincount((u * 50).long(), minlength=50).numpy()
    stat, df = merged_chi2(counts, [u.numel() / 50] * 50)
    assert stat < chi2_threshold(df)
    assert abs(float(u.mean()) - 0.5) < 0.005


def test_race_samples_the_normalized_weights():
    gen = torch.Generator().manual_seed(0)
    w = torch.tensor([0.0, 1.0, 2.0, 0.5, 0.0, 4.0], dtype=torch.float64)
    n = 100_000
    e = torch.empty(n, w.numel(), dtype=torch.float64).exponential_(generator=gen)
    tok = race(w.expand(n, -1), e)
    counts = torch.bincount(tok, minlength=w.numel()).numpy()
    stat, df = merged_chi2(counts, (w / w.sum() * n).numpy())
    assert stat < chi2_threshold(df)
    assert counts[0] == counts[4] == 0


@pytest.mark.parametrize("bad", [float("nan"), 0.0])
def test_sample_rejects_nan_and_zero_rows(bad):
    probs = torch.full((2, 4), 0.25)
    probs[1] = bad
    with pytest.raises(ValueError, match=r"probs: row \(1,\)"):
        sample(probs, torch.ones(2, 4, dtype=torch.float64))
