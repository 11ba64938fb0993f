"""Confidence metrics (ECE, AUC) and STS, per-position temperature scaling of draft confidences.

Role: pure functions shared by the simulator's acceptance model (`sim.acceptance`) and the real
engine, which fits STS on measured confidences. Nothing here draws random numbers.

May import: numpy and the standard library only.

Conventions (paper §3.2.1, dspark.md §2):
- `conf: float64[N, γ]` are per-position CONDITIONAL confidences c_k; the quantity that is calibrated and
  scored is the cumulative survival a_k = Π_{i≤k} c_i against the prefix-accepted label 1[accepted_len ≥ k].
- STS replaces c_k by σ(logit(c_k) / T_k) and fits T_1..T_γ left to right: each T_k minimizes the ECE of a_k
  given the already fitted T_1..T_{k-1}. The paper names neither grid nor bins; we use 15 equal-width bins and
  the grid 0.05, 0.10, ..., 5.00 (the convention of third-party STS code), which contains T = 1.
- `fit_sts_measured(conf, accepted, objective)` is the one entry point for confidences measured in the real
  engine (the trainer's and `specbed engine eval`'s): objective "ece" is `fit_sts` above; "nll" keeps the
  same sequential structure but scores each candidate T_k by the mean log-loss of a_k instead of its binned
  ECE. Why: at the few thousand samples a small run has, the ECE objective is piecewise constant and noisy
  (its value for PERFECTLY calibrated predictions on ~3500 samples is ~1.7%), so the ECE grid search mostly
  fits noise; the log-loss is a proper scoring rule whose minimiser is the calibrating temperature, with far
  less variance. Both keep the guarantee that the mean survival ECE on the fitting samples never rises.
- `confidence_quality(conf, accepted, temps)`: per-position ECE / AUC of the survival, raw and after STS.
"""

from __future__ import annotations

import numpy as np

DEFAULT_BINS = 15
DEFAULT_GRID = np.round(np.arange(1, 101) * 0.05, 2)  # 0.05 .. 5.00, contains 1.0


def _as_2d(x: np.ndarray) -> tuple[np.ndarray, bool]:
    x = np.asarray(x)
    if x.ndim == 1:
        return x[:, None], True
    if x.ndim != 2:
        raise ValueError(f"expected a 1-D or 2-D array, got shape {x.shape}")
    return x, False


def ece(conf: np.ndarray, labels: np.ndarray, bins: int = DEFAULT_BINS) -> float | np.ndarray:
    """Expected calibration error with `bins` equal-width bins on [0, 1].

    ECE = Σ_b (n_b / N) · |mean(conf in b) − mean(label in b)|. `conf: float64[N]` and `labels: {0,1}[N]`
    give a float; `[N, γ]` inputs give `float64[γ]` (one ECE per column). N = 0 gives NaN.
    """
    c, one = _as_2d(np.asarray(conf, dtype=np.float64))
    y, _ = _as_2d(np.asarray(labels, dtype=np.float64))
    if c.shape != y.shape:
        raise ValueError(f"conf shape {np.shape(conf)} != labels shape {np.shape(labels)}")
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    if np.any(~((c >= 0.0) & (c <= 1.0))):
        raise ValueError("conf must lie in [0, 1] (no NaN)")
    out = _ece_columns(c, y, bins)
    return float(out[0]) if one else out


def _ece_columns(c: np.ndarray, y: np.ndarray, bins: int) -> np.ndarray:
    """ECE of every column of `c: float64[N, M]` against `y: float64[N, M]` (labels may differ per column)."""
    n, m = c.shape
    if n == 0:
        return np.full(m, np.nan)
    idx = np.minimum((c * bins).astype(np.int64), bins - 1)
    np.maximum(idx, 0, out=idx)
    idx += np.arange(m, dtype=np.int64) * bins
    flat = idx.ravel()
    size = m * bins
    gap = np.bincount(flat, weights=(c - y).ravel(), minlength=size)
    # Σ_b |Σ_{i∈b}(c_i − y_i)| / N  ==  Σ_b (n_b/N)|mean c − mean y|.
    return np.abs(gap).reshape(m, bins).sum(axis=1) / n


