"""KV-cache capacity as vLLM v1 sizes it from `gpu_memory_utilization`, per GPU of one replica.

Role: turn a deployment's knobs (model, GPU, tensor parallelism, precision, gpu_memory_utilization,
max_num_batched_tokens, max_num_seqs, cpu_offload_gb, CUDA graphs on or off) into the KV tokens one
replica holds, the way vLLM's worker does before it allocates the cache (`determine_available_memory`):

    KV bytes per GPU = gpu_memory_utilization · total memory (CUDA's, `CUDA_TOTAL`; else the GPU table's)
                       − weights per GPU (less what `cpu_offload_gb` moves to host memory)
                       − peak activation of a profiling forward of `max_num_batched_tokens` tokens
                         and a sampler pass over `max_num_seqs` rows of the vocabulary
                       − non-torch memory (cuBLAS/NCCL workspaces) − captured CUDA graphs
    KV tokens = ⌊KV bytes / (block_size · KV bytes per token per GPU)⌋ · block_size

Assumptions (first-order, stated so a user can disagree): the activation peak is the residual stream plus
the larger of one layer's attention and MLP buffers per token (the layers run in turn), or the sampler's
fp32 logits if larger (`peak_activation_bytes`); on Llama-3.1-8B it reads 2.06 and 2.99 GiB at 20,000
and 29,000 profiled tokens where vLLM logged 2.07 and 2.99 (vllm-project/vllm#10517; tests/specsched/
test_kv_capacity.py). Non-torch memory 0.35 GiB (the same log), plus 0.5 GiB of NCCL buffers with
tp > 1; captured graphs 0.5 GiB (vLLM logged 0.67 GiB for a 7B at TP 1; versions before CUDA-graph
profiling leave them outside the budget, later ones subtract an estimate). KV heads are split over tp
GPUs (replicated when fewer than tp). The cache is the model's dtype (`kv_cache_dtype = "auto"`) unless
`kv_bytes_scale` says otherwise. These matter only where KV is tight (a GiB is ≈ 1–2 % of an H100's
KV); every figure is in `KVSizing` so a report can show it. docs/memory.md compares them with vLLM's
logged "GPU KV cache size".

`gpu_memory_utilization` has its one default (`GPU_MEMORY_UTILIZATION`, vLLM's) and its one check
(`check_utilization`) here: the config, the vLLM spec and the sizing all take them from this module.

May import: the standard library, `specsched.io.errors`, `specsched.price` (gpus, models).
"""

from __future__ import annotations

from dataclasses import dataclass

from specsched.io.errors import InputError
from specsched.price.gpus import GPU
from specsched.price.models import GiB, ModelShape

BLOCK_SIZE = 16  # vLLM's default KV block (tokens)
NON_TORCH_BYTES = 0.35 * GiB  # vllm-project/vllm#10517: non_torch_memory=0.35GiB (TP 1)
NCCL_BYTES = 0.5 * GiB
CUDAGRAPH_BYTES = 0.5 * GiB
#: vLLM's default `--gpu-memory-utilization`
GPU_MEMORY_UTILIZATION = 0.9
#: the total memory CUDA reports (`torch.cuda.mem_get_info`), what vLLM takes the fraction of, where it
#: is below nvidia-smi's total (the GPU table's `visible_memory`) by the driver's reserve: PyTorch's
#: out-of-memory message reads "a total capacity of 79.19 GiB" on H100 80GB and "139.80 GiB" on H200, and
#: vLLM's own start-up line "Free memory on device (78.66/79.19 GiB)" (H100, v0.10.2)
CUDA_TOTAL = {"h100": 79.19 * GiB, "h200": 139.80 * GiB}


@dataclass(frozen=True)
class KVSizing:
    """What one GPU of a replica holds (bytes) and the KV tokens the replica gets."""

    budget: float
    weights: float
    activation: float
    other: float
    kv_bytes: float
    kv_bytes_per_token: float
    kv_tokens: int

    def as_dict(self) -> dict:
        return {k: (round(v / GiB, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def check_utilization(value, field: str = "cost.gpu_memory_utilization") -> float:
    """`value` if it is a fraction in (0, 1] (vLLM's range for gpu_memory_utilization), else InputError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise InputError(f"must be in (0, 1], got {value!r}", field=field)
    return float(value)


def peak_activation_bytes(model: ModelShape, tp: int, batched_tokens: int, max_num_seqs: int) -> float:
    """The profiling pass's activation peak on one GPU (bytes; module docstring): per token, the residual
    stream (hidden states and residual, bf16) and the larger of a layer's two phases, attention (normed
    input, q/k/v, attention output) and MLP (normed input, gate/up output, the activated half) — layers
    run one after another, so one layer's buffers are live at a time; or, if larger, the sampler's pass
    after the forward: fp32 logits of min(max_num_seqs, batched_tokens) rows and one working copy."""
    t, h = float(batched_tokens), float(model.hidden)
    mlp_width = model.intermediate * (model.top_k + 1 if model.experts else 1)
    attention = (2.0 * h + (model.heads + 2 * model.kv_heads) * model.head_dim / tp) * 2.0
    mlp = (h + 3.0 * mlp_width / tp) * 2.0
    forward = t * (2.0 * h * 2.0 + max(attention, mlp))
    sampler = t * h * 2.0 + 2.0 * min(max_num_seqs, batched_tokens) * model.vocab * 4.0
    return max(forward, sampler)


def size_kv(
    model: ModelShape,
    gpu: GPU,
    *,
    tp: int = 1,
    bytes_per_param: float | None = None,
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
    max_num_batched_tokens: int = 8192,
    max_num_seqs: int = 256,
    cpu_offload_gb: float = 0.0,
    cudagraphs: bool = True,
    field: str = "cost.gpu_memory_utilization",
    kv_bytes_scale: float = 1.0,
) -> KVSizing:
    """The KV capacity of one replica (module docstring). InputError naming `field` when the weights and
    activations leave no room for even one block, as vLLM refuses to start then. kv_bytes_scale: KV bytes an
    element over BF16's (0.5 for vLLM's --kv-cache-dtype fp8: twice the blocks in the same memory)."""
    check_utilization(gpu_memory_utilization, field)
    bpp = model.bytes_per_param if bytes_per_param is None else bytes_per_param
    budget = gpu_memory_utilization * CUDA_TOTAL.get(gpu.key, gpu.visible_memory)
    weights = max(0.0, model.params * bpp / tp - cpu_offload_gb * 1e9)
    act = peak_activation_bytes(model, tp, max_num_batched_tokens, max_num_seqs)
    other = NON_TORCH_BYTES + (NCCL_BYTES if tp > 1 else 0.0) + (CUDAGRAPH_BYTES if cudagraphs else 0.0)
    kv = budget - weights - act - other
    per_token = model.kv_bytes_per_gpu(tp) * kv_bytes_scale
    blocks = int(kv // (BLOCK_SIZE * per_token)) if kv > 0 else 0
    if blocks < 1:
        raise InputError(
            f"{model.name} on {tp}× {gpu.key} at gpu_memory_utilization {gpu_memory_utilization}: the "
            f"weights ({weights / GiB:.1f} GiB per GPU) and activations leave no KV cache "
            f"(budget {budget / GiB:.1f} GiB); raise tp or gpu_memory_utilization",
            field=field,
        )
    return KVSizing(budget, weights, act, other, kv, per_token, blocks * BLOCK_SIZE)
