"""`traces.load`: any supported trace file, or a built-in trace name, to a `RequestTable`.

Role: resolve the source (path or built-in name), read it with `traces.formats`, then apply the
load-time policies every format shares: filters (BurstGPT model / log type), dropping failed requests
(0 output tokens), sorting by arrival with a warning, and making arrival times relative.
Imports: numpy, the standard library, specsched.io.errors, traces.{formats, table}.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from specsched.io.errors import InputError
from traces.formats import Raw, read_raw, resolve_spec
from traces.table import RequestTable, readonly

__all__ = ["BUILTIN_TRACES", "TraceOrderWarning", "builtin_path", "builtin_trace", "load"]

#: built-in trace name -> (file in traces/data, domain label given to every request)
_BUILTIN = {
    "azure2023-conv": ("azure2023_conv.csv.gz", "chat"),
    "azure2023-code": ("azure2023_code.csv.gz", "code"),
}
BUILTIN_TRACES: tuple[str, ...] = tuple(_BUILTIN)


class TraceOrderWarning(UserWarning):
    """A trace's timestamps were not in order; the requests were sorted by arrival."""


def builtin_path(name: str) -> Path:
    """Filesystem path of a built-in trace file (the package is installed as plain files)."""
    key = name.strip().lower()
    if key not in _BUILTIN:
        raise InputError(
            f"unknown built-in trace {name!r} (choose from {', '.join(BUILTIN_TRACES)})", field="trace"
        )
    return Path(str(resources.files("traces.data").joinpath(_BUILTIN[key][0])))


def builtin_trace(name: str, *, drop_failed: bool = True) -> RequestTable:
    """A shipped trace ("azure2023-conv": 19,366 requests, "azure2023-code": 8,819), domain-labelled."""
    path = builtin_path(name)
    key = name.strip().lower()
    table = load(path, format="azure", drop_failed=drop_failed)
    domain = np.full(len(table), _BUILTIN[key][1], dtype=object)
    return table.replace(domain=domain, source=key, builtin=True)


def load(
    source: str | os.PathLike[str],
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    drop_failed: bool = True,
    model: str | Sequence[str] | None = None,
    log_type: str | Sequence[str] | None = None,
    progress: bool = False,
) -> RequestTable:
    """Load a trace file (plain or .gz) or a built-in trace name into a `RequestTable`.

    format: one of `traces.FORMATS` ("azure", "burstgpt", "mooncake", "vidur", "specbed", "csv",
      "parquet"); None detects it from the header (JSON lines are read as Mooncake).
    columns: a column mapping {"arrival", "input", "output", "time_unit" (s|ms|us|ns|datetime),
      optional "domain", "model", "session", "hash_ids"}; alone it reads any CSV / JSON lines, with a
      named format it renames that format's columns.
    drop_failed: drop requests with 0 output tokens (BurstGPT's failed requests); counted in
      meta["dropped_rows"].
    model, log_type: keep only these BurstGPT models ("ChatGPT", "GPT-4") / log types ("Conversation
      log" or "conversation", "API log" or "api"), case-insensitive; counted in meta["filtered_rows"].
    progress: report progress with an ETA on stderr while reading a large file.

    Out-of-order timestamps are sorted (stable) with a `TraceOrderWarning` saying how many rows moved.
    Bad input raises `InputError` naming the file, line and column.
    """
    if isinstance(source, str) and source.strip().lower() in _BUILTIN:
        if columns is not None:
            raise InputError("a built-in trace takes no column mapping", file=source, field="columns")
        table = builtin_trace(source, drop_failed=drop_failed)
        return _filter_loaded(table, model, log_type)
    path = Path(source)
    if not os.path.exists(path):  # False (never OSError) for a name too long
        hint = f" (built-in traces: {', '.join(BUILTIN_TRACES)})" if not path.suffix else ""
        if any(len(part.encode()) > 255 for part in path.parts):
            hint = " (file name too long)"
        raise InputError(f"no such file{hint}", file=str(path), field="trace")
    if path.is_dir():
        raise InputError("is a directory, not a trace file", file=str(path), field="trace")
    spec = resolve_spec(format, columns)
    raw = read_raw(path, spec, format=format, progress=progress)
    return _finish(raw, str(path), drop_failed=drop_failed, model=model, log_type=log_type)


#: longest span of arrival times a trace may cover, seconds (≈ 32 years: the simulator's clock, in int64
#: ns, holds it; 1e308 s overflowed it)
MAX_SPAN_S = 1e9


def _check_span(raw: Raw, file: str) -> None:
    """Refuse arrival times spanning more than MAX_SPAN_S, naming the first row (1-based) past it."""
    if raw.t.shape[0] < 2:
        return
    t = raw.t.astype(np.float64) / (1e9 if raw.t_is_ns else 1.0)
    far = np.abs(t - t[0]) > MAX_SPAN_S
    if far.any():
        k = int(np.flatnonzero(far)[0])
        raise InputError(
            f"row {k + 1}: arrival {t[k]:.6g} s is {abs(t[k] - t[0]):.3g} s from the first row's, over the "
            f"{MAX_SPAN_S:g} s a trace may span (a wrong time_unit?)",
            file=file,
            field=raw.spec.arrival,
        )


