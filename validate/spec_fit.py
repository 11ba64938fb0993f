"""`specbed cost calibrate --spec`: fit the speculative knobs to measured speculative cases (MAP, bounded).

Role: `fit(cases)` returns the `specsched.spec_knobs.SpecKnobs` that minimise

    Σ_cases (ln(predicted / measured) / NOISE)² + Σ_knobs ((x − prior mean) / prior sd)²

inside the knobs' hard bounds (`PRIORS`, `BOUNDS`): each case's relative error counts against NOISE, each
knob's distance from its physical prior against its sd, so a knob the cases do not identify (mask_eff
without a SGLang 0.4 case, op_s without a host-bound version) stays at its prior. Solved by cyclic
golden-section search, one knob at a time (three knobs, each objective evaluation a replay of the cases).
`loso(cases)` refits without each source in turn and predicts that source. `main` is the CLI.

May import: numpy, the standard library, `specsched`, `validate.spec_cases`, `validate.spec_replay`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from specsched.io import safeio
from specsched.io.progress import Progress
from specsched.io.results import write_json
from specsched.spec_knobs import BOUNDS, PRIORS, SpecKnobs
from specsched.spec_versions import engine_name
from validate.spec_cases import SpecCase, read_cases
from validate.spec_replay import engine_bands, headline, inconsistent, replay, unmodelled

#: relative error a case is expected to carry (its acceptance is often another run's)
NOISE = 0.10
SWEEPS, GOLDEN_STEPS = 3, 18
PHI = (math.sqrt(5) - 1) / 2


def objective(cases: list[SpecCase], knobs: SpecKnobs) -> float:
    """The MAP objective (module docstring) of `knobs` on the modelled `cases`."""
    out = 0.0
    for c in cases:
        measured, predicted = headline(c, knobs)
        out += (math.log(predicted / measured) / NOISE) ** 2
    for name, (mu, sd) in PRIORS.items():
        out += ((getattr(knobs, name) - mu) / sd) ** 2
    return out


def fit(cases: list[SpecCase], start: SpecKnobs | None = None) -> SpecKnobs:
    """The MAP knobs on the modelled `cases` (the priors when none is modelled). A case whose own figures
    disagree (`validate.spec_replay.inconsistent`: a measured speed-up above its acceptance length, which
    only a speculative step cheaper than a plain one could give) is not fitted — no price can match it, and
    chasing it drags the knobs; it is still replayed and counted in every median."""
    usable = [c for c in cases if not unmodelled(c) and not inconsistent(c)]
    knobs = start or SpecKnobs()
    if not usable:
        return knobs
    for _ in range(SWEEPS):
        for name, (lo, hi) in BOUNDS.items():
            knobs = _golden(usable, knobs, name, lo, hi)
    return knobs


def _golden(cases, knobs: SpecKnobs, name: str, lo: float, hi: float) -> SpecKnobs:
    """`knobs` with `name` set to the golden-section minimum of the objective over [lo, hi] (the objective
    is smooth and, along one knob, unimodal in practice: a prior term plus monotone step prices)."""

    def f(x):
        return objective(cases, replace(knobs, **{name: x}))

    a, b = lo, hi
    c, d = b - PHI * (b - a), a + PHI * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(GOLDEN_STEPS):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - PHI * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + PHI * (b - a)
            fd = f(d)
    best = min(((fc, c), (fd, d), (f(getattr(knobs, name)), getattr(knobs, name))))[1]
    return replace(knobs, **{name: best})


def loso(cases: list[SpecCase]) -> list[dict]:
    """Leave-one-source-out: each source's cases predicted by knobs fitted on the other sources' cases
    (a refit a source, progress on stderr)."""
    rows = []
    sources = sorted({c.source for c in cases})
    bar = Progress(len(sources), label="leave-one-source-out", unit="sources", every=10.0)
    for source in sources:
        knobs = fit([c for c in cases if c.source != source])
        rows += replay([c for c in cases if c.source == source], knobs)
        bar.advance(1)
    bar.close()
    return rows


def _median(rows: list[dict]) -> float | None:
    errs = [abs(r["error_pct"]) for r in rows if "error_pct" in r]
    return statistics.median(errs) if errs else None


def table(rows: list[dict], loso_rows: list[dict]) -> str:
    """Per-case lines: the headline (speed-up where the case gives one, else its metric: `what`) measured →
    in-sample predicted (error), leave-one-source-out predicted (error), and the metric's own error."""
    held = {r["case"]: r for r in loso_rows}
    lines = [f"{'case':<40} {'split':<6} {'what':<8} {'measured':>9} {'fit':>8} {'err%':>7} {'LOSO':>8} "
             f"{'err%':>7} {'metric err%':>12}"]  # fmt: skip
    for r in rows:
        if "skipped" in r:
            lines.append(f"{r['case'][:40]:<40} {r['split']:<6} {r['metric'][:8]:<8} {r['measured']:9.3f}  "
                         f"not modelled: {r['skipped']}")  # fmt: skip
            continue
        h = held.get(r["case"], {})
        lo = f"{'-':>8} {'-':>7}"
        if "error_pct" in h:
            lo = f"{h['headline_predicted']:8.3f} {h['error_pct']:+7.1f}"
        metric = f"{r['metric_error_pct']:+12.1f}" if r["headline"] == "speedup" else f"{'':>12}"
        lines.append(f"{r['case'][:40]:<40} {r['split']:<6} {r['headline'][:8]:<8} "
                     f"{r['headline_measured']:9.3f} {r['headline_predicted']:8.3f} {r['error_pct']:+7.1f} "
                     f"{lo} {metric}" + (" *" if "inconsistent" in r else ""))  # fmt: skip
    marked = [r for r in rows if "inconsistent" in r]
    if marked:
        lines.append("* the case's own figures disagree (kept in every median): "
                     + "; ".join(f"{r['case']}: {r['inconsistent']}" for r in marked))  # fmt: skip
    return "\n".join(lines)


