"""The shipped per-GPU kernel figures, and what the price is built from them: the GPU rule, FP8, prefill.

Role: `specsched/data/kernel_figures.json` holds each GPU's fitted kernel figures (`bench/bench_kernels.py
--write`, from NVIDIA AIConfigurator's measured vLLM kernel tables, Apache-2.0: the file's `source` and
`licence`). The raw tables (11 MB of parquet) stay in ../shared; the figures are 12 kB. On them:

- `carry_knobs(knobs, source, target)` — THE GPU rule (`specbed cost check --gpu`, `specsched.price.vllm`'s
  shipped knobs): knobs calibrated on measured runs of `source`, for a `target` without measured runs.
  Efficiencies (`eta_bw`, `eta_f`, `eta_kv`) carry as they are, capped by what the target's measured
  kernels reach (decode-shaped GEMMs for `eta_bw`, large GEMMs for `eta_f`, decode attention for
  `eta_kv`: `efficiency_caps`): a stack's achieved share of a GPU's bandwidth is its own (its kernels,
  its overheads) unless the target's memory system or tensor cores cannot give it — the Splitwise steps,
  a 2023 stack, reach ≈ 0.78 of HBM on both H100 and A100, where the previous ratio rule (× the A100/H100
  kernel ratio, 0.86) priced its A100 TP 2 decodes 14 % slow. The custom all-reduce's achieved bandwidth
  ratio scales `link_bw`; per-kernel fixed times (`c0`, `c_moe`) × the ratio of the tiny-GEMM floor;
  collective latencies × the ratio of the small-message all-reduce; `c_token` × the floor ratio too (a
  running request's row a layer: per-sequence kernel set-up and small passes); `c_vocab`
  × the boost-clock ratio (no sampler kernel in the tables); host terms unchanged. `rule="clock"`:
  efficiencies unchanged, fixed times × clock.
- `fp8_knobs`, `fp8_rate`, `fp8_quant_seconds`, `kv_bytes_factor` — FP8 weights and KV cache per GPU.
- `prefill_seconds` — a prefill step summed from the kernel forms (GEMMs, context attention, all-reduces),
  the reference the step price's per-token form (`specsched.price.tokens`) is checked against.

May import: numpy, the standard library, `specsched.io.inputs`, `specsched.io.errors`,
`specsched.price.models`,
`specsched.kernels.forms`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.kernels.forms import KINDS, Shapes, predict
from specsched.price.gpus import SAME_DIE, get_gpu
from specsched.price.models import get_model

FILE = Path(__file__).resolve().parent.parent / "data" / "kernel_figures.json"
SOURCE = (
    "NVIDIA AIConfigurator (github.com/ai-dynamo/aiconfigurator, commit 095f58a, "
    "aic-core/src/aiconfigurator_core/systems/): measured vLLM kernel times under CUDA graphs"
)
LICENCE = (
    "Figures fitted from data licensed under the Apache License 2.0, copyright NVIDIA CORPORATION & "
    "AFFILIATES; licence text: specsched/data/LICENSE-aiconfigurator.txt"
)
#: dense FP8 tensor rate over BF16 (Hopper, Blackwell, Ada: 2; Ampere has none: vLLM runs FP8 weights
#: as W8A16 there, BF16 math on 1-byte weights)
FP8_RATE = {"a100": 1.0, "h100": 2.0, "h200": 2.0, "l40s": 2.0, "b200": 2.0}
_HOST = ("step_s", "frontend_s", "request_s", "eager_s")


def document(res: dict) -> dict:
    """The JSON the figures ship as, from `specsched.kernels.build.build`'s result."""
    return {
        "about": "per-GPU kernel figures (specsched.kernels.forms); bench/bench_kernels.py --write",
        "source": SOURCE,
        "licence": LICENCE,
        "gpus": res["gpus"],
        "errors": res["errors"],
        "regimes": res["regimes"],
    }


def load(path: str | Path = FILE) -> dict:
    """{gpu: figures} from the figures file; InputError naming the file and field when malformed."""
    doc = inputs.load_json(path, what="kernel figures")
    with inputs.reading(path, field="gpus"):
        gpus = inputs.mapping(doc["gpus"], file=str(path), field="gpus")
        for gpu, per in gpus.items():
            for kind in ("gemm", "gen_attn", "allreduce"):
                for name in KINDS[kind]:
                    v = float(per[kind][name])
                    if not 0 < v <= (1.0 if name.startswith("eta") else 1e-3):
                        raise InputError(f"out of range: {v!r}", file=str(path), field=f"{gpu}.{kind}.{name}")
            for name in ("floor", "ar_small"):
                if not 0 < float(per[name]) < 1e-3:
                    raise InputError(f"out of range: {per[name]!r}", file=str(path), field=f"{gpu}.{name}")
    return gpus


