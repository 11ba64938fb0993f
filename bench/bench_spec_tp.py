"""Drafting under tensor parallelism and the draft-model drafter, as the vLLM version rows price them (issue
37): where the speculative step's seconds go for Llama-3.3-70B (the catalogue's `llama3.1-70b` shape) on
H100 at TP 2 / 4 / 8, EAGLE-3 (K = 3) and a separate Llama-3.2-1B drafting autoregressively (K = 3, 5).

A step of B requests, each holding `CONTEXT` KV tokens (`validate.spec_replay`'s steady state):
    target    the catalogue's vLLM step at B tokens (no speculation) and at B·(1 + K) (the verify pass)
    draft     `specsched.price.draft_shape.own_draft_cost` with the version row: the first pass over the
              B·(1 + K) verified positions, K − 1 later passes over B; each pass reads its weights sharded
              over the target's TP (vLLM V1 builds the drafter with the target's parallel config) and pays
              2 all-reduces a layer + the LM head's gather at the calibrated link latency, (layers + 1)·c0
              of per-kernel floor, and, where the version issues its passes from the host (vLLM ≤ 0.10),
              no less than its launches · op_s — every TP worker issues its own
    share     draft / (draft + verify): what drafting costs of the speculative step
No published vLLM measurement of a 70B target with an acceptance length was found this session (the
searches are named in docs/spec-arm.md), so these rows are a check of form, not of value: the draft share
grows with TP because the draft's fixed terms (launches, collectives, c0) do not shard while its weights do.
The one published measurement of the shares at TP 4 (SpecDecode-Bench's Figure 4, EAGLE on Llama-3-70B, no
seconds) is priced beside it by `bench.bench_spec_breakdown`.
`link_rows` prints EAGLE-3's draft share again at the kernel tables' measured small-message all-reduce
latency in place of the calibrated per-collective one (both arms), a sensitivity, not a second pricing.

May import: numpy, the standard library, specsched.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from specsched.draft_lm import get_draft_lm
from specsched.price import get_model
from specsched.price.draft_shape import drafter_shape, own_draft_cost
from specsched.price.knobs import shipped_knobs
from specsched.price.spec_engine import get_engine
from specsched.price.vllm import VllmSpec, cost_table

CONTEXT = 512
TARGET, GPU = "llama3.1-70b", "h100"


def step_split(shape, engine: str, tp: int, k: int, batch: int, *, link=None) -> tuple[float, float, float]:
    """(no-speculation step, verify pass, draft phase incl. its KV reads) seconds of one step; link: a
    per-collective latency for both the target's and the draft's collectives (None: the calibrated one)."""
    spec = VllmSpec(model=TARGET, gpu=GPU, tp=tp, max_num_seqs=256)
    knobs = shipped_knobs(GPU) if link is None else replace(shipped_knobs(GPU), link_latency=link)
    table = cost_table(spec, knobs)
    target, gpu, bpp = spec.resolve()
    eng = get_engine(engine)
    own, kv = own_draft_cost(shape, target, gpu, knobs, k, batch * k, tp=tp, bpp=bpp, engine=eng,
                             emitted=1.0 + 0.7 * k)  # fmt: skip
    ctx = batch * CONTEXT
    ar = float(table.step_seconds(batch, batch, ctx)) + eng.nospec_host_s
    verify = float(table.step_seconds(batch * (1 + k), batch, ctx)) + eng.nospec_host_s
    draft = float(own.price(np.array([batch * k]), np.array([batch]), np.array([k]), table)[0])
    return ar, verify, draft + (kv + own.verify_kv_s) * ctx


def rows() -> list[str]:
    """One line a (drafter, engine, TP, K, batch): the three parts in ms and the draft's share."""
    target = get_model(TARGET)
    drafters = {"eagle3": drafter_shape("eagle3", target), "llama3.2-1b": get_draft_lm("llama3.2-1b")}
    out = [f"{'drafter':<12} {'engine':<10} {'tp':>2} {'K':>2} {'B':>3} {'no-spec':>8} {'verify':>8} "
           f"{'draft':>7} {'share':>6}"]  # fmt: skip
    for name, shape in drafters.items():
        for engine in ("vllm-0.10", "vllm-0.15"):
            for tp in (2, 4, 8):
                for k in (3, 5) if name != "eagle3" else (3,):
                    for batch in (1, 16):
                        ar, verify, draft = step_split(shape, engine, tp, k, batch)
                        out.append(
                            f"{name:<12} {engine:<10} {tp:>2} {k:>2} {batch:>3} {ar * 1e3:8.2f} "
                            f"{verify * 1e3:8.2f} {draft * 1e3:7.2f} {draft / (draft + verify):6.1%}"
                        )
    return out


def link_rows() -> list[str]:
    """EAGLE-3's draft share at the calibrated link latency and at the kernel tables' measured small-message
    custom all-reduce latency (`specsched.kernels` figures' "allreduce" L), both arms alike."""
    from specsched.kernels.figures import gpu_figures

    measured = float(gpu_figures(GPU)["allreduce"]["L"])
    shape = drafter_shape("eagle3", get_model(TARGET))
    out = [f"link latency: calibrated {shipped_knobs(GPU).link_latency * 1e6:.1f} µs vs measured custom "
           f"all-reduce {measured * 1e6:.1f} µs (vllm-0.15, K = 3, B = 1)"]  # fmt: skip
    for tp in (4, 8):
        cells = []
        for link in (None, measured):
            _, verify, draft = step_split(shape, "vllm-0.15", tp, 3, 1, link=link)
            cells.append(f"draft {draft * 1e3:.2f} ms ({draft / (draft + verify):.1%})")
        out.append(f"  tp {tp}: " + " | ".join(cells))
    return out


def main() -> None:
    print(f"{TARGET} (Llama-3.3-70B's shape) on {GPU}, {CONTEXT} KV tokens a request; ms a step")
    print("\n".join(rows()))
    print("\n".join(link_rows()))


if __name__ == "__main__":
    main()
