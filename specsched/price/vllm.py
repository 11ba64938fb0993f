"""A deployment from vLLM's own knobs: the step cost from the catalogue, KV sized as vLLM sizes it.

Role: `VllmSpec` (model, GPU, precision, tp, dp, gpu_memory_utilization, max_model_len, max_num_seqs,
max_num_batched_tokens, cpu_offload_gb, prefix caching, CUDA graphs, async scheduling) and `Knobs` (the
one set of physical knobs, `specsched.price.knobs`) become a `CostTable` (`sim.deploy.prepare` makes them
a run of plain autoregressive serving on any workload; `sim.deploy.cost` prices a config's `[cost]`
deployment with it).

The step price, one term each (seconds; B = tokens in the step, C = KV tokens the running requests hold):

    step(B, R, C) = step_s                                   per-pass fixed work: scheduling, input prep,
                                                             sampling, the host side of a step
                  + layers · c0                              per-layer fixed work on the GPU
                  + moe_layers · c_moe                       per-MoE-layer routing work (top-k, permute,
                                                             grouped-GEMM set-up)
                  + max((W(B) + A(B)) / (eta_bw · BW)        weights (MoE: the experts that B tokens
                          + c_token · layers · rows,         touch), the GEMMs' activations and each
                        2·(P_mm·B + P_head·rows) / (eta_f · F))  sampled row (rows = min(B, max_num_seqs))
                                                             through each layer, or the projections'
                                                             FLOPs (the LM head on the sampled rows),
                                                             whichever binds (a p-norm: the GPU's
                                                             measured GEMM knee, `tokens.knee`)
                  + E(B) / stream_bw                         the kernels between the GEMMs (norms, RoPE,
                                                             SiLU·mul, KV write, FP8 activation quant)
                  + 2 · layers · link_latency  (tp > 1)      two all-reduces per layer, + their bytes at
                    + AR(B)                                  the measured all-reduce rate
                  + pairs · attn_pair_s                      causal prefill attention per query-key pair
                                                             (A, E, AR, P_mm, attention: the "row" form,
                                                             `specsched.price.tokens`, `TOKEN_FORM`)
                  + C · kv_bytes / (eta_kv · BW)             attention reading every running request's KV
                  + ⌈R / SMs⌉ · vocab · c_vocab              top-p / top-k sampling where the checkpoint's
                    (filtered sampling)                      generation_config sets them (the catalogue's
                                                             `filtered_sampling`): one thread block a row,
                                                             rounds over the row, rows in waves over SMs
                  + offload_bytes / host_bw                  weights moved to host by cpu_offload_gb
    then padded to the next CUDA-graph capture size (vLLM's sizes up to min(2 · max_num_seqs, 512)).

and per request `frontend_s` (the API server: HTTP, tokenizing, detokenizing, streaming) is added to its
TTFT and end-to-end latency by the callers that report them (`validate.predict`).

FP8 weights (bytes per parameter ≤ 1) are priced per GPU: one byte a weight read, the compute side at
the GPU's FP8 tensor rate (`specsched.kernels.fp8_rate`; 1 on A100, which runs FP8 as W8A16). With
`kv_cache_dtype` fp8* the step also takes the measured FP8 GEMMs' figures (eta_bw/eta_f × FP8 over BF16
figures) and their activation-scaling pass (`kernels.fp8_terms`), and the KV cache holds half the bytes:
twice the blocks (`size_kv`), read in the measured FP8/BF16 decode-attention time ratio
(`kernels.kv_bytes_factor`). With `auto` (the default) the calibrated knobs stand as they are.

May import: numpy, the standard library, `specsched.cost`, `specsched.graphs`, `specsched.io.errors`,
`specsched.price`, `specsched.kernels` (lazily: it reads the model catalogue).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsched.cost import CostTable
from specsched.graphs import vllm_max_capture, with_cudagraphs
from specsched.io.errors import InputError
from specsched.price import tokens
from specsched.price.gpus import GPU, get_gpu
from specsched.price.knobs import Knobs
from specsched.price.kv import BLOCK_SIZE, GPU_MEMORY_UTILIZATION, KVSizing, size_kv
from specsched.price.models import ModelShape, get_model, precision_bytes
from specsched.price.roofline import kv_token_seconds, step_seconds

HOST_BW = {"h100": 50e9, "h200": 50e9, "b200": 50e9}  # PCIe Gen5 x16, effective; others Gen4
HOST_BW_DEFAULT = 25e9
#: the layer shard the "shard" form quotes `c_token` for: parameters of one decoder layer on one GPU (a
#: 7B-class layer at TP 1, 2·10⁸ BF16 parameters)
TOKEN_SHARD_PARAMS = 2e8
#: the per-token form the price uses and `validate.calibrate` fits (`token_units`):
#: "row" (shipped): the per-token work from the kernel tables (`specsched.price.tokens`: activation and
#: elementwise bytes, the measured all-reduce) and `c_token` a sampled row a layer (logits and sampler
#: rows, per-sequence kernel set-up: what decode and verify steps measured it as; a step samples at most
#: max_num_seqs rows), so a long prefill pays its tokens' physical work, not c_token × its tokens.
#: "layer" (c_token a token a layer, TP-blind) and "shard" (a token's GEMM work on this GPU's shard) are
#: the earlier forms, kept for comparison
#: (docs/validation.md "The per-token term"; bench/bench_prefill_token.py).
TOKEN_FORM = "row"
TOKEN_FORMS = ("layer", "shard", "row")
#: vLLM's --kv-cache-dtype choices (fp8* store one byte an element)
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")


@dataclass(frozen=True)
class VllmSpec:
    """One vLLM deployment (each field is the `vllm serve` flag of the same name)."""

    model: str
    gpu: str = "h100"
    precision: str | None = None
    tp: int = 1
    dp: int = 1
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION
    max_model_len: int | None = None
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    cpu_offload_gb: float = 0.0
    prefix_caching: bool = True
    cudagraphs: bool = True
    async_scheduling: bool = True
    kv_tokens: int | None = None  # override vLLM's sizing
    kv_offload_gib: float = 0.0  # CPU KV offload: host GiB per GPU that hold evicted prefix blocks
    kv_cache_dtype: str = "auto"  # auto: the model's dtype (BF16 KV); fp8*: one byte an element

    @property
    def kv_fp8(self) -> bool:
        return self.kv_cache_dtype.lower().startswith("fp8")

    def resolve(self) -> tuple[ModelShape, GPU, float]:
        """(model, GPU, weight bytes per parameter); InputError naming the `[cost]` key that is wrong."""
        m = get_model(self.model, field="cost.model")
        if m.heads is None:
            msg = "has no config.json attention shape in the catalogue (KV heads, head size)"
            raise InputError(f"{m.name} {msg}: it cannot be sized as a vLLM deployment", field="cost.model")
        g = get_gpu(self.gpu, field="cost.gpu")
        return m, g, precision_bytes(self.precision, m, field="cost.precision")

    def kv(self) -> KVSizing:
        m, g, bpp = self.resolve()
        return size_kv(
            m,
            g,
            tp=self.tp,
            bytes_per_param=bpp,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_num_batched_tokens=self.max_num_batched_tokens,
            max_num_seqs=self.max_num_seqs,
            cpu_offload_gb=self.cpu_offload_gb,
            cudagraphs=self.cudagraphs,
            kv_bytes_scale=0.5 if self.kv_fp8 else 1.0,
        )

    def kv_capacity(self) -> int:
        return self.kv_tokens if self.kv_tokens is not None else self.kv().kv_tokens

    @property
    def max_capture(self) -> int:
        return vllm_max_capture(self.max_num_seqs)


def step_parts(
    spec: VllmSpec, knobs: Knobs, b: np.ndarray, *, token_form: str = TOKEN_FORM
) -> dict[str, np.ndarray]:
    """float64 seconds of each named part of the step price at `b` tokens (module docstring; no KV reads,
    no per-request rows, no CUDA-graph padding): "fixed" (step_s + layers·c0 + moe_layers·c_moe +
    offload), "weights_or_compute", "comm", "sampling" (`sampling_seconds`). token_form: `TOKEN_FORMS`."""
    if token_form not in TOKEN_FORMS:
        raise ValueError(f"token form must be one of {TOKEN_FORMS}, got {token_form!r}")
    m, g, bpp = spec.resolve()
    shape = m.shape(bpp)
    b = np.asarray(b, dtype=np.float64)
    knobs, rate, quant = _fp8_weights(spec, knobs, m, g, shape.bytes_per_param, b)
    link_lat = g.link_latency if knobs.link_latency is None else knobs.link_latency
    if token_form == "row":
        core = _physical_core(spec, knobs, shape, g, rate, b)
        quant = np.zeros_like(b)  # the activation quantization is in the elementwise bytes
    else:
        core = _token_core(spec, knobs, shape, g, rate, b, token_form)
    comm_lat = 2 * m.layers * link_lat if spec.tp > 1 else 0.0
    offload = spec.cpu_offload_gb * 1e9 / HOST_BW.get(g.key, HOST_BW_DEFAULT)
    fixed = knobs.step_s + m.layers * knobs.c0 + m.moe_layers * knobs.c_moe + offload
    return {
        "fixed": np.full_like(b, fixed),
        "weights_or_compute": core + quant,
        "comm": np.full_like(b, comm_lat),
        "sampling": sampling_seconds(spec, knobs, b),
    }


def memory_compute(spec: VllmSpec, knobs: Knobs, b: np.ndarray, rate: float | None = None):
    """(memory side, compute side) of the "row" form at `b` tokens, float64[n] seconds on one GPU: weights
    (MoE: the experts `b` tokens touch) and the GEMMs' activation bytes (`tokens.gemm_io_bytes`) at
    eta_bw of the HBM bandwidth; the projections' FLOPs for `b` tokens and the LM head's for the sampled
    rows (`tokens.matmul_params`) at eta_f of the tensor peak (× `rate`, the FP8 rate with FP8 weights;
    None: the GPU's, `kernels.fp8_rate`)."""
    m, g, bpp = spec.resolve()
    shape = m.shape(bpp)
    b = np.asarray(b, dtype=np.float64)
    if rate is None:
        rate = _fp8_weights(spec, knobs, m, g, shape.bytes_per_param, b[:0])[1]
    weights = shape.weight_params_read(b) * shape.bytes_per_param / spec.tp
    t_mem = (weights + tokens.gemm_io_bytes(m, spec.tp, b)) / (knobs.eta_bw * g.hbm_bw)
    peak = g.flops * (rate if shape.bytes_per_param <= 1.0 else 1.0)
    rows = np.minimum(b, float(spec.max_num_seqs))  # sampled rows: the LM head runs on these alone
    flops = 2.0 * (tokens.matmul_params(m) * b + tokens.lm_head_params(m) * rows)
    return t_mem, flops / spec.tp / (knobs.eta_f * peak)


def _physical_core(spec, knobs, shape, g, rate, b):
    """The "row" form's token-dependent seconds: memory + c_token · sampled rows a layer and compute
    (`memory_compute`, `token_units`) combined with the GPU's measured GEMM knee (`tokens.knee`) + the
    kernels between the GEMMs (`tokens.elementwise_bytes` at the measured streaming rate) + the
    all-reduces' bytes (`tokens.allreduce_bytes_seconds`): the last two never hide under a GEMM."""
    t_mem, t_cmp = memory_compute(spec, knobs, b, rate)
    t_mem = t_mem + knobs.c_token * token_units(spec, b, "row")
    gemms = tokens.smooth_max(t_mem, t_cmp, tokens.knee(g))  # the measured GEMMs' knee, not a hard max
    fp8 = shape.bytes_per_param <= 1.0 and rate > 1.0  # FP8 activations (not W8A16): quantized first
    between = tokens.elementwise_bytes(shape, spec.tp, b, fp8=fp8) / tokens.stream_bw(g)
    return gemms + between + tokens.allreduce_bytes_seconds(shape, g, spec.tp, b)


def _token_core(spec, knobs, shape, g, rate, b, token_form):
    """The "layer" / "shard" forms' token-dependent seconds: the roofline (`step_seconds`, catalogue link
    bytes) with c_token × `token_units` on its memory side."""
    common = dict(tp=spec.tp, eta_bw=knobs.eta_bw, eta_f=knobs.eta_f, link_bw=g.link_bw, context_tokens=None)
    core = step_seconds(shape, g, b, c0=0.0, link_latency=0.0, fp8_peak=rate, **common)
    if knobs.c_token:
        # the memory-bound side grows by c_token per token unit (`token_units`); compute binds where it
        # is larger, so the term gives way to compute
        t_mem = shape.weight_params_read(b) * shape.bytes_per_param / spec.tp / (knobs.eta_bw * g.hbm_bw)
        peak = g.flops * (rate if shape.bytes_per_param <= 1.0 else 1.0)
        t_cmp = 2.0 * shape.active_params * b / spec.tp / (knobs.eta_f * peak)
        t_bw = core - np.maximum(t_mem, t_cmp)
        core = np.maximum(t_mem + knobs.c_token * token_units(spec, b, token_form), t_cmp) + t_bw
    return core


def _fp8_weights(spec: VllmSpec, knobs: Knobs, m: ModelShape, g: GPU, bpp: float, b: np.ndarray):
    """(knobs, FP8 tensor rate over BF16, float64[n] activation-scaling seconds) of a step at `b` tokens.
    BF16 weights: (knobs, 1, 0). FP8 weights: the GPU's FP8 tensor rate (`kernels.fp8_rate`: 2 on
    Hopper/Blackwell/Ada, 1 on A100, W8A16) with the calibrated knobs; with `kv_cache_dtype` fp8* also the
    measured FP8 GEMMs' efficiencies and scaling pass (`kernels.fp8_terms`). Gated so: with them on every
    FP8 run, the recalibrated H100 fit is worse (docs/validation.md "FP8 priced per GPU")."""
    if bpp > 1.0:
        return knobs, 1.0, np.zeros_like(b)
    from specsched.kernels import fp8_rate, fp8_terms  # lazy: the kernel figures read the model catalogue

    if not spec.kv_fp8:
        return knobs, float(fp8_rate(g.key)), np.zeros_like(b)
    t = fp8_terms(knobs.as_dict(), m.name, g.key, b, tp=spec.tp)
    quant = np.asarray(t["quant_seconds"], dtype=np.float64)
    return Knobs.from_dict(t["knobs"]), float(t["peak_factor"]), quant


def token_units(spec: VllmSpec, b: np.ndarray, form: str = TOKEN_FORM) -> np.ndarray:
    """What `c_token` multiplies at `b` tokens, float64 [n], in one of two forms (issue 33 item 5):

    - "layer": layers · b — seconds a token a layer, whatever the TP or the layer's width (the form the
      shipped knobs were fitted in; an 8,192-token prefill of a 70B pays 0.37 s of it at any TP where
      compute does not bind);
    - "shard": b · active_params / tp / TOKEN_SHARD_PARAMS / rate (rate 2 with FP8 weights) — each
      token's GEMM work on this GPU's shard that the weight stream does not hide below the roofline knee:
      it shards with tensor parallelism and halves at the FP8 rate.
    Both sit on the memory side of max(memory, compute) in `step_parts`: a compute-bound step does not
    pay them. "row" (shipped): layers · min(b, max_num_seqs) — a sampled row a layer: a decode or verify
    position's logits, sampler row and per-sequence set-up; a step of b tokens samples at most
    max_num_seqs rows (under-counted for verify steps of more positions than that), so a prefill chunk
    pays for its rows, not its tokens."""
    m, _, bpp = spec.resolve()
    b = np.asarray(b, dtype=np.float64)
    if form == "layer":
        return m.layers * b
    if form == "row":  # c_token per sampled row, not per prompt token
        return m.layers * np.minimum(b, float(spec.max_num_seqs))
    if form != "shard":
        raise ValueError(f"token form must be one of {TOKEN_FORMS}, got {form!r}")
    rate = 2.0 if bpp <= 1.0 else 1.0  # FP8 weights: the MMA work at twice the rate (as the compute side)
    return b * (m.active_params / spec.tp / TOKEN_SHARD_PARAMS / rate)


def sampling_seconds(spec: VllmSpec, knobs: Knobs, b: np.ndarray) -> np.ndarray:
    """Seconds of top-p / top-k sampling in a step of `b` tokens, where the checkpoint's default sampling
    filters: c_vocab · vocab per wave of rows (≤ max_num_seqs rows sampled) over the GPU's SMs."""
    m, g, _ = spec.resolve()
    b = np.asarray(b, dtype=np.float64)
    if not (m.filtered_sampling and knobs.c_vocab):
        return np.zeros_like(b)
    rows = np.minimum(b, float(spec.max_num_seqs))
    return np.ceil(rows / g.sms) * m.vocab * knobs.c_vocab


def cost_table(spec: VllmSpec, knobs: Knobs) -> CostTable:
    """The step cost of `spec` with `knobs`: a context-aware table, padded to vLLM's CUDA-graph sizes, with
    prefill attention per query-key pair
    (`tokens.prefill_attention_seconds`, the GPU busy: a lower bound for short prompts at high TP)."""
    m, g, _ = spec.resolve()
    top = max(spec.max_num_batched_tokens, 8192)
    b = np.arange(1, top + 1, dtype=np.float64)
    secs = sum(step_parts(spec, knobs, b).values())
    name = f"vllm:{m.name}@{g.key}x{spec.tp}"
    table = CostTable.from_points(
        b.astype(np.int64),
        secs,
        mode="linear",
        layers=m.layers,
        name=name,
        request_seconds=knobs.request_s,
        kv_token_seconds=kv_token_seconds(m, g, tp=spec.tp, eta_kv=knobs.eta_kv) * kv_time_factor(spec),
        attn_pair_seconds=float(tokens.prefill_attention_seconds(m, g, spec.tp, 1.0)),
    )
    if spec.cudagraphs:
        table = with_cudagraphs(table, max_capture_size=spec.max_capture, eager_factor=1.0, name=name)
    return table


def kv_time_factor(spec: VllmSpec) -> float:
    """Decode attention's KV read time over a BF16 cache's for `spec`'s kv_cache_dtype (1 for auto)."""
    if not spec.kv_fp8:
        return 1.0
    from specsched.kernels import kv_bytes_factor  # lazy: the kernel figures read the model catalogue

    return kv_bytes_factor(spec.kv_cache_dtype, spec.resolve()[1].key)


def offload_blocks(spec: VllmSpec) -> int:
    """Prefix-cache blocks the CPU KV offload tier holds (the tp GPUs' host space together)."""
    if not spec.kv_offload_gib:
        return 0
    m, _, _ = spec.resolve()
    per_block = m.kv_bytes_per_gpu(spec.tp) * BLOCK_SIZE * (0.5 if spec.kv_fp8 else 1.0)
    return int(spec.kv_offload_gib * 2**30 // per_block)
