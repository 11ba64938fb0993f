"""Roofline step-time model: built-in GPUs and model shapes, and the formula that prices one step.

Role: synthesize a verify-step latency curve when no measured profile exists. Used through
`CostTable.roofline` and the named tables in `specsched.builtin`.

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
- KV: each running request's KV cache (its context) is read once per step by the attention kernels,
  however many of its tokens are verified. `context_tokens=None` prices it per actual KV token
  (`kv_token_seconds`, context-aware tables); a number assumes that context for every request. Attention
  runs as its own kernels, between the weight GEMMs, so its time adds to theirs rather than hiding under
  the max; it is returned apart (`kv_token_seconds` / `request_seconds`) because it scales with the
  requests' context, not with B.
- request_s: per-request work per step that does not grow with context (sampling, bookkeeping). 0 by
  default; fitted to measurements by `specsched.fit`.
- Compute: 2 FLOPs per active parameter per token; attention FLOPs (`attn_flops`) are 0 in cost tables
  (small next to the linear layers at these contexts); `specsched.fit` passes them for measured prefills.
  Models stored in FP8 (bytes_per_param ≤ 1) run FP8 GEMMs at twice the bf16 dense peak (H100/H200:
  1,979 vs 989 TFLOP/s; B200/B300: 4.5 vs 2.25 PFLOP/s).
- c0: fixed per-layer overhead (kernel launches, norms, small ops), 40 µs by default: fits to published H100
  profiles land within ~5–10% MAPE with η_bw ≈ 0.9, η_f ≈ 0.5–0.65, c0 ≈ 35–60 µs (simulators.md §4).
- Parallelism. `tp` GPUs form one replica that serves one batch: weights, FLOPs and KV split tp ways,
  plus two all-reduces per layer of B·d_model bf16 values over a link of `link_bw` bytes/s plus
  `link_latency` each (NVLink-class defaults), plus `hop_latency` per extra GPU in the ring (0 by
  default). `ep` is expert parallelism with data-parallel attention
  (DeepSeek-style serving): each GPU serves its own batch of B tokens, the routed experts are spread over
  `ep` GPUs, so a GPU reads 1/ep of the expert weights and — with balanced routing — does the expert FLOPs
  of B tokens; dispatch and combine add two all-to-alls per MoE layer of B·top_k·d_model bytes (FP8).
  A table with ep > 1 is therefore per GPU: B is one GPU's verify tokens. With `overlap_comm`, the
  bandwidth part of the collectives overlaps the kernels (two micro-batches) and only their latency adds.
- Bytes per parameter: 2 (bf16) for the dense built-ins, 1 (FP8) for the MoE built-ins.

May import: numpy and the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GPU:
    """An accelerator: HBM bandwidth (bytes/s), dense bf16 tensor throughput (FLOP/s), memory (bytes)."""

    name: str
    hbm_bw: float
    flops: float
    memory: float

    def __post_init__(self) -> None:
        for f in ("hbm_bw", "flops", "memory"):
            if not getattr(self, f) > 0:
                raise ValueError(f"GPU {self.name}: {f} must be > 0, got {getattr(self, f)!r}")


@dataclass(frozen=True)
class ModelShape:
    """The shape facts a roofline needs.

    total_params / active_params: parameters in the model / used per token. For a dense model they are
    equal. For an MoE model, `experts` routed experts per MoE layer with `top_k` active, over `moe_layers`
    layers; each routed expert holds (total − active) / (moe_layers·(experts − top_k)) parameters and the
    rest of the active parameters are the dense part.
    kv_bytes_per_token: KV cache bytes per token of context over all layers.
    """

    name: str
    layers: int
    d_model: int
    total_params: float
    active_params: float
    kv_bytes_per_token: float
    bytes_per_param: float = 2.0
    experts: int = 0
    top_k: int = 0
    moe_layers: int = 0
    note: str = ""

    def __post_init__(self) -> None:
        if self.layers < 1 or self.d_model < 1:
            raise ValueError(f"model {self.name}: layers and d_model must be ≥ 1")
        if not 0 < self.active_params <= self.total_params:
            raise ValueError(f"model {self.name}: need 0 < active_params ≤ total_params")
        if self.experts and not (0 < self.top_k < self.experts and 0 < self.moe_layers <= self.layers):
            raise ValueError(f"model {self.name}: MoE needs 0 < top_k < experts and 0 < moe_layers ≤ layers")

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def expert_params(self) -> float:
        if not self.is_moe:
            return 0.0
        return (self.total_params - self.active_params) / (self.moe_layers * (self.experts - self.top_k))

    @property
    def dense_params(self) -> float:
        return self.active_params - self.moe_layers * self.top_k * self.expert_params

    def weight_params_read(self, b: np.ndarray, locality: float = 0.0, block: int = 1) -> np.ndarray:
        """Parameters read in one step over `b` tokens (float64 array), before dividing by tp.

        locality ρ ∈ [0, 1), block g ≥ 1: the first g tokens are one request's consecutive tokens, and
        each after its first re-uses the previous token's experts with probability ρ, so they count as
        1 + (min(b, g) − 1)·(1 − ρ) independent routing draws (module docstring, "expert locality").
        """
        b = np.asarray(b, dtype=np.float64)
        if not self.is_moe:
            return np.full_like(b, self.total_params)
        draws = b - locality * (np.minimum(b, float(block)) - 1.0).clip(min=0.0)
        touched = self.experts * (1.0 - (1.0 - self.top_k / self.experts) ** draws)
        return self.dense_params + self.moe_layers * touched * self.expert_params


#: Built-in accelerators, a plain data table (one row per GPU; add one without touching the formulas).
#: Sources (NVIDIA datasheets): A100 80GB SXM — 2,039 GB/s HBM2e, 312 TFLOP/s dense BF16 (A100 datasheet,
#: 2021); H100 SXM5 — 3.35 TB/s HBM3, 989 TFLOP/s dense BF16 (H100 datasheet); H200 SXM — 4.8 TB/s HBM3e,
#: 141 GB, same compute as H100 (H200 datasheet); B200 — 8 TB/s HBM3e, 2.25 PFLOP/s dense BF16 (HGX B200
#: spec sheet), 180 GB (DGX B200: 1,440 GB over 8 GPUs).
GPUS: dict[str, GPU] = {
    "a100": GPU("A100 SXM 80GB", hbm_bw=2.039e12, flops=312e12, memory=80e9),
    "h100": GPU("H100 SXM", hbm_bw=3.35e12, flops=989e12, memory=80e9),
    "h200": GPU("H200 SXM", hbm_bw=4.8e12, flops=989e12, memory=141e9),
    "b200": GPU("B200 SXM", hbm_bw=8.0e12, flops=2.25e15, memory=180e9),
    # NVIDIA HGX B300 datasheet (Blackwell Ultra): 8 GPUs with 2.1 TB HBM3e at 64 TB/s in all (8 TB/s,
    # ~270 GB each) and 36 PFLOPS BF16 with sparsity (2.25 PFLOPS dense per GPU; FP8 twice that).
    "b300": GPU("B300 SXM", hbm_bw=8.0e12, flops=2.25e15, memory=270e9),
    # NVIDIA H800 SXM5 (the export variant DeepSeek serves on): H100 SXM's HBM3 (3.35 TB/s, 80 GB) and
    # tensor throughput (989 TFLOP/s dense BF16, 1,979 FP8), NVLink cut to 400 GB/s bidirectional (H100:
    # 900); the link presets are in specsched.comm ("nvlink-h800").
    "h800": GPU("H800 SXM", hbm_bw=3.35e12, flops=989e12, memory=80e9),
}

MODELS: dict[str, ModelShape] = {
    "dense-8b": ModelShape(
        "dense-8b",
        layers=32,
        d_model=4096,
        total_params=8.0e9,
        active_params=8.0e9,
        kv_bytes_per_token=2 * 32 * 8 * 128 * 2,
        note="Llama-3-8B-like: GQA 8 KV heads × 128, bf16",
    ),
    "dense-70b": ModelShape(
        "dense-70b",
        layers=80,
        d_model=8192,
        total_params=70.6e9,
        active_params=70.6e9,
        kv_bytes_per_token=2 * 80 * 8 * 128 * 2,
        note="Llama-3-70B-like: GQA 8 KV heads × 128, bf16",
    ),
    "moe-284b-a13b": ModelShape(
        "moe-284b-a13b",
        layers=43,
        d_model=4096,
        total_params=284e9,
        active_params=13e9,
        kv_bytes_per_token=43 * 576,
        bytes_per_param=1.0,
        experts=256,
        top_k=6,
        moe_layers=40,
        note="DeepSeek-V4-Flash-like (assumed shape: V4's is not published in full): FP8 weights, "
        "MLA-style compressed KV of 576 bytes per layer-token",
    ),
    "moe-1.6t-a49b": ModelShape(
        "moe-1.6t-a49b",
        layers=61,
        d_model=7168,
        total_params=1.6e12,
        active_params=49e9,
        kv_bytes_per_token=61 * 576,
        bytes_per_param=1.0,
        experts=384,
        top_k=8,
        moe_layers=58,
        note="DeepSeek-V4-Pro-like (assumed shape): FP8 weights, MLA-style compressed KV",
    ),
    # Public shapes (each model's config.json on Hugging Face / its paper); KV bytes per token =
    # 2 (K and V) · layers · kv_heads · head_dim · 2 bytes (bf16) unless stated.
    "llama2-70b": ModelShape(
        "llama2-70b",
        layers=80,
        d_model=8192,
        total_params=68.98e9,
        active_params=68.98e9,
        kv_bytes_per_token=2 * 80 * 8 * 128 * 2,
        note="meta-llama/Llama-2-70b-hf config.json: 80 layers, hidden 8192, GQA 8 KV heads × 128; bf16",
    ),
    "llama3-8b": ModelShape(
        "llama3-8b",
        layers=32,
        d_model=4096,
        total_params=8.03e9,
        active_params=8.03e9,
        kv_bytes_per_token=2 * 32 * 8 * 128 * 2,
        note="meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 8 KV heads × 128; bf16",
    ),
    "llama3-70b": ModelShape(
        "llama3-70b",
        layers=80,
        d_model=8192,
        total_params=70.55e9,
        active_params=70.55e9,
        kv_bytes_per_token=2 * 80 * 8 * 128 * 2,
        note="meta-llama/Meta-Llama-3-70B config.json: 80 layers, hidden 8192, 8 KV heads × 128; bf16",
    ),
    "bloom-176b": ModelShape(
        "bloom-176b",
        layers=70,
        d_model=14336,
        total_params=176.2e9,
        active_params=176.2e9,
        kv_bytes_per_token=2 * 70 * 14336 * 2,
        note="bigscience/bloom config.json: 70 layers, hidden 14336, 112 heads (full multi-head KV); bf16",
    ),
    "mixtral-8x7b": ModelShape(
        "mixtral-8x7b",
        layers=32,
        d_model=4096,
        total_params=46.7e9,
        active_params=12.9e9,
        kv_bytes_per_token=2 * 32 * 8 * 128 * 2,
        experts=8,
        top_k=2,
        moe_layers=32,
        note="mistralai/Mixtral-8x7B-v0.1 config.json and paper: 8 experts top-2 in all 32 layers, "
        "46.7B total / 12.9B active, 8 KV heads × 128; bf16",
    ),
    "qwen3-4b": ModelShape(
        "qwen3-4b",
        layers=36,
        d_model=2560,
        total_params=4.0e9,
        active_params=4.0e9,
        kv_bytes_per_token=2 * 36 * 8 * 128 * 2,
        note="Qwen/Qwen3-4B config.json: 36 layers, hidden 2560, 8 KV heads × 128; bf16",
    ),
    "qwen3-8b": ModelShape(
        "qwen3-8b",
        layers=36,
        d_model=4096,
        total_params=8.2e9,
        active_params=8.2e9,
        kv_bytes_per_token=2 * 36 * 8 * 128 * 2,
        note="Qwen/Qwen3-8B config.json: 36 layers, hidden 4096, 8 KV heads × 128; bf16",
    ),
    "deepseek-v3": ModelShape(
        "deepseek-v3",
        layers=61,
        d_model=7168,
        total_params=671e9,
        active_params=37e9,
        kv_bytes_per_token=61 * 576 * 2,
        bytes_per_param=1.0,
        experts=256,
        top_k=8,
        moe_layers=58,
        note="deepseek-ai/DeepSeek-V3 config.json and report: 671B total / 37B active, 256 routed experts "
        "top-8 in 58 of 61 layers, FP8 weights, MLA KV of 512 + 64 bf16 values per layer-token",
    ),
}


def get_gpu(gpu: str | GPU) -> GPU:
    if isinstance(gpu, GPU):
        return gpu
    try:
        return GPUS[gpu.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown gpu {gpu!r} (built-in: {', '.join(GPUS)})") from None


def get_model(model: str | ModelShape) -> ModelShape:
    if isinstance(model, ModelShape):
        return model
    try:
        return MODELS[model.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown model shape {model!r} (built-in: {', '.join(MODELS)})") from None


def step_seconds(
    model: ModelShape,
    gpu: GPU,
    b,
    *,
    tp: int = 1,
    ep: int = 1,
    eta_bw: float = 0.9,
    eta_f: float = 0.6,
    c0: float = 40e-6,
    context_tokens: float | None = 1024.0,
    link_bw: float = 450e9,
    link_latency: float = 8e-6,
    hop_latency: float = 0.0,
    request_s: float = 0.0,
    bytes_per_param: float | None = None,
    overlap_comm: bool = False,
    attn_flops=0.0,
    expert_locality: float = 0.0,
    locality_tokens: int = 8,
) -> np.ndarray:
    """float64 seconds of the token-dependent part of one step at `b` query tokens (array) on one GPU of a
    `tp`-GPU replica (or one data-parallel rank with `ep`-way expert parallelism): everything but the
    per-request KV reads (`request_seconds`)."""
    checks = {"tp": tp, "ep": ep, "eta_bw": eta_bw, "eta_f": eta_f, "link_bw": link_bw}
    for key, val in checks.items():
        if not val > 0:
            raise ValueError(f"roofline: {key} must be > 0, got {val!r}")
    if eta_bw > 1 or eta_f > 1:
        raise ValueError(f"roofline: efficiencies must be ≤ 1 (eta_bw={eta_bw}, eta_f={eta_f})")
    nonneg = {"c0": c0, "link_latency": link_latency, "hop_latency": hop_latency, "request_s": request_s}
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
    peak = gpu.flops * (2.0 if bpp <= 1.0 else 1.0)
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


def kv_token_seconds(model: ModelShape, gpu: GPU, *, tp: int = 1, eta_bw: float = 0.9, **_other) -> float:
    """Seconds per KV token of context read in one step (per GPU): kv_bytes_per_token / (tp·η_bw·BW)."""
    if not (tp > 0 and 0 < eta_bw <= 1):
        raise ValueError(f"roofline: bad tp={tp!r} or eta_bw={eta_bw!r}")
    return float(model.kv_bytes_per_token / tp / (eta_bw * gpu.hbm_bw))


def request_seconds(
    model: ModelShape,
    gpu: GPU,
    *,
    tp: int = 1,
    eta_bw: float = 0.9,
    context_tokens: float | None = 1024.0,
    request_s: float = 0.0,
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
