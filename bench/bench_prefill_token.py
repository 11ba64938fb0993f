"""Issue 33 item 5: what the step price charges for a prefill, beside the measured kernels and the compute
bound, across prompt length, model, TP, GPU and precision.

    python -m bench.bench_prefill_token [--layer-knobs KNOBS.json] [--row-knobs KNOBS.json] [--tables ROOT]

Part 1 — Llama-3.1-70B on H100, one 8,192-token prefill step (no KV held before it), ms, TP 1/2/4/8, BF16
and FP8, by `specsched.price.vllm.step_parts` in three per-token forms:
- `layer`: `token_units` "layer" (the form shipped before: layers · c_token · B, TP-blind) with
  --layer-knobs (a `specbed vllm calibrate` file fitted with TOKEN_FORM = "layer"; default: the shipped
  knobs, fitted in the "row" form — so the column shows the form, not that fit);
- `shard`: "shard" (B · active params / tp / 2·10⁸, /2 with FP8 weights) with the same knobs;
- `row` (shipped): the kernel-table per-token terms (`specsched.price.tokens`) with --row-knobs
  (default: the shipped H100 knobs), and `+attn`: the same plus causal prefill attention
  (`tokens.prefill_attention_seconds`, which the simulated step does not charge yet);
- `kernels`: the measured-kernel sum (`specsched.kernels.prefill_parts`: GEMMs, context attention,
  all-reduces; FP8 by the tables' FP8 GEMM fit) and `bound`: the projections' FLOPs (2 · `matmul_params`
  · B / tp) plus the causal attention FLOPs at the datasheet peak (FP8 rate with FP8 weights), efficiency 1.

Part 2 — TTFT of one prompt alone (128, 1k, 4k, 8k tokens) as the price gives it: one prefill step
(`cost_table`, CUDA-graph padding and the request's row included) + causal attention + the API server's
`frontend_s`, for Llama-3.1-8B TP 1, Qwen3-32B TP 2, Llama-3.1-70B TP 4 and TP 8 on H100, H200 and B200
(the shipped knobs; H200 and B200 by the GPU rule), BF16 and FP8, beside `kernels` and `bound` (ms).

Part 3 (with --tables, needs pyarrow and ../shared/measured/aiconfigurator) — the GEMM knee checked
against vLLM's measured BF16 GEMMs: per GPU and m (tokens), the median of measured / priced time over
the tables' layer-sized GEMMs (n·k ≥ 2²⁵, ≥ 64 MB of weights), priced as the step prices a GEMM,
bytes at the GPU's shipped or carried eta_bw and FLOPs at its eta_f, combined by its measured knee
(`tokens.knee`, a p-norm) — 1.0 is exact; above 1 the price is fast.
"""

from __future__ import annotations

import argparse

import numpy as np

from specsched.kernels import fp8_rate, prefill_parts
from specsched.price import tokens
from specsched.price.knobs import Knobs, shipped_knobs
from specsched.price.vllm import VllmSpec, cost_table, step_parts
from validate.cli import load_knobs_file

MODEL, GPU, TOKENS = "llama3.1-70b", "h100", 8192
CASES = (("llama3.1-8b", 1), ("qwen3-32b", 2), ("llama3.1-70b", 4), ("llama3.1-70b", 8))
PROMPTS = (128, 1024, 4096, 8192)


def _knobs(path: str | None, gpu: str = GPU) -> Knobs:
    return shipped_knobs(gpu) if path is None else load_knobs_file(path)[1]


def attention(spec: VllmSpec, prompt: int) -> float:
    """Seconds of causal prefill attention of one `prompt`-token prompt on one GPU of `spec`."""
    m, g, _ = spec.resolve()
    pairs = tokens.attention_pairs(prompt)
    return float(tokens.prefill_attention_seconds(m, g, spec.tp, pairs, prompt=prompt))


def bound(spec: VllmSpec, prompt: int) -> float:
    """The compute bound: the prompt's projection FLOPs (`tokens.matmul_params`), its one LM-head row and
    its causal attention FLOPs at the datasheet peak (FP8 rate for the GEMMs with FP8 weights)."""
    m, g, bpp = spec.resolve()
    rate = fp8_rate(g.key) if bpp <= 1.0 else 1.0
    gemm = 2.0 * (tokens.matmul_params(m) * prompt + tokens.lm_head_params(m)) / spec.tp / (g.flops * rate)
    attn = 4.0 * m.heads * m.head_dim / spec.tp * float(tokens.attention_pairs(prompt)) * m.layers / g.flops
    return gemm + attn


