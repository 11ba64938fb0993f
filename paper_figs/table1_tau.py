"""Table 1: accepted length τ per drafter and domain — from the curves, from the simulator, and the paper's.

τ = mean tokens per verify step with all γ = 7 drafts verified (accepted + 1 bonus). Three columns per
(drafter, domain): the paper's Table 1 domain mean (Qwen3-4B; ../shared/research/dspark.md §6 T1), τ of the
built-in curve (1 + Σ survival), and τ pooled over engine steps of requests decoded through the
simulator's acceptance model. Also the paper's headline ratios (DSpark vs EAGLE-3 / DFlash, mean over
domains) recomputed from each column.

    python -m paper_figs.table1_tau [--tiny] [--out DIR]

May import: numpy, matplotlib, the standard library, `sim.curves`, `paper_figs.common`.
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from paper_figs.common import TITLES, acceptance_runs, figure_main, png
from specsched.io import safeio

NAME = "table1_tau"
DRAFTERS = ("eagle3", "dflash", "dspark")


def build(tiny: bool) -> dict:
    from sim.curves import DOMAINS, TABLE1_TAU, builtin_curve, curve_tau

    requests, tokens, runs = acceptance_runs(DRAFTERS, tiny, seed=31337)
    table: dict = {}
    for drafter, mc in runs.items():
        table[drafter] = {
            d: {
                "paper": TABLE1_TAU[drafter][d],
                "curve": curve_tau(builtin_curve(drafter, d)),
                "sim": mc[d]["tau"],
                "sim_minus_paper": mc[d]["tau"] - TABLE1_TAU[drafter][d],
            }
            for d in DOMAINS
        }
    ratios = {}
    for col in ("paper", "curve", "sim"):
        mean = {dr: float(np.mean([table[dr][d][col] for d in DOMAINS])) for dr in DRAFTERS}
        ratios[col] = {
            "dspark_vs_eagle3": mean["dspark"] / mean["eagle3"] - 1,
            "dspark_vs_dflash": mean["dspark"] / mean["dflash"] - 1,
        }
    return {
        "requests_per_domain": requests,
        "output_tokens": tokens,
        "tau": table,
        "domain_mean_gain": ratios,
    }


def plot(summary: dict, path) -> None:
    from sim.curves import DOMAINS

    fig, ax = plt.subplots(figsize=(8.5, 4))
    width = 0.13
    colors = {"eagle3": "tab:orange", "dflash": "tab:purple", "dspark": "tab:green"}
    for j, drafter in enumerate(DRAFTERS):
        for k, col in enumerate(("paper", "sim")):
            xs = np.arange(len(DOMAINS)) + (2 * j + k - 2.5) * width
            vals = [summary["tau"][drafter][d][col] for d in DOMAINS]
            ax.bar(
                xs,
                vals,
                width,
                color=colors[drafter],
                alpha=0.45 if col == "paper" else 0.95,
                hatch="//" if col == "paper" else None,
                label=f"{TITLES[drafter]} ({col})",
            )
            for x, v in zip(xs, vals):
                ax.text(x, v + 0.05, f"{v:.2f}", ha="center", fontsize=6, rotation=90)
    ax.set_xticks(np.arange(len(DOMAINS)), DOMAINS)
    ax.set_ylabel("τ (tokens per verify step, γ = 7)")
    ax.set_ylim(0, 7)
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    ax.set_title("Table 1 — accepted length: paper (hatched) vs simulator")
    fig.tight_layout()
    safeio.write_bytes(path, png(fig, dpi=120))  # atomic: never a half-written figure


def report(summary: dict) -> list[str]:
    lines = [f"{'drafter':<8} {'domain':<6} {'paper':>6} {'curve':>6} {'sim':>6}"]
    for drafter, per in summary["tau"].items():
        for domain, v in per.items():
            lines.append(f"{drafter:<8} {domain:<6} {v['paper']:6.2f} {v['curve']:6.2f} {v['sim']:6.2f}")
    for col, r in summary["domain_mean_gain"].items():
        lines.append(
            f"DSpark vs EAGLE-3 / DFlash ({col}): {r['dspark_vs_eagle3']:+.1%} / {r['dspark_vs_dflash']:+.1%}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    return figure_main(NAME, __doc__, argv, build, plot, report)


if __name__ == "__main__":
    sys.exit(main())
