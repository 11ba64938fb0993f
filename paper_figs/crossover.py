"""Crossover: throughput vs concurrency for no speculation, fixed k = 7 and DSpark (dspark.md §6 T5).

The vLLM DeepSeek-V4 report (ROCm, K = 7, ShareGPT, 512 output tokens) shows fixed K = 7 beating no
speculation at low load and falling below it at high load (256 concurrent), while adaptive verification stays
above both. It runs V4's own drafter (three MTP stages, dspark.md §4.4) with K = 7 drafts, so here the
drafter is DSpark's with 3 draft layers and γ = 7 — "DSpark-7": verified all the way (`fixed` k = 7) or by
Algorithm 1 (`dspark`), and with its draft depths planned too ("DSpark-7 adaptive", `policy.draft =
"adaptive"`, issue 14) — beside `ar` without a drafter and, for reference, the paper's production DSpark-5
(γ = 5, 3 layers, Algorithm 1), on the V4-Flash-like table, closed-loop concurrency 4–2048 on a decode
instance (`common.production_base`). The load runs past 512 because, with the EP all-to-all overlapped with
compute, a verify token costs only ~33 µs on that table and fixed k = 7 stays above no speculation until
~768–1024 requests (paper_figs/REPRODUCTION.md); full mode therefore raises the server's limits to 2048
running requests and 16384 verify tokens per step (8 per request at 2048). Past ~1,200 requests the
table's assumed 4096-token context per request (~101 MB of KV each, beside ~15 GB of weights) would no
longer fit in an H200's 141 GB (the simulated requests' own ≤ 528-token contexts do): read those loads as
the trend, not as a deployable batch.
Tiny mode keeps 4 / 64 / 256 and the default limits. summary.json: throughput per GPU per series and
concurrency, the first concurrency where fixed k = 7 falls below `ar`, each DSpark series' ratio to the
better of those two, and T5's numbers.

    python -m paper_figs.crossover [--tiny] [--out DIR] [--jobs N]

May import: matplotlib, the standard library, `paper_figs.common`.
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from paper_figs.common import parse_args, png, production_base, run_sweep_text, write_summary

NAME = "crossover"
METRIC = "throughput_tok_s_per_gpu"
PAPER_T5 = {
    "no spec": {"4": 382, "64": 4095, "128": 6341, "256": 8879},
    "fixed k=7": {"4": 970, "64": 6712, "128": 8779, "256": 7852},
    "adaptive": {"4": 902, "64": 7144, "128": 10356, "256": 13325},
}
LOADS = {  # closed-loop concurrency and requests per cell (≥ 3 generations of users from 64 up)
    False: (
        [4, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048],
        [240, 240, 240, 256, 384, 576, 768, 1152, 1536, 2304, 3072, 4608, 6144],
    ),
    True: ([4, 64, 256], [32, 256, 1024]),
}
#: full mode's server limits: every request at the top load verifies its 8 tokens (fixed k = 7)
FULL_LIMITS = {"max_num_seqs": 2048, "max_num_batched_tokens": 2048 * 8}


def sweep_text(tiny: bool) -> str:
    conc, reqs = LOADS[tiny]
    head = 'name = "crossover"\nset = ["cost.table=h200-v4flash"]\n'
    return (
        head
        + (production_base(tiny) if tiny else production_base(tiny, **FULL_LIMITS))
        + f"""
[[zip]]
label = ["no spec", "fixed k=7", "DSpark-7", "DSpark-5", "DSpark-7 adaptive"]
"drafter.name" = ["none", "dspark", "dspark", "dspark", "dspark"]
"drafter.gamma" = [0, 7, 7, 5, 7]
"drafter.layers" = ["none", 3, 3, 3, 3]
"policy.name" = ["ar", "fixed", "dspark", "dspark", "dspark"]
"policy.k" = ["none", 7, "none", "none", "none"]
"policy.draft" = ["full", "full", "full", "full", "adaptive"]

[[zip]]
"workload.concurrency" = {conc}
"workload.num_requests" = {reqs}
"""
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(NAME, argv, __doc__.splitlines()[0])
    rows, _ = run_sweep_text(sweep_text(args.tiny), args.out, args)
    tput: dict = {}
    for row in rows:
        tput.setdefault(row["series"], {})[str(row["config"]["workload"]["concurrency"])] = row["summary"][
            METRIC
        ]
    loads = sorted(tput["no spec"], key=int)
    below = [c for c in loads if tput["fixed k=7"][c] < tput["no spec"][c]]
    adaptive = ("DSpark-7", "DSpark-5", "DSpark-7 adaptive")
    ratio = {
        s: {c: tput[s][c] / max(tput["no spec"][c], tput["fixed k=7"][c]) for c in loads} for s in adaptive
    }
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for series, per in tput.items():
        ax.plot([int(c) for c in loads], [per[c] for c in loads], "o-", label=f"{series} (sim)")
    for series, per in PAPER_T5.items():
        ax.plot(
            [int(c) for c in per], list(per.values()), "x:", alpha=0.6, label=f"{series} (vLLM T5, tok/s)"
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent requests")
    ax.set_ylabel("output tok/s per GPU")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Crossover — fixed k=7 vs no speculation vs DSpark (V4-Flash-like)")
    fig.tight_layout()
    figure = {f"{NAME}.png": png(fig, dpi=120)}  # written with summary.json, swapped in whole
    write_summary(
        args,
        {
            "metric": METRIC,
            "throughput": tput,
            "fixed_below_ar_from": int(below[0]) if below else None,
            "dspark_over_best_of_ar_fixed": ratio,
            "paper_t5": PAPER_T5,
        },
        figure,
    )
    print(
        f"{'concurrency':>11} "
        + " ".join(f"{s:>10}" for s in tput)
        + "".join(f"  {s}/best" for s in adaptive)
    )
    for c in loads:
        cells = " ".join(f"{tput[s][c]:>10,.0f}" for s in tput)
        print(f"{c:>11} {cells}" + "".join(f"  {ratio[s][c]:>{len(s) + 5}.3f}" for s in adaptive))
    print(f"fixed k=7 below no-spec from concurrency: {below[0] if below else 'never'}")
    print(f"wrote {args.out / (NAME + '.png')} and {args.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
