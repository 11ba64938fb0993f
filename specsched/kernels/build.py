"""Fit every GPU's kernel figures from the measured tables, with in-sample and leave-one-GPU-out errors.

Role: `build(root)` is what `bench/bench_kernels.py --write` ships as `specsched/data/kernel_figures.json`
(the figures the GPU rule and FP8 pricing read, `specsched.kernels.figures`), plus the error report it
prints. Besides the forms (`specsched.kernels.forms`) each GPU gets two direct measurements:

    floor      median time of the tables' tiny BF16 GEMMs (2·m·n·k ≤ 2²⁴ FLOPs, ≤ 1 MB of operands):
               a kernel's fixed cost under CUDA graphs (launch, prologue, drain) — the figure a per-layer
               fixed time of small kernels (`c0`) scales with
    knee       the GEMM knee's sharpness p (`_knee`): the step prices max(memory, compute) as their p-norm
    ar_large   the all-reduce's achieved fraction of link bandwidth on messages ≥ 8 MB (prefill chunks)
    ar_small   median time of the custom all-reduce on messages ≤ 64 Ki elements (128 kB), all GPU
               counts: the fixed cost of one collective (`link_latency`)

FP8 GEMMs (`fp8` per-tensor scales, `fp8_block` 128-wide block scales) are checked two ways: carried (the
BF16 figures with the FP8 datasheet rate and FP8 operand bytes, nothing fitted on FP8) and fitted.

May import: numpy, the standard library, `specsched.kernels.forms`, `specsched.kernels.tables`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specsched.kernels import forms, tables

TABLE_GPUS = tuple(tables.FOLDERS)  # the GPUs the kernel tables time
#: where the measured tables are, relative to the repository root's parent (the shared folder)
DEFAULT_ROOT = Path("../shared/measured/aiconfigurator")


def _floor(root: Path, gpu: str) -> float:
    c = tables._columns(root, gpu, "gemm")
    m, n, k = (c[x].astype(np.float64) for x in ("m", "n", "k"))
    tiny = (c["gemm_dtype"] == "bfloat16") & (2 * m * n * k <= 2.0**24) & ((m * k + n * k) * 2 <= 2.0**20)
    return float(np.median(c["latency"][tiny])) * 1e-3


def _ar_small(root: Path, gpu: str) -> float:
    c = tables._columns(root, gpu, "allreduce")
    small = (c["backend"] == "vllm_graph") & (c["message_size"] <= 65536)
    return float(np.median(c["latency"][small])) * 1e-3


def _ar_large(root: Path, gpu: str) -> float:
    """The all-reduce's achieved fraction of the link on prefill-sized messages (≥ 4 Mi elements, 8 MB:
    a chunk of ≥ 512 tokens of a 8k-wide model, past vLLM's custom-kernel limit): the median over those
    rows, all GPU counts, of 2·(n−1)/n · bytes / (seconds · link bytes/s). The fitted `allreduce` form
    spans 256 B–1 GB in one line and is ~20 % slow there (H100 TP 8, 128 MB: 0.84 ms vs 0.70 measured)."""
    s = tables.allreduce_shapes(root, gpu)
    big = s.bytes / (2.0 * (s.par / (s.par + 1.0))) >= 2.0 * 2.0**22  # message bytes from ring bytes
    return float(np.median(s.bytes[big] / (s.seconds[big] * s.bw)))


def _knee(root: Path, gpu: str, fig: dict) -> float:
    """The GEMM knee's sharpness p: t = (t_mem^p + t_cmp^p)^(1/p), with the GPU's fitted eta_bw and
    eta_f, minimising the mean |log error| over its layer-sized BF16 GEMMs (≥ 64 MB of weights, every
    m); p = ∞ is the hard roofline max, which the tables show 9–25 % fast at m = 128–512 (a GEMM of a
    few hundred rows neither streams its weights at full rate nor fills the tensor cores)."""
    s, _ = tables.gemm_shapes(root, gpu)
    c = tables._columns(root, gpu, "gemm")
    m, n, k = (c[x].astype(np.float64) for x in ("m", "n", "k"))
    keep = (c["gemm_dtype"] == "bfloat16") & (n * k >= 2.0**25)
    t = c["latency"][keep].astype(np.float64) * 1e-3
    m, n, k = m[keep], n[keep], k[keep]
    t_mem = 2.0 * (m * k + k * n + m * n) / (fig["eta_bw"] * s.bw)
    t_cmp = 2.0 * m * n * k / (fig["eta_f"] * s.peak)
    grid = np.arange(1.5, 8.01, 0.25)
    err = [np.mean(np.abs(np.log((t_mem**p + t_cmp**p) ** (1.0 / p) / t))) for p in grid]
    return float(grid[int(np.argmin(err))])


def fp8_check(root: Path, gpu: str, bf16: dict) -> dict:
    """Per FP8 GEMM dtype of `gpu`: {"rows", "carried_mape", "fit", "fit_mape", "decode_mape",
    "large_mape"} (% mean |error|; carried: the BF16 figures at the FP8 rate and bytes, no scaling
    overhead; fit: the `gemm_fp8` form; decode/large: the fitted form on each regime)."""
    out = {}
    for dtype in ("fp8", "fp8_block"):
        try:
            s, decode = tables.gemm_shapes(root, gpu, dtype)
        except Exception:
            continue
        fig = forms.fit("gemm_fp8", s)
        err = np.abs(forms.errors_pct("gemm_fp8", fig, s))
        out[dtype] = {
            "rows": int(s.seconds.size),
            "carried_mape": float(np.mean(np.abs(forms.errors_pct("gemm", bf16, s)))),
            "fit": fig,
            "fit_mape": float(err.mean()),
            "decode_mape": float(err[decode].mean()) if decode.any() else None,
            "large_mape": float(err[~decode].mean()) if (~decode).any() else None,
        }
    return out


def _kv_time_ratio(root: Path, gpu: str) -> float:
    """Median FP8-cache over BF16-cache decode-attention time of the same shape (≥ 256 MB of BF16 KV)."""
    c = tables._columns(root, gpu, "gen_attn")
    cols = ("batch_size", "num_heads", "num_key_value_heads", "head_dim", "step", "isl")
    keys = list(zip(*(c[x].tolist() for x in cols)))
    bf = {k: t for k, t, d in zip(keys, c["latency"], c["kv_cache_dtype"]) if d == "bfloat16"}
    ratios = [
        t / bf[k]
        for k, t, d in zip(keys, c["latency"], c["kv_cache_dtype"])
        if d == "fp8" and k in bf and k[0] * k[2] * k[3] * 4.0 * (k[4] + k[5]) >= 2.0**28
    ]
    return float(np.median(ratios))


def kv_fp8_check(root: Path, gpu: str, bf16: dict) -> dict:
    """Decode attention over an FP8 KV cache on `gpu`: {"rows", "carried_mape" (the BF16 figures with
    one byte a KV element), "fit" (the gen_attn form on the FP8 rows), "fit_mape", "time_ratio" (median
    FP8 over BF16 time of the same shape: what an FP8 cache saves)}; {} where the tables hold none."""
    try:
        s = tables.attention_shapes(root, gpu, "gen_attn", kv_dtype="fp8")
    except Exception:
        return {}
    fig = forms.fit("gen_attn", s)
    return {
        "rows": int(s.seconds.size),
        "carried_mape": float(np.mean(np.abs(forms.errors_pct("gen_attn", bf16, s)))),
        "fit": fig,
        "fit_mape": float(np.mean(np.abs(forms.errors_pct("gen_attn", fig, s)))),
        "time_ratio": _kv_time_ratio(root, gpu),
    }


def build(root: Path = DEFAULT_ROOT, gpus: tuple[str, ...] = TABLE_GPUS) -> dict:
    """{"gpus": {gpu: {kind: figures, "floor", "ar_small", "fp8": {...}}}, "errors": {kind: {gpu:
    {"in_mape", "logo_mape", "carried"}}}, "regimes": {gpu: {"decode", "large"}} (GEMM in-sample MAPE)}."""
    sheets = {g: tables.sheet(g) for g in gpus}
    per: dict[str, dict] = {g: {} for g in gpus}
    errors: dict[str, dict] = {}
    for kind in ("gemm", "ctx_attn", "gen_attn", "allreduce"):
        data = {g: tables.shapes(root, g, kind) for g in gpus}
        res = forms.leave_one_out(kind, data, sheets)
        errors[kind] = {}
        for g, r in res.items():
            per[g][kind] = r["fig"]
            errors[kind][g] = {k: r[k] for k in ("in_mape", "logo_mape", "carried")}
    regimes = {}
    for g in gpus:
        s, decode = tables.gemm_shapes(root, g)
        err = np.abs(forms.errors_pct("gemm", per[g]["gemm"], s))
        regimes[g] = {"decode": float(err[decode].mean()), "large": float(err[~decode].mean())}
        per[g]["floor"] = _floor(root, g)
        per[g]["ar_small"] = _ar_small(root, g)
        per[g]["ar_large"] = _ar_large(root, g)
        per[g]["knee"] = _knee(root, g, per[g]["gemm"])
        per[g]["fp8"] = fp8_check(root, g, per[g]["gemm"]) if sheets[g].fp8 else {}
    for g in gpus:
        per[g]["kv_fp8"] = kv_fp8_check(root, g, per[g]["gen_attn"])
    fp8 = {g: tables.gemm_shapes(root, g, "fp8")[0] for g in gpus if sheets[g].fp8}
    errors["gemm_fp8"] = {
        g: {k: r[k] for k in ("in_mape", "logo_mape", "carried")}
        for g, r in forms.leave_one_out("gemm_fp8", fp8, sheets).items()
    }
    return {"gpus": per, "errors": errors, "regimes": regimes}
