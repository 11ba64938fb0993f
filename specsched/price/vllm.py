"""A deployment from vLLM's own knobs: the step cost from the catalogue, KV sized as vLLM sizes it.

Role: `VllmSpec` (model, GPU, precision, tp, dp, gpu_memory_utilization, max_model_len, max_num_seqs,
max_num_batched_tokens, cpu_offload_gb, prefix caching, CUDA graphs, async scheduling) and `Knobs` (the
roofline's physical knobs for one GPU) become a `specsched.CostTable` (`sim.vllm_prepare` makes them a
`sim.wiring.Prepared` run of plain autoregressive serving on any `sim.workload.Workload`).

The step price, one term each (seconds; B = tokens in the step, C = KV tokens the running requests hold):

    step(B, R, C) = step_s                                   per-pass fixed work: scheduling, input prep,
                                                             sampling, the host side of a step
                  + layers · c0                              per-layer fixed work on the GPU
                  + moe_layers · c_moe                       per-MoE-layer routing work (top-k, permute,
                                                             grouped-GEMM set-up)
                  + max(W(B) / (eta_bw · BW) + layers · c_token · B,  weights (MoE: the experts that B
                        2·P·B / (eta_f · F))                 tokens touch) plus each token's share of the
                                                             memory-bound kernels, or compute, whichever
                                                             binds
                  + 2 · layers · link_latency  (tp > 1)      two all-reduces per layer (+ their bytes)
                  + C · kv_bytes / (eta_kv · BW)             attention reading every running request's KV
                  + ⌈R / SMs⌉ · vocab · c_vocab              top-p / top-k sampling where the checkpoint's
                    (filtered sampling)                      generation_config sets them (the catalogue's
                                                             `filtered_sampling`): one thread block a row,
                                                             rounds over the row, rows in waves over SMs
                  + offload_bytes / host_bw                  weights moved to host by cpu_offload_gb
    then padded to the next CUDA-graph capture size (vLLM's sizes up to min(2 · max_num_seqs, 512)).

and per request `frontend_s` (the API server: HTTP, tokenizing, detokenizing, streaming) is added to its
TTFT and end-to-end latency by the callers that report them (`specbed.validate`).

May import: numpy, the standard library, `specsched`, the sim modules below `sim.wiring` (config, curves,
acceptance, vllm_kv, workload): `sim.stepcost` prices a drafter from it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np

import specsched
from sim.config import ServerConfig, SimConfig
from sim.vllm_kv import BLOCK_SIZE, KVSizing, size_kv
from specsched import hardware
from specsched.catalog import CatalogGPU, CatalogModel, get_gpu, get_model, precision_bytes
from specsched.errors import InputError

#: calibrated knobs per GPU (`specbed cost calibrate`), with their provenance
KNOBS_FILE = Path(specsched.__file__).parent / "data" / "vllm_knobs.json"
HOST_BW = {"h100": 50e9, "h200": 50e9, "b200": 50e9}  # PCIe Gen5 x16, effective; others Gen4
HOST_BW_DEFAULT = 25e9


@dataclass(frozen=True)
class Knobs:
    """The roofline's physical knobs for one GPU (module docstring). Datasheet-style defaults."""

    eta_bw: float = 0.9
    eta_f: float = 0.6
    eta_kv: float = 0.9
    c0: float = 40e-6
    c_moe: float = 0.0
    c_token: float = 0.0  # per token in the step, per layer, while the step is memory-bound
    c_vocab: float = 0.0  # per vocabulary entry a step (a wave of rows), with filtered default sampling
    step_s: float = 0.0
    link_latency: float | None = None  # None: the GPU's catalogue figure
    frontend_s: float = 0.0
    request_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("eta_bw", "eta_f", "eta_kv"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise InputError(f"must be in (0, 1], got {v!r}", field=f"knobs.{name}")
        seconds = ("c0", "c_moe", "c_token", "c_vocab", "step_s", "frontend_s", "request_s", "link_latency")
        for name in seconds:
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and 0 <= v < 10):
                raise InputError(f"must be seconds in [0, 10), got {v!r}", field=f"knobs.{name}")

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict, *, file: str | None = None) -> Knobs:
        names = {f.name for f in fields(cls)}
        extra = sorted(set(raw) - names)
        if extra:
            raise InputError(f"unknown knob {extra[0]!r} (knobs: {', '.join(sorted(names))})", file=file)
        try:
            return cls(**raw)
        except InputError as err:
            raise InputError(err.message, file=file, field=err.field) from None