def gpu_figures(gpu: str, figs: dict | None = None) -> dict:
    """The figures of catalogue GPU `gpu`; InputError if the kernel tables do not cover it."""
    figs = load() if figs is None else figs
    key = get_gpu(gpu).key
    key = key if key in figs else SAME_DIE.get(key, key)  # a same-die sibling's efficiencies (gpus.py)
    if key not in figs:
        raise InputError(f"no measured kernel figures for {key!r} (have: {', '.join(figs)})", field="gpu")
    return figs[key]


def ratios(source: str, target: str, figs: dict | None = None) -> dict[str, float]:
    """Target over source, per figure the GPU rule uses (module docstring)."""
    figs = load() if figs is None else figs
    s, t = gpu_figures(source, figs), gpu_figures(target, figs)
    gs, gt = get_gpu(source), get_gpu(target)
    ar = lambda f, g: f["allreduce"]["eta_bw"] * g.link_bw  # noqa: E731 — achieved all-reduce bytes/s
    return {
        "eta_bw": t["gemm"]["eta_bw"] / s["gemm"]["eta_bw"],
        "eta_f": t["gemm"]["eta_f"] / s["gemm"]["eta_f"],
        "eta_kv": t["gen_attn"]["eta_bw"] / s["gen_attn"]["eta_bw"],
        "fixed": t["floor"] / s["floor"],
        "collective": t["ar_small"] / s["ar_small"],
        "link_bw": ar(t, gt) / ar(s, gs),
        "traffic": (s["gemm"]["eta_bw"] * gs.gpu.hbm_bw) / (t["gemm"]["eta_bw"] * gt.gpu.hbm_bw),
        "clock": gs.sm_clock / gt.sm_clock,
    }


def carry_knobs(knobs: dict, source: str, target: str, *, rule: str = "kernels", figs=None) -> dict:
    """`knobs` (names of `specsched.price.vllm.Knobs` or of a `specbed cost fit` file) calibrated on `source`,
    carried to `target` by the GPU rule (module docstring); unknown names pass unchanged. Kernels rule:
    `link_latency` None (the catalogue's) is made the source's catalogue figure first."""
    if rule not in ("kernels", "clock"):
        raise InputError(f"unknown GPU rule {rule!r} (kernels, clock)", field="gpu_rule")
    out = dict(knobs)
    src, dst = get_gpu(source), get_gpu(target)
    if src.key == dst.key:
        return out
    if rule == "kernels" and "link_latency" in out and out["link_latency"] is None:
        out["link_latency"] = src.link_latency  # the clock rule leaves None: the target's catalogue figure
    if rule == "clock":
        r = {"eta_bw": 1.0, "eta_f": 1.0, "eta_kv": 1.0, "link_bw": 1.0, "clock": src.sm_clock / dst.sm_clock}
        r.update(fixed=r["clock"], traffic=r["clock"])
        r["collective"] = max(r["clock"], dst.link_latency / src.link_latency)
    else:
        r = ratios(source, target, figs)
    scale = {"c0": "fixed", "c_moe": "fixed", "c_token": "fixed", "c_vocab": "clock",
             "link_latency": "collective", "hop_latency": "collective", "link_bw": "link_bw"}  # fmt: skip
    if rule == "clock":
        scale.update(eta_bw="eta_bw", eta_f="eta_f", eta_kv="eta_kv")
    else:  # an efficiency carries as it is, up to what the target's measured kernels reach
        caps = efficiency_caps(target, figs)
        for name in ("eta_bw", "eta_f", "eta_kv"):
            if out.get(name) is not None:
                out[name] = min(out[name], caps[name])
    for name, which in scale.items():
        if out.get(name) is not None:
            out[name] = out[name] * r[which]
            if name.startswith("eta"):
                out[name] = min(out[name], 1.0)
    return out


def efficiency_caps(gpu: str, figs=None) -> dict[str, float]:
    """What vLLM's measured kernels reach on `gpu`, per efficiency knob: `eta_bw` its decode-shaped
    GEMMs' share of HBM, `eta_f` its large GEMMs' share of tensor peak, `eta_kv` its decode attention's
    share of HBM."""
    per = gpu_figures(gpu, figs)
    return {
        "eta_bw": per["gemm"]["eta_bw"],
        "eta_f": per["gemm"]["eta_f"],
        "eta_kv": per["gen_attn"]["eta_bw"],
    }


def carry_dataclass(knobs, source: str, target: str, *, rule: str = "kernels"):
    """`carry_knobs` on a frozen dataclass of knobs (`specsched.price.vllm.Knobs`): the same type back."""
    fields = {k: v for k, v in vars(knobs).items()}
    return replace(knobs, **carry_knobs(fields, source, target, rule=rule))


# -- FP8 --------------------------------------------------------------------------------------------------


