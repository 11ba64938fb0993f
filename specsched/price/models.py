"""The model and GPU catalogue: public shapes of the models people serve, and the GPUs they serve them on.

Role: resolve what a user has — a Hugging Face id such as `meta-llama/Llama-3.1-70B-Instruct`, or a short
name such as `llama3.1-70b` — into the `specsched.hardware.ModelShape` a roofline needs, plus the facts a
vLLM deployment needs beside it (attention heads, KV heads, head size, vocabulary, MLP width, the dtype
the checkpoint is stored in). GPUs carry what `hardware.GPU` carries plus the memory a process actually
sees (what vLLM's `gpu_memory_utilization` is a fraction of) and the per-direction GPU-to-GPU link.

Every entry names its source: model shapes are read from each checkpoint's `config.json` on Hugging Face
(layers, hidden size, heads, KV heads, head size, MLP size, vocabulary, experts) and parameter counts from
the model card or the safetensors index; GPU figures are NVIDIA datasheet numbers (dense tensor throughput,
without sparsity) and the total memory `nvidia-smi` reports.

KV bytes per token = 2 (K and V) · layers · KV heads · head size · 2 (bf16 cache, vLLM's `kv_cache_dtype`
"auto" for bf16 and FP8-weight checkpoints alike).

Streamed chunks per token (`stream_fraction`): a streaming server sends a chunk only for a token that
completes new text; a token that ends inside a UTF-8 character (a byte-fallback piece) streams nothing, so a
client's inter-token latency — the gap between chunks, as inference-perf reports it — is the per-token
time / stream_fraction. Measured on ../shared/real-vllm/runs.csv as (e2e − TTFT) / ITL / (output − 1) on
the means (inference-perf shared-prefix prompts: random token ids of the model's own vocabulary, so the
outputs continue text of every script): Llama-2-7B 0.773 and 0.789 (runs 67, 20260217) — Llama-2's 32k
SentencePiece vocabulary with byte fallback spells most non-Latin characters as 2–4 byte pieces; Yi-34B
1.00 (64k SentencePiece, CJK characters whole); byte-level BPE vocabularies 0.98–1.00 (Llama-3.1-70B
0.985, Qwen2.5-7B 0.99, Mistral-Nemo 0.997, Llama-4-Scout 0.98–0.996). The catalogue carries 0.78 for
the Llama-2 tokenizer (Llama-2, CodeLlama) and, by the same construction (32k SentencePiece BPE with
byte fallback, a Latin-centric vocabulary), Mixtral's — an inference, not a measurement; 0.985 for the
Llama-3 tokenizer; 1.0 elsewhere.

Default sampling (`filtered_sampling`): vLLM serves a request that sets no sampling parameters (as
inference-perf's do not) with the checkpoint's generation_config.json defaults. Where those set top_p or
top_k, every request's logits are filtered over the whole vocabulary each step: vLLM's FlashInfer
top-k/top-p sampler runs one thread block per row, rejection rounds each a pass over the row, so the
step pays ∝ vocabulary per wave of rows over the GPU's SMs (`sim.vllm_deploy` knob `c_vocab`). Set from each
checkpoint's generation_config.json on huggingface.co: Llama-2 (temperature 0.6, top_p 0.9), Llama-3.1
Instruct (0.6, 0.9), Qwen2.5 Instruct (top_p 0.8, top_k 20), Qwen3 (top_p 0.95, top_k 20), Llama-4 Scout
Instruct (0.6, 0.9); none for Mistral-Nemo-Instruct-2407, Yi-34B, Mixtral, CodeLlama (bos/eos only).

May import: the standard library, `specsched.hardware`, `specsched.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specsched.errors import InputError
from specsched.hardware import GPU, ModelShape

GiB = 1024**3


@dataclass(frozen=True)
class CatalogModel:
    """One model of the catalogue. shape: the roofline's view; the rest what KV sizing and a drafter's
    LM head need. bytes_per_param: the checkpoint's stored weight bytes (2 bf16/fp16, 1 FP8)."""

    name: str
    hf_ids: tuple[str, ...]
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    params: float
    active_params: float
    source: str
    bytes_per_param: float = 2.0
    experts: int = 0
    top_k: int = 0
    moe_layers: int = 0
    stream_fraction: float = 1.0  # streamed chunks per generated token (module docstring)
    filtered_sampling: bool = False  # generation_config.json sets top_p / top_k (module docstring)

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * 2

    def shape(self, bytes_per_param: float | None = None) -> ModelShape:
        """The roofline's `ModelShape`, stored at `bytes_per_param` (None: the checkpoint's own)."""
        bpp = self.bytes_per_param if bytes_per_param is None else bytes_per_param
        return ModelShape(
            self.name,
            layers=self.layers,
            d_model=self.hidden,
            total_params=self.params,
            active_params=self.active_params,
            kv_bytes_per_token=self.kv_bytes_per_token,
            bytes_per_param=bpp,
            experts=self.experts,
            top_k=self.top_k,
            moe_layers=self.moe_layers,
            note=self.source,
        )


