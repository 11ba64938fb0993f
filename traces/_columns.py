"""Text columns of a trace file as numpy arrays: numbers, token counts and timestamps, each failure
naming file, line and column.

Role: the conversion half of the trace readers (`traces._parse` reads the blocks, `traces.formats` and
`traces._parquet` call these on their columns). Vectorized on the good path; the error path walks the
values once to name the first bad row.
Imports: numpy, the standard library, specsched.io.errors.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import numpy as np

from specsched.io.errors import InputError

#: Largest token count accepted; beyond 2**53 float64 parsing would lose exactness anyway.
MAX_TOKENS = 1 << 53
_TZ_RE = re.compile(r"(?:Z|[+-]\d\d:?\d\d)$")

Where = Callable[[int], int]  # row index in the column -> file line number


def _first_bad(values: list[str], ok: Callable[[str], object]) -> int:
    """Index of the first value `ok` rejects (the error path only: one call per value)."""
    for k, v in enumerate(values):
        try:
            ok(v)
        except (ValueError, OverflowError, Warning):
            return k
    return 0


def _np_float(v: str) -> object:
    return np.array([v], dtype=np.float64)


def to_float(values: list[str], *, file: str, field: str, where: Where) -> np.ndarray:
    """float64[n] from text; every value must be a finite number."""
    try:
        arr = np.array(values, dtype=np.float64)
    except (ValueError, OverflowError):
        k = _first_bad(values, _np_float)
        raise InputError(f"not a number: {values[k]!r}", file=file, line=where(k), field=field) from None
    if arr.size and not np.isfinite(arr).all():
        k = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InputError(f"not a finite number: {values[k]!r}", file=file, line=where(k), field=field)
    return arr


def to_tokens(values: list[str], *, file: str, field: str, where: Where) -> np.ndarray:
    """int64[n] token counts from text: whole numbers ≥ 0 ("12" or "12.0")."""
    try:
        arr = np.fromiter(map(int, values), dtype=np.int64, count=len(values))
    except (ValueError, OverflowError):  # "12.0", "1e3" or garbage: take the float route
        f = to_float(values, file=file, field=field, where=where)
        frac = np.flatnonzero(f != np.floor(f))
        if frac.size:
            k = int(frac[0])
            raise InputError(
                f"not a whole number of tokens: {values[k]!r}", file=file, line=where(k), field=field
            ) from None
        big = np.flatnonzero(np.abs(f) > MAX_TOKENS)
        if big.size:
            k = int(big[0])
            raise InputError(
                f"token count too large: {values[k]!r}", file=file, line=where(k), field=field
            ) from None
        arr = f.astype(np.int64)
    check_tokens(arr, file=file, field=field, where=where)
    return arr


def check_tokens(arr: np.ndarray, *, file: str, field: str, where: Where) -> None:
    """Reject negative or absurdly large token counts, naming the first offending row."""
    bad = np.flatnonzero((arr < 0) | (arr > MAX_TOKENS))
    if bad.size:
        k = int(bad[0])
        what = "negative token count" if arr[k] < 0 else "token count too large"
        raise InputError(f"{what}: {int(arr[k])}", file=file, line=where(k), field=field)


def to_datetime_ns(values: list[str], *, file: str, field: str, where: Where) -> np.ndarray:
    """int64[n] nanoseconds since the Unix epoch (UTC) from ISO-like text.

    Accepts "2023-11-16 18:17:03.9799600" (any number of fractional digits, T or space) with an
    optional "Z" or "±HH:MM" offset (Azure 2024). Parsing is numpy's vectorized datetime64 parser;
    offsets are stripped here because numpy does not accept them.
    """
    if not values:
        return np.zeros(0, dtype=np.int64)
    offsets = None
    if any(_TZ_RE.search(values[k].strip()) for k in (0, len(values) // 2, -1)):
        values, offsets = _strip_offsets(values, file=file, field=field, where=where)
    try:
        arr = _np_datetime(values)
    except (ValueError, OverflowError, Warning):
        values = [v.strip() for v in values]  # numpy rejects surrounding spaces; retry once without
        try:
            arr = _np_datetime(values)
        except (ValueError, OverflowError, Warning):
            arr = None
    if arr is None:
        k = _first_bad(values, _np_datetime)
        raise InputError(
            f"unreadable timestamp: {values[k]!r}", file=file, line=where(k), field=field
        ) from None
    nat = np.flatnonzero(np.isnat(arr))
    if nat.size:  # numpy reads "" and "NaT" as not-a-time
        k = int(nat[0])
        raise InputError(f"unreadable timestamp: {values[k]!r}", file=file, line=where(k), field=field)
    ns = arr.astype(np.int64)
    return ns if offsets is None else ns - offsets


def _np_datetime(values: str | list[str]) -> np.ndarray:
    """numpy's datetime64[ns] parse, with its time-zone warnings turned into errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return np.array(values, dtype="datetime64[ns]")


def _strip_offsets(values: list[str], *, file: str, field: str, where: Where) -> tuple[list[str], np.ndarray]:
    """Split "…+01:00" suffixes off; returns the bare strings and the offsets in ns."""
    bare: list[str] = []
    offsets = np.zeros(len(values), dtype=np.int64)
    for k, v in enumerate(values):
        v = v.strip()
        m = _TZ_RE.search(v)
        if m is None:
            raise InputError(
                f"timestamp without the time-zone offset the other rows have: {v!r}",
                file=file,
                line=where(k),
                field=field,
            )
        tz = m.group(0)
        if tz != "Z":
            digits = tz[1:].replace(":", "")
            minutes = int(digits[:2]) * 60 + int(digits[2:])
            offsets[k] = (1 if tz[0] == "+" else -1) * minutes * 60_000_000_000
        bare.append(v[: m.start()])
    return bare, offsets
