"""Synthetic arrivals and lengths, and traffic fitted to a trace."""

from __future__ import annotations

import numpy as np
import pytest

import traces


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))


def cv(arrivals: np.ndarray) -> float:
    gaps = np.diff(arrivals)
    return float(gaps.std() / gaps.mean())


def test_poisson_rate_and_cv():
    a = traces.poisson_arrivals(100_000, 20.0, rng())
    assert a[0] == 0 and np.all(np.diff(a) >= 0)
    assert (len(a) - 1) / a[-1] == pytest.approx(20.0, rel=0.02)
    assert cv(a) == pytest.approx(1.0, rel=0.02)


@pytest.mark.parametrize("target_cv", [0.0, 0.5, 1.0, 3.0])
def test_gamma_rate_and_cv(target_cv):
    a = traces.gamma_arrivals(100_000, 5.0, target_cv, rng(1))
    assert (len(a) - 1) / a[-1] == pytest.approx(5.0, rel=0.03)
    assert cv(a) == pytest.approx(target_cv, abs=0.1 * max(target_cv, 0.01))


def test_generators_are_deterministic_and_check_arguments():
    np.testing.assert_array_equal(
        traces.gamma_arrivals(50, 2, 2, rng(3)), traces.gamma_arrivals(50, 2, 2, rng(3))
    )
    assert traces.poisson_arrivals(0, 1.0, rng()).size == 0
    with pytest.raises(ValueError, match="rate must be"):
        traces.poisson_arrivals(10, -1.0, rng())
    with pytest.raises(ValueError, match="cv must be"):
        traces.gamma_arrivals(10, 1.0, -0.5, rng())
    with pytest.raises(TypeError, match="Generator"):
        traces.poisson_arrivals(10, 1.0, np.random.RandomState(0))


def test_length_generators():
    assert traces.fixed_lengths(4, 128).tolist() == [128] * 4
    u = traces.uniform_lengths(10_000, 5, 9, rng())
    assert u.min() == 5 and u.max() == 9 and u.dtype == np.int64
    ln = traces.lognormal_lengths(200_000, 500.0, 1.5, rng(), high=100_000)
    assert ln.mean() == pytest.approx(500.0, rel=0.03) and ln.min() >= 1
    s = traces.sample_lengths(100_000, [10, 1000], rng(), probs=[0.9, 0.1])
    assert set(np.unique(s).tolist()) == {10, 1000} and (s == 1000).mean() == pytest.approx(0.1, abs=0.01)
    with pytest.raises(ValueError, match="probs"):
        traces.sample_lengths(5, [1, 2], rng(), probs=[0.5, 0.6])
    t = traces.synthetic_table(traces.poisson_arrivals(3, 1.0, rng()), [1, 2, 3], [4, 5, 6])
    assert t.meta["format"] == "synthetic" and len(t) == 3


def test_fit_reproduces_the_conversation_trace_at_100k():
    conv = traces.load("azure2023-conv")
    model = traces.fit(conv)
    assert model.rate_per_s == pytest.approx(conv.rate_per_s) and model.gamma_shape == pytest.approx(
        1 / model.interarrival_cv**2
    )
    synth = model.generate(100_000, rng(11))
    assert len(synth) == 100_000
    assert synth.input_tokens.mean() == pytest.approx(conv.input_tokens.mean(), rel=0.02)
    assert synth.output_tokens.mean() == pytest.approx(conv.output_tokens.mean(), rel=0.02)
    assert cv(synth.arrival_s) == pytest.approx(cv(conv.arrival_s), rel=0.10)
    assert synth.rate_per_s == pytest.approx(conv.rate_per_s, rel=0.05)
    # the joint distribution: every generated pair exists in the trace, and the domain label follows
    pairs = set(zip(conv.input_tokens.tolist(), conv.output_tokens.tolist()))
    assert set(zip(synth.input_tokens[:1000].tolist(), synth.output_tokens[:1000].tolist())) <= pairs
    assert set(synth.domain.tolist()) == {"chat"}


def test_generate_at_another_rate_keeps_lengths():
    model = traces.fit(traces.load("azure2023-code"))
    slow = model.generate(5000, rng(5))
    fast = model.generate(5000, rng(5), rate=50.0, cv=1.0)
    np.testing.assert_array_equal(slow.input_tokens, fast.input_tokens)
    assert fast.rate_per_s == pytest.approx(50.0, rel=0.05)
    assert cv(fast.arrival_s) == pytest.approx(1.0, rel=0.1)
    with pytest.raises(ValueError, match="at least 3 requests"):
        traces.fit(traces.head(traces.load("azure2023-code"), 2))


def test_fit_bursty_synthetic_trace_recovers_its_cv():
    arrivals = traces.gamma_arrivals(50_000, 3.0, 2.5, rng(8))
    t = traces.synthetic_table(arrivals, np.full(50_000, 100), np.full(50_000, 10))
    m = traces.fit(t)
    assert m.interarrival_cv == pytest.approx(2.5, rel=0.1) and m.rate_per_s == pytest.approx(3.0, rel=0.05)
    assert m.summary()["pairs"] == 50_000
