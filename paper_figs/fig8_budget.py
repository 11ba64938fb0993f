"""Fig. 8: mean verify budget per request (1 + ℓ) against concurrency — DSpark adapts, MTP-1 stays at 2.

DSpark-5 (γ = 5, 3-layer drafter; Algorithm 1 and the stale-2 production variant) and MTP-1 on the V4-Flash-
and V4-Pro-like cost tables, closed-loop concurrency from 10 to 300 on a decode instance
(`common.production_base`). The metric is the simulator's `mean_verify_tokens_per_request_step`. Paper
(dspark.md §4.4): ≈5 at ~20 concurrent requests falling to ≈3.5 at 200 (Flash), ≈5.3 to ≈3.5 (Pro).

    python -m paper_figs.fig8_budget [--tiny] [--out DIR] [--jobs N]

May import: matplotlib, the standard library, `paper_figs.common`.
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from paper_figs.common import parse_args, png, production_base, run_sweep_text, write_summary

NAME = "fig8_budget"
METRIC = "mean_verify_tokens_per_request_step"
PAPER = {"h200-v4flash": {"20": 5.0, "200": 3.5}, "h200-v4pro": {"20": 5.3, "200": 3.5}}
LOADS = {
    False: ([10, 20, 50, 100, 150, 200, 300], [300, 300, 300, 300, 450, 600, 900]),
    True: ([20, 200], [80, 800]),
}


def sweep_text(tiny: bool) -> str:
    conc, reqs = LOADS[tiny]
    return (
        'name = "fig8_budget"\n'
        + production_base(tiny)
        + f"""
[[zip]]
label = ["MTP-1", "DSpark-5", "DSpark-5 stale-2"]
"drafter.name" = ["mtp", "dspark", "dspark"]
"drafter.gamma" = [1, 5, 5]
"drafter.layers" = ["none", 3, 3]
"policy.name" = ["fixed", "dspark", "dspark_global"]
"policy.k" = [1, "none", "none"]
"policy.delay" = ["none", "none", 2]

[axes]
"cost.table" = ["h200-v4flash", "h200-v4pro"]

[[zip]]
"workload.concurrency" = {conc}
"workload.num_requests" = {reqs}
"""
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(NAME, argv, __doc__.splitlines()[0])
    rows, _ = run_sweep_text(sweep_text(args.tiny), args.out, args)
    budget: dict = {}
    for row in rows:
        cost = row["config"]["cost"]["table"]
        conc = row["config"]["workload"]["concurrency"]
        budget.setdefault(cost, {}).setdefault(row["series"], {})[str(conc)] = row["summary"][METRIC]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, cost in zip(axes, sorted(budget)):
        for series, per in budget[cost].items():
            xs = sorted(per, key=int)
            ax.plot(
                [int(x) for x in xs],
                [per[x] for x in xs],
                "o-" if "DSpark" in series else "s--",
                label=series,
            )
        ax.plot(
            [int(c) for c in PAPER[cost]],
            list(PAPER[cost].values()),
            "k*",
            markersize=12,
            label="paper (DSpark-5, Fig. 8)",
        )
        ax.set_title(cost)
        ax.set_xlabel("concurrent requests")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("verify tokens per request per step (1 + ℓ)")
    axes[0].set_ylim(0, 6.5)
    fig.suptitle("Fig. 8 — verify budget per request vs load")
    fig.tight_layout()
    figure = {f"{NAME}.png": png(fig, dpi=120)}  # written with summary.json, swapped in whole
    write_summary(args, {"metric": METRIC, "budget": budget, "paper": PAPER}, figure)
    for cost, per_series in sorted(budget.items()):
        for series, per in per_series.items():
            text = "  ".join(f"{c}:{v:.2f}" for c, v in sorted(per.items(), key=lambda kv: int(kv[0])))
            print(f"{cost:<13} {series:<17} {text}")
    print(f"wrote {args.out / (NAME + '.png')} and {args.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