def _ece_shared_labels(c: np.ndarray, y: np.ndarray, bins: int) -> np.ndarray:
    """ECE of every row of `c: float64[G, N]` against the same labels `y: float64[N]` -> float64[G]."""
    g, n = c.shape
    idx = np.minimum((c * bins).astype(np.int64), bins - 1)
    idx += np.arange(g, dtype=np.int64)[:, None] * bins
    gap = np.bincount(idx.ravel(), weights=(c - y).ravel(), minlength=g * bins)
    return np.abs(gap).reshape(g, bins).sum(axis=1) / n


def auc(scores: np.ndarray, labels: np.ndarray) -> float | np.ndarray:
    """Area under the ROC curve (Mann–Whitney form; tied scores count one half).

    `scores: float64[N]`, `labels: {0,1}[N]` give a float; `[N, γ]` inputs give `float64[γ]`. A column
    without both classes gives NaN.
    """
    s, one = _as_2d(np.asarray(scores, dtype=np.float64))
    y, _ = _as_2d(np.asarray(labels).astype(bool))
    if s.shape != y.shape:
        raise ValueError(f"scores shape {np.shape(scores)} != labels shape {np.shape(labels)}")
    n, m = s.shape
    st = np.ascontiguousarray(s.T)  # [M, N]: sorting contiguous rows is much faster than columns
    yt = np.ascontiguousarray(y.T)
    order = np.argsort(st, axis=1)
    ss = np.take_along_axis(st, order, axis=1)
    ys = np.take_along_axis(yt, order, axis=1)
    ranks = np.arange(1, n + 1, dtype=np.float64)
    rank_sum = ys @ ranks
    if n > 1:
        for j in np.flatnonzero(np.any(ss[:, 1:] == ss[:, :-1], axis=1)):  # rare: average ranks of ties
            _, inv, cnt = np.unique(ss[j], return_inverse=True, return_counts=True)
            avg = np.cumsum(cnt) - (cnt - 1) / 2.0
            rank_sum[j] = ys[j] @ avg[inv]
    pos = yt.sum(axis=1).astype(np.float64)
    neg = n - pos
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (rank_sum - pos * (pos + 1) / 2.0) / (pos * neg)
    out = np.where((pos > 0) & (neg > 0), out, np.nan)
    return float(out[0]) if one else out


def auc_binned(
    scores: np.ndarray, labels: np.ndarray, *, lo: float, hi: float, bins: int = 4096
) -> np.ndarray:
    """AUC `float64[γ]` per column of `scores: float64[N, γ]` after clipping to [lo, hi] and binning there.

    O(N) instead of a sort: pairs in one bin count one half, so it is exact when no bin holds both a
    positive and a negative, and within 1/bins-ish otherwise. A column with one class only gives NaN.
    """
    n, gamma = scores.shape
    idx = ((np.clip(scores, lo, hi) - lo) * (bins / (hi - lo))).astype(np.int64)
    np.minimum(idx, bins - 1, out=idx)
    idx += np.arange(gamma) * bins
    flat = idx.ravel()
    pos = np.bincount(flat, weights=np.asarray(labels, dtype=np.float64).ravel(), minlength=gamma * bins)
    pos = pos.reshape(gamma, bins)
    neg = np.bincount(flat, minlength=gamma * bins).reshape(gamma, bins) - pos
    below = np.cumsum(neg, axis=1) - neg
    p, q = pos.sum(axis=1), neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (pos * (below + 0.5 * neg)).sum(axis=1) / (p * q)


def survival_labels(accepted_len: np.ndarray, gamma: int) -> np.ndarray:
    """Prefix-accepted labels: `bool[N, γ]`, column k (0-based) = accepted_len ≥ k+1."""
    acc = np.asarray(accepted_len)
    return acc[:, None] > np.arange(gamma)


