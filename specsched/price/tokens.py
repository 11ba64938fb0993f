"""What each token of a vLLM step costs on one GPU beyond the weights: the physical per-token terms.

Role: the per-token part of `specsched.price.vllm.step_parts` in its "row" form (issue 33 item 5), each
term a byte or FLOP count with its source, timed at an efficiency measured on vLLM's own kernels
(`specsched.kernels`, NVIDIA AIConfigurator's tables) rather than a calibrated constant:

    gemm_io      activations the four projections of a layer read and write (BF16, 2 bytes an element):
                 qkv: hidden in, (heads + 2·kv_heads)·head_dim/tp out; o: heads·head_dim/tp in, hidden
                 out; gate+up: hidden in, 2·I/tp out; down: I/tp in, hidden out (I: the MLP width, × top_k
                 for MoE). Inside the GEMM kernels, so it sits with the weights on the memory side of
                 max(memory, compute) and is hidden once the step is compute-bound (the gemm form of
                 `specsched.kernels.forms`: bytes = a·(m·k + k·n) + 2·m·n), with the knee the
                 tables show (`knee`: a p-norm of memory and compute rather than their max).
    elementwise  the kernels between the GEMMs, each bandwidth-bound and never hidden under a GEMM (one
                 stream): two fused residual-add + RMSNorms (read x and residual, write both: 4·hidden,
                 NOT sharded: every TP rank holds the whole hidden state), RoPE on q and k (read + write:
                 2·(heads + kv_heads)·head_dim/tp), SiLU·mul (read 2·I/tp, write I/tp), the KV-cache write
                 (read k, v, write the cache: 4·kv_heads·head_dim/tp); with FP8 weights the activation
                 quantization before each GEMM (read 2 bytes, write 1 per input element). Timed at the
                 GPU's measured decode-shaped GEMM bandwidth efficiency (a streaming kernel's rate).
    allreduce    two a layer (tp > 1) of tokens × hidden BF16: 2·(tp − 1)/tp of the message per GPU at the
                 measured all-reduce's achieved share of the link on prefill-sized messages (`ar_large`,
                 `specsched.kernels.build`: H100 0.69), its latency left to the calibrated `link_latency`:
                 it does not shard with TP.
    attention    causal prefill attention, 4·heads/tp·head_dim FLOPs per query-key pair per layer (QKᵀ and
                 PV) at the measured context-attention tensor efficiency (`ctx_attn` eta_f) — quadratic in
                 a prompt, so priced per prompt, not per token (`prefill_attention_seconds`).

The compute side counts the projections' FLOPs (`matmul_params`) for every token and the LM head's for
the sampled rows only (vLLM computes logits for the last token of each sequence), not 2·P for every token:
an 8,192-token prefill of Llama-3.1-8B is 13 % fewer FLOPs than 2·P·B.

Per layer and token at Llama-3.1-8B TP 1 the activation and elementwise bytes are ~0.3 MB (~0.1 µs on an
H100): a fifth of what the TP-blind c_token (0.57 µs a token a layer) charged.

May import: numpy, the standard library, `specsched.price` (gpus, models), `specsched.kernels` (lazily:
it reads the model catalogue).
"""

from __future__ import annotations

import math

import numpy as np

from specsched.price.gpus import GPU, SAME_DIE
from specsched.price.models import ModelShape

#: bytes an activation element takes (vLLM runs BF16 activations, FP8 checkpoints included)
ACT_BYTES = 2.0


