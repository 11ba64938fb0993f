"""specsched.confidence: ECE and AUC on hand-made cases and against brute force; STS fit and apply."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specsched.confidence import DEFAULT_GRID, apply_sts, auc, auc_binned, ece, fit_sts, survival_labels


def test_ece_hand_made():
    assert ece([0.9] * 10, [1] * 9 + [0]) == pytest.approx(0.0)
    assert ece([0.8] * 4, [1, 1, 1, 1]) == pytest.approx(0.2)
    # bins 0.1 (labels 0,1 -> gap 0.4) and 0.9 (labels 1,1 -> gap 0.1), half the samples each
    assert ece([0.1, 0.1, 0.9, 0.9], [0, 1, 1, 1]) == pytest.approx(0.25)
    # 0 and 1 fall in the first and last bins
    assert ece([0.0, 1.0], [0, 1]) == pytest.approx(0.0)
    assert ece([0.0, 1.0], [1, 0]) == pytest.approx(1.0)
    assert ece([0.55, 0.45], [1, 0], bins=1) == pytest.approx(0.0)
    assert math.isnan(ece(np.zeros(0), np.zeros(0)))


def test_ece_columns_and_errors():
    conf = np.array([[0.8, 0.1], [0.8, 0.1]])
    np.testing.assert_allclose(ece(conf, np.array([[1, 0], [1, 0]])), [0.2, 0.1])
    with pytest.raises(ValueError, match="shape"):
        ece([0.5, 0.5], [1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ece([0.5, 1.5], [1, 0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ece([0.5, np.nan], [1, 0])
    with pytest.raises(ValueError, match="bins"):
        ece([0.5], [1], bins=0)


def _ece_naive(conf, labels, bins=15):
    conf, labels = np.asarray(conf, float), np.asarray(labels, float)
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.mean() * abs(conf[m].mean() - labels[m].mean())
    return total


def _auc_naive(scores, labels):
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    pos, neg = s[y], s[~y]
    if len(pos) == 0 or len(neg) == 0:
        return math.nan
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return wins / (len(pos) * len(neg))


@given(
    st.lists(st.tuples(st.integers(0, 20).map(lambda i: i / 20), st.booleans()), min_size=1, max_size=60),
    st.integers(1, 20),
)
def test_ece_matches_naive(pairs, bins):
    conf, labels = zip(*pairs)
    assert ece(conf, labels, bins) == pytest.approx(_ece_naive(conf, labels, bins), abs=1e-12)


@given(st.lists(st.tuples(st.integers(0, 8), st.booleans()), min_size=2, max_size=60))
def test_auc_matches_naive_with_ties(pairs):
    scores, labels = zip(*pairs)
    want = _auc_naive(scores, labels)
    got = auc(np.array(scores, float), labels)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)


def test_auc_hand_made():
    assert auc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert auc([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0]) == 0.0
    assert auc([0.5] * 4, [0, 1, 0, 1]) == 0.5
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert auc([1, 2, 2, 3], [0, 0, 1, 1]) == 0.875
    assert math.isnan(auc([0.1, 0.2], [1, 1]))
    cols = auc(np.array([[0.1, 0.9], [0.9, 0.1]]), np.array([[0, 0], [1, 1]]))
    np.testing.assert_array_equal(cols, [1.0, 0.0])
    with pytest.raises(ValueError, match="shape"):
        auc([0.1, 0.2], [1])


def test_auc_binned_close_to_exact():
    rng = np.random.default_rng(3)
    scores = rng.normal(-3, 2, (5000, 3))
    labels = rng.random((5000, 3)) < 1 / (1 + np.exp(-scores - 2))
    np.testing.assert_allclose(auc_binned(scores, labels, lo=-20, hi=10), auc(scores, labels), atol=2e-4)
    # integer scores on bin centres: exact, ties included
    s = np.array([[1.0], [2.0], [2.0], [3.0]])
    assert auc_binned(s, np.array([[0], [0], [1], [1]]), lo=0.5, hi=3.5, bins=3)[0] == 0.875
    assert math.isnan(auc_binned(s, np.ones((4, 1)), lo=0, hi=4)[0])


def test_survival_labels():
    lab = survival_labels(np.array([0, 2, 3]), 3)
    np.testing.assert_array_equal(lab, [[0, 0, 0], [1, 1, 0], [1, 1, 1]])


def test_apply_sts():
    conf = np.array([[0.0, 0.5, 0.9, 1.0]])
    np.testing.assert_allclose(apply_sts(conf, np.ones(4)), conf, atol=1e-12)
    out = apply_sts(conf, np.full(4, 2.0))
    np.testing.assert_allclose(out, [[0.0, 0.5, 1 / (1 + 9**-0.5), 1.0]], atol=1e-12)
    np.testing.assert_allclose(apply_sts(np.array([[2.0]]), [2.0], logits=True), [[1 / (1 + math.e**-1)]])
    with pytest.raises(ValueError, match="positions"):
        apply_sts(conf, np.ones(3))
    with pytest.raises(ValueError, match="positive"):
        apply_sts(conf, np.array([1, 1, 0, 1.0]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        apply_sts(np.array([[1.5]]), [1.0])


def _overconfident(n, gamma, scale, seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(1.5, 1.5, (n, gamma))
    true = 1 / (1 + np.exp(-z))
    ok = np.logical_and.accumulate(rng.random((n, gamma)) < true, axis=1)
    return 1 / (1 + np.exp(-scale * z)), ok.sum(axis=1), scale * z


def _mean_survival_ece(conf, acc):
    return float(np.mean(ece(np.cumprod(conf, axis=1), survival_labels(acc, conf.shape[1]))))


def test_fit_sts_undoes_overconfidence():
    conf, acc, logits = _overconfident(20000, 4, 2.0, seed=7)
    temps = fit_sts(conf, acc)
    assert temps[0] == pytest.approx(2.0, abs=0.15)  # position 1 sees the pure temperature distortion
    before = _mean_survival_ece(conf, acc)
    after = _mean_survival_ece(apply_sts(conf, temps), acc)
    assert before > 0.05 and after < 0.02
    np.testing.assert_array_equal(fit_sts(logits, acc, logits=True), temps)
    refined = fit_sts(conf, acc, np.array([0.5, 1.0, 1.5, 2.5, 4.0]), refine=9)
    assert _mean_survival_ece(apply_sts(conf, refined), acc) < 0.02
    assert set(np.round(temps / 0.05)) <= set(np.round(DEFAULT_GRID / 0.05))


@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(5, 300))
def test_fit_sts_never_raises_mean_ece_on_fitting_data(seed, gamma, n):
    rng = np.random.default_rng(seed)
    conf = rng.random((n, gamma))
    acc = rng.integers(0, gamma + 1, n)
    temps = fit_sts(conf, acc, np.array([0.3, 0.7, 1.0, 1.6, 3.0]), refine=3)
    assert _mean_survival_ece(apply_sts(conf, temps), acc) <= _mean_survival_ece(conf, acc) + 1e-12


def test_fit_sts_edges_and_errors():
    np.testing.assert_array_equal(fit_sts(np.zeros((0, 3)), np.zeros(0, int)), np.ones(3))
    assert fit_sts(np.zeros((5, 0)), np.zeros(5, int)).shape == (0,)
    with pytest.raises(ValueError, match="accepted_len"):
        fit_sts(np.full((4, 2), 0.5), np.zeros(3, int))
    with pytest.raises(ValueError, match="grid"):
        fit_sts(np.full((4, 2), 0.5), np.zeros(4, int), grid=np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="2-D"):
        fit_sts(np.full(4, 0.5), np.zeros(4, int))
