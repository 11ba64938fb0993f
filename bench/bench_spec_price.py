"""Predicted speedup of EAGLE-3 (chain of 3) on Llama-3.1-8B / one H100 over no speculation at batch 2–64,
from the catalogue, the shipped no-speculation knobs and the engine's sourced step terms alone, beside the
EAGLE-3 paper's measurements (issue 23 item 5). Nothing here is fitted to speculative runs.

A step of B decoding requests, each holding `CONTEXT` KV tokens:
    no speculation:  target step at B tokens (the vLLM deployment's catalogue cost, CUDA-graph padded)
    speculative:     draft step (`drafter.model = eagle3`, `drafter.engine`: the first pass over the B·4
                     verified positions, 2 more over B, the engine's exposed host work) + target step at
                     B·(1 + 3) tokens + rejection sampling + the drafter's KV reads
    speedup = E[tokens per step] · no-spec step / speculative step.
Acceptance, two settings (the bench says which produced which column):
    flat:  0.8 at every position (the issue's setting), E = 1 + 0.8 + 0.8² + 0.8³ = 2.952;
    vLLM:  measured per-position survival 0.7296, 0.5208, 0.3545 (E = 2.605): vLLM's EAGLE-3 regression
           baseline, Llama-3.1-8B-Instruct + RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3, MT-bench
           (philschmid/mt-bench, 80 prompts), T = 0, 3 speculative tokens
           (vllm tests/v1/spec_decode/test_acceptance_length.py) — an EAGLE-3 drafter, not the paper's own.

Published (EAGLE-3 paper, arXiv:2503.01840v3, Table 3, read in full this session): SGLang v0.4.4, one
H100, LLaMA-Instruct-3.1-8B, MT-bench, chain of 3 (no tree), throughput over SGLang without speculation.
"""

from __future__ import annotations

import numpy as np

from sim.vllm_deploy import VllmSpec, cost_table, shipped_knobs
from specsched import DraftCost
from specsched.catalog import get_gpu, get_model
from specsched.draft_shape import drafter_shape, own_draft_cost
from specsched.spec_engine import EAGER_OP_S

GAMMA, CONTEXT = 3, 512
#: batch -> EAGLE-3 speedup, arXiv:2503.01840v3 Table 3 (SGLang v0.4.4, H100, chain of 3)
PUBLISHED = {2: 1.81, 4: 1.82, 8: 1.62, 16: 1.48, 24: 1.39, 32: 1.32, 48: 1.38, 56: 1.34, 64: 1.38}
#: per-position survival (cumulative acceptance) settings
FLAT = tuple(0.8 ** (i + 1) for i in range(GAMMA))
VLLM_MEASURED = (0.7296, 0.5208, 0.3545)


def speedups(
    preset: str = "eagle3",
    engine: str | None = "sglang",
    survival=VLLM_MEASURED,
    *,
    gamma: int = GAMMA,
    context: int = CONTEXT,
    op_s: float = EAGER_OP_S,
) -> dict[int, float]:
    """{batch: speedup} for `preset` on Llama-3.1-8B / H100 with the shipped knobs; engine None: the
    pricing before engines (every draft pass over the drafting requests, no host terms)."""
    spec = VllmSpec(model="llama3.1-8b", gpu="h100", max_num_seqs=256)
    knobs = shipped_knobs("h100")
    table = cost_table(spec, knobs)
    target, gpu = get_model("llama3.1-8b"), get_gpu("h100")
    shape = drafter_shape(preset, target)
    own, draft_kv = own_draft_cost(shape, target, gpu, knobs, gamma, 256 * gamma, engine=engine, op_s=op_s)
    tokens = 1.0 + sum(survival[:gamma])
    out = {}
    for b in PUBLISHED:
        ctx = b * context
        ar = float(table.step_seconds(b, b, ctx))
        verify = float(table.step_seconds(b * (1 + gamma), b, ctx))
        draft = float(own.price(np.array([b * gamma]), np.array([b]), np.array([gamma]), table)[0])
        out[b] = tokens * ar / (draft + verify + draft_kv * ctx)
    return out


def old_speedups(survival=FLAT) -> dict[int, float]:
    """The first pricing: a draft pass = one target layer's share of the step, no head, no sampling."""
    table = cost_table(VllmSpec(model="llama3.1-8b", gpu="h100", max_num_seqs=256), shipped_knobs("h100"))
    old, tokens = DraftCost("autoregressive", 1.0), 1.0 + sum(survival[:GAMMA])
    out = {}
    for b in PUBLISHED:
        ctx = b * CONTEXT
        ar, verify = (float(table.step_seconds(n, b, ctx)) for n in (b, b * (1 + GAMMA)))
        draft = float(old.price(np.array([b * GAMMA]), np.array([b]), np.array([GAMMA]), table)[0])
        out[b] = tokens * ar / (draft + verify)
    return out


def _row(label: str, got: dict[int, float]) -> tuple[str, float]:
    errs = [abs(got[b] - p) / p * 100 for b, p in PUBLISHED.items()]
    cells = " ".join(f"{got[b]:5.2f}" for b in PUBLISHED)
    return f"{label:<36} {cells}   worst {max(errs):5.1f}%", max(errs)


def main() -> None:
    print(f"EAGLE-3 chain of {GAMMA}, Llama-3.1-8B on one H100, {CONTEXT} KV tokens a request; shipped H100")
    print("knobs (no-speculation calibration) + engine terms (specsched.spec_engine); predicted, not fitted")
    print(f"{'':<36} " + " ".join(f"{'b' + str(b):>5}" for b in PUBLISHED))
    print(f"{'published (Table 3, SGLang v0.4.4)':<36} " + " ".join(f"{p:5.2f}" for p in PUBLISHED.values()))
    main_row = speedups("eagle3", "sglang", VLLM_MEASURED)
    rows = [
        ("sglang, vLLM-measured acceptance", main_row),
        ("sglang, flat 0.8", speedups("eagle3", "sglang", FLAT)),
        ("vllm engine, vLLM-measured acc.", speedups("eagle3", "vllm", VLLM_MEASURED)),
        ("no engine terms, flat 0.8", speedups("eagle3", None, FLAT)),
        ("old pricing (layer share), flat 0.8", old_speedups(FLAT)),
        ("sglang, vLLM acc., 5 µs an op", speedups("eagle3", "sglang", VLLM_MEASURED, op_s=5e-6)),
        ("sglang, vLLM acc., 20 µs an op", speedups("eagle3", "sglang", VLLM_MEASURED, op_s=20e-6)),
    ]
    for label, got in rows:
        print(_row(label, got)[0])
    print("|error| of the first row (sglang engine, vLLM-measured acceptance):")
    errs = {b: abs(main_row[b] - p) / p * 100 for b, p in PUBLISHED.items()}
    print("  " + "  ".join(f"b{b} {e:4.1f}%" for b, e in errs.items()))
    within = sum(e <= 15 for e in errs.values())
    worst = max(errs, key=errs.get)
    print(f"  worst {errs[worst]:.1f}% (b{worst}); within 15 %: {within} of {len(errs)}")


if __name__ == "__main__":
    main()