def shipped_knobs(gpu: str) -> Knobs:
    """The catalogue's knobs for `gpu`: calibrated on measured runs where the knobs file has them; else
    those of a calibrated GPU carried over by the file's transfer rule (`transferred_knobs`)."""
    try:
        raw = json.loads(KNOBS_FILE.read_text())
        table = raw["gpus"]
    except (OSError, KeyError, TypeError, json.JSONDecodeError):
        return Knobs()
    key = get_gpu(gpu).key
    entry = table.get(key)
    if entry is not None:
        return Knobs.from_dict(entry["knobs"], file=str(KNOBS_FILE))
    source = (raw.get("transfer") or {}).get("from")
    if source not in table:
        source = next(iter(table), None)
    if source is None:
        return Knobs()
    return transferred_knobs(Knobs.from_dict(table[source]["knobs"], file=str(KNOBS_FILE)), source, key)


def transferred_knobs(knobs: Knobs, source: str, target: str) -> Knobs:
    """`knobs` calibrated on GPU `source`, carried to GPU `target` that has no measured runs (the rule,
    and its check on a public two-GPU step table: docs/validation.md, "GPUs without measured runs"):

    - eta_bw, eta_kv, eta_f unchanged: dimensionless fractions of the target's own datasheet bandwidth and
      throughput, reached by the same vLLM kernels;
    - c0, c_moe, c_token, c_vocab × clock(source) / clock(target): fixed per-kernel GPU work (launch,
      drain, latency-bound small kernels, the sampler's passes) runs at the SM clock;
    - link_latency × max(that clock ratio, catalogue link latency ratio): an all-reduce is a kernel too,
      and no faster than the target's own link (PCIe on an L40S);
    - step_s, frontend_s unchanged: host-side (scheduler, API server)."""
    src, dst = get_gpu(source), get_gpu(target)
    clock = src.sm_clock / dst.sm_clock
    link = None
    if knobs.link_latency is not None:
        link = knobs.link_latency * max(clock, dst.link_latency / src.link_latency)
    return replace(
        knobs,
        c0=knobs.c0 * clock,
        c_moe=knobs.c_moe * clock,
        c_token=knobs.c_token * clock,
        c_vocab=knobs.c_vocab * clock,
        link_latency=link,
    )


@dataclass(frozen=True)
class VllmSpec:
    """One vLLM deployment (each field is the `vllm serve` flag of the same name)."""

    model: str
    gpu: str = "h100"
    precision: str | None = None
    tp: int = 1
    dp: int = 1
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    cpu_offload_gb: float = 0.0
    prefix_caching: bool = True
    cudagraphs: bool = True
    async_scheduling: bool = True
    kv_tokens: int | None = None  # override vLLM's sizing
    kv_offload_gib: float = 0.0  # CPU KV offload: host GiB per GPU that hold evicted prefix blocks

    def resolve(self) -> tuple[CatalogModel, CatalogGPU, float]:
        m = get_model(self.model, field="server.model")
        g = get_gpu(self.gpu, field="server.gpu")
        return m, g, precision_bytes(self.precision, m, field="server.precision")

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
        )

    def kv_capacity(self) -> int:
        return self.kv_tokens if self.kv_tokens is not None else self.kv().kv_tokens

    @property
    def max_capture(self) -> int:
        return min(2 * self.max_num_seqs, 512)


def step_parts(spec: VllmSpec, knobs: Knobs, b: np.ndarray) -> dict[str, np.ndarray]:
    """float64 seconds of each named part of the step price at `b` tokens (module docstring; no KV reads,
    no CUDA-graph padding): "fixed" (step_s + layers·c0 + moe_layers·c_moe + offload),
    "weights_or_compute", "comm", "sampling" (`sampling_seconds`)."""
    m, g, bpp = spec.resolve()
    shape = m.shape(bpp)
    b = np.asarray(b, dtype=np.float64)
    link_lat = g.link_latency if knobs.link_latency is None else knobs.link_latency
    common = dict(tp=spec.tp, eta_bw=knobs.eta_bw, eta_f=knobs.eta_f, link_bw=g.link_bw, context_tokens=None)
    core = hardware.step_seconds(shape, g.gpu, b, c0=0.0, link_latency=0.0, **common)
    if knobs.c_token:
        # the memory-bound side grows by layers·c_token per token; compute binds where it is larger
        t_mem = shape.weight_params_read(b) * shape.bytes_per_param / spec.tp / (knobs.eta_bw * g.gpu.hbm_bw)
        peak = g.gpu.flops * (2.0 if shape.bytes_per_param <= 1.0 else 1.0)
        t_cmp = 2.0 * shape.active_params * b / spec.tp / (knobs.eta_f * peak)
        t_bw = core - np.maximum(t_mem, t_cmp)
        core = np.maximum(t_mem + m.layers * knobs.c_token * b, t_cmp) + t_bw
    comm_lat = 2 * m.layers * link_lat if spec.tp > 1 else 0.0
    offload = spec.cpu_offload_gb * 1e9 / HOST_BW.get(g.key, HOST_BW_DEFAULT)
    fixed = knobs.step_s + m.layers * knobs.c0 + m.moe_layers * knobs.c_moe + offload
    return {
        "fixed": np.full_like(b, fixed),
        "weights_or_compute": core,
        "comm": np.full_like(b, comm_lat),
        "sampling": sampling_seconds(spec, knobs, b),
    }