def _widths(m: ModelShape, tp: int) -> tuple[float, float, float, float]:
    """(hidden, q width, kv width, MLP width) on one of `tp` GPUs (kv heads replicated when fewer than tp;
    MoE: the widths of the top_k experts a token is routed to, from the catalogue's expert parameters —
    config.json's intermediate_size is not the expert width for every MoE, e.g. Qwen3-30B-A3B)."""
    hd = float(m.head_dim or m.hidden // max(m.heads or 1, 1))
    q = float(m.heads or 0) * hd / tp
    kv = math.ceil((m.kv_heads or m.heads or 0) / tp) * hd
    if m.is_moe:  # a token's routed experts: top_k × an expert's width (3·hidden·width parameters each)
        inter = m.top_k * m.expert_params / (3.0 * m.hidden) / tp
    else:
        inter = float(m.intermediate or 4 * m.hidden) / tp
    return float(m.hidden), q, kv, inter


def matmul_params(m: ModelShape) -> float:
    """Parameters each token multiplies through (2 FLOPs each): the decoder layers' projections —
    layers · (attention projections + 3·hidden·I) for a dense model with its config.json shape (the
    projections as stored: `ModelShape.layer_attn_params`, GQA-shaped or MiniCPM3's low-rank ones);
    the active parameters less the embedding table (a gather, no GEMM) and the LM head (`lm_head_params`,
    run on the sampled rows only) otherwise. Llama-3.1-8B: 6.98e9 of 8.03e9."""
    vh = float(m.vocab or 0) * m.hidden
    if m.is_moe or not (m.heads and m.intermediate):
        return max(m.active_params - 2.0 * vh, 0.5 * m.active_params)
    h, _, _, inter = _widths(m, 1)
    return m.layers * (m.layer_attn_params + 3.0 * h * inter)  # projections as stored (MiniCPM3: low rank)


def lm_head_params(m: ModelShape) -> float:
    """Parameters of the LM head (vocab × hidden), multiplied through once per sampled row."""
    return float(m.vocab or 0) * m.hidden


def gemm_io_bytes(m: ModelShape, tp: int, b) -> np.ndarray:
    """float64[n]: activation bytes the projections read and write in a step of `b` tokens, one GPU."""
    h, q, kv, inter = _widths(m, tp)
    per = (h + q + 2 * kv) + (q + h) + (h + 2 * inter) + (inter + h)
    return np.asarray(b, dtype=np.float64) * per * m.layers * ACT_BYTES


def elementwise_bytes(m: ModelShape, tp: int, b, *, fp8: bool = False) -> np.ndarray:
    """float64[n]: bytes the kernels between the GEMMs move in a step of `b` tokens on one GPU (module
    docstring); `fp8`: FP8 weights, so each GEMM input is quantized first."""
    h, q, kv, inter = _widths(m, tp)
    per = 2 * 4 * h + 2 * (q + kv) + 3 * inter + 4 * kv
    quant = 1.5 * (h + q + h + inter) if fp8 else 0.0  # 3 bytes an input element, in 2-byte units
    return np.asarray(b, dtype=np.float64) * (per + quant) * m.layers * ACT_BYTES


def _figures(g: GPU) -> dict | None:
    from specsched.kernels.figures import gpu_figures, load  # lazy: reads the model catalogue

    figs = load()
    key = g.key if g.key in figs else SAME_DIE.get(g.key)  # a same-die sibling's measured figures (gpus.py)
    return gpu_figures(key, figs) if key in figs else None


def stream_bw(g: GPU) -> float:
    """Bytes/s a streaming kernel reaches on `g`: its measured decode-shaped GEMM bandwidth efficiency
    × the datasheet HBM bandwidth (0.85 × datasheet where the kernel tables do not cover `g`)."""
    per = _figures(g)
    return (per["gemm"]["eta_bw"] if per else 0.85) * g.hbm_bw


def knee(g: GPU) -> float:
    """The sharpness p of `g`'s GEMM knee: a GEMM takes (t_mem^p + t_cmp^p)^(1/p), not their max — fitted
    on its measured layer-sized GEMMs (`specsched.kernels.build`: A100 1.75, H100 3.25, H200 2.5, B200
    1.75); 2.5 where the kernel tables do not cover `g`."""
    per = _figures(g)
    return float(per.get("knee", 2.5)) if per else 2.5


def smooth_max(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """(a^p + b^p)^(1/p), elementwise: the roofline's max with a knee of sharpness p (∞: the max)."""
    hi = np.maximum(a, b)
    safe = np.where(hi > 0, hi, 1.0)
    return hi * ((a / safe) ** p + (b / safe) ** p) ** (1.0 / p)


def allreduce_bytes_seconds(m: ModelShape, g: GPU, tp: int, b) -> np.ndarray:
    """float64[n]: the bandwidth part of a step's two all-reduces a layer at `b` tokens (0 at tp 1):
    2·(tp − 1)/tp · b · hidden · 2 bytes per collective at the measured all-reduce's achieved bytes/s
    (catalogue link bandwidth where the tables do not cover `g`)."""
    b = np.asarray(b, dtype=np.float64)
    if tp <= 1:
        return np.zeros_like(b)
    per = _figures(g)
    rate = (per.get("ar_large", per["allreduce"]["eta_bw"]) if per else 1.0) * g.link_bw
    return 2.0 * m.layers * (2.0 * (tp - 1) / tp * b * m.hidden * ACT_BYTES) / rate


def attention_pairs(prompt, done=0):
    """Query-key pairs of causal attention for a chunk of `prompt` tokens after `done` cached ones:
    prompt·done + prompt·(prompt + 1)/2 (float64, elementwise)."""
    p = np.asarray(prompt, dtype=np.float64)
    return p * np.asarray(done, dtype=np.float64) + p * (p + 1.0) / 2.0


def prefill_attention_seconds(m: ModelShape, g: GPU, tp: int, pairs, *, prompt=None) -> np.ndarray:
    """float64[n]: seconds of causal prefill attention over `pairs` query-key pairs on one GPU:
    4 · heads/tp · head_dim FLOPs a pair a layer at the measured `ctx_attn` tensor efficiency, × the
    busy share u = P/(P + w) of P = heads/tp · ⌈prompt/128⌉ query tiles per SM where `prompt` is given
    (a short prompt at high TP leaves SMs idle); 0.6 of peak where the tables do not cover `g`."""
    _, q, _, _ = _widths(m, tp)
    pairs = np.asarray(pairs, dtype=np.float64)
    per = _figures(g)
    eta, busy = (per["ctx_attn"]["eta_f"], 1.0) if per else (0.6, 1.0)
    if per is not None and prompt is not None:
        tiles = (
            (q / float(m.head_dim or 128))
            * np.ceil(np.asarray(prompt, dtype=np.float64) / 128.0)
            / (g.sms or 100)
        )
        busy = tiles / (tiles + per["ctx_attn"]["w"])
    return 4.0 * q * pairs * m.layers / (eta * busy * g.flops)