def fp8_rate(gpu: str) -> float:
    """Dense FP8 tensor FLOP/s over BF16 on `gpu` (1 where FP8 runs as weight-only W8A16); a GPU without its
    own entry takes its same-die sibling's (`SAME_DIE`: the RTX 4090's Ada tensor cores, like the L40S's, run
    FP8 at twice BF16 with FP32 accumulate, 330.3 vs 165.2 TFLOP/s in the Ada whitepaper)."""
    key = get_gpu(gpu).key
    return FP8_RATE.get(key, FP8_RATE.get(SAME_DIE.get(key, key), 1.0))


def kv_bytes_factor(kv_cache_dtype: str | None, gpu: str | None = None, figs=None) -> float:
    """Decode attention's KV read time over a BF16 cache's: 1 unless `kv_cache_dtype` is an FP8 one
    (vLLM's fp8, fp8_e4m3, fp8_e5m2); then the median FP8/BF16 time of the same shapes in `gpu`'s
    measured decode-attention tables (half the bytes, read by kernels that dequantize as they go: H100
    0.75, B200 0.56 — not 0.5); 0.5, the bytes alone, where the tables time no FP8 cache (or no `gpu`)."""
    if not (kv_cache_dtype or "auto").lower().startswith("fp8"):
        return 1.0
    if gpu is None:
        return 0.5
    kv8 = gpu_figures(gpu, figs).get("kv_fp8") or {}
    return float(kv8.get("time_ratio", 0.5))


def fp8_knobs(knobs: dict, gpu: str, *, dtype: str = "fp8", figs=None) -> dict:
    """`knobs` calibrated on BF16 weights, for FP8 weights on `gpu`: `eta_bw`, `eta_f` × the ratio of
    the measured FP8 GEMMs' figures to the BF16 ones (eta_f then a fraction of the FP8 peak, bytes one
    per weight); unchanged where the tables hold no FP8 GEMM for `gpu` (A100)."""
    per = gpu_figures(gpu, figs)
    f8 = per.get("fp8", {}).get(dtype)
    out = dict(knobs)
    if not f8:
        return out
    for name in ("eta_bw", "eta_f"):
        if name in out:
            out[name] = min(1.0, out[name] * f8["fit"][name] / per["gemm"][name])
    return out


def fp8_terms(knobs: dict, model: str, gpu: str, tokens, *, tp: int = 1, kv_cache_dtype=None, figs=None):
    """Everything FP8 weights change in a vLLM step on `gpu`, for the step to apply (hooks:
    docs/notes/2026-12-02-kernels.md): {"knobs": `fp8_knobs`, "peak_factor": `fp8_rate` (the tensor
    rate the compute side runs at, 1 on A100), "quant_seconds": float64[n] `fp8_quant_seconds` at
    `tokens`, "kv_factor": `kv_bytes_factor(kv_cache_dtype, gpu)` (KV read time over a BF16 cache's)}."""
    return {
        "knobs": fp8_knobs(knobs, gpu, figs=figs),
        "peak_factor": fp8_rate(gpu),
        "quant_seconds": fp8_quant_seconds(model, gpu, tokens, tp=tp, figs=figs),
        "kv_factor": kv_bytes_factor(kv_cache_dtype, gpu, figs),
    }


def allreduce_seconds(model: str, gpu: str, tokens, *, tp: int = 1, figs=None) -> np.ndarray:
    """float64[n] seconds of a step's tensor-parallel all-reduces at `tokens` (two a layer of tokens ×
    hidden BF16 activations) by the measured custom all-reduce form: latency, plus 2(n−1)/n of the
    bytes at its achieved bandwidth — a per-token cost that does not shard with TP and is 0 at TP 1
    (issue 33 item 5: the measured form of what a TP-blind `c_token` stood in for)."""
    tokens = np.asarray(tokens, dtype=np.float64)
    if tp <= 1:
        return np.zeros_like(tokens)
    per = gpu_figures(gpu, figs)
    m, g = get_model(model), get_gpu(gpu)
    size = 2.0 * (tp - 1) / tp * tokens * m.hidden * 2.0
    ar = Shapes(size, np.zeros_like(tokens), g.link_bw, 1.0, par=np.full_like(tokens, tp - 1.0))
    return 2.0 * m.layers * predict("allreduce", per["allreduce"], ar)


def _layer_gemms(model: str, tp: int) -> list[tuple[float, float]]:
    """(n, k) of one decoder layer's projections on one of `tp` GPUs: qkv, o, gate+up, down."""
    m = get_model(model)
    qkv = (m.heads + 2 * m.kv_heads) * m.head_dim
    return [(qkv / tp, m.hidden), (m.hidden, m.heads * m.head_dim / tp),
            (2 * m.intermediate / tp, m.hidden), (m.hidden, m.intermediate / tp)]  # fmt: skip