def sampling_seconds(spec: VllmSpec, knobs: Knobs, b: np.ndarray) -> np.ndarray:
    """Seconds of top-p / top-k sampling in a step of `b` tokens, where the checkpoint's default sampling
    filters: c_vocab · vocab per wave of rows (≤ max_num_seqs rows sampled) over the GPU's SMs."""
    m, g, _ = spec.resolve()
    b = np.asarray(b, dtype=np.float64)
    if not (m.filtered_sampling and knobs.c_vocab):
        return np.zeros_like(b)
    rows = np.minimum(b, float(spec.max_num_seqs))
    return np.ceil(rows / g.sms) * m.vocab * knobs.c_vocab


def kv_token_seconds(spec: VllmSpec, knobs: Knobs) -> float:
    """Seconds per KV token held by the running requests, read once a step by attention (per GPU)."""
    m, g, _ = spec.resolve()
    from sim.vllm_kv import kv_bytes_per_token_per_gpu

    return float(kv_bytes_per_token_per_gpu(m, spec.tp) / (knobs.eta_kv * g.gpu.hbm_bw))


def cost_table(spec: VllmSpec, knobs: Knobs) -> specsched.CostTable:
    """The step cost of `spec` with `knobs`: a context-aware table, padded to vLLM's CUDA-graph sizes."""
    m, g, _ = spec.resolve()
    top = max(spec.max_num_batched_tokens, 8192)
    b = np.arange(1, top + 1, dtype=np.float64)
    secs = sum(step_parts(spec, knobs, b).values())
    name = f"vllm:{m.name}@{g.key}x{spec.tp}"
    table = specsched.CostTable.from_points(
        b.astype(np.int64),
        secs,
        mode="linear",
        layers=m.layers,
        name=name,
        request_seconds=knobs.request_s,
        kv_token_seconds=kv_token_seconds(spec, knobs),
    )
    if spec.cudagraphs:
        table = specsched.with_cudagraphs(
            table, max_capture_size=spec.max_capture, eager_factor=1.0, name=name
        )
    return table


def server_deployment(cfg: SimConfig) -> tuple[SimConfig, specsched.CostTable]:
    """(cfg with KV sized and tp set, the catalogue step cost) for a config with `server.model`: the knobs
    are the GPU's shipped ones (`shipped_knobs`); `server.kv_tokens`, when set, overrides vLLM's sizing."""
    spec = config_spec(cfg.server)
    kv = spec.kv_capacity()
    new = replace(cfg, server=replace(cfg.server, kv_tokens=kv, tp=spec.tp))
    return new, cost_table(spec, shipped_knobs(spec.gpu))


def config_spec(srv: ServerConfig) -> VllmSpec:
    """The `VllmSpec` of a `[server]` section with `model` set."""
    return VllmSpec(
        model=srv.model,
        gpu=srv.gpu or "h100",
        precision=srv.precision,
        tp=srv.tp or 1,
        dp=srv.replicas,
        gpu_memory_utilization=srv.gpu_memory_utilization,
        max_model_len=srv.max_model_len,
        max_num_seqs=srv.max_num_seqs,
        max_num_batched_tokens=srv.max_num_batched_tokens,
        cpu_offload_gb=srv.cpu_offload_gb,
        prefix_caching=srv.prefix_caching,
        async_scheduling=srv.async_scheduling,
        kv_tokens=srv.kv_tokens,
    )


def offload_blocks(spec: VllmSpec) -> int:
    """Prefix-cache blocks the CPU KV offload tier holds (the tp GPUs' host space together)."""
    if not spec.kv_offload_gib:
        return 0
    from sim.vllm_kv import kv_bytes_per_token_per_gpu

    m, _, _ = spec.resolve()
    per_block = kv_bytes_per_token_per_gpu(m, spec.tp) * BLOCK_SIZE
    return int(spec.kv_offload_gib * 2**30 // per_block)


def with_knobs(knobs: Knobs, **changes) -> Knobs:
    return replace(knobs, **changes)
