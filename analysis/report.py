"""From sweep rows to answers: frontiers, the gains table, and a markdown report.

Role: glue between stored results (`analysis.store`), numerics (`analysis.pareto`) and text. `analyze`
picks the baseline and SLOs (flags, else the sweep file's [analysis] table, else defaults), `gains_table`
prints the two headline numbers per policy, `markdown` writes the report.

May import: numpy, the standard library, `specsched.io.errors`, `analysis.pareto`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.pareto import (
    LOWER_BOUND,
    UNREACHABLE,
    Frontier,
    Gain,
    default_slos,
    frontiers,
    gains,
    operating_points,
)
from specsched.io.errors import InputError

#: extra metrics shown per operating point in the report, when the rows have them
POINT_METRICS = (
    ("tau_mean", "τ", "{:.2f}"),
    ("mean_verify_tokens_per_request_step", "verify/req", "{:.2f}"),
    ("ttft_s_p99", "TTFT p99 s", "{:.2f}"),
    ("preemptions", "preempt", "{:.0f}"),
)


@dataclass
class Analysis:
    x: str
    y: str
    baseline: str | None
    slos: dict[str, tuple[float, ...]]
    points: dict[tuple[str, str], list[dict]]
    fronts: dict[tuple[str, str], Frontier]
    gains: list[Gain]
    order: list[str]  # series in the order the sweep lists them


def resolve_baseline(
    baseline: str, series: list[str], *, file: str | None = None, field: str = "--baseline"
) -> str:
    """The series `baseline` names: itself, or the one series whose name starts with it."""
    if baseline in series:
        return baseline
    matches = [s for s in series if s.split("(")[0].split("/")[0] == baseline]
    if len(matches) != 1:
        raise InputError(
            f"no series {baseline!r} in this sweep (series: {', '.join(series)})", file=file, field=field
        )
    return matches[0]


def analyze(
    manifest: dict,
    rows: list[dict],
    *,
    baseline: str | None = None,
    slos: tuple[float, ...] | None = None,
    x: str | None = None,
    y: str | None = None,
) -> Analysis:
    """Frontiers and gains of a sweep's rows; InputError for an unknown baseline or metric."""
    spec = manifest.get("analysis", {}) or {}
    x = x or spec.get("x") or "throughput_tok_s_per_gpu"
    y = y or spec.get("y") or "per_user_tok_s_mean"
    for metric in (x, y):
        if rows and not any(metric in r.get("summary", {}) for r in rows):
            known = sorted({k for r in rows for k in r.get("summary", {})})
            raise InputError(f"no cell has metric {metric!r} (metrics: {', '.join(known)})", field="metric")
    points = operating_points(rows, x, y)
    fronts = frontiers(points)
    series = sorted({s for _, s in points})
    baseline = baseline or spec.get("baseline")
    if baseline is not None:
        baseline = resolve_baseline(baseline, series)
    if baseline is None and series:
        baseline = series[0]
    facets = sorted({f for f, _ in points})
    given = spec.get("slo") if slos is None else slos
    per_facet: dict[str, tuple[float, ...]] = {}
    for facet in facets:
        if isinstance(given, dict):
            speeds = tuple(given.get(facet) or given.get(facet.split("=")[-1]) or ())
        else:
            speeds = tuple(given or ())
        if not speeds and (facet, baseline) in fronts:
            speeds = default_slos(fronts[(facet, baseline)])
        per_facet[facet] = speeds
    table = gains(fronts, baseline, per_facet) if baseline is not None else []
    order = list(dict.fromkeys(r["series"] for r in rows))
    return Analysis(x, y, baseline, per_facet, points, fronts, table, order)


def _num(value: float, flag: str = "ok", fmt: str = "{:,.0f}") -> str:
    if flag == UNREACHABLE or not math.isfinite(value):
        return "—"
    return ("≥" if flag == LOWER_BOUND else "") + fmt.format(value)


def _pct(value: float) -> str:
    return "—" if not math.isfinite(value) else f"{value:+.0%}"


