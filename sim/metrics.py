"""From a finished run's `Recorder` to per-request results, the summary and the time series.

Role: every aggregate the simulator reports, each defined once here.

Steady-state window [t0, t1] (warm-up and drain excluded; `MetricsConfig`; `steady_window`, the one
definition for every run: a fleet's completions are its decode pool's):
- t0 = the time by which ⌈warmup·N⌉ requests have completed (0 when warmup = 0);
- t1 = the arrival time of the request of rank ⌈(1 − drain)·N⌉ in arrival order (arrivals still coming).
If t1 ≤ t0 (tiny runs), the window is the whole run [first arrival, last completion] and
`window_fallback` is true. Requests arriving in [t0, t1] and completed are "measured".

Per request: ttft_s = first token − arrival; e2e_s = finish − arrival; queue_s = first admission −
arrival; tpot_s = (e2e − ttft) / (output − 1) (NaN for one-token outputs); per_user_tok_s = 1 / tpot_s.

Summary (flat dict, JSON-ready; the public contract keys are marked *):
- requests_total, requests_completed*, requests_measured, requests_clipped, output_tokens* (all tokens
  emitted in the run), input_tokens, steps* (engine steps over all replicas), preemptions* (all),
  sim_time_s (last completion), window_start_s, window_end_s, window_fallback, gpus.
- throughput_tok_s* = tokens emitted inside the window / its length; throughput_tok_s_per_gpu* (÷ gpus);
  request_throughput_req_s (requests completed inside the window / its length: the departure rate, which
  under saturation is below the arrival rate).
- latency stats over measured requests: {ttft,tpot,e2e,queue}_s_{mean,p50,p90,p99}*, per_user_tok_s_mean*
  (mean of 1/TPOT), per_user_tok_s_p50.
- tau_mean* = (Σ accepted + Σ decode steps) / Σ decode steps over measured requests: tokens per request
  per speculative step (accepted drafts + the bonus/correction token, before the cut at the output
  length); tau_by_domain; mean_verify_tokens_per_request_step* = Σ (1 + ℓ) / Σ decode steps (the
  paper's Fig. 8 "verify budget").
- mean_batch_size (decoding requests per step in the window), queue_len_mean and in_system_mean
  (time averages in the window), queue_area_s / system_area_s (exact ∫ dt over the whole run, for
  Little's law), busy_frac, draft_time_frac (draft seconds / step seconds over all steps), step_s_mean and
  draft_s_mean (seconds per engine step and its draft part, all steps); step_s_<part> for each part of
  `specsched.stepcost.PARTS` (draft, fixed, context, forward, prefill, pad, context_pad): where the step
  time goes, mean seconds per step (they add up to step_s_mean within rounding).
- goodput: slo_attainment (measured requests meeting TTFT ≤ slo_ttft_s and TPOT ≤ slo_tpot_s),
  goodput_req_s and goodput_tok_s (those requests' count / output tokens per window second).
- confidence quality of the acceptance model: ece_raw*, ece_calibrated*, auc_raw, auc_calibrated.
- inter-token latency, over EVERY gap between two consecutive token emissions of one request in the
  whole run (not only the window; `vllm bench serve`'s ITL: with speculation a step's accepted tokens
  arrive together, so ITL ≈ step time ≥ TPOT): itl_s_{mean,p50,p90,p99,std} (quantiles from a log
  histogram, within ~0.6 %; mean and std exact). End-to-end latency is e2e_s_* above.
- load factor (`load_factor`, added by `sim.run`): offered_req_s, sustainable_req_s (from the step cost
  at batch_max, the batch a saturated replica holds), load_factor = offered / sustainable (1 for a
  closed loop), near_saturation (> 0.9); docs/validation.md "Saturation".
- speculation counters over the whole run, as vLLM counts them: spec_drafts (request-steps verifying at
  least one draft), spec_draft_tokens (Σ ℓ), spec_accepted_tokens, spec_accepted_per_pos (list, γ
  entries: request-steps with at least i + 1 drafts accepted), spec_acceptance_length
  (1 + accepted / drafts; NaN without drafts).

May import: numpy, the standard library, `sim.recorder`, `sim.curves`, `sim.workload`, `sim.config`,
`specsched.stepcost` (PARTS), `specsched.load`.
"""

from __future__ import annotations

import math

import numpy as np

