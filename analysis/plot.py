"""Pareto plots: throughput per GPU against per-user speed, one panel per facet, one curve per series.

Role: draw what `analysis.pareto` computed. matplotlib with the Agg backend (files only, no display).
Layout follows the DSpark paper's Fig. 7: x = per-user tok/s, y = output tok/s per GPU; every measured
point faint and labelled with its load (`analysis.pareto.load_label`: C=concurrency, or the
rate), each series' frontier solid, the baseline dashed black, SLOs as dotted verticals.

May import: numpy, matplotlib, the standard library, `analysis.pareto`, `specsched.io.safeio`.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.pareto import Frontier, load_label
from specsched.io import safeio


def plot_pareto(
    points: dict[tuple[str, str], list[dict]], fronts: dict[tuple[str, str], Frontier], out: str | Path, **kw
) -> Path:
    """Write the figure (`pareto_png`) to `out` atomically; returns the path."""
    out = Path(out)
    safeio.write_bytes(out, pareto_png(points, fronts, **kw))  # whole or not at all; the old one survives
    return out


def pareto_png(
    points: dict[tuple[str, str], list[dict]],
    fronts: dict[tuple[str, str], Frontier],
    *,
    baseline: str | None = None,
    slos=(),
    title: str = "",
    xlabel: str = "per-user speed (tok/s/user)",
    ylabel: str = "throughput (tok/s/GPU)",
    order: list[str] | None = None,
) -> bytes:
    """The figure as PNG bytes; `slos` = speeds, or {facet: speeds} (written by the caller with the files
    it belongs with: `specbed report` writes it and summary.md together)."""
    facets = sorted({f for f, _ in points})
    rank = {s: i for i, s in enumerate(order or ())}
    series = sorted({s for _, s in points}, key=lambda s: (s != baseline, rank.get(s, len(rank)), s))
    colors = {s: plt.get_cmap("tab10")(i % 10) for i, s in enumerate(series)}
    fig, axes = plt.subplots(1, len(facets), figsize=(6.2 * len(facets), 4.6), squeeze=False)
    for ax, facet in zip(axes[0], facets):
        for s in series:
            pts = points.get((facet, s))
            if not pts:
                continue
            is_base = s == baseline
            style = {
                "color": "black" if is_base else colors[s],
                "label": s + (" (baseline)" if is_base else ""),
            }
            ax.scatter([p["y"] for p in pts], [p["x"] for p in pts], s=12, alpha=0.3, color=style["color"])
            for p in pts:  # every point names its load (concurrency or rate), so a reader can find it
                label = load_label(p.get("point", ""))
                if label and math.isfinite(p["x"]) and math.isfinite(p["y"]):
                    ax.annotate(label, (p["y"], p["x"]), fontsize=5, alpha=0.7, color=style["color"],
                                textcoords="offset points", xytext=(2, 2))  # fmt: skip
            front = fronts[(facet, s)]
            ax.plot(
                front.y,
                front.x,
                marker="o",
                markersize=3.5,
                linewidth=1.6,
                linestyle="--" if is_base else "-",
                **style,
            )
        speeds = slos.get(facet, ()) if isinstance(slos, dict) else slos
        for slo in speeds:
            if math.isfinite(slo):
                ax.axvline(slo, color="grey", linestyle=":", linewidth=1)
                ax.text(
                    slo,
                    0.99,
                    f" {slo:g}",
                    transform=ax.get_xaxis_transform(),
                    va="top",
                    fontsize=8,
                    color="grey",
                )
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(facet or title or "Pareto frontiers", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="best")
    if title and facets != [""]:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, dpi=120, format="png")  # PNG whatever the file is called (no ".png" appended)
    plt.close(fig)
    return buf.getvalue()
