"""Read the measured vLLM kernel tables (NVIDIA AIConfigurator, Apache-2.0) into `forms.Shapes` per kind.

Role: the one reader of `../shared/measured/aiconfigurator/<gpu>/<op>/vllm/<version>/*.parquet` (layout:
that folder's README). Parquet needs `pyarrow`, imported only here and only when a table is read (the
refit in `bench/bench_kernels.py`); the shipped figures (`specsched/data/kernel_figures.json`) need
nothing but the standard library. Rows kept per kind (the shapes a vLLM step runs):

    gemm       bfloat16 (or the dtype asked), decode-shaped m ≤ 16 with n·k ≥ 2²³ (≥ 16 MB of weights:
               a transformer projection, larger than what L2 keeps between timed calls) and large
               m ≥ 1024, n, k ≥ 1024
    ctx_attn   bf16 KV cache, head_dim 128, isl ≥ 128 (bytes: Q read, O written, K and V read and
               written to the cache; parallel units: query tiles of 128 per SM)
    gen_attn   bf16 KV cache, head_dim 128, ≥ 256 MB of KV read (more than L2 holds); rows: batch·heads
    allreduce  bfloat16, CUDA-graph backend; `message_size` counts elements (the collector makes a bf16
               tensor of that many: aiconfigurator collector/collect_all_reduce.py, `get_input_shape_and_
               comm_size`), so a message is 2 bytes an element

May import: numpy, the standard library, `specsched.io.errors`, `specsched.price.models`,
`specsched.kernels.forms`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specsched.io.errors import InputError
from specsched.kernels.forms import Shapes, Sheet
from specsched.price.gpus import get_gpu

#: catalogue GPU -> (table folder, vLLM version used: the oldest the folder has, A100's being 0.14.0)
FOLDERS = {
    "a100": ("a100_sxm", "0.14.0"),
    "h100": ("h100_sxm", "0.14.0"),
    "h200": ("h200_sxm", "0.14.0"),
    "l40s": ("l40s", "0.14.0"),
    "b200": ("b200_sxm", "0.19.0"),
}
#: dense FP8 tensor rate as a multiple of BF16 (datasheets: Hopper, Blackwell and Ada 2×; Ampere none)
FP8_RATE = {"a100": 0.0, "h100": 2.0, "h200": 2.0, "l40s": 2.0, "b200": 2.0}
_FILES = {
    "gemm": ("gemm", "gemm_perf.parquet"),
    "ctx_attn": ("attention", "context_attention_perf.parquet"),
    "gen_attn": ("attention", "generation_attention_perf.parquet"),
    "allreduce": ("comm", "custom_allreduce_perf.parquet"),
}
_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0}


def sheet(gpu: str) -> Sheet:
    """The catalogue datasheet of `gpu` as the forms use it."""
    g = get_gpu(gpu)
    return Sheet(g.gpu.hbm_bw, g.gpu.flops, FP8_RATE.get(g.key, 0.0), g.sm_clock, g.link_bw, g.link_latency)


def _columns(root: Path, gpu: str, kind: str) -> dict[str, np.ndarray]:
    folder, version = FOLDERS[gpu]
    op, name = _FILES[kind]
    path = root / folder / op / "vllm" / version / name
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading the kernel tables needs pyarrow", file=str(path)) from None
    try:
        table = pq.read_table(path).to_pydict()
    except (OSError, ValueError) as err:
        raise InputError(f"unreadable kernel table ({str(err)[:80]})", file=str(path)) from None
    return {k: np.asarray(v) for k, v in table.items()}


def gemm_shapes(root: Path, gpu: str, dtype: str = "bfloat16") -> tuple[Shapes, np.ndarray]:
    """(the GEMM rows of `dtype` a step runs, bool[n] True where decode-shaped)."""
    c = _columns(root, gpu, "gemm")
    m, n, k = (c[x].astype(np.float64) for x in ("m", "n", "k"))
    decode = (m <= 16) & (n * k >= 2.0**23)
    large = (m >= 1024) & (n >= 1024) & (k >= 1024)
    keep = (c["gemm_dtype"] == dtype) & (decode | large)
    if not keep.any():
        raise InputError(f"no {dtype} GEMM rows", file=str(root / FOLDERS[gpu][0]))
    m, n, k = m[keep], n[keep], k[keep]
    a = _BYTES[dtype]
    sh = sheet(gpu)
    rate = 1.0 if dtype == "bfloat16" else sh.fp8
    return (
        Shapes(
            bytes=a * (m * k + k * n) + 2.0 * m * n,
            flops=2.0 * m * n * k,
            bw=sh.bw,
            peak=sh.flops * max(rate, 1e-9),
            seconds=c["latency"][keep].astype(np.float64) * 1e-3,
            act=m * k if a == 1.0 else None,
        ),
        decode[keep],
    )


def attention_shapes(root: Path, gpu: str, kind: str, kv_dtype: str = "bfloat16") -> Shapes:
    """Context (`ctx_attn`) or generation (`gen_attn`) attention rows with a `kv_dtype` KV cache
    (bfloat16, or fp8: one byte a KV element; the decode filter stays ≥ 256 MB of BF16-equivalent KV)."""
    c = _columns(root, gpu, kind)
    b, h, kvh, d = (
        c[x].astype(np.float64) for x in ("batch_size", "num_heads", "num_key_value_heads", "head_dim")
    )
    isl, step = c["isl"].astype(np.float64), c["step"].astype(np.float64)
    keep = (c["kv_cache_dtype"] == kv_dtype) & (d == 128)
    if not keep.any():
        raise InputError(f"no {kind} rows with a {kv_dtype} KV cache", file=str(root / FOLDERS[gpu][0]))
    ctx = step + isl
    # decode attention: ≥ 256 MB of KV read, more than any of these GPUs' L2 keeps between timed calls
    keep &= (isl >= 128) if kind == "ctx_attn" else (ctx * b * kvh * d * 4.0 >= 2.0**28)
    sh = sheet(gpu)
    sel = {k: v[keep] for k, v in dict(b=b, h=h, kvh=kvh, d=d, isl=isl, ctx=ctx).items()}
    flops = 2.0 * sel["b"] * sel["h"] * sel["d"] * sel["isl"] ** 2
    if kind == "ctx_attn":  # Q read and O written, K and V read and written to the cache (2 bytes each)
        kv = sel["b"] * sel["isl"] * sel["d"] * 2.0 * (2.0 * sel["h"] + 4.0 * sel["kvh"])
    else:
        kv = (
            sel["b"]
            * sel["kvh"]
            * sel["d"]
            * 2.0
            * _BYTES["fp8" if kv_dtype == "fp8" else "bfloat16"]
            * sel["ctx"]
        )
    if kind == "ctx_attn":  # query tiles per SM
        par = sel["b"] * sel["h"] * np.ceil(sel["isl"] / 128.0) / get_gpu(gpu).sms
    else:  # query rows: each sequence's heads (set-up, Q read, split-KV reduction, O write)
        par = sel["b"] * sel["h"]
    seconds = c["latency"][keep].astype(np.float64) * 1e-3
    return Shapes(kv, flops, sh.bw, sh.flops, seconds, par)


def allreduce_shapes(root: Path, gpu: str) -> Shapes:
    """Custom all-reduce rows (bf16, CUDA graphs): bytes = 2·(n−1)/n · message bytes (2 an element)."""
    c = _columns(root, gpu, "allreduce")
    keep = (c["allreduce_dtype"] == "bfloat16") & (c["backend"] == "vllm_graph")
    n = c["num_gpus"][keep].astype(np.float64)
    size = 2.0 * c["message_size"][keep].astype(np.float64)  # elements -> bf16 bytes
    sh = sheet(gpu)
    seconds = c["latency"][keep].astype(np.float64) * 1e-3
    return Shapes(2.0 * (n - 1) / n * size, np.zeros_like(n), sh.link_bw, 1.0, seconds, par=n - 1.0)


def shapes(root: Path, gpu: str, kind: str) -> Shapes:
    """The rows of one kind (`forms.KINDS`) for one GPU."""
    if kind == "gemm":
        return gemm_shapes(root, gpu)[0]
    if kind == "allreduce":
        return allreduce_shapes(root, gpu)
    return attention_shapes(root, gpu, kind)
