"""Acceptance and confidence statistics of engine rollouts, and the request sets they are measured on.

Role: turn `engine.measure.rollout.Rollout`s into the paper's quantities.
- τ = 1 + mean accepted drafts per request-step, over request-steps that verified all γ drafts and were not
  the request's first step (which has no target features yet; it plays the simulator's prefill step).
- per-position CONDITIONAL acceptance c_k = P(accepted ≥ k | accepted ≥ k − 1) (Fig. 2 layout), pooled
  over those request-steps; survival s_k = P(accepted ≥ k); τ = 1 + Σ s_k.
- confidence quality (specsched.calibration): per-position ECE and AUC of the survival Π_{i≤k} c_i against
  the prefix-accepted label, raw and after STS.

May import: numpy, stdlib, specsched, engine.loop, engine.sampling, engine.lm.data, engine.measure.rollout.
"""

from __future__ import annotations

import numpy as np

from engine.lm.data import Corpus
from engine.loop import Request
from engine.measure.rollout import Rollout
from engine.sampling import SamplingParams
from specsched import calibration


def requests_for(
    corpus: Corpus,
    domain: str,
    n: int,
    prompt_len: int,
    new_tokens: int,
    *,
    seed: int,
    rid0: int = 0,
    split: str = "test",
    temperature: float = 1.0,
) -> list[Request]:
    """`n` requests of one domain: prompts cut from `split`, request seeds seed·10⁴ + i (noise keys)."""
    prompts = corpus.prompts(domain, n, prompt_len, seed, split=split)
    params = SamplingParams(temperature=temperature)
    return [Request(rid0 + i, p, new_tokens, params, seed=seed * 10_000 + i) for i, p in enumerate(prompts)]


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


def policy_samples(ro: Rollout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(conf float64[N, γ] as the policy saw it, accepted int64[N], rid int64[N]) of the full request-steps:
    the simulator's empirical acceptance model resamples them."""
    sel = ro.full_steps()
    rs = ro.request_steps
    return rs["conf"][sel], rs["accepted"][sel], rs["rid"][sel]


def _nanmean(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else float("nan")


def confidence_quality(conf: np.ndarray, accepted: np.ndarray, temps=None) -> dict:
    """Per-position ECE/AUC of the survival, raw and (with `temps`) after STS; means over positions too."""
    gamma = conf.shape[1]
    labels = calibration.survival_labels(accepted, gamma)
    conf = np.clip(conf, 0.0, 1.0)
    out: dict = {}
    variants = [("raw", conf)]
    if temps is not None:
        variants.append(("calibrated", calibration.apply_sts(conf, temps_for(temps, gamma))))
    for tag, c in variants:
        surv = np.cumprod(c, axis=1)
        ece = np.asarray(calibration.ece(surv, labels), dtype=np.float64)
        auc = np.asarray(calibration.auc(surv, labels), dtype=np.float64)
        out[f"ece_{tag}"], out[f"auc_{tag}"] = ece, auc
        out[f"ece_{tag}_mean"], out[f"auc_{tag}_mean"] = _nanmean(ece), _nanmean(auc)
    return out


def temps_for(temps, gamma: int) -> np.ndarray:
    """STS temperatures for γ positions: the first γ of `temps`, padded with 1 (no scaling)."""
    t = np.ones(gamma)
    given = np.asarray(temps, dtype=np.float64)[:gamma]
    t[: given.size] = given
    return t


def fit_temperatures(conf: np.ndarray, accepted: np.ndarray) -> np.ndarray:
    """STS temperatures float64[γ] (specsched.calibration.fit_sts on its default grid 0.05..5.00, no
    refinement: a finer grid only fits the held-out sample's noise)."""
    return calibration.fit_sts(np.clip(conf, 1e-6, 1 - 1e-6), accepted)