@dataclass(frozen=True)
class CatalogGPU:
    """One GPU: `gpu` for the roofline; visible_memory: bytes a process sees (nvidia-smi's total);
    link_bw: GPU-to-GPU bytes/s per direction (NVLink, or PCIe where there is none); link_latency: seconds
    per small all-reduce step over it; sm_clock: the datasheet's max boost clock (Hz), which carries a
    calibrated GPU's fixed per-kernel times to another (`sim.vllm_deploy.transferred_knobs`); sms: its
    streaming multiprocessors (whitepapers: H100 SXM 132, A100 108, L40S 142, H200 132, B200 148)."""

    key: str
    gpu: GPU
    visible_memory: float
    link_bw: float
    link_latency: float
    source: str
    aliases: tuple[str, ...] = field(default=())
    sm_clock: float = 1.98e9  # max boost clock (Hz): latency-bound small kernels run at it
    sms: int = 132  # streaming multiprocessors: rows a one-block-per-row kernel runs at once


def _dense(name, hf_ids, layers, hidden, heads, kv_heads, head_dim, inter, vocab, params, source, **kw):
    return CatalogModel(name, tuple(hf_ids), layers, hidden, heads, kv_heads, head_dim, inter, vocab,
                        params, params, source, **kw)  # fmt: skip


