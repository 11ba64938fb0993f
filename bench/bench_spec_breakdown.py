"""Where a speculative step's time goes, priced beside SpecDecode-Bench's measured breakdown (issue 37):
drafting, verification, sampling and the rest, on vLLM v0.10.1, H100, EAGLE (K = 3), Llama-3.1-8B on one GPU
and Llama-3-70B at TP 4, batch 1 / 64 / 128 / 512 — the one published measurement of how a step splits at
tensor parallelism, and a check of the draft's share, not of its level (shares, not seconds, are published).

Measured: SpecDecode-Bench (Liu et al., arXiv:2601.11580), blog Figure 4 (github.com/SpecDecode-Bench/
specdecode-bench.github.io, assets/img/fig4.pdf at fb0e242: stacked bars, each normalised to 100 %; read off
the vector drawing, the segment heights over the bar's, to 0.1 point). Their runs: vLLM v0.10.1, 1 H100 for
8B, 4 with tensor parallelism for 70B, EAGLE heads yuhuili/EAGLE-LLaMA3.1-Instruct-8B and
yuhuili/EAGLE-LLaMA3-Instruct-70B, K = 3, greedy. The workload of the profile is not stated: the priced steps
take the ShareGPT EAGLE acceptance of the train rows (2.31 tokens a step; a share moves < 1 point between
the datasets' 2.31 and 2.65).

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

#: SpecDecode-Bench Figure 4, EAGLE bars:
#: {(model, tp): {batch: (drafting, verification, sampling, overhead) %}}
MEASURED = {
    ("meta-llama/Llama-3.1-8B-Instruct", 1): {
        1: (24.7, 62.8, 1.5, 11.0), 64: (13.4, 77.5, 0.7, 8.5), 128: (9.7, 81.9, 0.4, 8.0),
        512: (7.1, 85.6, 0.2, 7.0)},
    ("meta-llama/Meta-Llama-3-70B-Instruct", 4): {
        1: (12.1, 81.5, 0.7, 5.6), 64: (5.6, 90.3, 0.3, 3.9), 128: (4.0, 92.6, 0.2, 3.3),
        512: (3.2, 93.6, 0.1, 3.1)},
}  # fmt: skip
#: the train row whose setup the priced steps take (vLLM 0.10.1, H100, EAGLE K = 3, greedy, ShareGPT AL)
TEMPLATE = "sdb-vllm-l8b-sharegpt-e1-k3-b1"
PARTS = ("drafting", "verification", "sampling", "overhead")


def priced_shares(model: str, tp: int, batch: int) -> tuple[float, ...]:
    """(drafting, verification, sampling, overhead) % of the priced speculative step (module docstring)."""
    base = {c.case_id: c for c in read_cases("validate/data/spec_train.csv")}[TEMPLATE]
    case = dataclasses.replace(base, model=model, tp=tp, batch=batch)
    p = step_parts(case, shipped_spec_knobs())["spec"]
    parts = (p["draft"] + p["draft_host"], p["verify_forward"] + p["verify_kv"], p["reject"], p["host"])
    total = sum(parts)
    return tuple(100.0 * x / total for x in parts)


def main() -> None:
    print("speculative step by part, % (SpecDecode-Bench Figure 4, vLLM v0.10.1, H100, EAGLE K = 3):")
    print(f"{'deployment':<22} {'batch':>5}  " + "  ".join(f"{n:>19}" for n in PARTS))
    print(f"{'':<22} {'':>5}  " + "  ".join(f"{'measured → priced':>19}" for _ in PARTS))
    worst = 0.0
    for (model, tp), rows in MEASURED.items():
        name = ("Llama-3.1-8B" if "8B" in model else "Llama-3-70B") + f" TP {tp}"
        for batch, measured in rows.items():
            priced = priced_shares(model, tp, batch)
            worst = max(worst, abs(priced[0] - measured[0]))
            cells = "  ".join(f"{m:8.1f} → {q:8.1f}" for m, q in zip(measured, priced, strict=True))
            print(f"{name:<22} {batch:5d}  {cells}")
    print(f"drafting share: worst |priced − measured| {worst:.1f} points")


if __name__ == "__main__":
    main()
