"""The verify pass of a MoE target: the routed experts its R·(1 + K) tokens touch, named apart and checked.

Role: `verify_expert_seconds(model, gpu, knobs, tokens, decode_tokens, tp=, bpp=)` is the weight-stream
seconds a verify pass over `tokens` tokens spends on routed experts beyond a decode step over
`decode_tokens` (its R requests' one token each). It is a named part of the target's own step at the verify
tokens (`forward`, `specsched.price.vllm.step_parts` through `ModelShape.weight_params_read`), not a second
charge: the replay (`validate.spec_replay.step_parts`) shows it as `verify_moe`, inside `verify_forward`.

    touched(n)   = E · (1 − (1 − k/E)^n)                    experts a layer touched by n tokens routed
                                                            uniformly at random, k of E each
    verify_moe   = moe_layers · (touched(tokens) − touched(decode_tokens)) · expert_params · bpp
                   / tp / (eta_bw · BW)

The fused-MoE kernels of vLLM and SGLang (`fused_moe_kernel`, Triton; SGLang's is vLLM's, ported) read each
touched expert's weights once per step whatever its token count below a tile (`moe_align_block_size` pads
each expert's tokens to BLOCK_SIZE_M), so the cost follows the touched experts, not the tokens.
`MEASURED_FUSED_MOE` holds measured kernel times for one MoE layer of Qwen3-30B-A3B's shape (hidden 2048,
expert width 768, 128 experts, top-8, bf16) on H100 from NVIDIA AIConfigurator's vLLM 0.14 tables
(`h100_sxm/moe/vllm/0.14.0/moe_perf.parquet`, `vllm_fused_moe`, commit 095f58a; Apache-2.0,
`specsched/data/LICENSE-aiconfigurator.txt`): "balanced" routing (every token–expert pair on a distinct
expert: the most experts n tokens can touch) and "power_law_1.2" (skewed routing: fewer). Uniform random
routing — the price above — lies between the two; `kernel_check` prints the comparison
(`python -m specsched.price.moe_verify`). Not fitted to anything.

May import: numpy, the standard library, `specsched.price` (models, gpus, knobs).
"""

from __future__ import annotations

import numpy as np

from specsched.price.gpus import get_gpu
from specsched.price.knobs import shipped_knobs
from specsched.price.models import ModelShape, get_model

#: µs of one fused-MoE layer (Qwen3-30B-A3B shape, bf16, H100), by (moe TP, routing) → {tokens: µs}
#: (module docstring: AIConfigurator vLLM 0.14.0 moe_perf.parquet, vllm_fused_moe, EP 1)
MEASURED_FUSED_MOE: dict[tuple[int, str], dict[int, float]] = {
    (2, "balanced"): {1: 28.15, 4: 71.03, 8: 122.65, 16: 221.82, 32: 224.20, 64: 226.22},
    (2, "power_law_1.2"): {1: 28.58, 4: 65.85, 8: 94.12, 16: 116.13, 32: 195.85, 64: 206.87},
    (4, "balanced"): {1: 20.42, 4: 43.35, 8: 78.27, 16: 125.05, 32: 131.15, 64: 126.77},
    (4, "power_law_1.2"): {1: 19.78, 4: 40.60, 8: 58.01, 16: 71.28, 32: 114.17, 64: 116.92},
}
MEASURED_MODEL, MEASURED_GPU = "qwen3-30b-a3b", "h100"


def touched_experts(model: ModelShape, tokens) -> np.ndarray:
    """float64 expected experts a MoE layer touches over `tokens` tokens routed uniformly (0 for dense)."""
    n = np.asarray(tokens, dtype=np.float64)
    if not model.is_moe:
        return np.zeros_like(n)
    return model.experts * (1.0 - (1.0 - model.top_k / model.experts) ** n)


def verify_expert_seconds(
    model: ModelShape, gpu, knobs, tokens, decode_tokens, *, tp: int = 1, bpp: float | None = None
) -> float:
    """Seconds of routed-expert weights a verify pass over `tokens` tokens reads beyond a decode step over
    `decode_tokens` (module docstring); 0 for a dense model. `gpu`: a catalogue GPU (its `.gpu.hbm_bw`) or
    a bare GPU (`.hbm_bw`); `knobs`: has eta_bw; bpp: bytes a weight (None: the model's)."""
    if not model.is_moe:
        return 0.0
    extra = float(touched_experts(model, tokens) - touched_experts(model, decode_tokens))
    bw = getattr(gpu, "gpu", gpu).hbm_bw
    b = model.bytes_per_param if bpp is None else bpp
    return max(extra, 0.0) * model.moe_layers * model.expert_params * b / tp / (knobs.eta_bw * bw)


def kernel_check() -> list[dict]:
    """One row a (TP, tokens): the priced per-layer growth over one token (µs, uniform routing) beside the
    measured kernel's under balanced and power-law routing (`MEASURED_FUSED_MOE`)."""
    model, gpu, knobs = get_model(MEASURED_MODEL), get_gpu(MEASURED_GPU), shipped_knobs(MEASURED_GPU)
    rows = []
    for tp in sorted({tp for tp, _ in MEASURED_FUSED_MOE}):
        bal, skew = MEASURED_FUSED_MOE[(tp, "balanced")], MEASURED_FUSED_MOE[(tp, "power_law_1.2")]
        for n in sorted(bal):
            if n == 1:
                continue
            priced = 1e6 * verify_expert_seconds(model, gpu, knobs, n, 1, tp=tp) / model.moe_layers
            rows.append({"tp": tp, "tokens": n, "priced_us": priced, "balanced_us": bal[n] - bal[1],
                         "power_law_us": skew[n] - skew[1]})  # fmt: skip
    return rows


def main() -> int:
    """Print `kernel_check` (python -m specsched.price.moe_verify)."""
    print(f"{MEASURED_MODEL} MoE layer on {MEASURED_GPU}: growth over a 1-token step, µs a layer")
    print(f"{'tp':>3} {'tokens':>6} {'priced':>8} {'balanced':>9} {'power-law':>10}")
    for r in kernel_check():
        print(f"{r['tp']:3d} {r['tokens']:6d} {r['priced_us']:8.1f} {r['balanced_us']:9.1f} "
              f"{r['power_law_us']:10.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