def gains_rows(result: Analysis) -> tuple[list[str], list[list[str]]]:
    """(head, rows) of the gains table: per facet and SLO, every series in sweep order (baseline *)."""
    rank = {s: i for i, s in enumerate(result.order)}
    ordered = sorted(
        result.gains,
        key=lambda g: (g.facet, g.slo, g.series != result.baseline, rank.get(g.series, len(rank)), g.series),
    )
    facets = len({g.facet for g in ordered}) > 1
    head = [
        *(["facet"] if facets else []),
        "SLO tok/s/user",
        "policy",
        "tok/s/GPU at SLO",
        "iso-SLO gain",
        "tok/s/user at baseline's tok/s/GPU",
        "iso-throughput speedup",
    ]
    rows = []
    for g in ordered:
        rows.append(
            [
                *([g.facet] if facets else []),
                f"{g.slo:g}",
                g.series + (" *" if g.series == result.baseline else ""),
                _num(g.throughput, g.throughput_flag),
                _pct(g.iso_slo_gain),
                _num(g.speed, g.speed_flag, "{:.1f}"),
                _pct(g.iso_throughput_speedup),
            ]
        )
    return head, rows


def _left(cell: str) -> bool:
    numeric = any(ch.isdigit() for ch in cell[:2]) or cell == "—" or cell.startswith(("+", "-", "≥"))
    return not numeric


def text_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(head)]
    left = [all(_left(r[i]) for r in rows) for i in range(len(head))]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) if lf else c.rjust(w) for c, w, lf in zip(r, widths, left)) for r in rows]
    return "\n".join(out)


def md_table(head: list[str], rows: list[list[str]]) -> str:
    left = [all(_left(r[i]) for r in rows) for i in range(len(head))]
    rule = "|" + "|".join("---" if lf else "---:" for lf in left) + "|"
    out = ["| " + " | ".join(head) + " |", rule]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def gains_table(result: Analysis, *, markdown: bool = False) -> str:
    """The gains of every policy vs the baseline (marked *), per facet and SLO; ≥ = lower bound."""
    head, rows = gains_rows(result)
    return md_table(head, rows) if markdown else text_table(head, rows)


def points_table(result: Analysis, facet: str) -> tuple[list[str], list[list[str]]]:
    shown = [
        (m, h, f)
        for m, h, f in POINT_METRICS
        if any(m in r.get("summary", {}) for pts in result.points.values() for p in pts for r in p["rows"])
    ]
    head = ["policy", "load", "tok/s/GPU", "tok/s/user", *(h for _, h, _ in shown), "frontier"]
    rows = []
    for (f, series), pts in sorted(result.points.items()):
        if f != facet:
            continue
        front = result.fronts[(f, series)]
        on = {(round(a, 9), round(b, 9)) for a, b in zip(front.x, front.y)}
        for p in sorted(pts, key=lambda p: -p["y"] if math.isfinite(p["y"]) else 0):
            extra = []
            for metric, _, fmt in shown:
                vals = [r["summary"].get(metric) for r in p["rows"]]
                vals = [v for v in vals if isinstance(v, (int, float))]
                extra.append(fmt.format(sum(vals) / len(vals)) if vals else "—")
            rows.append(
                [
                    series,
                    p["point"] or "-",
                    _num(p["x"]),
                    _num(p["y"], fmt="{:.1f}"),
                    *extra,
                    "●" if (round(p["x"], 9), round(p["y"], 9)) in on else "",
                ]
            )
    return head, rows


def markdown(
    manifest: dict, rows: list[dict], result: Analysis, *, figure: str | None = "pareto.png", failed: int = 0
) -> str:
    """The report of a sweep folder: counts, the figure, gains per facet, operating points per facet."""
    total = len(manifest.get("cells", []))
    lines = [
        f"# Sweep report: {manifest.get('name', 'sweep')}",
        "",
        f"{len(rows)}/{total} cells finished"
        + (f", {failed} failed" if failed else "")
        + f" · cell model `{manifest.get('model', '?')}` · metrics `{result.x}` (throughput) and "
        f"`{result.y}` (per-user speed) · every cell in `results.jsonl` / `results.csv`.",
        "",
    ]
    if figure:
        lines += [f"![Pareto frontiers]({figure})", ""]
    if result.baseline is not None:
        lines += [
            f"## Gains against `{result.baseline}`",
            "",
            "Read along each policy's Pareto frontier (linear between measured loads, seeds averaged). "
            "*iso-SLO gain*: throughput per GPU at the per-user speed SLO, against the baseline's. "
            "*iso-throughput speedup*: per-user speed at the baseline's throughput at that SLO. "
            "'≥' marks a lower bound (the sweep did not load that policy down to the SLO), '—' an "
            "SLO the policy never reaches.",
            "",
            gains_table(result, markdown=True),
            "",
        ]
    for facet in sorted({f for f, _ in result.points}):
        head, body = points_table(result, facet)
        lines += [f"## Operating points{': ' + facet if facet else ''}", "", md_table(head, body), ""]
    return "\n".join(lines)
