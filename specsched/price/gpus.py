"""The one table of GPUs and the one table of links they are wired with.

Role: every accelerator specbed prices a step on — its datasheet bandwidth and tensor throughput, the
memory a process sees, its streaming multiprocessors and boost clock, and the GPU-to-GPU link it has,
named from `LINKS` (the same table the disaggregated KV hand-off and the expert-parallel all-to-all take
their presets from, `specsched.comm`). A GPU row and a link row are plain data: add one without touching
a formula.

A transfer of `n` bytes over a link costs `latency + n / bandwidth` (bandwidth per GPU, one direction).
Link sources, per GPU:

- "nvlink-h100" / "nvlink-h200": NVLink 4, 900 GB/s bidirectional per GPU (H100/H200 datasheets) → 450 GB/s
  one way; 8 µs per small all-reduce step.
- "nvlink-h800": H800 SXM's NVLink is cut to 400 GB/s bidirectional (H800 datasheet) → 200 GB/s one way;
  DeepSeek measure ~160 GB/s of it in practice (DeepSeek-V3 technical report §3.2.2, arXiv 2412.19437;
  DeepEP README: "H800 (~160 GB/s NVLink maximum bandwidth)"). The preset takes the measured 160 GB/s.
- "nvlink-a100": NVLink 3, 600 GB/s bidirectional (A100 datasheet) → 300 GB/s one way; 10 µs.
- "nvlink-b200": NVLink 5, 1.8 TB/s bidirectional (HGX B200 spec sheet) → 900 GB/s one way; 6 µs
  (B300 has the same NVLink 5).
- "pcie4-x16": PCIe Gen4 x16, ~32 GB/s one way (an L40S or an RTX 4090 has no NVLink); 15 µs.
- "ib-400g": one ConnectX-7 400 Gb/s InfiniBand NIC per GPU, ~50 GB/s (DeepEP README: "CX7 InfiniBand
  400 Gb/s RDMA network card (~50 GB/s maximum bandwidth)"; DeepSeek-V3 report: "IB (50 GB/s)").
- "roce-400g": 400 Gb/s RoCE per GPU: the same 50 GB/s wire rate, a longer per-message latency (RoCE's
  congestion control and switch hops; stated, not measured: 2× IB's).

Latency per collective is the kernel's fixed cost, not the wire's: DeepEP's low-latency kernels on H800 +
CX7 take 163–194 µs for an FP8 dispatch of 128 tokens × top-8 × 7,168 (EP8–EP256) — 7.3 MB, ≈ 147 µs of
wire time at 50 GB/s — so ≈ 30–45 µs is fixed. The IB preset's 35 µs is read off that table, not fitted.

GPU figures are NVIDIA datasheet numbers (dense tensor throughput, without sparsity; FP8 runs at twice the
bf16 peak; the GeForce RTX 4090's from NVIDIA's Ada architecture whitepaper, its tensor figure the
FP32-accumulate one PyTorch's GEMMs run at, half its FP16-accumulate one) and the total memory `nvidia-smi`
reports (`visible_memory`, what vLLM's `gpu_memory_utilization` is a fraction of). `sm_clock` (max boost, Hz)
carries a calibrated GPU's fixed per-kernel times to another (`specsched.price.knobs.transferred_knobs`);
`sms` is the rows a one-block-per-row kernel runs at once. None where no source is at hand (B300's clock and
SMs): a rule that needs them then says so.

May import: the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from specsched.io.errors import InputError


@dataclass(frozen=True)
class Link:
    """A per-GPU link: `bandwidth` bytes/s one way, `latency` seconds per transfer (or per collective)."""

    name: str
    bandwidth: float
    latency: float
    note: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.bandwidth) and self.bandwidth > 0):
            raise ValueError(f"link {self.name}: bandwidth must be > 0 bytes/s, got {self.bandwidth!r}")
        if not (math.isfinite(self.latency) and self.latency >= 0):
            raise ValueError(f"link {self.name}: latency must be ≥ 0 s, got {self.latency!r}")

    def seconds(self, nbytes: float) -> float:
        """Seconds to move `nbytes` (0 bytes cost nothing: no transfer, no latency)."""
        if nbytes < 0:
            raise ValueError(f"link {self.name}: bytes must be ≥ 0, got {nbytes!r}")
        return 0.0 if nbytes == 0 else self.latency + nbytes / self.bandwidth


#: The one link table (module docstring for sources).
LINKS: dict[str, Link] = {
    "nvlink-h100": Link("nvlink-h100", 450e9, 8e-6, "NVLink 4, 900 GB/s bidirectional"),
    "nvlink-h200": Link("nvlink-h200", 450e9, 8e-6, "NVLink 4, 900 GB/s bidirectional"),
    "nvlink-h800": Link("nvlink-h800", 160e9, 8e-6, "H800 NVLink 400 GB/s bidi; ~160 GB/s measured"),
    "nvlink-a100": Link("nvlink-a100", 300e9, 10e-6, "NVLink 3, 600 GB/s bidirectional"),
    "nvlink-b200": Link("nvlink-b200", 900e9, 6e-6, "NVLink 5, 1.8 TB/s bidirectional"),
    "pcie4-x16": Link("pcie4-x16", 32e9, 15e-6, "PCIe Gen4 x16 (no NVLink)"),
    "ib-400g": Link("ib-400g", 50e9, 35e-6, "CX7 400 Gb/s InfiniBand per GPU (DeepEP README)"),
    "roce-400g": Link("roce-400g", 50e9, 70e-6, "400 Gb/s RoCE per GPU; latency assumed 2x IB"),
}


def get_link(link: str | Link) -> Link:
    if isinstance(link, Link):
        return link
    try:
        return LINKS[str(link).lower()]
    except KeyError:
        raise ValueError(f"unknown link {link!r} (built-in: {', '.join(LINKS)})") from None


@dataclass(frozen=True)
class GPU:
    """One accelerator: `hbm_bw` bytes/s, dense bf16 `flops` FLOP/s, `memory` bytes (datasheet);
    `visible_memory` bytes a process sees; `link` a key of `LINKS`; `sm_clock` Hz and `sms` (None: not
    sourced); `key` the table's key, `aliases` other names it is found by."""

    name: str
    hbm_bw: float
    flops: float
    memory: float
    key: str = ""
    visible_memory: float = 0.0  # 0: the datasheet memory
    link: str = "nvlink-h100"
    sm_clock: float | None = None
    sms: int | None = None
    source: str = ""
    aliases: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for f in ("hbm_bw", "flops", "memory"):
            if not getattr(self, f) > 0:
                raise ValueError(f"GPU {self.name}: {f} must be > 0, got {getattr(self, f)!r}")
        if not self.visible_memory:
            object.__setattr__(self, "visible_memory", self.memory)
        get_link(self.link)

    @property
    def link_bw(self) -> float:
        """GPU-to-GPU bytes/s one way over its own link."""
        return LINKS[self.link].bandwidth

    @property
    def link_latency(self) -> float:
        """Seconds per small all-reduce step over its own link."""
        return LINKS[self.link].latency

    @property
    def gpu(self) -> GPU:
        """Itself: the roofline's view and the catalogue's are one row (callers written for the old
        two-level catalogue read `entry.gpu.hbm_bw`)."""
        return self


