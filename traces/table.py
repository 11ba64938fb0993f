"""The normalized request table every trace loader, transformation and generator produces.

Role: one immutable, columnar description of a request stream (arrival time, input and output
lengths, optional labels), independent of the file format it came from.
Imports: numpy and the standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["RequestTable", "readonly"]


def readonly(arr: np.ndarray) -> np.ndarray:
    """Mark a freshly made array read-only, so a RequestTable can share it instead of copying it."""
    arr.setflags(write=False)
    return arr


def _frozen(values: Any, dtype: Any, name: str, n: int | None) -> np.ndarray:
    """A read-only 1-D array of `dtype`. An array that is already read-only is shared; anything else is
    copied, so the caller's own (writable) array can never change the table."""
    if isinstance(values, np.ndarray) and values.dtype == dtype and not values.flags.writeable:
        arr = values
    else:
        arr = np.array(values, dtype=dtype, copy=True)
    if arr.ndim != 1:
        raise ValueError(f"RequestTable.{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"RequestTable.{name} has {arr.shape[0]} entries, arrival_s has {n}")
    arr.setflags(write=False)
    return arr


def _labels(values: Any, name: str, n: int) -> np.ndarray:
    """Labels as an object array of str: one shared str per distinct label keeps 1M rows at 8 MB."""
    arr = _frozen(values, object, name, n)
    if not all(isinstance(v, str) for v in set(arr.tolist())):
        raise ValueError(f"RequestTable.{name} must hold str values")
    return arr


@dataclass(frozen=True, eq=False, repr=False)
class RequestTable:
    """N requests in arrival order.

    Fields (all arrays are read-only copies):
      arrival_s: float64[N] — seconds from the first request; finite, ≥ 0, non-decreasing.
      input_tokens: int64[N] — prompt (context) tokens, ≥ 0.
      output_tokens: int64[N] — generated tokens, ≥ 0.
      domain: object[N] of str, or None — workload class ("chat", "code", BurstGPT's Log Type, ...).
      session_id: int64[N], or None — conversation/session number; -1 = unknown.
      hash_ids: tuple of N int64 arrays, or None — prefix-block hashes (Mooncake), for prefix caching.
      model: object[N] of str, or None — the serving model that handled the request (BurstGPT).
      meta: provenance — "format", "source", "rows_read", "dropped_rows", "filtered_rows",
        "moved_rows" and whatever a transformation adds.
    """

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    domain: np.ndarray | None = None
    session_id: np.ndarray | None = None
    hash_ids: tuple[np.ndarray, ...] | None = None
    model: np.ndarray | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        arrival = _frozen(self.arrival_s, np.float64, "arrival_s", None)
        n = arrival.shape[0]
        if n and not np.all(np.isfinite(arrival)):
            raise ValueError("RequestTable.arrival_s must be finite")
        if n and (arrival[0] < 0 or np.any(np.diff(arrival) < 0)):
            raise ValueError("RequestTable.arrival_s must be ≥ 0 and non-decreasing (sort the requests)")
        set_ = object.__setattr__
        set_(self, "arrival_s", arrival)
        for name in ("input_tokens", "output_tokens"):
            raw = np.asarray(getattr(self, name))
            if raw.dtype.kind == "f" and raw.size and not np.all(raw == np.floor(raw)):
                raise ValueError(f"RequestTable.{name} must hold whole numbers of tokens")
            arr = _frozen(raw, np.int64, name, n)
            if n and arr.min() < 0:
                raise ValueError(f"RequestTable.{name} must be ≥ 0, found {int(arr.min())}")
            set_(self, name, arr)
        for name in ("domain", "model"):
            if getattr(self, name) is not None:
                set_(self, name, _labels(getattr(self, name), name, n))
        if self.session_id is not None:
            set_(self, "session_id", _frozen(self.session_id, np.int64, "session_id", n))
        if self.hash_ids is not None:
            if len(self.hash_ids) != n:
                raise ValueError(f"RequestTable.hash_ids has {len(self.hash_ids)} entries, arrival_s has {n}")
            set_(self, "hash_ids", tuple(_frozen(h, np.int64, "hash_ids[i]", None) for h in self.hash_ids))
        set_(self, "meta", dict(self.meta))

    # --- size and simple statistics -------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    @property
    def duration_s(self) -> float:
        """Seconds from the first to the last arrival (0 for fewer than two requests)."""
        return float(self.arrival_s[-1] - self.arrival_s[0]) if len(self) > 1 else 0.0

    @property
    def rate_per_s(self) -> float:
        """Mean arrival rate = 1 / mean inter-arrival gap = (N − 1) / duration; NaN if undefined."""
        d = self.duration_s
        return (len(self) - 1) / d if d > 0 else float("nan")

    @property
    def interarrival_s(self) -> np.ndarray:
        """float64[N−1]: gaps between consecutive arrivals, seconds."""
        return np.diff(self.arrival_s)

    # --- derivation -----------------------------------------------------------------------------
    def take(self, index: np.ndarray, **meta: Any) -> RequestTable:
        """Rows `index` (a bool mask or increasing int indices) as a new table; `meta` entries are added."""
        idx = np.asarray(index)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise ValueError(f"mask has shape {idx.shape}, table has {len(self)} rows")
            idx = np.flatnonzero(idx)
        idx = idx.astype(np.int64, copy=False)
        col = lambda a: None if a is None else readonly(a[idx])  # noqa: E731 - fresh arrays: no copy
        return self.replace(
            arrival_s=col(self.arrival_s),
            input_tokens=col(self.input_tokens),
            output_tokens=col(self.output_tokens),
            domain=col(self.domain),
            session_id=col(self.session_id),
            hash_ids=None if self.hash_ids is None else tuple(self.hash_ids[i] for i in idx.tolist()),
            model=col(self.model),
            **meta,
        )

    def replace(self, **changes: Any) -> RequestTable:
        """A copy with some columns replaced; keyword names that are not fields go into `meta`."""
        fields = ("arrival_s", "input_tokens", "output_tokens", "domain", "session_id", "hash_ids", "model")
        kwargs = {name: changes.pop(name, getattr(self, name)) for name in fields}
        meta = dict(self.meta)
        meta.update(changes.pop("meta", {}))
        meta.update(changes)
        return RequestTable(**kwargs, meta=meta)

    def columns(self) -> list[str]:
        """Names of the columns present, in the order `traces.export` writes them."""
        names = ["arrival_s", "input_tokens", "output_tokens"]
        names += [n for n in ("domain", "model", "session_id", "hash_ids") if getattr(self, n) is not None]
        return names

    def __repr__(self) -> str:
        fmt = self.meta.get("format", "?")
        return (
            f"RequestTable(requests={len(self)}, duration_s={self.duration_s:.6g}, format={fmt!r}, "
            f"columns={self.columns()})"
        )