def _summary(knobs: SpecKnobs, band: dict, check: list[dict]) -> str:
    lines = ["knobs: " + ", ".join(f"{k} = {v:.4g}" for k, v in knobs.as_dict().items())]
    if band["median_pct"] is None:
        return lines[0] + "\nno train case could be modelled"
    text = f"train median |error| {band['median_pct']:.1f} %, worst {band['worst_pct']:.1f} %"
    text += f" ({band['cases']} cases)"
    if band["loso_median_pct"] is not None:
        text += f"; leave-one-source-out median {band['loso_median_pct']:.1f} %"
        text += f", worst {band['loso_worst_pct']:.1f} %"
    lines.append(text)
    if _median(check) is not None:
        n = sum("error_pct" in r for r in check)
        lines.append(f"check median |error| {_median(check):.1f} % ({n} cases)")
    lines += engine_lines(band.get("by_engine", {}))
    return "\n".join(lines)


def engine_lines(by_engine: dict) -> list[str]:
    """One line an engine version: its train, leave-one-source-out and check bands (`engine_bands`), then
    one indented line a tensor-parallel class ("tp 1", "tp >1") where the version has cases of both."""
    lines = []
    for engine, b in by_engine.items():
        lines.append(f"  {engine}: {_band_text(b)}")
        by_tp = b.get("tp", {})
        if len(by_tp) > 1:
            lines += [f"      tp {cls}: {_band_text(sub)}" for cls, sub in by_tp.items()]
    return lines


def _band_text(b: dict) -> str:
    parts = [f"{label} median {b[key + '_median_pct']:.1f} %, worst {b[key + '_worst_pct']:.1f} %"
             + (f" ({b[key + '_cases']} cases)" if key != "loso" else "")
             for key, label in (("train", "train"), ("loso", "leave-one-source-out"), ("check", "check"))
             if key + "_median_pct" in b]  # fmt: skip
    return "; ".join(parts + [f"sign right {b['sign_right']} of {b['sign_cases']}"])


def calibrate_doc(files: list[str]) -> tuple[dict, str]:
    """(the knobs file's JSON document, the printed report) of a fit on `files` (their train cases, or
    every case when a file has no train split)."""
    cases = [c for f in files for c in read_cases(f)]
    train = [c for c in cases if c.split == "train"] or cases
    knobs = fit(train)
    rows = replay(cases, knobs)
    held = loso(train)
    errs = [abs(r["error_pct"]) for r in rows if "error_pct" in r and r["split"] == "train"]
    band = {
        "median_pct": statistics.median(errs) if errs else None,
        "worst_pct": max(errs) if errs else None,
        "loso_median_pct": _median(held),
        "loso_worst_pct": max((abs(r["error_pct"]) for r in held if "error_pct" in r), default=None),
        "cases": len(errs),
        "engines": sorted({engine_name(c.engine, c.engine_version) for c in train}),
    }
    check = [r for r in rows if r["split"] == "check"]
    check_errs = [abs(r["error_pct"]) for r in check if "error_pct" in r]
    if check_errs:  # replayed with the knobs fitted on train only: the unseen band, never fitted to
        band.update(check_median_pct=statistics.median(check_errs), check_worst_pct=max(check_errs),
                    check_cases=len(check_errs))  # fmt: skip
    band["by_engine"] = engine_bands(rows, held)
    text = table(rows, held) + "\n" + _summary(knobs, band, check)
    doc = {
        "about": "speculative knobs (specsched.spec_knobs), MAP fit by `specbed cost calibrate --spec`",
        "source": "specbed cost calibrate --spec " + " ".join(files),
        "knobs": knobs.as_dict(),
        "band": band,
        "cases": rows,
        "loso": held,
    }
    return doc, text


def main(files: list[str], out: str | None) -> int:
    """`specbed cost calibrate --spec FILE… [--out KNOBS.json]`: print the fit; write it with --out."""
    with safeio.claimed_file(out or None, field="--out", inputs=files):  # held until written
        doc, text = calibrate_doc(files)
        print(text)
        if out:
            write_json(out, doc, field="--out", indent=1, sort_keys=False)
    return 0