def _gpu(key, name, hbm_bw, flops, memory, visible_mib, link, clock, sms, source, aliases=()):
    visible = 0.0 if visible_mib is None else visible_mib * 2**20
    return GPU(name, hbm_bw, flops, memory, key, visible, link, clock, sms, source, tuple(aliases))


#: The one GPU table. H800 and B300 carry their datasheet memory as visible memory (no nvidia-smi
#: figure at hand); B300's clock and SM count are not sourced here (None).
GPUS: dict[str, GPU] = {
    g.key: g
    for g in (
        _gpu("a100", "A100 SXM 80GB", 2.039e12, 312e12, 80e9, 81920, "nvlink-a100", 1.41e9, 108,
             "NVIDIA A100 datasheet (2021): 2,039 GB/s HBM2e, 312 TFLOP/s dense BF16, NVLink 600 GB/s; "
             "nvidia-smi total 81,920 MiB; max boost 1,410 MHz; 108 SMs",
             ("a100-80gb", "a100-sxm", "a100_80gb", "a100-80g")),
        _gpu("a100-40gb", "A100 SXM 40GB", 1.555e12, 312e12, 40e9, None, "nvlink-a100", 1.41e9, 108,
             "NVIDIA A100 datasheet (2021), 40GB column: 1,555 GB/s HBM2, 312 TFLOP/s dense BF16, NVLink "
             "600 GB/s, the 80 GB part's GA100 die (1,410 MHz boost, 108 SMs); datasheet memory as visible "
             "memory (no nvidia-smi figure at hand)", ("a100-sxm-40gb", "a100_40gb", "a100-40g")),
        _gpu("h100", "H100 SXM", 3.35e12, 989e12, 80e9, 81559, "nvlink-h100", 1.98e9, 132,
             "NVIDIA H100 datasheet: 3.35 TB/s HBM3, 989 TFLOP/s dense BF16 (1,979 FP8), NVLink 900 GB/s; "
             "nvidia-smi total 81,559 MiB; max boost 1,980 MHz; 132 SMs",
             ("h100-80gb", "h100-sxm", "h100-sxm5", "h100_80gb")),
        _gpu("h200", "H200 SXM", 4.8e12, 989e12, 141e9, 143771, "nvlink-h200", 1.98e9, 132,
             "NVIDIA H200 datasheet: 4.8 TB/s HBM3e, 141 GB, H100 compute; nvidia-smi total 143,771 MiB; "
             "max boost 1,980 MHz (GH100, as H100)", ("h200-141gb", "h200-sxm")),
        _gpu("b200", "B200 SXM", 8.0e12, 2.25e15, 180e9, 183359, "nvlink-b200", 1.965e9, 148,
             "NVIDIA HGX B200 spec sheet: 8 TB/s HBM3e, 2.25 PFLOP/s dense BF16, NVLink 5 1.8 TB/s, "
             "180 GB (DGX B200: 1,440 GB over 8 GPUs); nvidia-smi total 183,359 MiB; boost ~1,965 MHz "
             "(reported; not on the spec sheet)", ("b200-180gb",)),
        _gpu("b300", "B300 SXM", 8.0e12, 2.25e15, 270e9, None, "nvlink-b200", None, None,
             "NVIDIA HGX B300 datasheet (Blackwell Ultra): 8 GPUs with 2.1 TB HBM3e at 64 TB/s in all "
             "(8 TB/s, ~270 GB each) and 36 PFLOPS BF16 with sparsity (2.25 PFLOPS dense per GPU; FP8 "
             "twice that); NVLink 5"),
        _gpu("h800", "H800 SXM", 3.35e12, 989e12, 80e9, None, "nvlink-h800", 1.98e9, 132,
             "NVIDIA H800 SXM5 (the export variant DeepSeek serves on): H100 SXM's HBM3 (3.35 TB/s, "
             "80 GB), tensor throughput (989 TFLOP/s dense BF16, 1,979 FP8) and GH100 die; NVLink cut to "
             "400 GB/s bidirectional"),
        _gpu("l40s", "L40S", 864e9, 362e12, 48e9, 46068, "pcie4-x16", 2.52e9, 142,
             "NVIDIA L40S datasheet: 864 GB/s GDDR6, 362 TFLOP/s dense BF16, 48 GB, PCIe Gen4 x16 (no "
             "NVLink); nvidia-smi total 46,068 MiB; max boost 2,520 MHz; 142 SMs", ("l40s-48gb",)),
        _gpu("rtx4090", "GeForce RTX 4090", 1.008e12, 165.2e12, 24e9, 24564, "pcie4-x16", 2.52e9, 128,
             "NVIDIA Ada GPU architecture whitepaper (v2.01), GeForce RTX 4090 column: AD102 with 128 SMs, "
             "2,520 MHz boost, 24 GB GDDR6X at 1,008 GB/s, 165.2 TFLOP/s dense FP16/BF16 tensor with FP32 "
             "accumulate (PyTorch's GEMMs; 330.3 with FP16 accumulate), PCIe Gen4 x16, no NVLink; "
             "nvidia-smi total 24,564 MiB (printouts of the card, not NVIDIA's)",
             ("rtx-4090", "geforce-rtx-4090", "rtx4090-24gb")),
    )
}  # fmt: skip

