"""Write a `RequestTable` as specbed's normalized CSV (optionally .gz) or Parquet, atomically.

Role: what `specbed trace convert` / `synth` write. A temporary file in the target directory is
written, flushed and fsynced, then renamed over the target with `os.replace`, so a failed or
interrupted run (or a full disk) never leaves a half-written file and never overwrites an earlier result.
CSV columns: arrival_s, input_tokens, output_tokens, then domain, model, session_id, hash_ids (space-
separated integers) when present; `traces.load` reads it back (format "specbed").
Imports: numpy, the standard library, specsched.io.errors, specsched.io.safeio (the atomic write),
traces.table;
pyarrow lazily (Parquet).
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import tempfile
from pathlib import Path

from specsched.io import safeio
from specsched.io.errors import InputError
from traces.table import RequestTable

__all__ = ["save"]

_CHUNK = 65536


def _kind(path: Path) -> str:
    name = path.name.lower()
    for suffix, kind in ((".csv.gz", "csv.gz"), (".csv", "csv"), (".parquet", "parquet")):
        if name.endswith(suffix):
            return kind
    raise InputError("output must end in .csv, .csv.gz or .parquet", file=str(path), field="out")


def save(table: RequestTable, path: str | os.PathLike[str]) -> Path:
    """Write `table` to `path` (.csv, .csv.gz or .parquet) atomically; returns the path."""
    path = Path(path)
    kind = _kind(path)
    if kind == "parquet":
        try:
            import pyarrow  # noqa: F401 - fail before touching the disk
        except ImportError:
            raise InputError(
                "writing Parquet needs pyarrow: pip install 'specbed[parquet]' (or write .csv)",
                file=str(path),
                field="out",
            ) from None
    check_out(path)

    def fill(raw) -> None:
        if kind == "parquet":
            _write_parquet(table, raw)
        elif kind == "csv.gz":
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz:
                _write_csv(table, gz)
        else:
            _write_csv(table, raw)

    # temp file + fsync + rename; a failure (full disk) leaves the old file and raises one line
    safeio.write_bytes(path, fill, field="out")
    return path


def check_out(path: str | os.PathLike[str]) -> Path:
    """Prove that `path` can be written (known suffix, existing writable folder, not a folder itself);
    returns its folder. Called before any work so a bad output is reported before a long conversion."""
    path = Path(path)
    _kind(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError("the output directory does not exist", file=str(path), field="out")
    if path.is_dir():
        raise InputError("the output is a directory", file=str(path), field="out")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise InputError(
            f"cannot write in its folder ({(err.strerror or str(err)).lower()})", file=str(path), field="out"
        ) from None
    return parent


def _write_csv(table: RequestTable, binary) -> None:
    text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
    writer = csv.writer(text, lineterminator="\n")
    names = table.columns()
    writer.writerow(names)
    for start in range(0, len(table), _CHUNK):
        sl = slice(start, start + _CHUNK)
        cols = []
        for name in names:
            if name == "hash_ids":
                cols.append([" ".join(map(str, h.tolist())) for h in table.hash_ids[sl]])
            else:
                cols.append(getattr(table, name)[sl].tolist())
        writer.writerows(zip(*cols))
    text.flush()
    text.detach()  # leave `binary` open for the caller to fsync


def _write_parquet(table: RequestTable, binary) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = {name: getattr(table, name) for name in table.columns() if name != "hash_ids"}
    for name in ("domain", "model"):
        if name in data:
            data[name] = pa.array(data[name].tolist(), type=pa.string())
    if table.hash_ids is not None:
        data["hash_ids"] = pa.array([h.tolist() for h in table.hash_ids], type=pa.list_(pa.int64()))
    meta = {"format": "specbed", "source": str(table.meta.get("source", ""))}
    pq.write_table(pa.table(data, metadata=meta), binary)


def as_csv_text(table: RequestTable) -> str:
    """The normalized CSV as a string (small tables; handy in tests and notebooks)."""
    buf = io.BytesIO()
    _write_csv(table, buf)
    return buf.getvalue().decode()
