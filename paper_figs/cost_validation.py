"""Cost-model validation: measured vs predicted step times, fitted on measured Llama-2-70B / H100 steps.

Fits the roofline's knobs (`specsched.fit`) on the shipped Splitwise measurements
(`specsched/data/llama2-70b_h100.csv`, TP 2/4/8) and plots measured vs predicted step time per TP and
phase, MAPE in the legend (outliers the fit flagged excluded, and counted). Out of sample, with the same
knobs: another TP (fit on TP 2 and 4 only, predict TP 8), another GPU (only the GPU's specs changed:
Llama-2-70B on A100-80GB) and another model (only the shape changed: BLOOM-176B on H100, TP 8) — measured
rows from the same public Splitwise perf model (`specsched/data/splitwise_a100_bloom.csv`), never fitted.
summary.json: the knobs, in-sample and out-of-sample `specbed cost check --json` objects.

    python -m paper_figs.cost_validation [--tiny] [--out DIR]

May import: matplotlib, numpy, the standard library, `specsched`, `paper_figs.common`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import specsched
from paper_figs.common import parse_args, png, write_summary
from specsched.fit import fit, predict, summary
from specsched.measured import read_measured

NAME = "cost_validation"
DATA = Path(specsched.__file__).parent / "data"
IN_SAMPLE = DATA / "llama2-70b_h100.csv"
OUT_OF_SAMPLE = DATA / "splitwise_a100_bloom.csv"
#: label -> (where, model, gpu) of each out-of-sample check
SWAPS = {
    "GPU swap: llama2-70b on A100": (["hardware=a100-80gb"], "llama2-70b", "a100"),
    "model swap: bloom-176b on H100": (["model=bloom-176b"], "bloom-176b", "h100"),
}


def _panel(ax, points, pred, keep, title: str, summ: dict) -> None:
    for tp in np.unique(points.tp):
        for phase, marker in (("decode", "o"), ("prefill", "s")):
            sel = (points.tp == tp) & (points.phase == phase)
            if not sel.any():
                continue
            st = summ["by_tp"][str(int(tp))][phase]
            label = f"TP{int(tp)} {phase}: MAPE {st['mape_pct']:.1f} %"
            ax.scatter(
                points.seconds[sel & keep] * 1e3, pred[sel & keep] * 1e3, s=12, marker=marker, label=label
            )
            if (sel & ~keep).any():
                ax.scatter(
                    points.seconds[sel & ~keep] * 1e3, pred[sel & ~keep] * 1e3, s=20, marker="x", c="k"
                )
    lo = float(min(points.seconds.min(), pred.min()) * 1e3 * 0.8)
    hi = float(max(points.seconds.max(), pred.max()) * 1e3 * 1.2)
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="measured step (ms)", ylabel="predicted step (ms)", title=title)
    ax.legend(fontsize=7)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(NAME, argv, __doc__.splitlines()[0])
    points = read_measured([IN_SAMPLE])
    knobs, outlier = fit(points, "llama2-70b", "h100")
    pred = predict(points, "llama2-70b", "h100", knobs)
    in_sample = summary(points, pred, ~outlier)
    fig, axes = plt.subplots(1, 2 + len(SWAPS), figsize=(6 * (2 + len(SWAPS)), 5.5))
    _panel(
        axes[0], points, pred, ~outlier, f"in sample (x = {int(outlier.sum())} flagged outliers)", in_sample
    )
    # TP swap: fit on TP 2 and 4 only, predict TP 8.
    train = points.take(points.tp != 8)
    knobs_24, _ = fit(train, "llama2-70b", "h100")
    test = points.take(points.tp == 8)
    pred8 = predict(test, "llama2-70b", "h100", knobs_24)
    tp_swap = summary(test, pred8)
    _panel(axes[1], test, pred8, np.ones(len(test), bool), "TP swap: fit TP2+4, predict TP8", tp_swap)
    out_of_sample = {"TP swap: fit TP2+4, predict TP8": tp_swap}
    for ax, (label, (where, model, gpu)) in zip(axes[2:], SWAPS.items()):
        pts = read_measured([OUT_OF_SAMPLE], where)
        p = predict(pts, model, gpu, knobs)
        out_of_sample[label] = summary(pts, p)
        _panel(ax, pts, p, np.ones(len(pts), bool), label, out_of_sample[label])
    fig.suptitle("specbed cost model vs measured Llama-2-70B / H100 steps (Splitwise perf model)")
    fig.tight_layout()
    figure = {f"{NAME}.png": png(fig, dpi=70 if args.tiny else 110)}  # swapped in with summary.json
    summ = {
        "knobs": knobs,
        "outliers": int(outlier.sum()),
        "in_sample": in_sample,
        "out_of_sample": out_of_sample,
    }
    write_summary(args, summ, figure)
    for label, s in {"in sample": in_sample, **out_of_sample}.items():
        per = ", ".join(
            f"TP{tp} {ph} {st['mape_pct']:.1f} %"
            for tp, d in s["by_tp"].items()
            for ph, st in d.items()
            if st["points"]
        )
        dec, pre = s["decode"]["mape_pct"], s["prefill"]["mape_pct"]
        print(f"{label:<36} decode MAPE {dec:.1f} %, prefill {pre:.1f} %  ({per})")
    print(f"wrote {args.out / (NAME + '.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