def fp8_quant_seconds(model: str, gpu: str, tokens, *, tp: int = 1, dtype: str = "fp8", figs=None):
    """float64 seconds a step of `tokens` spends quantizing activations to FP8 (q · Σ m·k over the
    layers' GEMMs; the measured FP8 GEMMs' scaling overhead); 0 where `gpu` has no FP8 GEMM rows."""
    f8 = gpu_figures(gpu, figs).get("fp8", {}).get(dtype)
    tokens = np.asarray(tokens, dtype=np.float64)
    if not f8:
        return np.zeros_like(tokens)
    ks = sum(k for _, k in _layer_gemms(model, tp))
    return f8["fit"]["q"] * tokens * ks * get_model(model).layers


# -- prefill from the kernel forms (issue 33 item 5) ------------------------------------------------------


def prefill_parts(
    model: str, gpu: str, prompt: int, *, batch: int = 1, tp: int = 1, fp8: bool = False, figs=None
) -> dict:
    """GPU seconds of the kernels of one prefill step of `batch` prompts of `prompt` tokens on one of
    `tp` GPUs, by part: "gemm" (each layer's four projections, the gemm form, m = batch·prompt, n or k
    sharded by tp: their activation bytes hidden under compute once compute-bound), "attention" (causal,
    the ctx_attn form, heads/tp), "allreduce" (two a layer of the step's activations, tp > 1: the
    measured custom all-reduce form — vLLM hands messages over 8 MiB to NCCL, which the tables do not
    time, so above that this part is the custom kernel's time, an upper bound). No per-layer fixed
    host or small-kernel time (`c0`) and no LM head: what grows with the tokens. `fp8`: FP8 weights
    (the measured FP8 GEMMs' form: 1-byte weights, the FP8 rate, activation scaling)."""
    per = gpu_figures(gpu, figs)
    m, g = get_model(model), get_gpu(gpu)
    tokens = float(batch * prompt)
    f8 = per.get("fp8", {}).get("fp8") if fp8 else None
    if fp8 and not f8:
        raise InputError(f"no measured FP8 GEMMs for {g.key!r}", field="gpu")
    kind, fig, a, rate = (
        ("gemm_fp8", f8["fit"], 1.0, fp8_rate(gpu)) if f8 else ("gemm", per["gemm"], 2.0, 1.0)
    )
    gemm = 0.0
    for n, k in _layer_gemms(model, tp):
        s = Shapes(np.array([a * (tokens * k + k * n) + 2.0 * tokens * n]), np.array([2.0 * tokens * n * k]),
                   g.gpu.hbm_bw, g.gpu.flops * rate, act=np.array([tokens * k]))  # fmt: skip
        gemm += float(predict(kind, fig, s)[0])
    heads = m.heads / tp
    units = np.array([batch * heads * np.ceil(prompt / 128.0) / g.sms])
    flops = np.array([2.0 * batch * heads * m.head_dim * float(prompt) ** 2])
    moved = np.array([tokens * m.head_dim * 2.0 * (2.0 * heads + 4.0 * m.kv_heads / tp)])
    attn = Shapes(moved, flops, g.gpu.hbm_bw, g.gpu.flops, None, units)
    out = {"gemm": gemm, "attention": float(predict("ctx_attn", per["ctx_attn"], attn)[0]), "allreduce": 0.0}
    if tp > 1:
        size = np.array([2.0 * (tp - 1) / tp * tokens * m.hidden * 2.0])
        ar = Shapes(size, np.zeros(1), g.link_bw, 1.0, par=np.array([tp - 1.0]))
        out["allreduce"] = 2.0 * float(predict("allreduce", per["allreduce"], ar)[0])
    return {k: v * m.layers for k, v in out.items()}


def prefill_seconds(model: str, gpu: str, prompt: int, **kw) -> float:
    """The sum of `prefill_parts` (same keywords): the kernels' seconds of one prefill step."""
    return sum(prefill_parts(model, gpu, prompt, **kw).values())


def kernel_caps(gpu: str, figs=None) -> dict[str, float]:
    """Upper bounds an end-to-end fit's knobs on `gpu` keep (`specsched.fit.bounds`): eta_bw ≤ the
    decode-shaped GEMMs' bandwidth efficiency, eta_f ≤ the large GEMMs' tensor efficiency, link_bw ≤ the
    custom all-reduce's achieved bytes/s. InputError if the kernel tables do not cover `gpu`."""
    per = gpu_figures(gpu, figs)
    g = get_gpu(gpu)
    return {
        "eta_bw": per["gemm"]["eta_bw"],
        "eta_f": per["gemm"]["eta_f"],
        "link_bw": per["allreduce"]["eta_bw"] * g.link_bw,
    }