from sim.config import SimConfig
from sim.curves import DOMAINS
from sim.recorder import (
    BIN_BUSY,
    BIN_DECODE,
    BIN_QUEUE_AREA,
    BIN_STEPS,
    BIN_SYSTEM_AREA,
    BIN_TOKENS,
    BIN_VERIFY,
    Recorder,
)
from sim.workload import Workload
from specsched.load import NEAR_SATURATION
from specsched.stepcost import PARTS


def request_table(rec: Recorder, wl: Workload) -> dict[str, np.ndarray]:
    """Per-request columns (numpy arrays of length N, in request-id order)."""
    ttft = rec.first_token_s - rec.arrival_s
    e2e = rec.finish_s - rec.arrival_s
    out = wl.output_tokens
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (e2e - ttft) / np.maximum(out - 1, 1), np.nan)
        speed = 1.0 / tpot
    return {
        "id": np.arange(rec.n, dtype=np.int64),
        "replica": rec.replica,
        "domain": wl.domain,
        "arrival_s": rec.arrival_s,
        "input_tokens": wl.input_tokens,
        "output_tokens": out,
        "admit_s": rec.admit_s,
        "first_token_s": rec.first_token_s,
        "finish_s": rec.finish_s,
        "queue_s": rec.admit_s - rec.arrival_s,
        "ttft_s": ttft,
        "tpot_s": tpot,
        "e2e_s": e2e,
        "per_user_tok_s": speed,
        "generated": rec.generated,
        "decode_steps": rec.decode_steps,
        "accepted": rec.accepted,
        "verify_tokens": rec.verify_tokens,
        "preemptions": rec.preemptions,
    }


def window_ranks(n: int, warmup: float, drain: float) -> tuple[int, int]:
    """(k0, k1) of N requests: the completion rank that opens the steady window (0: the first arrival
    does) and the arrival rank that closes it (1-based)."""
    return math.ceil(warmup * n), max(math.ceil((1.0 - drain) * n), 1)


def steady_window(
    arrival: np.ndarray, finish: np.ndarray, warmup: float, drain: float
) -> tuple[float, float, bool]:
    """The steady-state window (t0, t1, fallback) of the module docstring, from each request's arrival and
    finish (float64[N] seconds, NaN: not arrived / not finished). The one definition of every run's window:
    a colocated pool's and a fleet's (finish = the decode pool's, `sim.disagg.run`)."""
    n = arrival.size
    arrivals = np.sort(arrival[~np.isnan(arrival)])
    finishes = np.sort(finish[~np.isnan(finish)])
    if finishes.size == 0:
        return 0.0, 0.0, True
    k0, k1 = window_ranks(n, warmup, drain)
    t0 = float(finishes[min(k0, finishes.size) - 1]) if k0 > 0 else float(arrivals[0])
    t1 = float(arrivals[min(k1, arrivals.size) - 1])
    if t1 <= t0:
        return float(arrivals[0]), float(finishes[-1]), True
    return t0, t1, False


def _stats(prefix: str, values: np.ndarray, out: dict) -> None:
    v = values[~np.isnan(values)]
    if v.size == 0:
        for k in ("mean", "p50", "p90", "p99"):
            out[f"{prefix}_{k}"] = math.nan
        return
    out[f"{prefix}_mean"] = float(v.mean())
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    out[f"{prefix}_p50"], out[f"{prefix}_p90"], out[f"{prefix}_p99"] = float(p50), float(p90), float(p99)


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else math.nan