_HF = "config.json and model card on huggingface.co/"
SP_BYTE_FALLBACK = 0.78  # stream_fraction of a 32k SentencePiece vocabulary with byte fallback (docstring)
LLAMA3_BPE = 0.985  # stream_fraction of the Llama-3 tokenizer (Llama-3.1-70B on runs.csv)
MODELS: dict[str, CatalogModel] = {
    m.name: m
    for m in (
        _dense("llama2-7b", ["meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"],
               32, 4096, 32, 32, 128, 11008, 32000, 6.74e9, _HF + "meta-llama/Llama-2-7b-hf (MHA)",
               stream_fraction=SP_BYTE_FALLBACK, filtered_sampling=True),
        _dense("llama2-13b", ["meta-llama/Llama-2-13b-hf", "meta-llama/Llama-2-13b-chat-hf"],
               40, 5120, 40, 40, 128, 13824, 32000, 13.02e9, _HF + "meta-llama/Llama-2-13b-hf (MHA)",
               stream_fraction=SP_BYTE_FALLBACK, filtered_sampling=True),
        _dense("llama2-70b", ["meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-70b-chat-hf"],
               80, 8192, 64, 8, 128, 28672, 32000, 68.98e9, _HF + "meta-llama/Llama-2-70b-hf",
               stream_fraction=SP_BYTE_FALLBACK, filtered_sampling=True),
        _dense("codellama-34b", ["codellama/CodeLlama-34b-hf", "codellama/CodeLlama-34b-Instruct-hf",
                                 "meta-llama/CodeLlama-34b-hf"],
               48, 8192, 64, 8, 128, 22016, 32000, 33.74e9, _HF + "codellama/CodeLlama-34b-hf",
               stream_fraction=SP_BYTE_FALLBACK),
        _dense("llama3.1-8b", ["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B",
                               "meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3-8B",
                               "meta-llama/Meta-Llama-3-8B-Instruct"],
               32, 4096, 32, 8, 128, 14336, 128256, 8.03e9, _HF + "meta-llama/Llama-3.1-8B-Instruct",
               stream_fraction=LLAMA3_BPE, filtered_sampling=True),
        _dense("llama3.1-70b", ["meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B",
                                "meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Meta-Llama-3-70B-Instruct",
                                "meta-llama/Meta-Llama-3.1-70B-Instruct"],
               80, 8192, 64, 8, 128, 28672, 128256, 70.55e9, _HF + "meta-llama/Llama-3.1-70B-Instruct",
               stream_fraction=LLAMA3_BPE, filtered_sampling=True),
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
        CatalogModel("mixtral-8x7b", ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistralai/Mixtral-8x7B-v0.1"),
                     32, 4096, 32, 8, 128, 14336, 32000, 46.70e9, 12.88e9,
                     _HF + "mistralai/Mixtral-8x7B-v0.1, Mixtral paper (8 experts, top-2, every layer)",
                     experts=8, top_k=2, moe_layers=32,
                     stream_fraction=SP_BYTE_FALLBACK),
        CatalogModel("mixtral-8x22b",
                     ("mistralai/Mixtral-8x22B-Instruct-v0.1", "mistralai/Mixtral-8x22B-v0.1"),
                     56, 6144, 48, 8, 128, 16384, 32768, 140.6e9, 39.1e9,
                     _HF + "mistralai/Mixtral-8x22B-v0.1 (8 experts, top-2, every layer)",
                     experts=8, top_k=2, moe_layers=56,
                     stream_fraction=SP_BYTE_FALLBACK),
        # Llama 4 Scout: 16 routed experts (top-1) plus one shared expert in all 48 layers; the FP8-dynamic
        # checkpoint stores the linear weights in FP8 (embeddings, LM head, router in bf16: ~2 GB, folded
        # into the 1-byte figure). 108.6B total / 17.2B active from the shapes: expert 3·5120·8192.
        CatalogModel("llama4-scout-17b-16e",
                     ("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic",
                      "meta-llama/Llama-4-Scout-17B-16E-Instruct", "meta-llama/Llama-4-Scout-17B-16E"),
                     48, 5120, 40, 8, 128, 8192, 202048, 108.6e9, 17.17e9,
                     _HF + "meta-llama/Llama-4-Scout-17B-16E-Instruct (16 experts top-1 + shared, all "
                     "layers); "
                     "RedHatAI/...-FP8-dynamic for the FP8 weights",
                     bytes_per_param=1.0, experts=16, top_k=1, moe_layers=48, filtered_sampling=True),
    )
}  # fmt: skip

