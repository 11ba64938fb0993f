"""STS fitted by log-loss: the per-position temperatures of DSpark's confidence head.

Role: `fit_sts_nll(conf, accepted)` has the paper's sequential structure (dspark.md §2: left to right, T_k
chosen on a grid with T_1..T_{k−1} fixed, scored on the cumulative survival a_k = Π_{i≤k} σ(z_i / T_i)
against the prefix-accepted label 1[accepted ≥ k]) but scores each candidate by the mean log-loss of a_k
instead of its binned ECE. Why: at the few thousand samples a small run has, the ECE objective is
piecewise constant and noisy (its value for PERFECTLY calibrated predictions on ~3500 samples is ~1.7%), so
the ECE grid search mostly fits noise and can make held-out ECE worse; the log-loss is a proper scoring rule
whose minimiser is the calibrating temperature, with far less variance. The result keeps `fit_sts`'s
guarantee: if the fitted temperatures raise the mean survival ECE on the fitting samples, all are 1.

May import: numpy, specsched.calibration.
"""

from __future__ import annotations

import numpy as np

from specsched import calibration

__all__ = ["fit_sts_nll"]


def fit_sts_nll(
    conf: np.ndarray, accepted: np.ndarray, grid: np.ndarray = calibration.DEFAULT_GRID
) -> np.ndarray:
    """Temperatures float64[γ] from raw confidences `conf: float64[N, γ]` (in [0, 1]) of request-steps that
    verified all γ drafts and their accepted lengths `accepted: int64[N]` (0..γ); `grid`: candidate T > 0."""
    c = np.clip(np.asarray(conf, dtype=np.float64), 1e-6, 1 - 1e-6)
    if c.ndim != 2:
        raise ValueError(f"conf must be 2-D [N, γ], got shape {c.shape}")
    n, gamma = c.shape
    acc = np.asarray(accepted)
    if acc.shape != (n,):
        raise ValueError(f"accepted must have shape ({n},), got {acc.shape}")
    g = np.unique(np.asarray(grid, dtype=np.float64))
    if g.size == 0 or np.any(~(g > 0)):
        raise ValueError("grid must hold positive temperatures")
    temps = np.ones(gamma)
    if n == 0:
        return temps
    z = np.log(c) - np.log1p(-c)
    labels = calibration.survival_labels(acc, gamma).astype(np.float64)
    prev = np.ones(n)
    for k in range(gamma):
        cand = np.clip(prev / (1.0 + np.exp(-z[:, k] / g[:, None])), 1e-12, 1 - 1e-12)  # [G, N]
        y = labels[:, k]
        loss = -(y * np.log(cand) + (1 - y) * np.log1p(-cand)).mean(axis=1)
        best = int(np.argmin(loss))
        temps[k], prev = g[best], cand[best]
    c01 = np.clip(np.asarray(conf, dtype=np.float64), 0.0, 1.0)  # as engine.measure scores them
    raw = np.cumprod(c01, axis=1)
    cal = np.cumprod(calibration.apply_sts(c01, temps), axis=1)
    before = np.mean(calibration.ece(raw, labels))
    after = np.mean(calibration.ece(cal, labels))
    return temps if after <= before else np.ones(gamma)
