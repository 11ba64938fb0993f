"""Where a speculative step's time goes, priced beside SpecDecode-Bench's measured breakdown (issue 37):
drafting, verification, sampling and the rest, on vLLM v0.10.1, H100, K = 3: EAGLE on Llama-3.1-8B (one GPU)
and Llama-3-70B (TP 4), EAGLE-3 on Qwen3-8B, and a separate draft model (Llama-3.2-1B for the 70B at TP 4,
Qwen3-0.6B for Qwen3-8B), batch 1 / 64 / 128 / 512 — the one published measurement of how a step splits at
tensor parallelism, a check of the draft's share, not of its level (shares, not seconds, are published).
The draft-model runs are SpecDecode-Bench's own proposer (their vLLM fork's `v1/spec_decode/draft_model.py`),
priced with the vllm-0.10 row.

Measured: SpecDecode-Bench (Liu et al., arXiv:2601.11580), blog Figure 4 (github.com/SpecDecode-Bench/
specdecode-bench.github.io, assets/img/fig4.pdf at fb0e242: stacked bars, each normalised to 100 %; read off
the vector drawing, the segment heights over the bar's, to 0.1 point). Their runs: vLLM v0.10.1, 1 H100 for
8B, 4 with tensor parallelism for 70B, EAGLE heads yuhuili/EAGLE-LLaMA3.1-Instruct-8B and
yuhuili/EAGLE-LLaMA3-Instruct-70B, Qwen3-8B's EAGLE-3 head, K = 3, greedy. The workload of the profile is
not stated: the priced steps take the ShareGPT EAGLE acceptance of the train rows (2.31 tokens a step; an
EAGLE share moves < 1 point between the datasets' 2.31 and 2.65).

Priced (`validate.spec_replay.step_parts` with the shipped knobs, vllm-0.10): drafting = the draft passes +
the proposer's exposed preparation (`draft_host`; SpecDecode-Bench's profiler times `propose`, which holds
it), verification = the verify pass + its KV read, sampling = the rejection sampler, overhead = the step's
exposed host (`host`: SpecDecode-Bench's own 1.207 ms a step). Nothing here is fitted to Figure 4.

    python -m bench.bench_spec_breakdown

May import: the standard library, specsched, validate.
"""

from __future__ import annotations

import dataclasses

from specsched.spec_knobs import shipped_spec_knobs
from validate.spec_cases import read_cases
from validate.spec_replay import step_parts

#: SpecDecode-Bench Figure 4: (label, the case's fields, {batch: (drafting, verification, sampling,
#: overhead) %}) — panel (a) Llama-3.1-8B EAGLE, (b) Llama-3-70B EAGLE and draft model (Llama-3.2-1B),
#: (c) Qwen3-8B EAGLE-3 and draft model (Qwen3-0.6B)
MEASURED = (
    ("Llama-3.1-8B EAGLE", {"model": "meta-llama/Llama-3.1-8B-Instruct"},
     {1: (24.7, 62.8, 1.5, 11.0), 64: (13.4, 77.5, 0.7, 8.5), 128: (9.7, 81.9, 0.4, 8.0),
      512: (7.1, 85.6, 0.2, 7.0)}),
    ("Llama-3-70B TP4 EAGLE", {"model": "meta-llama/Meta-Llama-3-70B-Instruct", "tp": 4},
     {1: (12.1, 81.5, 0.7, 5.6), 64: (5.6, 90.3, 0.3, 3.9), 128: (4.0, 92.6, 0.2, 3.3),
      512: (3.2, 93.6, 0.1, 3.1)}),
    ("Llama-3-70B TP4 1B-draft", {"model": "meta-llama/Meta-Llama-3-70B-Instruct", "tp": 4,
                                  "drafter": "draft_model",
                                  "drafter_model": "meta-llama/Llama-3.2-1B-Instruct"},
     {1: (20.8, 72.1, 0.8, 6.3), 64: (7.2, 88.5, 0.3, 4.1), 128: (5.1, 91.3, 0.1, 3.5),
      512: (3.1, 93.7, 0.1, 3.1)}),
    ("Qwen3-8B EAGLE-3", {"model": "Qwen/Qwen3-8B", "drafter": "eagle3"},
     {1: (21.2, 65.8, 1.7, 11.4), 64: (12.1, 76.5, 0.8, 10.6), 128: (8.9, 80.4, 0.5, 10.2),
      512: (7.1, 83.8, 0.3, 8.9)}),
    ("Qwen3-8B 0.6B-draft", {"model": "Qwen/Qwen3-8B", "drafter": "draft_model",
                             "drafter_model": "Qwen/Qwen3-0.6B"},
     {1: (47.1, 41.9, 1.3, 9.7), 64: (24.9, 64.9, 0.7, 9.5), 128: (21.5, 69.2, 0.5, 8.9),
      512: (16.0, 76.1, 0.3, 7.6)}),
)  # fmt: skip
#: the train row whose setup the priced steps take (vLLM 0.10.1, H100, K = 3, greedy, ShareGPT EAGLE AL)
TEMPLATE = "sdb-vllm-l8b-sharegpt-e1-k3-b1"
PARTS = ("drafting", "verification", "sampling", "overhead")


def template_case():
    """The train row the priced steps start from (`TEMPLATE`), read once a run."""
    return {c.case_id: c for c in read_cases("validate/data/spec_train.csv")}[TEMPLATE]


def priced_shares(base, fields: dict, batch: int) -> tuple[float, ...]:
    """(drafting, verification, sampling, overhead) % of the priced speculative step of `base` with
    `fields` at `batch` (module docstring)."""
    case = dataclasses.replace(base, **fields, batch=batch)
    p = step_parts(case, shipped_spec_knobs())["spec"]
    parts = (p["draft"] + p["draft_host"], p["verify_forward"] + p["verify_kv"], p["reject"], p["host"])
    total = sum(parts)
    return tuple(100.0 * x / total for x in parts)


def main() -> None:
    print("speculative step by part, % (SpecDecode-Bench Figure 4, vLLM v0.10.1, H100, K = 3):")
    print(f"{'deployment':<26} {'batch':>5}  " + "  ".join(f"{n:>19}" for n in PARTS))
    print(f"{'':<26} {'':>5}  " + "  ".join(f"{'measured → priced':>19}" for _ in PARTS))
    worst: dict[str, float] = {}
    base = template_case()
    for name, fields, rows in MEASURED:
        for batch, measured in rows.items():
            priced = priced_shares(base, fields, batch)
            kind = "draft model" if fields.get("drafter") == "draft_model" else "EAGLE heads"
            worst[kind] = max(worst.get(kind, 0.0), abs(priced[0] - measured[0]))
            cells = "  ".join(f"{m:8.1f} → {q:8.1f}" for m, q in zip(measured, priced, strict=True))
            print(f"{name:<26} {batch:5d}  {cells}")
    print("drafting share, worst |priced − measured|: "
          + ", ".join(f"{k} {v:.1f} points" for k, v in worst.items()))  # fmt: skip


if __name__ == "__main__":
    main()
