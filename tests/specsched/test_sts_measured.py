"""specsched.confidence.fit_sts_measured: the log-loss ("nll") STS fit recovers a known miscalibration and
never raises ECE on its data; "ece" is fit_sts on clipped confidences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsched.confidence import confidence_quality, fit_sts_measured


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
    temps = fit_sts_measured(conf, acc, "nll")
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
    q = confidence_quality(conf, acc, fit_sts_measured(conf, acc, "nll"))
    assert q["ece_calibrated_mean"] <= q["ece_raw_mean"] + 1e-12


def test_bad_shapes():
    with pytest.raises(ValueError, match="2-D"):
        fit_sts_measured(np.zeros(4), np.zeros(4, dtype=int), "nll")
    with pytest.raises(ValueError, match="shape"):
        fit_sts_measured(np.zeros((4, 2)), np.zeros(3, dtype=int), "nll")
    assert np.array_equal(fit_sts_measured(np.zeros((0, 3)), np.zeros(0, dtype=int), "nll"), np.ones(3))


def test_ece_objective_is_fit_sts_on_clipped_confidences_and_bad_objective_refused():
    from specsched.confidence import fit_sts

    rng = np.random.default_rng(1)
    conf = rng.random((200, 3))
    conf[0, 0], conf[1, 1] = 0.0, 1.0
    acc = rng.integers(0, 4, 200)
    want = fit_sts(np.clip(conf, 1e-6, 1 - 1e-6), acc)
    assert np.array_equal(fit_sts_measured(conf, acc), want)
    with pytest.raises(ValueError, match="objective"):
        fit_sts_measured(conf, acc, "mse")
