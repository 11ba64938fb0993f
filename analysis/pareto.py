"""Pareto frontiers in (throughput per GPU, per-user speed) and the gains read off them.

Role: pure numerics over sweep rows. A policy's operating points (one per load, averaged over seeds) trade
throughput per GPU (x) against per-user decode speed (y); both are better when larger. Its frontier is the
non-dominated points joined by straight segments — what an operator can reach by choosing the load.

Two readings of a frontier, the two numbers the DSpark paper reports:
- `throughput_at(y*)`: the most throughput with per-user speed ≥ y* (iso-SLO). Linear interpolation
  between the frontier points around y*; above the fastest point: unreachable (NaN); below the slowest
  point the sweep did not load the system far enough, and the answer is the largest measured throughput,
  flagged "≥" (a lower bound).
- `speed_at(x*)`: the best per-user speed at throughput ≥ x* (iso-throughput), symmetric.
Gains compare a policy with a baseline: iso-SLO gain = T_p(y*) / T_b(y*) − 1; iso-throughput speedup at the
baseline's own throughput at y*: S_p(T_b(y*)) / S_b(T_b(y*)) − 1, which is S_p / y* − 1 inside the
baseline's range (the paper's "+60–85 % per-user speed at matched throughput").

May import: numpy, the standard library, `specsched.io.inputs`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from specsched.io import inputs

EXACT, LOWER_BOUND, UNREACHABLE = "ok", ">=", "unreachable"


def pareto_indices(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated points (maximize both), ordered by x ascending (so y descending).

    x, y: float64[n]. A point is dominated when another is ≥ in both and > in one; of exact duplicates
    one is kept. NaN points are ignored.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    # Sweep from the largest x down (ties: larger y first); keep points that beat every y seen so far.
    order = ok[np.lexsort((-y[ok], -x[ok]))]
    keep = []
    best_y = -math.inf
    for i in order:
        if y[i] > best_y:
            keep.append(i)
            best_y = y[i]
    return np.array(keep[::-1], dtype=np.int64)


@dataclass(frozen=True)
class Frontier:
    """x: float64[n] ascending throughput per GPU; y: float64[n] descending per-user tok/s."""

    x: np.ndarray
    y: np.ndarray

    @classmethod
    def of(cls, x, y) -> Frontier:
        idx = pareto_indices(x, y)
        return cls(np.asarray(x, dtype=np.float64)[idx], np.asarray(y, dtype=np.float64)[idx])

    def throughput_at(self, speed: float) -> tuple[float, str]:
        """Most throughput with per-user speed ≥ `speed` (tok/s): (value, EXACT|LOWER_BOUND|UNREACHABLE)."""
        return _read(self.y[::-1], self.x[::-1], speed)

    def speed_at(self, throughput: float) -> tuple[float, str]:
        """Best per-user speed at throughput ≥ `throughput`: (value, EXACT | LOWER_BOUND | UNREACHABLE)."""
        return _read(self.x, self.y, throughput)


def _read(a: np.ndarray, b: np.ndarray, at: float) -> tuple[float, str]:
    """b at a = `at` on a frontier with a ascending and b descending (the best b with a ≥ `at`)."""
    if a.size == 0 or not math.isfinite(at) or at > a[-1]:
        return math.nan, UNREACHABLE
    if at <= a[0]:
        return float(b[0]), (EXACT if at == a[0] else LOWER_BOUND)
    j = int(np.searchsorted(a, at, side="left"))  # a[j-1] < at <= a[j]
    t = (at - a[j - 1]) / (a[j] - a[j - 1])
    return float(b[j - 1] + t * (b[j] - b[j - 1])), EXACT


def operating_points(rows: list[dict], x: str, y: str) -> dict[tuple[str, str], list[dict]]:
    """{(facet, series): [point]} with one point per load (seeds averaged): {point, x, y, n, rows}."""
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row.get("facet", ""), row["series"], row.get("point", ""))].append(row)
    for metric in dict.fromkeys((x, y)):  # a hand-edited cell: say so, never drop it silently
        bad = [str(r.get("key", "?")) for r in rows if not _numeric(r.get("summary", {}).get(metric))]
        if bad:
            inputs.warn(f"{len(bad)} cells have no numeric {metric!r} (first {bad[0]}); left off the plot")
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for (facet, series, point), members in groups.items():
        xs = [_metric(r, x) for r in members]
        ys = [_metric(r, y) for r in members]
        out[(facet, series)].append(
            {
                "point": point,
                "x": float(np.nanmean(xs)) if _any(xs) else math.nan,
                "y": float(np.nanmean(ys)) if _any(ys) else math.nan,
                "n": len(members),
                "rows": members,
            }
        )
    return dict(out)


#: a sweep point's load keys -> the short label drawn beside its Pareto point
LOAD_LABELS = {"concurrency": "C={}", "rate": "{} req/s", "speedup": "×{}", "max_num_seqs": "seqs={}"}


def load_label(point: str) -> str:
    """The load of a sweep point ("concurrency=8, num_requests=320" -> "C=8"; "rate=4.0" -> "4.0 req/s"):
    the LOAD_LABELS keys it names, else the point as written ("" for none)."""
    parts = dict(p.split("=", 1) for p in point.split(", ") if "=" in p)
    got = [fmt.format(parts[k]) for k, fmt in LOAD_LABELS.items() if k in parts]
    return ", ".join(got) if got else point


def _any(values: list[float]) -> bool:
    return any(math.isfinite(v) for v in values)


def _numeric(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _metric(row: dict, name: str) -> float:
    value = row.get("summary", {}).get(name)
    return float(value) if _numeric(value) else math.nan


def frontiers(points: dict[tuple[str, str], list[dict]]) -> dict[tuple[str, str], Frontier]:
    return {k: Frontier.of([p["x"] for p in v], [p["y"] for p in v]) for k, v in points.items()}


@dataclass(frozen=True)
class Gain:
    """One policy against the baseline at one per-user SLO `slo` (tok/s) in one facet."""

    facet: str
    series: str
    slo: float
    throughput: float  # T_p(slo), tok/s/GPU
    throughput_flag: str
    base_throughput: float  # T_b(slo)
    base_flag: str
    iso_slo_gain: float  # T_p / T_b − 1 (NaN when either is unreachable)
    speed: float  # S_p(T_b(slo)), per-user tok/s at the baseline's throughput
    speed_flag: str
    iso_throughput_speedup: float  # S_p(T_b) / S_b(T_b) − 1  (S_b(T_b) = slo on the frontier)


def gains(
    fronts: dict[tuple[str, str], Frontier],
    baseline: str,
    slos: dict[str, tuple[float, ...]] | tuple[float, ...],
) -> list[Gain]:
    """A `Gain` per (facet, series, slo) for every series of a facet that has `baseline`.

    slos: per-user speeds (tok/s), the same for every facet, or {facet: speeds}.
    """
    out = []
    facets = sorted({f for f, _ in fronts})
    for facet in facets:
        base = fronts.get((facet, baseline))
        if base is None:
            continue
        speeds = slos.get(facet, ()) if isinstance(slos, dict) else slos
        for slo in speeds:
            tb, fb = base.throughput_at(slo)
            for (f, series), front in sorted(fronts.items()):
                if f != facet:
                    continue
                tp, fp = front.throughput_at(slo)
                gain = tp / tb - 1 if fb != UNREACHABLE and fp != UNREACHABLE and tb > 0 else math.nan
                if fb != UNREACHABLE:
                    sp, fs = front.speed_at(tb)
                    sb = base.speed_at(tb)[0]  # = slo unless the SLO lies below the baseline's slowest point
                else:
                    sp, fs, sb = math.nan, UNREACHABLE, math.nan
                speedup = sp / sb - 1 if fs != UNREACHABLE else math.nan
                out.append(Gain(facet, series, float(slo), tp, fp, tb, fb, gain, sp, fs, speedup))
    return out


def default_slos(front: Frontier) -> tuple[float, ...]:
    """Two per-user speeds inside a baseline frontier (1/3 and 2/3 up its speed range), rounded."""
    if front.y.size == 0:
        return ()
    lo, hi = float(front.y.min()), float(front.y.max())
    if hi <= lo:
        return (round(lo, 1),)
    return tuple(float(f"{lo + f * (hi - lo):.2g}") for f in (1 / 3, 2 / 3))
