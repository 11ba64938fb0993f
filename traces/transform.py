"""Pure transformations of a `RequestTable`: each returns a new table and records what it did in meta.

Role: turn a loaded trace into the traffic an experiment needs — a time window, a faster or slower
replay, a random subset, a filtered subset, lengths clipped to a model's context, several traces
superposed. Tables that drop rows are re-based so the first kept request arrives at 0 s (rebase=False
keeps the original clock).
Imports: numpy, the standard library, traces.table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from traces.table import RequestTable

__all__ = ["clip", "filter_rows", "head", "merge", "sample", "scale_rate", "to_rate", "window"]


def _rebase(table: RequestTable, rebase: bool) -> RequestTable:
    if not rebase or len(table) == 0 or table.arrival_s[0] == 0:
        return table
    return table.replace(arrival_s=table.arrival_s - table.arrival_s[0])


def _positive(value: float, name: str) -> float:
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def window(
    table: RequestTable, start_s: float = 0.0, end_s: float | None = None, *, rebase: bool = True
) -> RequestTable:
    """Requests arriving in [start_s, end_s) seconds (end_s=None: to the end)."""
    lo = float(start_s)
    hi = np.inf if end_s is None else float(end_s)
    if not (np.isfinite(lo) and lo >= 0) or not hi > lo:
        raise ValueError(f"window needs 0 ≤ start_s < end_s, got start_s={start_s!r}, end_s={end_s!r}")
    a, b = np.searchsorted(table.arrival_s, [lo, hi], side="left")
    out = table.take(np.arange(a, b), window_s=[lo, None if end_s is None else hi])
    return _rebase(out, rebase)


def head(table: RequestTable, n: int) -> RequestTable:
    """The first n requests."""
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a whole number ≥ 0, got {n!r}")
    return table.take(np.arange(min(int(n), len(table))))


def scale_rate(table: RequestTable, factor: float) -> RequestTable:
    """Replay `factor`× faster (factor > 1) or slower (< 1): same requests, duration / factor."""
    k = _positive(factor, "factor")
    return table.replace(
        arrival_s=table.arrival_s / k, rate_scale=float(table.meta.get("rate_scale", 1.0)) * k
    )


def to_rate(table: RequestTable, rate_per_s: float) -> RequestTable:
    """Rescale time so the mean arrival rate ((N − 1) / duration) becomes `rate_per_s`."""
    target = _positive(rate_per_s, "rate_per_s")
    if not table.duration_s > 0:
        raise ValueError("to_rate needs a table with at least two distinct arrival times")
    return scale_rate(table, target / table.rate_per_s)


def sample(
    table: RequestTable, n: int, rng: np.random.Generator, *, replace: bool = False, rebase: bool = True
) -> RequestTable:
    """n requests drawn uniformly (without replacement by default), kept at their arrival times.

    The result is in arrival order; its rate is about n / N of the original (use `to_rate` after).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    if int(n) != n or n < 0 or (not replace and n > len(table)):
        raise ValueError(f"n must be a whole number in [0, {len(table)}] (or use replace=True), got {n!r}")
    if replace and len(table) == 0 and n > 0:
        raise ValueError("cannot sample from an empty table")
    idx = np.sort(rng.choice(len(table), size=int(n), replace=replace))
    return _rebase(table.take(idx, sampled_from=len(table)), rebase)


def _in(values: np.ndarray | None, wanted: str | Sequence[str], name: str) -> np.ndarray:
    if values is None:
        raise ValueError(f"the table has no {name} column to filter on")
    wanted = [wanted] if isinstance(wanted, str) else list(wanted)
    keys = {w.strip().casefold() for w in wanted}
    present = set(values.tolist())
    chosen = [p for p in present if p.casefold() in keys or p.casefold().removesuffix(" log") in keys]
    if not chosen:
        raise ValueError(f"no request has {name} {wanted!r} (present: {', '.join(sorted(present))})")
    return np.isin(values, np.array(chosen, dtype=object))


def filter_rows(
    table: RequestTable,
    *,
    model: str | Sequence[str] | None = None,
    domain: str | Sequence[str] | None = None,
    min_input: int | None = None,
    max_input: int | None = None,
    min_output: int | None = None,
    max_output: int | None = None,
    mask: np.ndarray | None = None,
    rebase: bool = True,
) -> RequestTable:
    """Requests that pass every given condition (labels case-insensitive; "api" matches "API log")."""
    keep = np.ones(len(table), dtype=bool)
    if model is not None:
        keep &= _in(table.model, model, "model")
    if domain is not None:
        keep &= _in(table.domain, domain, "domain")
    for bound, col, op in (
        (min_input, table.input_tokens, np.greater_equal),
        (max_input, table.input_tokens, np.less_equal),
        (min_output, table.output_tokens, np.greater_equal),
        (max_output, table.output_tokens, np.less_equal),
    ):
        if bound is not None:
            keep &= op(col, bound)
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        if m.shape != keep.shape:
            raise ValueError(f"mask has shape {m.shape}, the table has {len(table)} rows")
        keep &= m
    removed = int((~keep).sum())
    out = table.take(keep, filtered_rows=int(table.meta.get("filtered_rows", 0)) + removed)
    return _rebase(out, rebase)