def _logits(x: np.ndarray, is_logits: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if is_logits:
        return x
    if np.any(~((x >= 0.0) & (x <= 1.0))):
        raise ValueError("confidences must lie in [0, 1] (pass logits=True for logits)")
    with np.errstate(divide="ignore"):
        return np.log(x) - np.log1p(-x)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z))


def apply_sts(conf: np.ndarray, temps: np.ndarray, *, logits: bool = False) -> np.ndarray:
    """Temperature-scaled confidences σ(logit(c_k) / T_k); `conf: [..., γ]`, `temps: float64[γ]` (> 0).

    Confidences of exactly 0 or 1 stay 0 or 1. With `logits=True`, `conf` holds logits instead.
    """
    t = np.asarray(temps, dtype=np.float64)
    if t.ndim != 1 or np.any(~(t > 0)):
        raise ValueError(f"temps must be a 1-D array of positive numbers, got {t!r}")
    z = _logits(conf, logits)
    if z.shape[-1] != t.shape[0]:
        raise ValueError(f"conf has {z.shape[-1]} positions but temps has {t.shape[0]}")
    return _sigmoid(z / t)


def _check_fit_inputs(x: np.ndarray, accepted, x_name: str, acc_name: str) -> tuple[int, int, np.ndarray]:
    """(N, γ, accepted as an array) of STS data `x: [N, γ]`, `accepted: [N]`; ValueError naming them."""
    if x.ndim != 2:
        raise ValueError(f"{x_name} must be 2-D [N, γ], got shape {x.shape}")
    n, gamma = x.shape
    acc = np.asarray(accepted)
    if acc.shape != (n,):
        raise ValueError(f"{acc_name} must have shape ({n},), got {acc.shape}")
    return n, gamma, acc


def fit_sts(
    logits_or_conf: np.ndarray,
    accepted_len: np.ndarray,
    grid: np.ndarray = DEFAULT_GRID,
    *,
    logits: bool = False,
    bins: int = DEFAULT_BINS,
    refine: int = 0,
) -> np.ndarray:
    """Fit STS temperatures `float64[γ]` by left-to-right grid search (see module docstring).

    `logits_or_conf: float64[N, γ]` are confidences in [0, 1] (or logits with `logits=True`) of samples that
    verified all γ drafts; `accepted_len: int64[N]` (0..γ) is how many were accepted. The grid should contain
    1.0. `refine` > 0 adds, per position, a second pass over `refine` log-spaced temperatures between the
    grid neighbours of the first pass's best (a cheaper way to a fine grid). Guarantee: on these samples,
    the mean over positions of the survival ECE after STS is never above the one before (if the greedy fit
    would raise it, all temperatures are 1).
    """
    z = _logits(logits_or_conf, logits)
    n, gamma, acc = _check_fit_inputs(z, accepted_len, "logits_or_conf", "accepted_len")
    g = np.asarray(grid, dtype=np.float64)
    if g.ndim != 1 or g.size == 0 or np.any(~(g > 0)):
        raise ValueError("grid must be a non-empty 1-D array of positive temperatures")
    temps = np.ones(gamma)
    if n == 0 or gamma == 0:
        return temps
    g = np.unique(g)
    labels = survival_labels(acc, gamma).astype(np.float64)
    prev = np.ones(n)
    for k in range(gamma):
        cand = prev * _sigmoid(z[:, k] / g[:, None])  # [G, N] survival for every candidate T_k
        errs = _ece_shared_labels(cand, labels[:, k], bins)
        best = int(np.argmin(errs))
        t_best, e_best, s_best = g[best], errs[best], cand[best]
        if refine > 0:
            lo, hi = g[max(best - 1, 0)], g[min(best + 1, g.size - 1)]
            fine = np.geomspace(lo, hi, refine + 2)[1:-1]
            cand = prev * _sigmoid(z[:, k] / fine[:, None])
            errs = _ece_shared_labels(cand, labels[:, k], bins)
            j = int(np.argmin(errs))
            if errs[j] < e_best:
                t_best, s_best = fine[j], cand[j]
        temps[k] = t_best
        prev = s_best
    raw = _sigmoid(z)
    before = _ece_columns(np.cumprod(raw, axis=1), labels, bins).mean()
    after = _ece_columns(np.cumprod(_sigmoid(z / temps), axis=1), labels, bins).mean()
    return temps if after <= before else np.ones(gamma)


