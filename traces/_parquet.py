"""Reading specbed's normalized table (or any table, via a column mapping) from Parquet.

Role: the Parquet branch of `traces.formats.read_raw`; kept apart so pyarrow is imported only here,
lazily, and only when a Parquet file is read. Parquet has no lines: errors name the 1-based row.
Imports: numpy, the standard library, specsched.io.errors, traces._columns, traces.columns; pyarrow lazily.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specsched.io.errors import InputError
from traces import _columns as C
from traces.columns import TIME_UNITS, Raw, Spec


def read_parquet(path: Path, spec: Spec) -> Raw:
    """A Parquet table with specbed's normalized columns (or those named by the mapping)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            "reading Parquet needs pyarrow: pip install 'specbed[parquet]'", file=str(path), field="format"
        ) from None
    file = str(path)
    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises several unrelated types for damaged files
        raise InputError(f"cannot read Parquet: {err}", file=file, line=1, field="header") from None
    lookup = {name.casefold(): name for name in table.column_names}

    def column(name: str | None, required: bool):
        if name and name.casefold() in lookup:
            return table.column(lookup[name.casefold()])
        if required:
            raise InputError(
                f"missing column (columns: {', '.join(table.column_names)[:120]})",
                file=file,
                line=1,
                field=name,
            )
        return None

    row = lambda k: k + 1  # noqa: E731 - Parquet has no lines; name the 1-based row
    arrival = column(spec.arrival, True)
    if pa.types.is_timestamp(arrival.type):
        t, is_ns = arrival.cast("timestamp[ns]").to_numpy().astype(np.int64), True
    else:
        unit = TIME_UNITS[spec.time_unit] or 1.0
        t, is_ns = np.asarray(arrival.to_numpy(), dtype=np.float64) / unit, False
        if not np.isfinite(t).all():
            k = int(np.flatnonzero(~np.isfinite(t))[0])
            raise InputError("not a finite number", file=file, line=row(k), field=spec.arrival)
    counts = []
    for name in (spec.input, spec.output):
        f = np.asarray(column(name, True).to_numpy(zero_copy_only=False), dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(f) | (f != np.floor(f)))
        if bad.size:
            raise InputError(
                f"not a whole number: {f[bad[0]]!r}", file=file, line=row(int(bad[0])), field=name
            )
        arr = f.astype(np.int64)
        C.check_tokens(arr, file=file, field=name, where=row)
        counts.append(arr)
    labels = {}
    for role in ("domain", "model"):
        c = column(getattr(spec, role), role in spec.named)
        labels[role] = None if c is None else np.array([str(v) for v in c.to_pylist()], dtype=object)
    s = column(spec.session, "session" in spec.named)
    h = column(spec.hash_ids, "hash_ids" in spec.named)
    return Raw(
        spec,
        t,
        is_ns,
        counts[0],
        counts[1],
        labels["domain"],
        labels["model"],
        None if s is None else np.asarray(s.to_numpy(), dtype=np.int64),
        None if h is None else [np.array(v or [], dtype=np.int64) for v in h.to_pylist()],
    )
