"""engine.lm.sts: the log-loss STS fit recovers a known miscalibration and never raises ECE on its data."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.lm.sts import fit_sts_nll
from engine.measure.stats import confidence_quality


def _chain(rng, true: np.ndarray) -> np.ndarray:
    """Accepted lengths of chains whose position k is accepted with probability true[:, k]."""
    n, gamma = true.shape
    ok = np.concatenate([rng.random((n, gamma)) < true, np.zeros((n, 1), bool)], axis=1)
    return np.argmin(ok, axis=1)


@pytest.mark.parametrize("temp", [0.5, 1.0, 2.0])
def test_recovers_a_known_temperature(temp):
    rng = np.random.default_rng(3)
    n, gamma = 40_000, 5
    true = np.clip(rng.beta(3, 1.5, size=(n, gamma)), 1e-3, 1 - 1e-3)
    acc = _chain(rng, true)
    conf = 1 / (1 + np.exp(-np.log(true / (1 - true)) * temp))  # σ(z·temp): needs T = temp to undo
    temps = fit_sts_nll(conf, acc)
    assert np.allclose(temps, temp, rtol=0.1), temps
    q = confidence_quality(conf, acc, temps)
    assert q["ece_calibrated_mean"] < 0.01


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.floats(0.05, 0.95), st.floats(-2.0, 2.0))
def test_never_raises_ece_on_its_fitting_data(seed, level, skew):
    rng = np.random.default_rng(seed)
    n, gamma = 300, 4
    true = np.clip(rng.beta(4 * level + 0.5, 4 * (1 - level) + 0.5, size=(n, gamma)), 1e-3, 1 - 1e-3)
    acc = _chain(rng, true)
    conf = 1 / (1 + np.exp(-(np.log(true / (1 - true)) * np.exp(skew))))
    q = confidence_quality(conf, acc, fit_sts_nll(conf, acc))
    assert q["ece_calibrated_mean"] <= q["ece_raw_mean"] + 1e-12


def test_bad_shapes():
    with pytest.raises(ValueError, match="2-D"):
        fit_sts_nll(np.zeros(4), np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="shape"):
        fit_sts_nll(np.zeros((4, 2)), np.zeros(3, dtype=int))
    assert np.array_equal(fit_sts_nll(np.zeros((0, 3)), np.zeros(0, dtype=int)), np.ones(3))
