"""Summary statistics of a request table (what `specbed trace stats` prints).

Imports: numpy, the standard library, traces.table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from traces.table import RequestTable

__all__ = ["describe"]


def _num(x: float) -> float | None:
    """A JSON-safe float: NaN / inf (undefined statistics) become None."""
    return float(x) if np.isfinite(x) else None


def _lengths(prefix: str, tokens: np.ndarray) -> dict[str, Any]:
    if tokens.size == 0:
        return {f"{prefix}_total": 0} | {f"{prefix}_{k}": None for k in ("mean", "p50", "p90", "p99", "max")}
    p50, p90, p99 = np.percentile(tokens, [50, 90, 99])
    return {
        f"{prefix}_total": int(tokens.sum()),
        f"{prefix}_mean": float(tokens.mean()),
        f"{prefix}_p50": float(p50),
        f"{prefix}_p90": float(p90),
        f"{prefix}_p99": float(p99),
        f"{prefix}_max": int(tokens.max()),
    }


def _counts(labels: np.ndarray | None) -> dict[str, int] | None:
    if labels is None:
        return None
    values, counts = np.unique(labels.astype(str), return_counts=True)
    return {str(v): int(c) for v, c in zip(values, counts)}


def describe(table: RequestTable) -> dict[str, Any]:
    """JSON-ready statistics: format, requests, duration_s, rate_per_s ((N − 1) / duration),
    interarrival_cv, input/output token totals, means and p50/p90/p99/max, and the load-time counts
    (rows_read, dropped_rows, filtered_rows, moved_rows). Undefined values are None."""
    n = len(table)
    gaps = table.interarrival_s
    mean_gap = float(gaps.mean()) if gaps.size else float("nan")
    cv = float(gaps.std() / mean_gap) if gaps.size >= 2 and mean_gap > 0 else float("nan")
    meta = table.meta
    out: dict[str, Any] = {
        "format": meta.get("format"),
        "source": meta.get("source"),
        "requests": n,
        "duration_s": table.duration_s,
        "rate_per_s": _num(table.rate_per_s),
        "interarrival_cv": _num(cv),
    }
    out |= _lengths("input_tokens", table.input_tokens)
    out |= _lengths("output_tokens", table.output_tokens)
    out |= {k: int(meta.get(k, 0)) for k in ("rows_read", "dropped_rows", "filtered_rows", "moved_rows")}
    if table.domain is not None:
        out["domains"] = _counts(table.domain)
    if table.model is not None:
        out["models"] = _counts(table.model)
    if table.session_id is not None:
        out["sessions"] = int(np.unique(table.session_id[table.session_id >= 0]).size)
    return out
