"""Trace file formats: what each one's columns mean, detection from the header, and readers that
turn a file into raw columns (not yet filtered, sorted or made relative; `traces.loader` does that).

Formats: Azure LLM inference 2023/2024 (`azure`), BurstGPT v1/v2 (`burstgpt`), Mooncake JSON lines
(`mooncake`), Vidur processed traces (`vidur`), specbed's own normalized CSV (`specbed`, what
`specbed trace convert` writes), any CSV or JSON lines with a column mapping (`csv`), and normalized
Parquet (`parquet`, needs pyarrow).
Imports: numpy, the standard library, specsched.io.errors, traces._parse, traces._columns; pyarrow lazily for
Parquet.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from specsched.io import inputs
from specsched.io.errors import InputError
from traces import _columns as C
from traces import _parse as P
from traces.columns import TIME_UNITS, Raw, Spec

__all__ = ["FORMATS", "TIME_UNITS", "Raw", "Spec", "read_raw", "resolve_spec"]

#: every value `format=` accepts (plus the aliases below).
FORMATS = ("azure", "burstgpt", "mooncake", "vidur", "specbed", "csv", "parquet")
_ALIASES = {"azure2023": "azure", "azure2024": "azure", "splitwise": "azure", "normalized": "specbed"}
_COLUMN_KEYS = ("arrival", "input", "output", "time_unit", "domain", "model", "session", "hash_ids")


SPECS: dict[str, Spec] = {
    "azure": Spec("azure", "TIMESTAMP", "ContextTokens", "GeneratedTokens", "datetime"),
    "burstgpt": Spec(
        "burstgpt",
        "Timestamp",
        "Request tokens",
        "Response tokens",
        "s",
        domain="Log Type",
        model="Model",
        session="Session ID",
    ),
    "vidur": Spec("vidur", "arrived_at", "num_prefill_tokens", "num_decode_tokens", "s"),
    "specbed": Spec(
        "specbed",
        "arrival_s",
        "input_tokens",
        "output_tokens",
        "s",
        domain="domain",
        model="model",
        session="session_id",
        session_numeric=True,
        hash_ids="hash_ids",
    ),
    "mooncake": Spec(
        "mooncake", "timestamp", "input_length", "output_length", "ms", hash_ids="hash_ids", json=True
    ),
}


def resolve_spec(format: str | None, columns: Mapping[str, str] | None) -> Spec | None:
    """The Spec for a forced format and/or column mapping; None means detect from the file."""
    name = None if format is None else _ALIASES.get(format.lower(), format.lower())
    if name is not None and name not in FORMATS:
        raise InputError(f"unknown format {format!r} (choose from {', '.join(FORMATS)})", field="format")
    if columns is None:
        if name == "csv":
            raise InputError(
                "format 'csv' needs a column mapping: arrival=NAME,input=NAME,output=NAME", field="columns"
            )
        return None if name in (None, "parquet") else SPECS[name]
    unknown = sorted(set(columns) - set(_COLUMN_KEYS))
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r} (known: {', '.join(_COLUMN_KEYS)})", field="columns")
    unit = columns.get("time_unit")
    if unit is not None and unit not in TIME_UNITS:
        raise InputError(f"unknown time_unit {unit!r} (choose from {', '.join(TIME_UNITS)})", field="columns")
    overrides: dict = dict(columns)
    # an optional column the user names must exist (silently reading none would change the result)
    overrides["named"] = frozenset(k for k in ("domain", "model", "session", "hash_ids") if columns.get(k))
    if name in (None, "csv", "parquet"):
        missing = [k for k in ("arrival", "input", "output") if not columns.get(k)]
        if missing:
            raise InputError(f"the column mapping needs {missing[0]}=NAME", field="columns")
        base = Spec("parquet" if name == "parquet" else "csv", "", "", "", "s")
        return replace(base, **overrides)
    return replace(SPECS[name], **overrides)


def read_raw(path: Path, spec: Spec | None, *, format: str | None, progress: bool = False) -> Raw:
    """Read `path` (plain, gzip or Parquet) into raw columns; `spec=None` detects the format."""
    with inputs.reading(path):  # a 400-digit number, a 5,000-deep JSON line: one line naming the file
        return _read_raw(path, spec, format=format, progress=progress)


def _read_raw(path: Path, spec: Spec | None, *, format: str | None, progress: bool = False) -> Raw:
    with inputs.open_input(path, what="trace", limit=inputs.LIMITS["trace"]) as fh:  # regular files only
        magic = fh.read(4)
    is_parquet = magic == b"PAR1"
    if (format or "").lower() == "parquet" or is_parquet:
        if not is_parquet:
            raise InputError("not a Parquet file", file=str(path), line=1, field="header")
        from traces._parquet import read_parquet  # pyarrow only when a Parquet file is read

        return read_parquet(path, replace(spec or SPECS["specbed"], name="parquet"))
    with P.TextSource(path, progress=progress) as src:
        first = P.first_line(src)
        looks_json = first.lstrip().startswith("{")
        if spec is None:
            spec = SPECS["mooncake"] if looks_json else _detect(P.split_header(first), src)
        elif spec.name == "csv":  # a column mapping fits CSV and JSON lines alike
            spec = replace(spec, json=looks_json)
        if spec.json != looks_json:
            what = "JSON lines" if spec.json else "a CSV header"
            raise InputError(
                f"format {spec.name!r} expects {what}, found {first[:40]!r}",
                file=src.name,
                line=src.line,
                field="header",
            )
        return _read_jsonl(src, spec, first) if spec.json else _read_csv(src, spec, P.split_header(first))


def _detect(header: list[str], src: P.TextSource) -> Spec:
    """The format whose required columns the header has; a near miss names the missing column."""
    have = {h.casefold() for h in header}
    best, best_hits = None, 0
    for spec in SPECS.values():
        if spec.json:
            continue
        hits = sum(c.casefold() in have for c in spec.required)
        if hits == 3:
            return spec
        if hits > best_hits:
            best, best_hits = spec, hits
    if best is not None and best_hits >= 2:
        missing = next(c for c in best.required if c.casefold() not in have)
        raise InputError(
            f"missing column (the header looks like a {best.name} trace: {', '.join(header)})",
            file=src.name,
            line=src.line,
            field=missing,
        )
    raise InputError(
        f"unrecognised header {', '.join(header)[:120]!r}: not an azure, burstgpt, vidur, specbed or "
        "mooncake trace; name the columns with columns={'arrival': ..., 'input': ..., 'output': ...} "
        "(CLI: --columns)",
        file=src.name,
        line=src.line,
        field="header",
    )


def _index(header: list[str], name: str | None, src: P.TextSource, required: bool) -> int | None:
    if not name:
        return None
    folded = [h.casefold() for h in header]
    if name.casefold() in folded:
        return folded.index(name.casefold())
    if required:
        raise InputError(
            f"missing column (header: {', '.join(header)[:120]})", file=src.name, line=src.line, field=name
        )
    return None


def _read_csv(src: P.TextSource, spec: Spec, header: list[str]) -> Raw:
    roles = {
        "arrival": _index(header, spec.arrival, src, True),
        "input": _index(header, spec.input, src, True),
        "output": _index(header, spec.output, src, True),
    }
    for role in ("domain", "model", "session", "hash_ids"):
        j = _index(header, getattr(spec, role), src, role in spec.named)
        if j is not None:
            roles[role] = j
    names = {role: header[j] for role, j in roles.items()}
    pos = {role: k for k, role in enumerate(roles)}
    unit = TIME_UNITS[spec.time_unit]
    numeric = {
        "arrival": P.Grow(np.int64 if unit is None else np.float64),
        "input": P.Grow(np.int64),
        "output": P.Grow(np.int64),
    }
    if "session" in roles:
        numeric["session"] = P.Grow(np.int64)
    labels = {role: P.Labels() for role in ("domain", "model") if role in roles}
    hashes: list[np.ndarray] = []
    coder = P.Coder()
    file = src.name
    for block in P.iter_blocks(src, header, list(roles.values())):
        if numeric["arrival"].n == 0:  # size every column once, from the first block's row length
            estimate = int(src.size_estimate / max(block.chars, 1) * len(block) * 1.05) + 1024
            for grow in numeric.values():
                grow.reserve(estimate)
        where = block.line_of
        col = {role: block.columns[pos[role]] for role in roles}
        if unit is None:
            t = C.to_datetime_ns(col["arrival"], file=file, field=names["arrival"], where=where)
        else:
            t = C.to_float(col["arrival"], file=file, field=names["arrival"], where=where)
        numeric["arrival"].extend(t)
        for role in ("input", "output"):
            numeric[role].extend(C.to_tokens(col[role], file=file, field=names[role], where=where))
        for role, lab in labels.items():
            lab.extend(col[role])
        if "session" in roles:
            if spec.session_numeric:
                s = C.to_float(col["session"], file=file, field=names["session"], where=where)
                numeric["session"].extend(s.astype(np.int64))
            else:
                numeric["session"].extend(coder(col["session"]))
        if "hash_ids" in roles:
            hashes += _split_ints(col["hash_ids"], file, names["hash_ids"], where)
    if numeric["arrival"].n == 0:
        raise InputError(
            "no data rows after the header", file=file, line=src.line + 1, field=names["arrival"]
        )
    out = {role: grow.result() for role, grow in numeric.items()}
    out |= {role: lab.result() for role, lab in labels.items()}
    t = out["arrival"]
    if unit not in (None, 1.0):
        t /= unit
    return Raw(
        spec,
        t,
        unit is None,
        out["input"],
        out["output"],
        out.get("domain"),
        out.get("model"),
        out.get("session"),
        hashes if "hash_ids" in roles else None,
    )


def _split_ints(values: list[str], file: str, field: str, where: P.Where) -> list[np.ndarray]:
    """Space-separated integers per row (specbed's CSV encoding of hash_ids)."""
    out = []
    for k, v in enumerate(values):
        try:
            out.append(np.array(v.split(), dtype=np.int64))
        except (ValueError, OverflowError):
            raise InputError(
                f"expected space-separated integers, found {v[:40]!r}", file=file, line=where(k), field=field
            ) from None
    return out


def _number(obj: dict, key: str, file: str, line: int) -> float:
    if key not in obj:
        raise InputError("missing key", file=file, line=line, field=key)
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or v != v or v in (float("inf"), float("-inf")):
        raise InputError(f"not a number: {v!r}", file=file, line=line, field=key)
    return v


def _read_jsonl(src: P.TextSource, spec: Spec, first: str) -> Raw:
    """JSON lines, one request object per line (Mooncake: timestamp in ms, lengths, hash_ids)."""
    file = src.name
    unit = TIME_UNITS[spec.time_unit]
    if unit is None:
        raise InputError("time_unit 'datetime' is not supported for JSON lines", file=file, field="time_unit")
    ts: list[float] = []
    tokens: list[list[float]] = [[], []]
    hashes: list[np.ndarray] | None = [] if spec.hash_ids else None
    lines: list[int] = []
    line, lineno = first, src.line
    while line:
        if line.strip():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(
                    f"not valid JSON ({err.msg} at column {err.colno})", file=file, line=lineno, field="json"
                ) from None
            if not isinstance(obj, dict):
                raise InputError(
                    f"expected a JSON object, found {type(obj).__name__}",
                    file=file,
                    line=lineno,
                    field="json",
                )
            ts.append(_number(obj, spec.arrival, file, lineno))
            for out, key in zip(tokens, (spec.input, spec.output)):
                v = _number(obj, key, file, lineno)
                if v < 0 or v > C.MAX_TOKENS or v != int(v):
                    raise InputError(f"not a token count ≥ 0: {v!r}", file=file, line=lineno, field=key)
                out.append(v)
            if hashes is not None:
                if "hash_ids" in spec.named and spec.hash_ids not in obj:
                    raise InputError("missing key (named by the column mapping)", file=file, line=lineno,
                                     field=spec.hash_ids)  # fmt: skip
                h = obj.get(spec.hash_ids, [])
                if not isinstance(h, list) or not all(
                    isinstance(x, int) and not isinstance(x, bool) for x in h
                ):
                    raise InputError(
                        "expected a list of integers", file=file, line=lineno, field=spec.hash_ids
                    )
                try:
                    hashes.append(np.array(h, dtype=np.int64))
                except OverflowError:
                    raise InputError(
                        "hash id out of the int64 range", file=file, line=lineno, field=spec.hash_ids
                    ) from None
            lines.append(lineno)
        line = src.readline()
        lineno += 1
    if not ts:
        raise InputError("no requests in the file", file=file, line=lineno, field=spec.arrival)
    inp, out = (np.array(v, dtype=np.float64).astype(np.int64) for v in tokens)
    where = np.array(lines, dtype=np.int64)
    for arr, key in ((inp, spec.input), (out, spec.output)):
        C.check_tokens(arr, file=file, field=key, where=lambda k: int(where[k]))
    return Raw(spec, np.array(ts, dtype=np.float64) / unit, False, inp, out, hash_ids=hashes)