_NVL4 = 450e9  # NVLink 4 (H100/H200 SXM): 900 GB/s bidirectional per GPU
GPUS: dict[str, CatalogGPU] = {
    g.key: g
    for g in (
        CatalogGPU("h100", GPU("H100 SXM 80GB", hbm_bw=3.35e12, flops=989e12, memory=80e9), 81559 * 2**20,
                   _NVL4, 8e-6, "NVIDIA H100 datasheet: 3.35 TB/s HBM3, 989 TFLOP/s dense BF16, NVLink 900 "
                   "GB/s; "
                   "nvidia-smi total 81,559 MiB; max boost 1,980 MHz",
                   ("h100-80gb", "h100-sxm", "h100-sxm5", "h100_80gb"), 1.98e9, 132),
        CatalogGPU("a100", GPU("A100 SXM 80GB", hbm_bw=2.039e12, flops=312e12, memory=80e9), 81920 * 2**20,
                   300e9, 10e-6, "NVIDIA A100 datasheet: 2,039 GB/s HBM2e, 312 TFLOP/s dense BF16, NVLink "
                   "600 "
                   "GB/s; nvidia-smi total 81,920 MiB; max boost 1,410 MHz",
                   ("a100-80gb", "a100-sxm", "a100_80gb", "a100-80g"), 1.41e9, 108),
        CatalogGPU("l40s", GPU("L40S", hbm_bw=864e9, flops=362e12, memory=48e9), 46068 * 2**20, 32e9, 15e-6,
                   "NVIDIA L40S datasheet: 864 GB/s GDDR6, 362 TFLOP/s dense BF16, 48 GB, PCIe Gen4 x16 "
                   "(no NVLink); nvidia-smi total 46,068 MiB; max boost 2,520 MHz", ("l40s-48gb",),
                   2.52e9, 142),
        CatalogGPU("h200", GPU("H200 SXM", hbm_bw=4.8e12, flops=989e12, memory=141e9), 143771 * 2**20, _NVL4,
                   8e-6, "NVIDIA H200 datasheet: 4.8 TB/s HBM3e, 141 GB, H100 compute; nvidia-smi total "
                   "143,771 MiB; max boost 1,980 MHz (GH100, as H100)", ("h200-141gb", "h200-sxm"),
                   1.98e9, 132),
        CatalogGPU("b200", GPU("B200 SXM", hbm_bw=8.0e12, flops=2.25e15, memory=180e9), 183359 * 2**20,
                   900e9, 6e-6, "NVIDIA HGX B200 spec sheet: 8 TB/s HBM3e, 2.25 PFLOP/s dense BF16, NVLink 5 "
                   "1.8 TB/s; nvidia-smi total 183,359 MiB; boost ~1,965 MHz (reported; not on the spec "
                   "sheet)",
                   ("b200-180gb",), 1.965e9, 148),
    )
}  # fmt: skip


def _norm(name: str) -> str:
    return name.strip().lower()


_MODEL_INDEX = {_norm(k): m for k, m in MODELS.items()}
_MODEL_INDEX.update({_norm(h): m for m in MODELS.values() for h in m.hf_ids})
_GPU_INDEX = {_norm(k): g for k, g in GPUS.items()}
_GPU_INDEX.update({_norm(a): g for g in GPUS.values() for a in g.aliases})


def find_model(name: str) -> CatalogModel | None:
    """The catalogue model `name` names (short name or Hugging Face id, any case), else None."""
    return _MODEL_INDEX.get(_norm(name)) if isinstance(name, str) else None


def get_model(name: str, *, field: str | None = None) -> CatalogModel:
    """The catalogue model `name` names; InputError naming `field` if the catalogue does not know it."""
    found = find_model(name)
    if found is None:
        raise InputError(f"unknown model {name!r}: the catalogue knows {', '.join(MODELS)} "
                         "(or their Hugging Face ids)", field=field)  # fmt: skip
    return found


def get_gpu(name: str, *, field: str | None = None) -> CatalogGPU:
    """The catalogue GPU `name` names (key or alias, any case); InputError naming `field` otherwise."""
    found = _GPU_INDEX.get(_norm(name)) if isinstance(name, str) else None
    if found is None:
        raise InputError(f"unknown gpu {name!r} (catalogue: {', '.join(GPUS)})", field=field)
    return found


PRECISIONS = {"fp16": 2.0, "bf16": 2.0, "fp8": 1.0}


def precision_bytes(precision: str | None, model: CatalogModel, *, field: str | None = None) -> float:
    """Weight bytes per parameter for `precision` (fp16/bf16/fp8, any case; None or "" = the checkpoint's)."""
    if precision is None or precision == "":
        return model.bytes_per_param
    key = _norm(precision)
    if key not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r} (one of {', '.join(PRECISIONS)})", field=field)
    return PRECISIONS[key]