#: GPUs without measured kernel tables and the measured GPU of the same die whose kernel efficiencies they
#: take (`specsched.kernels.figures.gpu_figures`): an efficiency is a fraction of the GPU's own peak (HBM,
#: tensor, link), so a sibling on the same die with other memory, clocks or links keeps it and gets its own
#: datasheet peaks. A100 40GB: GA100 as the 80 GB part (HBM2 1,555 vs HBM2e 2,039 GB/s); H800: GH100 as
#: H100 (NVLink cut to 400 GB/s); RTX 4090: AD102 as the L40S (GDDR6X 1,008 vs GDDR6 864 GB/s, 128 of its
#: 142 SMs, the GeForce's half-rate FP32-accumulate tensor peak: 165.2 vs 362 TFLOP/s — the efficiencies are
#: fractions of those peaks, an assumption the L40S tables cannot check). B300 (Blackwell Ultra, a revised
#: die with no sourced clock) is not carried.
SAME_DIE = {"a100-40gb": "a100", "h800": "h100", "rtx4090": "l40s"}

_GPU_INDEX = {k: g for k, g in GPUS.items()}
_GPU_INDEX.update({a: g for g in GPUS.values() for a in g.aliases})


def find_gpu(name: str) -> GPU | None:
    """The GPU `name` names (key or alias, any case), else None."""
    return _GPU_INDEX.get(name.strip().lower()) if isinstance(name, str) else None


def get_gpu(gpu: str | GPU, *, field: str | None = None) -> GPU:
    """The GPU `gpu` names (a `GPU` passes through); InputError naming `field` if the table lacks it."""
    if isinstance(gpu, GPU):
        return gpu
    found = find_gpu(gpu)
    if found is None:
        raise InputError(f"unknown gpu {gpu!r} (catalogue: {', '.join(GPUS)})", field=field)
    return found