def kernels(spec: VllmSpec, prompt: int) -> float:
    return sum(prefill_parts(spec.model, spec.gpu, prompt, tp=spec.tp, fp8=spec.precision == "fp8").values())


def forms_table(knobs: dict[str, Knobs]) -> None:
    print(f"{MODEL} on {GPU}, one prefill step of {TOKENS} tokens, ms")
    cols = ("layer", "shard", "row", "+attn", "kernels", "bound")
    print(f"{'precision':<9} {'tp':>3} " + " ".join(f"{c:>8}" for c in cols))
    b = np.array([float(TOKENS)])
    for precision in ("bf16", "fp8"):
        for tp in (1, 2, 4, 8):
            spec = VllmSpec(model=MODEL, gpu=GPU, tp=tp, precision=precision)
            t = {f: float(sum(step_parts(spec, knobs[f], b, token_form=f).values())[0]) for f in knobs}
            row = t["row"] + knobs["row"].c_token * spec.resolve()[0].layers
            print(
                f"{precision:<9} {tp:>3} {t['layer'] * 1e3:8.1f} {t['shard'] * 1e3:8.1f} {row * 1e3:8.1f} "
                f"{(row + attention(spec, TOKENS)) * 1e3:8.1f} {kernels(spec, TOKENS) * 1e3:8.1f} "
                f"{bound(spec, TOKENS) * 1e3:8.1f}"
            )


def ttft(spec: VllmSpec, knobs: Knobs, prompt: int) -> float:
    """Seconds from arrival to first token of one prompt alone, as the price gives it."""
    table = cost_table(spec, knobs)
    step = float(table.step_seconds(prompt, requests=1))
    return step + attention(spec, prompt) + knobs.frontend_s


def ttft_table(row_knobs: str | None) -> None:
    print("\nTTFT of one prompt alone, ms: price (step + attention + frontend) | kernels | bound")
    head = "".join(f"{p:>22}" for p in PROMPTS)
    print(f"{'gpu':<5} {'model':<13} {'tp':>2} {'prec':<4} {head}")
    for gpu in ("h100", "h200", "b200"):
        knobs = _knobs(row_knobs, gpu) if gpu == GPU else shipped_knobs(gpu)
        for model, tp in CASES:
            for precision in ("bf16", "fp8"):
                spec = VllmSpec(model=model, gpu=gpu, tp=tp, precision=precision)
                cells = "".join(
                    f"{ttft(spec, knobs, p) * 1e3:8.1f}|{kernels(spec, p) * 1e3:6.1f}|"
                    f"{bound(spec, p) * 1e3:6.1f}"
                    for p in PROMPTS
                )
                print(f"{gpu:<5} {model:<13} {tp:>2} {precision:<4} {cells}")


def knee_table(root: str) -> None:
    from pathlib import Path

    from specsched.kernels import tables
    from specsched.price.gpus import get_gpu

    print("\nGEMM knee: measured / priced, median over n·k ≥ 2^25 BF16 GEMMs, by m (tokens)")
    ms = (1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
    print(f"{'gpu':<5} " + "".join(f"{m:>7}" for m in ms))
    for gpu in ("a100", "h100", "h200", "b200"):
        c = tables._columns(Path(root), gpu, "gemm")
        m, n, k = (c[x].astype(np.float64) for x in ("m", "n", "k"))
        keep = (c["gemm_dtype"] == "bfloat16") & (n * k >= 2.0**25)
        knobs, g = shipped_knobs(gpu), get_gpu(gpu).gpu
        t_mem = 2.0 * (m * k + k * n + m * n) / (knobs.eta_bw * g.hbm_bw)
        t_cmp = 2.0 * m * n * k / (knobs.eta_f * g.flops)
        priced = tokens.smooth_max(t_mem, t_cmp, tokens.knee(get_gpu(gpu)))
        ratio = c["latency"].astype(np.float64) * 1e-3 / priced
        cells = [np.median(ratio[keep & (m == x)]) if np.any(keep & (m == x)) else np.nan for x in ms]
        print(f"{gpu:<5} " + "".join(f"{r:7.2f}" for r in cells))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layer-knobs", help="knobs fitted in the layer form (default: the shipped H100 knobs)")
    p.add_argument("--row-knobs", help="knobs fitted in the row form (default: the shipped H100 knobs)")
    p.add_argument("--tables", metavar="ROOT", help="the kernel tables' folder: also check the GEMM knee")
    args = p.parse_args(argv)
    layer = _knobs(args.layer_knobs)
    forms_table({"layer": layer, "shard": layer, "row": _knobs(args.row_knobs)})
    ttft_table(args.row_knobs)
    if args.tables:
        knee_table(args.tables)


if __name__ == "__main__":
    main()
