"""Predicted speedup of EAGLE-3 (chain of 3, flat 0.8 acceptance) on Llama-3.1-8B / one H100 over no
speculation at batch 2–64, from the catalogue and the shipped no-speculation knobs alone, beside published
measurements (issue 23 item 5). Nothing here is fitted to speculative runs.

A step of B decoding requests, each holding `CONTEXT` KV tokens:
    no speculation:  target step at B tokens (the vLLM deployment's catalogue cost, CUDA-graph padded)
    speculative:     draft pass (`drafter.model = eagle3`: 3 passes of its own shape) + target step at
                     B·(1 + 3) tokens + rejection sampling + the drafter's KV reads
    speedup = E[tokens per step] · no-spec step / speculative step, E = 1 + 0.8 + 0.8² + 0.8³ = 2.952.
Also printed: the old pricing (a draft pass = one target layer's share of the step, no head, no sampling).

Published (EAGLE-3 paper, arXiv:2503.01840, SGLang on one H100, LLaMA-Instruct-3.1-8B, MT-bench, real
acceptance, throughput over SGLang without speculation): 1.38× at batch 64 is in the abstract (read in this
session); the batch 2–32 entries are the paper's batch-size table as recalled, not re-read here.
"""

from __future__ import annotations

import numpy as np

from sim.vllm_deploy import VllmSpec, cost_table, shipped_knobs
from specsched import DraftCost
from specsched.catalog import get_gpu, get_model
from specsched.draft_shape import drafter_shape, own_draft_cost

GAMMA, ALPHA, CONTEXT = 3, 0.8, 512
BATCHES = (2, 4, 8, 16, 32, 64)
#: batch -> (speedup, how it was read)
PUBLISHED = {
    2: (1.81, "recalled"),
    4: (1.82, "recalled"),
    8: (1.62, "recalled"),
    16: (1.48, "recalled"),
    32: (1.32, "recalled"),
    64: (1.38, "abstract"),
}


def speedups(preset: str = "eagle3", gamma: int = GAMMA, alpha: float = ALPHA, context: int = CONTEXT):
    """{batch: (new speedup, old speedup)} for `preset` on Llama-3.1-8B / H100 with the shipped knobs."""
    spec = VllmSpec(model="llama3.1-8b", gpu="h100", max_num_seqs=256)
    knobs = shipped_knobs("h100")
    table = cost_table(spec, knobs)
    target, gpu = get_model("llama3.1-8b"), get_gpu("h100")
    own, draft_kv = own_draft_cost(drafter_shape(preset, target), target, gpu, knobs, gamma, 256 * gamma)
    old = DraftCost("autoregressive", 1.0)
    tokens = sum(alpha**i for i in range(gamma + 1))
    out = {}
    for b in BATCHES:
        ctx = b * context
        ar = float(table.step_seconds(b, b, ctx))
        verify = float(table.step_seconds(b * (1 + gamma), b, ctx))
        args = (np.array([b * gamma]), np.array([b]), np.array([gamma]), table)
        new = float(own.price(*args)[0]) + verify + draft_kv * ctx
        was = float(old.price(*args)[0]) + verify
        out[b] = (tokens * ar / new, tokens * ar / was)
    return out


def main() -> None:
    print(f"EAGLE-3 chain of {GAMMA}, flat {ALPHA} acceptance, Llama-3.1-8B on one H100, {CONTEXT} KV tokens")
    print("a request; shipped H100 knobs (no-speculation calibration); predicted, not fitted")
    print(f"{'batch':>5} {'predicted':>9} {'old pricing':>11} {'published':>9}  {'|err|':>6}  within 15 %")
    within = 0
    for b, (new, old) in speedups().items():
        pub, how = PUBLISHED[b]
        err = abs(new - pub) / pub * 100
        within += err <= 15
        print(f"{b:>5} {new:>8.2f}× {old:>10.2f}× {pub:>8.2f}×  {err:>5.1f}%  {'yes' if err <= 15 else 'no'}"
              f"  ({how})")  # fmt: skip
    print(f"within 15 %: {within} of {len(BATCHES)} batch sizes")
    for preset in ("eagle1", "mtp", "dflash", "dspark"):
        row = " ".join(f"{new:.2f}×" for new, _ in speedups(preset).values())
        print(f"  {preset:>6} at the same acceptance, batch {'/'.join(map(str, BATCHES))}: {row}")


if __name__ == "__main__":
    main()