def summarize(
    rec: Recorder, wl: Workload, req: dict[str, np.ndarray], cfg: SimConfig, *, gpus: int, confidence: dict
) -> dict:
    """The summary dict described in the module docstring (NaN where undefined)."""
    t0, t1, fallback = steady_window(rec.arrival_s, rec.finish_s, cfg.metrics.warmup, cfg.metrics.drain)
    span = t1 - t0
    done = ~np.isnan(rec.finish_s)
    measured = done & (rec.arrival_s >= t0) & (rec.arrival_s <= t1)
    if not measured.any():
        measured = done
    bins = rec.bins
    window_tokens = bins.window_sum(BIN_TOKENS, t0, t1)
    window_steps = bins.window_sum(BIN_STEPS, t0, t1)
    s: dict = {
        "requests_total": int(rec.n),
        "requests_completed": int(rec.completed),
        "requests_measured": int(measured.sum()),
        "requests_clipped": int(wl.clipped),
        "output_tokens": int(rec.generated.sum()),
        "input_tokens": int(wl.input_tokens.sum()),
        "steps": int(rec.steps),
        "preemptions": int(rec.total_preemptions),
        "sim_time_s": float(np.nanmax(rec.finish_s)) if done.any() else 0.0,
        "window_start_s": t0,
        "window_end_s": t1,
        "window_fallback": fallback,
        "gpus": int(gpus),
        "throughput_tok_s": _ratio(window_tokens, span),
    }
    s["throughput_tok_s_per_gpu"] = s["throughput_tok_s"] / gpus
    # completions inside the window, not the measured arrivals: past saturation requests that arrive in
    # the window finish after it, and counting them would report the offered rate as the throughput
    finished_in = done & (rec.finish_s >= t0) & (rec.finish_s <= t1)
    s["request_throughput_req_s"] = _ratio(finished_in.sum(), span)
    for name in ("ttft_s", "tpot_s", "e2e_s", "queue_s"):
        _stats(name, req[name][measured], s)
    speed = req["per_user_tok_s"][measured]
    speed = speed[np.isfinite(speed)]
    s["per_user_tok_s_mean"] = float(speed.mean()) if speed.size else math.nan
    s["per_user_tok_s_p50"] = float(np.median(speed)) if speed.size else math.nan
    steps = rec.decode_steps[measured]
    s["tau_mean"] = _ratio(rec.accepted[measured].sum() + steps.sum(), steps.sum())
    s["tau_by_domain"] = {}
    for i, name in enumerate(DOMAINS):
        sel = measured & (wl.domain == i)
        st = rec.decode_steps[sel].sum()
        s["tau_by_domain"][name] = _ratio(rec.accepted[sel].sum() + st, st)
    s["mean_verify_tokens_per_request_step"] = _ratio(rec.verify_tokens[measured].sum(), steps.sum())
    s["mean_batch_size"] = _ratio(bins.window_sum(BIN_DECODE, t0, t1), window_steps)
    s["queue_len_mean"] = _ratio(bins.window_sum(BIN_QUEUE_AREA, t0, t1), span)
    s["in_system_mean"] = _ratio(bins.window_sum(BIN_SYSTEM_AREA, t0, t1), span)
    s["queue_area_s"] = float(rec.queue_area)
    s["system_area_s"] = float(rec.system_area)
    s["busy_frac"] = _ratio(bins.window_sum(BIN_BUSY, t0, t1), span * len(rec.parts))
    s["draft_time_frac"] = _ratio(rec.draft_s, rec.draft_s + rec.verify_s)
    s["step_s_mean"] = _ratio(rec.draft_s + rec.verify_s, rec.steps)
    s["draft_s_mean"] = _ratio(rec.draft_s, rec.steps)
    for name, total in zip(PARTS, rec.bill_s):
        s[f"step_s_{name}"] = _ratio(total, rec.steps)
    ttft, tpot = req["ttft_s"], req["tpot_s"]
    ok = measured & (ttft <= cfg.metrics.slo_ttft_s) & (np.isnan(tpot) | (tpot <= cfg.metrics.slo_tpot_s))
    s["slo_attainment"] = _ratio(ok.sum(), measured.sum())
    s["goodput_req_s"] = _ratio(ok.sum(), span)
    s["goodput_tok_s"] = _ratio(wl.output_tokens[ok].sum(), span)
    for key in ("ece_raw", "ece_calibrated", "auc_raw", "auc_calibrated"):
        s[key] = float(confidence.get(key, math.nan))
    _itl_and_spec(rec, s)
    return s


def _itl_and_spec(rec: Recorder, s: dict) -> None:
    """ITL statistics and vLLM-style speculation counters (whole run) into the summary `s`."""
    itl = rec.itl
    s["itl_s_mean"] = itl.mean()
    for q in (50, 90, 99):
        s[f"itl_s_p{q}"] = itl.quantile(q / 100)
    s["itl_s_std"] = itl.std()
    hist = rec.accepted_hist
    s["spec_drafts"] = int(rec.drafts)
    s["spec_draft_tokens"] = int((rec.verify_tokens - rec.decode_steps).sum())
    s["spec_accepted_tokens"] = int(rec.accepted.sum())
    # request-steps with ≥ i + 1 accepted = Σ_{j > i} hist[j]
    s["spec_accepted_per_pos"] = [int(x) for x in np.cumsum(hist[::-1])[::-1][1:]]
    s["spec_acceptance_length"] = 1.0 + _ratio(s["spec_accepted_tokens"], rec.drafts)


