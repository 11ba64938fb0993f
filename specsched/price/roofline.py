"""Roofline step-time model: the formula that prices one step of a model on a GPU of the catalogue.

Role: synthesize a verify-step latency curve when no measured profile exists. Used through
`CostTable.roofline`, the named tables in `specsched.builtin`, the fit (`specsched.fit`) and the vLLM step
(`specsched.price.vllm`). Models and GPUs are the catalogue's (`specsched.price.models`, `.gpus`); the
efficiencies and fixed costs default to the one `specsched.price.knobs.Knobs`.

Per device, one step over B query tokens costs

    t(B, R, C) = layers·c0 + max( W(B) / (η_bw·BW),  (2·P_active·B + attn) / (η_f·F) ) + t_comm(B)
                 + R·request_s + C·kv_bytes_per_token / (η_bw·BW)

(C: KV tokens the running requests hold in all; with a number `context_tokens`, C = R·context_tokens.)

Assumptions, all first-order and stated so a user can disagree with them:
- W(B): weight bytes read once per step. Dense models read every weight. MoE models read the dense part
  (attention, shared experts, embeddings) plus only the routed experts that some token in the batch uses;
  with uniform routing the expected number of distinct experts touched per MoE layer is
  E·(1 − (1 − k/E)^B) (cost-model-notes.md). Real routing is skewed, so this over-counts a little at small B.
- Expert locality (`expert_locality` ρ, `locality_tokens` g; off by default): a request's consecutive
  tokens route to overlapping experts (MoE-Spec, arXiv 2602.16052: routing in a draft is heavy-tailed, a few
  experts take most of it; EVICT, arXiv 2605.00342), so a verify block of g tokens touches fewer experts
  than g independent tokens. A table is indexed by tokens only, so locality is credited to one request's
  block: the first g tokens count as 1 + (g − 1)(1 − ρ) draws, every further token as one. That is exact
  for one request (concurrency 1, where the over-count matters most) and a small under-credit in large
  batches, where nearly all experts are touched anyway.
- KV: each running request's KV cache (its context) is read once per step by the attention kernels, however
  many of its tokens are verified. `context_tokens=None` prices it per actual KV token (`kv_token_seconds`,
  context-aware tables: the one price of a KV token, also the vLLM step's, at `eta_kv` where given; KV heads
  split over tp GPUs, replicated when fewer than tp); a number assumes that context for every request.
  Attention runs as its own kernels, between the weight GEMMs, so its time adds to theirs rather than hiding
  under the max; it is returned apart (`kv_token_seconds` / `request_seconds`) because it scales with the
  requests' context, not with B.
- request_s: per-request work per step that does not grow with context (sampling, bookkeeping). 0 by
  default; fitted to measurements by `specsched.fit`.
- Compute: 2 FLOPs per active parameter per token; attention FLOPs (`attn_flops`) are 0 in cost tables
  (small next to the linear layers at these contexts); `specsched.fit` passes them for measured prefills.
  Models stored in FP8 (bytes_per_param ≤ 1) run FP8 GEMMs at twice the bf16 dense peak (H100/H200:
  1,979 vs 989 TFLOP/s; B200/B300: 4.5 vs 2.25 PFLOP/s).
- c0: fixed per-layer overhead (kernel launches, norms, small ops); it and η_bw, η_f, request_s default
  to `Knobs` (`specsched.price.knobs`, where their ranges and sources are).
- Parallelism. `tp` GPUs form one replica that serves one batch: weights, FLOPs and KV split tp ways, plus
  two all-reduces per layer of B·d_model bf16 values over a link of `link_bw` bytes/s plus `link_latency`
  each (default: the "nvlink-h100" row of `specsched.price.gpus.LINKS`, whatever the GPU), plus
  `hop_latency` per extra GPU in the ring (0 by default). `ep` is expert parallelism with data-parallel
  attention (DeepSeek-style serving): each GPU serves its own batch of B tokens, the routed experts are
  spread over `ep` GPUs, so a GPU reads 1/ep of the expert weights and — with balanced routing — does the
  expert FLOPs of B tokens; dispatch and combine add two all-to-alls per MoE layer of B·top_k·d_model bytes
  (FP8). A table with ep > 1 is therefore per GPU: B is one GPU's verify tokens. With `overlap_comm`, the
  bandwidth part of the collectives overlaps the kernels (two micro-batches) and only their latency adds.
- Bytes per parameter: 2 (bf16) for the dense built-ins, 1 (FP8) for the MoE built-ins.

May import: numpy, the standard library, `specsched.price` (gpus, models, knobs).
"""

from __future__ import annotations

import numpy as np

from specsched.price.gpus import GPU, LINKS
from specsched.price.knobs import DEFAULTS, check_knob
from specsched.price.models import ModelShape

#: the roofline's default GPU-to-GPU link (NVLink 4), whatever the GPU: the built-in tables assume it
_LINK = LINKS["nvlink-h100"]


