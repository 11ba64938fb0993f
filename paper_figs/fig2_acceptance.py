"""Fig. 2: per-position conditional acceptance by drafter and domain — the paper's curves and the simulator's.

The paper's values (Qwen3-4B, read off Fig. 2; ../shared/research/dspark.md §4.2) are the simulator's
built-in curves. This figure checks what the simulator actually produces from them: requests decoded
through `sim.acceptance` (per-request difficulty, per-step noise, every draft verified), acceptance pooled
over engine steps. summary.json: per drafter and domain the paper curve, the simulated curve and the
largest gap.

    python -m paper_figs.fig2_acceptance [--tiny] [--out DIR]

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

NAME = "fig2_acceptance"
DRAFTERS = ("dflash", "eagle3", "dspark")


def build(tiny: bool) -> dict:
    from sim.curves import DOMAINS, builtin_curve

    requests, tokens, runs = acceptance_runs(DRAFTERS, tiny, seed=20260)
    summary: dict = {"requests_per_domain": requests, "output_tokens": tokens, "drafters": {}}
    for drafter, mc in runs.items():
        per = {}
        for domain in DOMAINS:
            paper = builtin_curve(drafter, domain)
            sim = mc[domain]["conditional"]
            per[domain] = {
                "paper": paper.tolist(),
                "sim": sim.tolist(),
                "max_abs_gap": float(np.max(np.abs(sim - paper))),
                "steps": mc[domain]["steps"],
            }
        summary["drafters"][drafter] = per
    return summary


def plot(summary: dict, path) -> None:
    from sim.curves import DOMAINS

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    colors = {"math": "tab:blue", "code": "tab:green", "chat": "tab:red"}
    for ax, drafter in zip(axes, DRAFTERS):
        for domain in DOMAINS:
            entry = summary["drafters"][drafter][domain]
            pos = np.arange(1, len(entry["paper"]) + 1)
            ax.plot(pos, entry["paper"], "o--", color=colors[domain], alpha=0.6, label=f"{domain} (paper)")
            ax.plot(pos, entry["sim"], "s-", color=colors[domain], markersize=3, label=f"{domain} (sim)")
        ax.set_title(TITLES[drafter])
        ax.set_xlabel("draft position k")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("P(accept k | 1..k−1 accepted)")
    axes[0].set_ylim(0.45, 1.0)
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Fig. 2 — conditional acceptance per position: paper (dashed) vs simulator (solid)")
    fig.tight_layout()
    safeio.write_bytes(path, png(fig, dpi=120))  # atomic: never a half-written figure


def report(summary: dict) -> list[str]:
    worst = max(v["max_abs_gap"] for d in summary["drafters"].values() for v in d.values())
    return [f"{NAME}: largest |sim − paper| over drafters, domains, positions = {worst:.3f}"]


def main(argv: list[str] | None = None) -> int:
    return figure_main(NAME, __doc__, argv, build, plot, report)


if __name__ == "__main__":
    sys.exit(main())
