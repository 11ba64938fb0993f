"""The one model table: the shapes a roofline needs, config.json facts where a checkpoint publishes them.

Role: resolve what a user has — a Hugging Face id such as `meta-llama/Llama-3.1-70B-Instruct`, a short
name such as `llama3.1-70b`, or a synthetic shape such as `moe-284b-a13b` — into the one `ModelShape` a
roofline, an expert-parallel group, KV sizing and a drafter's shape all price from. Every row names its
source. Three kinds of rows, one table:

- checkpoints with their config.json (`_hf`, `_dense`): layers, hidden size, heads, KV heads, head size,
  MLP size, vocabulary, experts, read from each checkpoint's `config.json` on Hugging Face, parameter
  counts from the model card or the safetensors index. KV bytes per token = 2 (K and V) · layers · KV
  heads · head size · 2 (bf16 cache, vLLM's `kv_cache_dtype` "auto" for bf16 and FP8-weight checkpoints
  alike). Only these can be deployed as vLLM deployments (`specsched.price.vllm`).
- public shapes without the attention facts KV sizing needs (BLOOM, Qwen3-4B, DeepSeek-V3: MLA), priced by
  the roofline and, with `attention` facts, by an expert-parallel group (`specsched.price.ep`).
- synthetic shapes ("-like": `dense-8b`, `dense-70b`, `moe-284b-a13b`, `moe-1.6t-a49b`), the built-in cost
  tables' (`specsched.builtin`); the MoE ones are DeepSeek-V4-like assumptions (V4's shape is not
  published in full).

MoE: `experts` routed experts per MoE layer with `top_k` active over `moe_layers` layers; each routed
expert holds (total − active) / (moe_layers·(experts − top_k)) parameters and the rest of the active
parameters are the dense part (`weight_params_read`, the roofline's uniform-routing count).

No streamed-chunk constant: a client's inter-token latency is the per-token time; `validate` reports the
chunk fraction each measured run implies (issue 33 item 2), none is carried in the catalogue.

Default sampling (`filtered_sampling`): vLLM serves a request that sets no sampling parameters (as
inference-perf's do not) with the checkpoint's generation_config.json defaults. Where those set top_p or
top_k, every request's logits are filtered over the whole vocabulary each step: vLLM's FlashInfer
top-k/top-p sampler runs one thread block per row, rejection rounds each a pass over the row, so the
step pays ∝ vocabulary per wave of rows over the GPU's SMs (knob `c_vocab`). Set from each
checkpoint's generation_config.json on huggingface.co: Llama-2 (temperature 0.6, top_p 0.9), Llama-3.1
Instruct (0.6, 0.9), Qwen2.5 Instruct (top_p 0.8, top_k 20), Qwen3 (top_p 0.95, top_k 20), Llama-4 Scout
Instruct (0.6, 0.9), MiniCPM3-4B (0.8, 0.8); none for Mistral-Nemo-Instruct-2407, Yi-34B, Mixtral,
CodeLlama (bos/eos only).

MiniCPM3 (MLA-shaped weights, not run as MLA): MiniCPM3-4B's config.json has DeepSeek-V2's low-rank
projections (q_lora_rank, kv_lora_rank, qk_nope/qk_rope/v head sizes), but vLLM 0.10's
`vllm/model_executor/models/minicpm3.py` does not use the MLA backend: it up-projects k and v for every
token and calls the plain `Attention` with num_kv_heads = heads and head size qk_nope + qk_rope = 96, v
zero-padded from 64 to 96. The row therefore carries heads = kv_heads = 40, head_dim = 96: the KV cache
(2·62·40·96·2 bytes a token, 27× MLA's latent) and the attention FLOPs (4·40·96 a query-key pair a layer)
are what vLLM stores and computes. The projections are not those shapes: `attn_proj_params` holds one
layer's q_a, q_b, kv_a, kv_b and o (13.5M, not the 39.3M heads × head_dim implies) and
`layer_attn_params` reads it; total_params (weights read a step) is the checkpoint's own count.

Attention arithmetic (`Attention`, for expert-parallel groups): decode runs MLA "absorbed" (FlashMLA):
each query token does 2·heads·(qk_dim + v_dim) FLOPs per KV token per layer; DeepSeek-V3: 128 heads, qk
576 (512 latent + 64 rope), v 512 (config.json: num_attention_heads, kv_lora_rank, qk_rope_head_dim).
Prefill runs it unabsorbed, as multi-head attention: 2·heads·(qk_nope + rope + v_head) = 2·128·(128 + 64
+ 128) per query-key pair per layer.

May import: numpy, the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from specsched.io.errors import InputError

GiB = 1024**3


@dataclass(frozen=True)
class Attention:
    """Attention arithmetic of a model (per layer): FLOPs per (query token × KV token) when decoding and
    when prefilling; `head_bytes`: bytes of the output head (vocab × d_model × bytes), read whole by every
    draft pass of an MTP-style drafter that shares it (0 = folded into the layer share)."""

    decode_flops_per_pair: float
    prefill_flops_per_pair: float
    note: str = ""
    head_bytes: float = 0.0


@dataclass(frozen=True)
class ModelShape:
    """One model of the table (module docstring).

    total_params / active_params: parameters in the model / used per token (equal for a dense model).
    kv_bytes_per_token: KV cache bytes per token of context over all layers. bytes_per_param: stored
    weight bytes (2 bf16/fp16, 1 FP8). heads, kv_heads, head_dim, intermediate, vocab: config.json facts
    (None where the row has none: not deployable as a vLLM deployment). note: where the shape comes from.
    attn_proj_params: one layer's attention projection parameters where they are not the shapes heads,
    kv_heads and head_dim imply (MiniCPM3's low-rank q_a, q_b, kv_a, kv_b, o); None: those shapes
    (`layer_attn_params`).
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
    hf_ids: tuple[str, ...] = ()
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    intermediate: int | None = None
    vocab: int | None = None
    filtered_sampling: bool = False  # generation_config.json sets top_p / top_k (module docstring)
    attention: Attention | None = None  # for expert-parallel groups (module docstring)
    aliases: tuple[str, ...] = field(default=())
    attn_proj_params: float | None = None  # one layer's attention projections where not GQA-shaped

    @property
    def layer_attn_params(self) -> float | None:
        """Parameters of one decoder layer's attention projections: `attn_proj_params` where the row
        gives them (low-rank MLA-shaped projections, MiniCPM3), else the GQA shapes' q, k, v and o:
        hidden·(heads + 2·kv_heads)·head_dim + heads·head_dim·hidden; None without config.json heads."""
        if self.attn_proj_params is not None:
            return float(self.attn_proj_params)
        if self.heads is None or self.kv_heads is None or self.head_dim is None:
            return None
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return float(self.d_model * (q + 2 * kv) + q * self.d_model)

    def __post_init__(self) -> None:
        if self.layers < 1 or self.d_model < 1:
            raise ValueError(f"model {self.name}: layers and d_model must be ≥ 1")
        if not 0 < self.active_params <= self.total_params:
            raise ValueError(f"model {self.name}: need 0 < active_params ≤ total_params")
        if self.experts and not (0 < self.top_k < self.experts and 0 < self.moe_layers <= self.layers):
            raise ValueError(f"model {self.name}: MoE needs 0 < top_k < experts and 0 < moe_layers ≤ layers")

    # config.json's names for two roofline fields
    @property
    def hidden(self) -> int:
        return self.d_model

    @property
    def params(self) -> float:
        return self.total_params

    @property
    def source(self) -> str:
        return self.note

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

    def shape(self, bytes_per_param: float | None = None) -> ModelShape:
        """This model stored at `bytes_per_param` (None: its own)."""
        if bytes_per_param is None or bytes_per_param == self.bytes_per_param:
            return self
        return replace(self, bytes_per_param=bytes_per_param)

    def kv_bytes_per_gpu(self, tp: int = 1) -> float:
        """KV bytes one token of context takes on one GPU of a tp-way replica: the KV heads split over
        tp GPUs (replicated when fewer than tp) where config.json gives them, else kv_bytes_per_token/tp."""
        if self.kv_heads is None or self.head_dim is None:
            return self.kv_bytes_per_token / tp
        return 2.0 * self.layers * math.ceil(self.kv_heads / tp) * self.head_dim * 2.0

    def weight_params_read(self, b: np.ndarray, locality: float = 0.0, block: int = 1) -> np.ndarray:
        """Parameters read in one step over `b` tokens (float64 array), before dividing by tp.

        locality ρ ∈ [0, 1), block g ≥ 1: the first g tokens are one request's consecutive tokens, and
        each after its first re-uses the previous token's experts with probability ρ, so they count as
        1 + (min(b, g) − 1)·(1 − ρ) independent routing draws (`specsched.price.roofline`, "expert
        locality").
        """
        b = np.asarray(b, dtype=np.float64)
        if not self.is_moe:
            return np.full_like(b, self.total_params)
        draws = b - locality * (np.minimum(b, float(block)) - 1.0).clip(min=0.0)
        touched = self.experts * (1.0 - (1.0 - self.top_k / self.experts) ** draws)
        return self.dense_params + self.moe_layers * touched * self.expert_params


def _hf(
    name,
    hf_ids,
    layers,
    hidden,
    heads,
    kv_heads,
    head_dim,
    inter,
    vocab,
    params,
    active,
    source,
    *,
    aliases=(),
    **kw,
) -> ModelShape:
    """A checkpoint's row from its config.json (bf16 KV cache)."""
    return ModelShape(name, layers, hidden, params, active, 2 * layers * kv_heads * head_dim * 2,
                      note=source, hf_ids=tuple(hf_ids), heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                      intermediate=inter, vocab=vocab, aliases=tuple(aliases), **kw)  # fmt: skip


def _dense(name, hf_ids, layers, hidden, heads, kv_heads, head_dim, inter, vocab, params, source, **kw):
    return _hf(name, hf_ids, layers, hidden, heads, kv_heads, head_dim, inter, vocab, params, params,
               source, **kw)  # fmt: skip


_HF = "config.json and model card on huggingface.co/"
_PUBLIC = (
    _dense("llama2-7b", ["meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"],
           32, 4096, 32, 32, 128, 11008, 32000, 6.74e9, _HF + "meta-llama/Llama-2-7b-hf (MHA)",
           filtered_sampling=True),
    _dense("llama2-13b", ["meta-llama/Llama-2-13b-hf", "meta-llama/Llama-2-13b-chat-hf"],
           40, 5120, 40, 40, 128, 13824, 32000, 13.02e9, _HF + "meta-llama/Llama-2-13b-hf (MHA)",
           filtered_sampling=True),
    _dense("llama2-70b", ["meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-70b-chat-hf"],
           80, 8192, 64, 8, 128, 28672, 32000, 68.98e9, _HF + "meta-llama/Llama-2-70b-hf",
           filtered_sampling=True),
    _dense("codellama-34b", ["codellama/CodeLlama-34b-hf", "codellama/CodeLlama-34b-Instruct-hf",
                             "meta-llama/CodeLlama-34b-hf"],
           48, 8192, 64, 8, 128, 22016, 32000, 33.74e9, _HF + "codellama/CodeLlama-34b-hf"),
    _dense("llama3.1-8b", ["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B",
                           "meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3-8B",
                           "meta-llama/Meta-Llama-3-8B-Instruct"],
           32, 4096, 32, 8, 128, 14336, 128256, 8.03e9, _HF + "meta-llama/Llama-3.1-8B-Instruct",
           filtered_sampling=True, aliases=("llama3-8b",)),
    _dense("llama3.1-70b", ["meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B",
                            "meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Meta-Llama-3-70B-Instruct",
                            "meta-llama/Meta-Llama-3.1-70B-Instruct"],
           80, 8192, 64, 8, 128, 28672, 128256, 70.55e9, _HF + "meta-llama/Llama-3.1-70B-Instruct",
           filtered_sampling=True, aliases=("llama3-70b",)),
    _dense("mistral-nemo-12b",
           ["mistralai/Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Nemo-Base-2407"],
           40, 5120, 32, 8, 128, 14336, 131072, 12.25e9, _HF + "mistralai/Mistral-Nemo-Instruct-2407"),
    _dense("qwen2.5-7b", ["Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"],
           28, 3584, 28, 4, 128, 18944, 152064, 7.62e9, _HF + "Qwen/Qwen2.5-7B-Instruct",
           filtered_sampling=True),
    _dense("qwen2.5-14b", ["Qwen/Qwen2.5-14B-Instruct", "Qwen/Qwen2.5-14B"],
           48, 5120, 40, 8, 128, 13824, 152064, 14.77e9, _HF + "Qwen/Qwen2.5-14B-Instruct",
           filtered_sampling=True),
    _dense("qwen2.5-32b", ["Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-32B"],
           64, 5120, 40, 8, 128, 27648, 152064, 32.76e9, _HF + "Qwen/Qwen2.5-32B-Instruct",
           filtered_sampling=True),
    _dense("qwen3-8b", ["Qwen/Qwen3-8B", "Qwen/Qwen3-8B-Base"],
           36, 4096, 32, 8, 128, 12288, 151936, 8.19e9, _HF + "Qwen/Qwen3-8B",
           filtered_sampling=True),
    _dense("qwen3-14b", ["Qwen/Qwen3-14B", "Qwen/Qwen3-14B-Base"],
           40, 5120, 40, 8, 128, 17408, 151936, 14.77e9, _HF + "Qwen/Qwen3-14B",
           filtered_sampling=True),
    _dense("qwen3-32b", ["Qwen/Qwen3-32B"],
           64, 5120, 64, 8, 128, 25600, 151936, 32.76e9, _HF + "Qwen/Qwen3-32B",
           filtered_sampling=True),
    _dense("yi-34b", ["01-ai/Yi-34B", "01-ai/Yi-34B-Chat", "01-ai/Yi-1.5-34B-Chat"],
           60, 7168, 56, 8, 128, 20480, 64000, 34.39e9, _HF + "01-ai/Yi-34B"),
    # MiniCPM3-4B as vLLM 0.10 runs it (`vllm/model_executor/models/minicpm3.py`, module docstring
    # "MiniCPM3"): plain multi-head attention, 40 heads = 40 KV heads of head size 96, the KV cache holding
    # the up-projected k (64 nope + 32 rope) and v padded from 64 to 96 — not MLA's 256 + 32 latent.
    _dense("minicpm3-4b", ["openbmb/MiniCPM3-4B"],
           62, 2560, 40, 40, 96, 6400, 73448, 4.074e9,
           _HF + "openbmb/MiniCPM3-4B (minicpm3: q_lora_rank 768, kv_lora_rank 256, qk_nope_head_dim 64, "
           "qk_rope_head_dim 32, v_head_dim 64 = hidden/heads by MiniCPM3Config's default; muP scale_emb 12, "
           "scale_depth 1.4, dim_model_base 256: elementwise scalings, not priced). Tied embeddings "
           "(transformers' MiniCPM3Config default; the bf16 checkpoint is 8.15 GB = 4.074e9 parameters, "
           "untied would be 8.52 GB). Attention as vLLM 0.10.1 runs it: MHA over 40 heads × 96 (k = nope ‖ "
           "rope, v zero-padded 64 → 96), so KV 2·62·40·96·2 bytes a token; projections q_a 2560×768, q_b "
           "768×3840, kv_a 2560×288, kv_b 256×5120, o 2560×2560 (`attn_proj_params`); generation_config: "
           "top_p 0.8, temperature 0.8",
           filtered_sampling=True, aliases=("minicpm3",),
           attn_proj_params=2560 * 768 + 768 * 40 * 96 + 2560 * (256 + 32) + 256 * 40 * (64 + 64)
           + 40 * 64 * 2560),
    _hf("mixtral-8x7b", ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistralai/Mixtral-8x7B-v0.1"),
                 32, 4096, 32, 8, 128, 14336, 32000, 46.70e9, 12.88e9,
                 _HF + "mistralai/Mixtral-8x7B-v0.1, Mixtral paper (8 experts, top-2, every layer)",
                 experts=8, top_k=2, moe_layers=32),
    _hf("mixtral-8x22b",
                 ("mistralai/Mixtral-8x22B-Instruct-v0.1", "mistralai/Mixtral-8x22B-v0.1"),
                 56, 6144, 48, 8, 128, 16384, 32768, 140.6e9, 39.1e9,
                 _HF + "mistralai/Mixtral-8x22B-v0.1 (8 experts, top-2, every layer)",
                 experts=8, top_k=2, moe_layers=56),
    # Qwen3-30B-A3B: 128 routed experts (top-8, no shared expert) of width 768 in all 48 layers; 30.5B total
    # / 3.3B active (model card), which the shapes reproduce: expert 3·2048·768, attention 18.9M a layer,
    # untied embeddings 2 × 151936·2048. `intermediate` is config.json's intermediate_size (6144; no dense
    # layer uses it), the MLP width of its EAGLE-3 heads (SpecForge configs/qwen3-30B-eagle3.json).
    _hf("qwen3-30b-a3b",
                 ("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-Base", "Qwen/Qwen3-30B-A3B-Instruct-2507"),
                 48, 2048, 32, 4, 128, 6144, 151936, 30.5e9, 3.3e9,
                 _HF + "Qwen/Qwen3-30B-A3B (qwen3_moe: 128 experts top-8, moe_intermediate_size 768, every "
                 "layer)",
                 experts=128, top_k=8, moe_layers=48, filtered_sampling=True),
    # Llama 4 Scout: 16 routed experts (top-1) plus one shared expert in all 48 layers; the FP8-dynamic
    # checkpoint stores the linear weights in FP8 (embeddings, LM head, router in bf16: ~2 GB, folded
    # into the 1-byte figure). 108.6B total / 17.2B active from the shapes: expert 3·5120·8192.
    _hf("llama4-scout-17b-16e",
                 ("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic",
                  "meta-llama/Llama-4-Scout-17B-16E-Instruct", "meta-llama/Llama-4-Scout-17B-16E"),
                 48, 5120, 40, 8, 128, 8192, 202048, 108.6e9, 17.17e9,
                 _HF + "meta-llama/Llama-4-Scout-17B-16E-Instruct (16 experts top-1 + shared, all "
                 "layers); "
                 "RedHatAI/...-FP8-dynamic for the FP8 weights",
                 bytes_per_param=1.0, experts=16, top_k=1, moe_layers=48, filtered_sampling=True),
)  # fmt: skip

#: Synthetic and config.json-less public shapes (module docstring); KV bytes per token = 2 (K and V) ·
#: layers · kv_heads · head_dim · 2 bytes (bf16) unless stated.
_SHAPES = (
    ModelShape("dense-8b", 32, 4096, 8.0e9, 8.0e9, 2 * 32 * 8 * 128 * 2,
               note="Llama-3-8B-like: GQA 8 KV heads × 128, bf16"),
    ModelShape("dense-70b", 80, 8192, 70.6e9, 70.6e9, 2 * 80 * 8 * 128 * 2,
               note="Llama-3-70B-like: GQA 8 KV heads × 128, bf16"),
    ModelShape("moe-284b-a13b", 43, 4096, 284e9, 13e9, 43 * 576, bytes_per_param=1.0, experts=256,
               top_k=6, moe_layers=40,
               note="DeepSeek-V4-Flash-like (assumed shape: V4's is not published in full): FP8 weights, "
               "MLA-style compressed KV of 576 bytes per layer-token"),
    ModelShape("moe-1.6t-a49b", 61, 7168, 1.6e12, 49e9, 61 * 576, bytes_per_param=1.0, experts=384,
               top_k=8, moe_layers=58,
               note="DeepSeek-V4-Pro-like (assumed shape): FP8 weights, MLA-style compressed KV"),
    ModelShape("bloom-176b", 70, 14336, 176.2e9, 176.2e9, 2 * 70 * 14336 * 2,
               note="bigscience/bloom config.json: 70 layers, hidden 14336, 112 heads (full multi-head "
               "KV); bf16"),
    ModelShape("qwen3-4b", 36, 2560, 4.0e9, 4.0e9, 2 * 36 * 8 * 128 * 2,
               note="Qwen/Qwen3-4B config.json: 36 layers, hidden 2560, 8 KV heads × 128; bf16"),
    ModelShape("deepseek-v3", 61, 7168, 671e9, 37e9, 61 * 576 * 2, bytes_per_param=1.0, experts=256,
               top_k=8, moe_layers=58, hf_ids=("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-0324"),
               note="deepseek-ai/DeepSeek-V3 config.json and report: 671B total / 37B active, 256 routed "
               "experts top-8 in 58 of 61 layers, FP8 weights, MLA KV of 512 + 64 bf16 values per "
               "layer-token",
               attention=Attention(
                   2 * 128 * (576 + 512),
                   2 * 128 * (128 + 64 + 128),
                   "MLA: 128 heads, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope 128, v_head 128 "
                   "(config.json); output head 129,280 × 7,168 in bf16 (vocab_size, hidden_size; the FP8 "
                   "checkpoint keeps it bf16)",
                   head_bytes=129280 * 7168 * 2.0)),
)  # fmt: skip

#: The one model table: name -> shape.
MODELS: dict[str, ModelShape] = {m.name: m for m in (*_PUBLIC, *_SHAPES)}


def _norm(name: str) -> str:
    return name.strip().lower()


_MODEL_INDEX = {_norm(k): m for k, m in MODELS.items()}
_MODEL_INDEX.update({_norm(h): m for m in MODELS.values() for h in (*m.hf_ids, *m.aliases)})


def find_model(name: str) -> ModelShape | None:
    """The model `name` names (short name, alias or Hugging Face id, any case), else None."""
    return _MODEL_INDEX.get(_norm(name)) if isinstance(name, str) else None


def get_model(model: str | ModelShape, *, field: str | None = None) -> ModelShape:
    """The model `model` names (a `ModelShape` passes through); InputError naming `field` otherwise."""
    if isinstance(model, ModelShape):
        return model
    found = find_model(model)
    if found is None:
        raise InputError(f"unknown model {model!r}: the catalogue knows {', '.join(MODELS)} "
                         "(or their Hugging Face ids)", field=field)  # fmt: skip
    return found


PRECISIONS = {"fp16": 2.0, "bf16": 2.0, "fp8": 1.0}


def precision_bytes(precision: str | None, model: ModelShape, *, field: str | None = None) -> float:
    """Weight bytes per parameter for `precision` (fp16/bf16/fp8, any case; None or "" = the checkpoint's)."""
    if precision is None or precision == "":
        return model.bytes_per_param
    key = _norm(precision)
    if key not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r} (one of {', '.join(PRECISIONS)})", field=field)
    return PRECISIONS[key]