def step_seconds(
    model: ModelShape,
    gpu: GPU,
    b,
    *,
    tp: int = 1,
    ep: int = 1,
    eta_bw: float = DEFAULTS.eta_bw,
    eta_f: float = DEFAULTS.eta_f,
    c0: float = DEFAULTS.c0,
    context_tokens: float | None = 1024.0,
    link_bw: float = _LINK.bandwidth,
    link_latency: float = _LINK.latency,
    hop_latency: float = 0.0,
    request_s: float = DEFAULTS.request_s,
    bytes_per_param: float | None = None,
    overlap_comm: bool = False,
    attn_flops=0.0,
    expert_locality: float = 0.0,
    locality_tokens: int = 8,
    fp8_peak: float = 2.0,
) -> np.ndarray:
    """float64 seconds of the token-dependent part of one step at `b` query tokens (array) on one GPU of a
    `tp`-GPU replica (or one data-parallel rank with `ep`-way expert parallelism): everything but the
    per-request KV reads (`request_seconds`). fp8_peak: the tensor rate over BF16 that weights of ≤ 1 byte
    run at (2 for the built-ins; a vLLM deployment passes the GPU's measured `kernels.fp8_rate`)."""
    knobs = {"eta_bw": eta_bw, "eta_f": eta_f, "c0": c0, "link_latency": link_latency, "request_s": request_s}
    for key, val in knobs.items():
        check_knob(key, val, where="roofline")
    for key, val in {"tp": tp, "ep": ep, "link_bw": link_bw}.items():
        if not val > 0:
            raise ValueError(f"roofline: {key} must be > 0, got {val!r}")
    nonneg = {"hop_latency": hop_latency}
    if context_tokens is not None:
        nonneg["context_tokens"] = context_tokens
    for key, val in nonneg.items():
        if not val >= 0:
            raise ValueError(f"roofline: {key} must be ≥ 0, got {val!r}")
    if not 0.0 <= expert_locality < 1.0:
        raise ValueError(f"roofline: expert_locality must be in [0, 1), got {expert_locality!r}")
    if isinstance(locality_tokens, bool) or int(locality_tokens) != locality_tokens or locality_tokens < 1:
        raise ValueError(f"roofline: locality_tokens must be a whole number ≥ 1, got {locality_tokens!r}")
    b = np.asarray(b, dtype=np.float64)
    bpp = model.bytes_per_param if bytes_per_param is None else bytes_per_param
    if ep > 1 and not model.is_moe:
        raise ValueError(f"roofline: ep={ep} needs an MoE model, {model.name} is dense")
    params_read = model.weight_params_read(b, expert_locality, int(locality_tokens))
    if ep > 1:
        # Each GPU holds 1/ep of the routed experts; all of them are touched once B·top_k ≫ experts.
        expert_part = params_read - model.dense_params
        params_read = model.dense_params + expert_part / ep
    weight_bytes = params_read * bpp / tp
    t_mem = weight_bytes / (eta_bw * gpu.hbm_bw)
    peak = gpu.flops * (fp8_peak if bpp <= 1.0 else 1.0)
    t_cmp = (2.0 * model.active_params * b + attn_flops) / tp / (eta_f * peak)
    # Collective time: a latency per collective (never hidden) and a bandwidth part.
    # A ring collective over n GPUs takes n − 1 hops: `hop_latency` per extra GPU (0 by default).
    t_lat, t_bw = 0.0, 0.0
    if tp > 1:
        t_lat = t_lat + 2 * model.layers * (link_latency + hop_latency * (tp - 1))
        t_bw = t_bw + 2 * model.layers * b * model.d_model * 2 / link_bw
    if ep > 1:
        t_lat = t_lat + 2 * model.moe_layers * (link_latency + hop_latency * (ep - 1))
        t_bw = t_bw + 2 * model.moe_layers * b * model.top_k * model.d_model / link_bw
    if overlap_comm:
        # Two-micro-batch overlap (DeepSeek's decode): one half-batch's all-to-all runs under the other's
        # compute, so the transfer costs only where it exceeds the kernels' time.
        return model.layers * c0 + np.maximum(np.maximum(t_mem, t_cmp), t_bw) + t_lat
    return model.layers * c0 + np.maximum(t_mem, t_cmp) + t_bw + t_lat


def kv_token_seconds(
    model: ModelShape,
    gpu: GPU,
    *,
    tp: int = 1,
    eta_bw: float = DEFAULTS.eta_bw,
    eta_kv: float | None = None,
    **_other,
) -> float:
    """Seconds per KV token of context read in one step, on one GPU of a tp-way replica: the model's KV
    bytes on that GPU (`ModelShape.kv_bytes_per_gpu`) / (η·BW), η = `eta_kv` (None: `eta_bw`)."""
    eta = eta_bw if eta_kv is None else eta_kv
    if not tp > 0:
        raise ValueError(f"roofline: bad tp={tp!r}")
    check_knob("eta_kv" if eta_kv is not None else "eta_bw", eta, where="roofline")
    return float(model.kv_bytes_per_gpu(tp) / (eta * gpu.hbm_bw))


def request_seconds(
    model: ModelShape,
    gpu: GPU,
    *,
    tp: int = 1,
    eta_bw: float = DEFAULTS.eta_bw,
    context_tokens: float | None = 1024.0,
    request_s: float = DEFAULTS.request_s,
    **_other_knobs,
) -> float:
    """Seconds per running request per step: `request_s` (per-request work that does not grow with context:
    sampling, bookkeeping, kernel set-up), plus — when `context_tokens` is a number — reading that fixed
    context of KV once (per GPU). With `context_tokens=None` the KV reads are priced per actual context
    token instead (`kv_token_seconds`), and this is `request_s` alone."""
    if context_tokens is not None and not context_tokens >= 0:
        raise ValueError(f"roofline: context_tokens must be ≥ 0, got {context_tokens!r}")
    if not request_s >= 0:
        raise ValueError(f"roofline: request_s must be ≥ 0, got {request_s!r}")
    kv = (
        0.0 if context_tokens is None else context_tokens * kv_token_seconds(model, gpu, tp=tp, eta_bw=eta_bw)
    )
    return float(request_s + kv)