def clip(
    table: RequestTable, max_context: int, *, max_output: int | None = None, hash_block_tokens: int = 512
) -> RequestTable:
    """Fit every request into a `max_context`-token window (prompt + output).

    Output is first capped at `max_output` (default max_context − 1), then the prompt is truncated so
    input + output ≤ max_context — as a server truncating long prompts would. meta["clipped_rows"]
    counts the requests changed. A shortened prompt keeps only the `hash_ids` of the blocks it still
    holds (⌈input / hash_block_tokens⌉, Mooncake's 512-token blocks by default): a dropped block's id
    would claim prefix hits on tokens the request no longer sends.
    """
    ctx = int(max_context)
    if ctx != max_context or ctx < 2:
        raise ValueError(f"max_context must be a whole number ≥ 2, got {max_context!r}")
    cap = ctx - 1 if max_output is None else int(max_output)
    if cap != (ctx - 1 if max_output is None else max_output) or not 1 <= cap < ctx:
        raise ValueError(f"max_output must be a whole number in [1, {ctx - 1}], got {max_output!r}")
    out = np.minimum(table.output_tokens, cap)
    inp = np.minimum(table.input_tokens, ctx - out)
    changed = int(np.count_nonzero((out != table.output_tokens) | (inp != table.input_tokens)))
    block = int(hash_block_tokens)
    if block != hash_block_tokens or block < 1:
        raise ValueError(f"hash_block_tokens must be a whole number ≥ 1, got {hash_block_tokens!r}")
    hashes = table.hash_ids
    if hashes is not None:  # ⌈input / block⌉ blocks: every block the prompt still (partly) holds
        hashes = tuple(h[: -(-int(n) // block)] for h, n in zip(hashes, inp.tolist(), strict=True))
    return table.replace(
        input_tokens=inp,
        output_tokens=out,
        hash_ids=hashes,
        max_context=ctx,
        clipped_rows=int(table.meta.get("clipped_rows", 0)) + changed,
    )


def merge(*tables: RequestTable) -> RequestTable:
    """Superpose traces (each on its own clock from 0) into one stream in arrival order.

    A label column present in only some tables is filled with "" (session_id with -1, hash_ids with
    empty arrays) for the others; give each trace a domain first to tell them apart.
    """
    if not tables:
        raise ValueError("merge needs at least one table")
    n = [len(t) for t in tables]

    def joined(name: str, fill):
        if all(getattr(t, name) is None for t in tables):
            return None
        return np.concatenate(
            [getattr(t, name) if getattr(t, name) is not None else fill(k) for k, t in enumerate(tables)]
        )

    arrival = np.concatenate([t.arrival_s for t in tables])
    order = np.argsort(arrival, kind="stable")
    label = lambda k: np.full(n[k], "", dtype=object)  # noqa: E731
    domain, model = joined("domain", label), joined("model", label)
    session = joined("session_id", lambda k: np.full(n[k], -1, dtype=np.int64))
    if session is not None:  # renumber so sessions of different traces never share an id
        offset, parts = 0, []
        for k, t in enumerate(tables):
            s = t.session_id if t.session_id is not None else np.full(n[k], -1, dtype=np.int64)
            parts.append(np.where(s >= 0, s + offset, -1))
            offset += int(s.max()) + 1 if s.size and s.max() >= 0 else 0
        session = np.concatenate(parts)
    hashes = None
    if any(t.hash_ids is not None for t in tables):
        flat = [
            h
            for k, t in enumerate(tables)
            for h in (t.hash_ids if t.hash_ids is not None else [np.zeros(0, np.int64)] * n[k])
        ]
        hashes = tuple(flat[i] for i in order.tolist())
    pick = lambda a: None if a is None else a[order]  # noqa: E731
    merged = RequestTable(
        arrival[order],
        np.concatenate([t.input_tokens for t in tables])[order],
        np.concatenate([t.output_tokens for t in tables])[order],
        domain=pick(domain),
        session_id=pick(session),
        hash_ids=hashes,
        model=pick(model),
        meta={"format": "merged", "source": [t.meta.get("source") for t in tables], "parts": n},
    )
    return merged