STS_OBJECTIVES = ("ece", "nll")


def fit_sts_measured(conf: np.ndarray, accepted_len: np.ndarray, objective: str = "ece") -> np.ndarray:
    """STS temperatures float64[γ] from measured confidences `conf: float64[N, γ]` in [0, 1] of request-steps
    that verified all γ drafts and their accepted lengths `accepted_len: int64[N]` (module docstring). "ece":
    `fit_sts` on the default grid with the confidences kept off 0 and 1 (finite logits), no refinement (a
    finer grid only fits the held-out sample's noise); "nll": the log-loss fit on the same grid."""
    if objective not in STS_OBJECTIVES:
        raise ValueError(f"STS objective: one of {', '.join(STS_OBJECTIVES)}, got {objective!r}")
    if objective == "ece":
        return fit_sts(np.clip(conf, 1e-6, 1 - 1e-6), accepted_len)
    return _fit_sts_nll(conf, accepted_len)


def _fit_sts_nll(conf: np.ndarray, accepted: np.ndarray, grid: np.ndarray = DEFAULT_GRID) -> np.ndarray:
    c = np.clip(np.asarray(conf, dtype=np.float64), 1e-6, 1 - 1e-6)
    n, gamma, acc = _check_fit_inputs(c, accepted, "conf", "accepted")
    g = np.unique(np.asarray(grid, dtype=np.float64))
    temps = np.ones(gamma)
    if n == 0:
        return temps
    z = np.log(c) - np.log1p(-c)
    labels = survival_labels(acc, gamma).astype(np.float64)
    prev = np.ones(n)
    for k in range(gamma):
        cand = np.clip(prev / (1.0 + np.exp(-z[:, k] / g[:, None])), 1e-12, 1 - 1e-12)  # [G, N]
        y = labels[:, k]
        loss = -(y * np.log(cand) + (1 - y) * np.log1p(-cand)).mean(axis=1)
        best = int(np.argmin(loss))
        temps[k], prev = g[best], cand[best]
    c01 = np.clip(np.asarray(conf, dtype=np.float64), 0.0, 1.0)  # as confidence_quality scores them
    before = np.mean(ece(np.cumprod(c01, axis=1), labels))
    after = np.mean(ece(np.cumprod(apply_sts(c01, temps), axis=1), labels))
    return temps if after <= before else np.ones(gamma)


def temps_for(temps, gamma: int) -> np.ndarray:
    """STS temperatures for γ positions: the first γ of `temps`, padded with 1 (no scaling)."""
    t = np.ones(gamma)
    given = np.asarray(temps, dtype=np.float64)[:gamma]
    t[: given.size] = given
    return t


def _nanmean(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else float("nan")


def confidence_quality(conf: np.ndarray, accepted: np.ndarray, temps=None) -> dict:
    """Per-position ECE/AUC (float64[γ]) of the survival, raw and (with `temps`) after STS, keyed
    "ece_raw", "auc_raw", "ece_calibrated", "auc_calibrated", plus their means over positions ("..._mean")."""
    gamma = conf.shape[1]
    labels = survival_labels(accepted, gamma)
    conf = np.clip(conf, 0.0, 1.0)
    out: dict = {}
    variants = [("raw", conf)]
    if temps is not None:
        variants.append(("calibrated", apply_sts(conf, temps_for(temps, gamma))))
    for tag, c in variants:
        surv = np.cumprod(c, axis=1)
        e = np.asarray(ece(surv, labels), dtype=np.float64)
        a = np.asarray(auc(surv, labels), dtype=np.float64)
        out[f"ece_{tag}"], out[f"auc_{tag}"] = e, a
        out[f"ece_{tag}_mean"], out[f"auc_{tag}_mean"] = _nanmean(e), _nanmean(a)
    return out