def _finish(raw: Raw, file: str, *, drop_failed: bool, model, log_type) -> RequestTable:
    _check_span(raw, file)
    n = int(raw.t.shape[0])
    keep = np.ones(n, dtype=bool)
    if model is not None:
        keep &= _match(raw.model, model, file=file, field=raw.spec.model or "model", param="model")
    if log_type is not None:
        keep &= _match(raw.domain, log_type, file=file, field=raw.spec.domain or "log_type", param="log_type")
    filtered = n - int(keep.sum())
    failed = keep & (raw.output_tokens == 0)
    dropped = int(failed.sum()) if drop_failed else 0
    if drop_failed:
        keep &= ~failed
    if not keep.any():
        why = (
            "the filters"
            if filtered == n
            else "dropping failed requests (0 output tokens; keep them with "
            "drop_failed=False / --keep-failed)"
        )
        raise InputError(f"no requests left after {why}", file=file, field=raw.spec.output)
    idx = None if keep.all() else np.flatnonzero(keep)
    t = raw.t if idx is None else raw.t[idx]
    moved = 0
    if t.shape[0] > 1 and np.any(t[1:] < t[:-1]):
        order = np.argsort(t, kind="stable")
        moved = int(np.count_nonzero(order != np.arange(order.shape[0])))
        warnings.warn(
            f"{file}: {moved} of {order.shape[0]} requests were out of time order (moved when "
            "sorting by arrival)",
            TraceOrderWarning,
            stacklevel=3,
        )
        idx = order if idx is None else idx[order]
        t = t[order]
    raw.t = None  # type: ignore[assignment] - free each raw column as soon as its subset exists
    rel = (t - t[0]) / 1e9 if raw.t_is_ns else t - t[0]  # int64 ns → float64 s
    del t
    cols = {}
    for name in ("input_tokens", "output_tokens", "domain", "model", "session_id"):
        a = getattr(raw, name)
        cols[name] = None if a is None else readonly(a if idx is None else a[idx])
        setattr(raw, name, None)
    hashes = raw.hash_ids
    if hashes is not None and idx is not None:
        hashes = [hashes[i] for i in idx.tolist()]
    meta = {
        "format": raw.spec.name,
        "source": file,
        "rows_read": n,
        "dropped_rows": dropped,
        "filtered_rows": filtered,
        "moved_rows": moved,
    }
    if raw.spec.name == "burstgpt":
        meta["variant"] = "v2" if cols["session_id"] is not None else "v1"
    return RequestTable(readonly(rel), hash_ids=None if hashes is None else tuple(hashes), meta=meta, **cols)


class FilterError(InputError):
    """A `model` / `log_type` filter that cannot apply; `param` names the filter (the CLI names its flag)."""

    def __init__(self, message: str, *, file: str, field: str, param: str) -> None:
        self.param = param
        super().__init__(message, file=file, field=field)


def _match(labels: np.ndarray | None, wanted, *, file: str, field: str, param: str) -> np.ndarray:
    """bool mask of rows whose label is one of `wanted` (case-insensitive; "conversation" = "Conversation
    log"). A wanted value that matches no row is an error listing the values present. `field`: the
    column; `param`: the filter ("model" / "log_type"), kept on the FilterError for the CLI."""
    if labels is None:
        raise FilterError("the trace has no such column to filter on", file=file, field=field, param=param)
    values = [wanted] if isinstance(wanted, str) else list(wanted)
    present = sorted(set(labels.tolist()))
    chosen = set()
    for w in values:
        key = w.strip().casefold()
        hits = {p for p in present if p.casefold() in (key, key + " log")}
        if not hits:
            shown = ", ".join(present)[:200]
            raise FilterError(
                f"no request has {w[:60]!r} (values present: {shown})", file=file, field=field, param=param
            )
        chosen |= hits
    return np.isin(labels, np.array(sorted(chosen), dtype=object))


def _filter_loaded(table: RequestTable, model, log_type) -> RequestTable:
    """Apply load's model / log_type filters to an already loaded table (built-in traces)."""
    file = str(table.meta.get("source", "?"))
    keep = np.ones(len(table), dtype=bool)
    if model is not None:
        keep &= _match(table.model, model, file=file, field="model", param="model")
    if log_type is not None:
        keep &= _match(table.domain, log_type, file=file, field="domain", param="log_type")
    if keep.all():
        return table
    out = table.take(keep, filtered_rows=int((~keep).sum()))
    return out.replace(arrival_s=out.arrival_s - out.arrival_s[0])
