"""Acceptance and confidence statistics of engine rollouts, and the request sets they are measured on.

Role: turn `engine.measure.rollout.Rollout`s into the paper's quantities.
- τ = 1 + mean accepted drafts per request-step, over request-steps that verified all γ drafts and were not
  the request's first step (which has no target features yet; it plays the simulator's prefill step).
- per-position CONDITIONAL acceptance c_k = P(accepted ≥ k | accepted ≥ k − 1) (Fig. 2 layout), pooled
  over those request-steps; survival s_k = P(accepted ≥ k); τ = 1 + Σ s_k.
- confidence quality and STS fitting: specsched.confidence (`confidence_quality`, `temps_for`,
  `fit_sts_measured`; re-exported here for the measurement code).

May import: numpy, stdlib, specsched, engine.loop, engine.sampling, engine.lm.data, engine.measure.rollout.
"""

from __future__ import annotations

import numpy as np

from engine.lm.data import requests_for
from engine.measure.rollout import Rollout
from specsched.confidence import confidence_quality, fit_sts_measured, temps_for

__all__ = [
    "acceptance",
    "confidence_quality",
    "fit_sts_measured",
    "full_conf",
    "policy_samples",
    "requests_for",
    "temps_for",
]


def acceptance(ro: Rollout) -> dict:
    """{"tau", "curve" (conditional, float64[γ]), "survival", "samples"} over full request-steps."""
    sel = ro.full_steps()
    acc = ro.request_steps["accepted"][sel]
    gamma = ro.gamma
    if acc.size == 0:
        nan = np.full(gamma, np.nan)
        return {"tau": float("nan"), "curve": nan, "survival": nan, "samples": 0}
    surv = (acc[:, None] >= np.arange(1, gamma + 1)).mean(axis=0)
    prev = np.concatenate([[1.0], surv[:-1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        cond = np.where(prev > 0, surv / prev, 0.0)
    return {"tau": float(1.0 + acc.mean()), "curve": cond, "survival": surv, "samples": int(acc.size)}


def full_conf(ro: Rollout) -> tuple[np.ndarray, np.ndarray]:
    """(raw confidences float64[N, γ], accepted int64[N]) of the full request-steps (STS fitting data)."""
    sel = ro.full_steps()
    return ro.request_steps["raw_conf"][sel], ro.request_steps["accepted"][sel]


def policy_samples(ro: Rollout) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(conf float64[N, γ] as the policy saw it, accepted int64[N], rid int64[N], position int64[N]: tokens
    the request had emitted before the step) of the full request-steps: the simulator's empirical
    acceptance model resamples them."""
    sel = ro.full_steps()
    rs = ro.request_steps
    order = np.lexsort((rs["step"], rs["rid"]))  # by request, then step
    emitted = rs["accepted"][order] + 1
    before = np.cumsum(emitted) - emitted  # tokens emitted before each row, over all rows so far
    first = np.ones(order.size, dtype=bool)
    first[1:] = rs["rid"][order][1:] != rs["rid"][order][:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(order.size), 0))  # the request's first row
    position = np.empty(order.size, dtype=np.int64)
    position[order] = before - before[start]
    return rs["conf"][sel], rs["accepted"][sel], rs["rid"][sel], position[sel]
