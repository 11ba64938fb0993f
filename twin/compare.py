"""The metrics `specbed fidelity` compares: an engine rollout and a simulator result summarized alike.

Role: both sides use the simulator's steady-state window (sim.metrics: warmup / drain) and definitions
(TPOT = (finish − first token) / (output − 1); a request's first engine step is its prefill step and is not
a decode step); the two TPOT samples are compared by the two-sample Kolmogorov–Smirnov statistic, and
`compare` makes one policy's report entry and table lines.

May import: numpy, stdlib, sim.metrics, twin.engine_run.
"""

from __future__ import annotations

import math

import numpy as np

from sim.metrics import steady_window
from twin.engine_run import EngineRun

METRICS = (
    ("throughput_tok_s", "throughput tok/s", 1.0),
    ("tpot_s_mean", "TPOT mean ms", 1e3),
    ("tpot_s_p50", "TPOT p50 ms", 1e3),
    ("tpot_s_p99", "TPOT p99 ms", 1e3),
    ("accepted_per_step", "accepted/step", 1.0),
    ("verify_tokens_per_request_step", "verify tok/req-step", 1.0),
    ("step_s_mean", "step ms (all steps)", 1e3),
    ("draft_s_mean", "draft ms (all steps)", 1e3),
)


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov–Smirnov statistic sup |F_a − F_b| (NaN if a sample is empty)."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    if a.size == 0 or b.size == 0:
        return math.nan
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def _percentiles(tpot: np.ndarray, out: dict) -> None:
    out["tpot_s_mean"] = float(tpot.mean()) if tpot.size else math.nan
    p50, p99 = np.percentile(tpot, [50, 99]) if tpot.size else (math.nan, math.nan)
    out["tpot_s_p50"], out["tpot_s_p99"] = float(p50), float(p99)


def engine_summary(ro, warmup: float, drain: float) -> tuple[dict, np.ndarray]:
    """The simulator's summary keys computed from an engine rollout; also the measured TPOTs."""
    req, st, rs = ro.requests, ro.steps, ro.request_steps
    t0, t1, _ = steady_window(req["arrival_s"], req["finish_s"], warmup, drain)
    measured = (req["arrival_s"] >= t0) & (req["arrival_s"] <= t1)
    out_tok = req["output_tokens"]
    tpot = ((req["finish_s"] - req["first_token_s"]) / np.maximum(out_tok - 1, 1))[measured & (out_tok > 1)]
    inside = (st["end_s"] > t0) & (st["end_s"] <= t1)
    s = {
        "throughput_tok_s": float(st["emitted"][inside].sum() / (t1 - t0)),
        "requests_measured": int(measured.sum()),
    }
    _percentiles(tpot, s)
    sel = np.isin(rs["rid"], req["rid"][measured]) & ~rs["first"]
    s["accepted_per_step"] = float(rs["accepted"][sel].mean()) if sel.any() else math.nan
    s["verify_tokens_per_request_step"] = float((1 + rs["length"][sel]).mean()) if sel.any() else math.nan
    s["steps"] = int(st["end_s"].size)
    s["step_s_mean"] = float((st["end_s"] - st["start_s"]).mean()) if st["end_s"].size else math.nan
    s["draft_s_mean"] = float(st["draft_s"].mean()) if st["end_s"].size else math.nan
    return s, tpot


def sim_summary(result) -> tuple[dict, np.ndarray]:
    s, r = result.summary, result.requests
    t0, t1 = s["window_start_s"], s["window_end_s"]
    measured = (r["arrival_s"] >= t0) & (r["arrival_s"] <= t1) & ~np.isnan(r["finish_s"])
    tpot = r["tpot_s"][measured]
    tpot = tpot[~np.isnan(tpot)]
    out = {
        "throughput_tok_s": s["throughput_tok_s"],
        "requests_measured": s["requests_measured"],
        "accepted_per_step": s["tau_mean"] - 1.0,
        "verify_tokens_per_request_step": s["mean_verify_tokens_per_request_step"],
        "steps": s["steps"],
        "step_s_mean": s["step_s_mean"],
        "draft_s_mean": s["draft_s_mean"],
    }
    _percentiles(tpot, out)
    return out, tpot


def level_drift(sec_a: np.ndarray, draft_a: float, sec_b: np.ndarray, draft_b: float) -> float:
    """How far the machine's speed moved between two profiles: |Δ| / mean of their mean step times
    (verify seconds `float64[n]` averaged over the profiled token counts, plus the draft seconds)."""
    a, b = float(np.mean(sec_a)) + draft_a, float(np.mean(sec_b)) + draft_b
    return abs(a - b) / (0.5 * (a + b)) if a + b > 0 else 0.0


def compare(
    pol: str, run: EngineRun, simres: dict, sim_tpot: np.ndarray, scfg
) -> tuple[dict, list[str], float]:
    """(report entry, table lines, worst |relative error| on throughput and mean TPOT) of one policy."""
    ks = ks_statistic(run.eng_tpot, sim_tpot)
    entry = {
        "profile_drift": run.drift,
        "attempts": run.attempt,
        "speed_ratio": run.speed,
        "engine": run.eng,
        "sim": simres,
        "ks_tpot": ks,
        "draft_seconds": run.draft_s,
        "join_seconds": run.join_s,
        "prefill_request_seconds": scfg.server.prefill_request_seconds,
        "cost": {"tokens": run.table.tokens.tolist(), "seconds": run.table.seconds.tolist()},
    }
    lines, worst = [], 0.0
    for key, label, scale in METRICS:
        e, s_ = run.eng[key], simres[key]
        err = (s_ - e) / e if e else math.nan
        if key in ("throughput_tok_s", "tpot_s_mean") and math.isfinite(err):
            worst = max(worst, abs(err))
        first = pol if key == METRICS[0][0] else ""
        lines.append(f"{first:<16}{label:<20}{e * scale:>11.3f}{s_ * scale:>11.3f}{100 * err:>8.1f}%")
    lines.append(f"{'':<16}{'KS(TPOT)':<20}{ks:>11.3f}")
    return entry, lines, worst