def time_series(rec: Recorder, max_points: int) -> dict[str, np.ndarray]:
    """Per-bin series over the run (≤ max_points rows): t_s (bin start), steps, throughput_tok_s,
    batch_size (decoding requests per step), verify_tokens_per_request, queue_len and in_system (time
    averages), busy (replica-seconds busy per second)."""
    bins = rec.bins
    data = bins.data[: bins.used]
    width = bins.width
    factor = max(1, math.ceil(data.shape[0] / max_points))
    if factor > 1:
        pad = (-data.shape[0]) % factor
        data = (
            np.vstack([data, np.zeros((pad, data.shape[1]))]).reshape(-1, factor, data.shape[1]).sum(axis=1)
        )
        width *= factor
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "t_s": np.arange(data.shape[0]) * width,
            "steps": data[:, BIN_STEPS],
            "throughput_tok_s": data[:, BIN_TOKENS] / width,
            "batch_size": data[:, BIN_DECODE] / data[:, BIN_STEPS],
            "verify_tokens_per_request": data[:, BIN_VERIFY] / data[:, BIN_DECODE],
            "queue_len": data[:, BIN_QUEUE_AREA] / width,
            "in_system": data[:, BIN_SYSTEM_AREA] / width,
            "busy": data[:, BIN_BUSY] / width,
        }


def load_factor(
    cost,
    wl: Workload,
    *,
    max_num_seqs: int,
    kv_tokens: int,
    replicas: int = 1,
    offered_req_s: float | None = None,
    hit_rate: float = 0.0,
    tau: float = 1.0,
    verify: float = 1.0,
) -> dict:
    """How close the offered traffic is to what the server can sustain (module-level definition, one place).

    The server saturates at `batch_max` = min(max_num_seqs, kv_tokens / (P + O/2)) running requests per
    replica (P, O: mean prompt and output tokens; a request holds P + O/2 KV tokens on average over its
    life). A running request takes O/τ steps (τ: tokens it emits a step, 1 without speculation), so at a
    batch of R a replica completes R·τ / (O·t(R)) requests a second, where t(R) = `cost.step_seconds` of
    one steady-state step: R·(verify + u·τ/O) tokens (u = P·(1 − hit_rate), the prompt tokens each
    request prefills, spread over its steps), R requests, R·(P + O/2) KV tokens. R/t(R) grows with R
    (steps are sub-linear in their tokens), so the sustainable rate is at batch_max:
        sustainable_req_s = replicas · batch_max · τ / (O · t(batch_max)),
        load_factor = offered_req_s / sustainable_req_s.
    offered_req_s: the open-loop arrival rate (None: N over the arrivals' span). A closed loop (no
    arrivals) offers what it is served: its load factor is 1 by construction and it has no cliff (its
    latency grows in proportion to the step cost), so it is never flagged.
    {"offered_req_s", "sustainable_req_s", "load_factor", "batch_max", "near_saturation"} (NaN undefined).
    """
    p_mean = float(np.mean(wl.input_tokens)) if len(wl.input_tokens) else math.nan
    o_mean = float(np.mean(wl.output_tokens)) if len(wl.output_tokens) else math.nan
    held = p_mean + o_mean / 2.0
    r_max = float(min(max_num_seqs, max(kv_tokens / held, 1.0))) if held > 0 else math.nan
    out = {"batch_max": r_max, "offered_req_s": math.nan, "sustainable_req_s": math.nan}
    if not (o_mean > 0 and r_max > 0):
        return {**out, "load_factor": math.nan, "near_saturation": False}
    u = p_mean * (1.0 - hit_rate)
    tokens = r_max * (verify + u * tau / o_mean)
    t = float(cost.step_seconds(max(int(math.ceil(tokens)), 1), int(r_max), r_max * held))
    out["sustainable_req_s"] = replicas * r_max * tau / (o_mean * t)
    if wl.arrival_s is None:
        return {**out, "load_factor": 1.0, "near_saturation": False}
    if offered_req_s is None:
        span = float(wl.arrival_s[-1] - wl.arrival_s[0]) if len(wl.arrival_s) > 1 else 0.0
        offered_req_s = (len(wl.arrival_s) - 1) / span if span > 0 else math.inf
    out["offered_req_s"] = float(offered_req_s)
    rho = out["offered_req_s"] / out["sustainable_req_s"]
    return {**out, "load_factor": rho, "near_saturation": bool(rho > NEAR_SATURATION)}
