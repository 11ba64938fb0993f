"""A sweep's results folder: manifest, one file per finished cell, consolidated results.

Role: the crash-safety of sweeps. Every file is written whole or not at all (temp file in the same folder,
fsync, `os.replace`), so a sweep killed at any instant (`kill -9`) leaves only complete cell files, and
`--resume` re-runs exactly the cells without one. Layout of DIR:

    sweep.json          manifest: format version, sweep name, cell model, fingerprint (model + cell keys),
                        the cells (key, index, series, facet, point, swept values, resolved config)
    cells/KEY.json      one finished cell: its row (key, config, ...) and `summary` (every metric)
    errors/KEY.txt      a cell that raised (traceback); removed when the cell later succeeds
    results.jsonl       one row per cell, in cell order — rebuilt from cells/ when a run ends
    results.csv         the same rows flattened: key, series, facet, point, swept values, metrics


Temp files are named `.tmp-*`; they are never read and are removed on the next run. A cell file that does
not parse as a whole row of its own cell (0 bytes, truncated, edited) counts as unfinished: `--resume`
recomputes it, and `load_rows` (report, pareto) says so in a `warning:` line; a metric edited into a
non-finite number or an integer past the digit bound is refused there, naming the file and its column.
The one sweep writing a folder holds an OS lock on it (`fcntl.flock` on the folder itself)
for its whole life; a second writer (another `specbed sweep` on the same folder, `--force` included) is
refused in one line before it touches anything, so the folder always holds one whole sweep.

May import: the standard library, `specsched.io.errors`, `specsched.io.inputs`, `specsched.io.safeio`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from specsched.io import inputs, safeio
from specsched.io.errors import InputError
from specsched.io.results import csv_text, dumps_json

FORMAT = 1
MANIFEST = "sweep.json"
OURS = (MANIFEST, "cells", "errors", "results.jsonl", "results.csv")


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one, never a part
    (`specsched.io.safeio.write_text`: a full disk leaves the old file and raises one line)."""
    safeio.write_text(path, text)


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the folder's writer lock for the block (creating `out`); InputError if another process holds it.

    The lock is an `fcntl.flock` on the folder itself (no lock file to leave behind): the OS drops it when
    its holder exits, even on kill -9, so a stale lock never blocks a later `--resume`.
    """
    out = Path(out)
    safeio.check_dir(out)
    fd = os.open(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                "another sweep is writing this folder (its lock is held); wait for it to finish or choose "
                "another folder",
                field=str(out),
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


def read_manifest(out: Path) -> dict | None:
    """The manifest of folder `out`, or None when it holds none (or an unreadable one)."""
    try:  # regular file, size cap, digit and depth limits: a FIFO or /dev/zero is "no manifest"
        data = inputs.load_json(Path(out) / MANIFEST, what="sweep manifest")
    except InputError:
        return None
    return data if isinstance(data, dict) and "fingerprint" in data else None


def _visible(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if not p.name.startswith(".tmp-"))


def prepare(out: Path, manifest: dict, *, resume: bool, force: bool) -> None:
    """Make `out` ready to hold `manifest`'s sweep, or raise InputError (one line) having touched nothing.

    - missing or empty folder: created, manifest written;
    - holds the same sweep (same fingerprint): with `resume`, kept (finished cells are reused); with
      `force`, its sweep files are removed and it starts again; else an error that says to pass --resume;
    - holds another sweep: with `force`, its sweep files (only those, see OURS) are removed; else an error;
    - holds anything else: an error (never cleared).
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", field=str(out))
    if out.exists() and _visible(out):
        old = read_manifest(out)
        if old is None:
            raise InputError(
                "output folder is not empty and holds no sweep; choose another folder", field=str(out)
            )
        same = old.get("fingerprint") == manifest["fingerprint"]
        if force:
            clear(out)
        elif not same:
            raise InputError(
                f"output folder holds a different sweep ({old.get('name')!r}, "
                f"{len(old.get('cells', []))} cells); choose another folder or pass --force",
                field=str(out),
            )
        elif not resume:
            done = len(finished_keys(out))
            raise InputError(
                f"output folder already holds this sweep ({done}/{len(manifest['cells'])} "
                "cells done); pass --resume to finish it or --force to start again",
                field=str(out),
            )
    out.mkdir(parents=True, exist_ok=True)
    for stale in [*out.glob(".tmp-*"), *(out / "cells").glob(".tmp-*")]:
        stale.unlink(missing_ok=True)
    # the manifest first: a kill before cells/ exists leaves a folder `--resume` takes (kill_writers bench)
    atomic_write(out / MANIFEST, dumps_json(manifest, indent=1, sort_keys=False))
    (out / "cells").mkdir(exist_ok=True)


def clear(out: Path) -> None:
    """Remove the sweep files of `out` (nothing else)."""
    for name in OURS:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def finished_keys(out: Path) -> set[str]:
    """Keys of the cells with a valid result file (see `read_cell`); broken files do not count."""
    cells = Path(out) / "cells"
    if not cells.is_dir():
        return set()
    keys = {p.stem for p in cells.glob("*.json") if not p.name.startswith(".tmp-")}
    return {k for k in keys if read_cell(out, k) is not None}


def write_cell(out: Path, row: dict) -> None:
    atomic_write(Path(out) / "cells" / f"{row['key']}.json", dumps_json(row, indent=None))
    err = Path(out) / "errors" / f"{row['key']}.txt"
    if err.exists():
        err.unlink()


def write_error(out: Path, key: str, text: str) -> None:
    (Path(out) / "errors").mkdir(exist_ok=True)
    atomic_write(Path(out) / "errors" / f"{key}.txt", text)


def read_cell(out: Path, key: str) -> dict | None:
    """The stored row of cell `key`, or None when missing or broken (empty, truncated, not this cell's)."""
    try:
        row = inputs.load_json(Path(out) / "cells" / f"{key}.json", what="sweep cell", nonfinite=True)
    except InputError:
        return None
    if not isinstance(row, dict) or row.get("key") != key or not isinstance(row.get("summary"), dict):
        return None
    return row


def consolidate(out: Path, heads: list[dict]) -> list[dict]:
    """Rebuild results.jsonl / results.csv from the cell files, in the order of `heads` (manifest cells).

    Each row = the manifest's head of the cell (current series/facet names) + the stored `summary`, so
    every cell appears at most once whatever happened before. Returns the rows of finished cells.
    """
    out = Path(out)
    rows = []
    for head in heads:
        stored = read_cell(out, head["key"])
        if stored is not None:
            rows.append({**head, "summary": stored.get("summary", {}), "wall_s": stored.get("wall_s")})
    atomic_write(out / "results.jsonl", "".join(dumps_json(r, indent=None) for r in rows))
    atomic_write(out / "results.csv", _csv(rows))
    return rows


def _csv(rows: list[dict]) -> str:
    axis_cols: list[str] = []
    metric_cols: list[str] = []
    for row in rows:
        axis_cols += [k for k in row["axes"] if k not in axis_cols]
        metric_cols += [k for k in row["summary"] if k not in metric_cols]
    header = ["key", "series", "facet", "point", *axis_cols, *metric_cols]
    return csv_text(
        header,
        (
            [
                row["key"],
                row["series"],
                row["facet"],
                row["point"],
                *(_cell_text(row["axes"].get(k)) for k in axis_cols),
                *(_cell_text(row["summary"].get(k)) for k in metric_cols),
            ]
            for row in rows
        ),
    )


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ";".join(map(str, value))
    return str(value)


def load_rows(out: Path) -> tuple[dict, list[dict]]:
    """(manifest, rows) of a results folder, rows rebuilt from the cell files (InputError if no sweep)."""
    out = Path(out)
    manifest = read_manifest(out)
    if manifest is None:
        raise InputError("holds no sweep results (no sweep.json); run `specbed sweep` first", field=str(out))
    rows = []
    with inputs.reading(out / MANIFEST, field="cells"):  # a hand-edited manifest: one line naming it
        for head in manifest.get("cells", []):
            key = inputs.mapping(head)["key"]
            stored = read_cell(out, key)
            if stored is None:
                _unread_cell(out, key)
                continue
            summary = inputs.mapping(stored.get("summary", {}), field=f"{key}.summary")
            _check_summary(out / "cells" / f"{key}.json", summary)
            rows.append({**head, "summary": summary, "wall_s": stored.get("wall_s")})
    return manifest, rows


def _check_summary(path: Path, summary: dict) -> None:
    """Every metric of a cell a reader reports is a finite number of float range (the writer stores NaN as
    null): a hand-edited inf, NaN or 10**400 is one line naming the cell file and the column."""
    for name, value in summary.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"not a finite number: {value!r} (a hand-edited cell?)", file=str(path),
                             field=f"summary.{name}")  # fmt: skip
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**1023:
            raise InputError("an integer beyond float range (a hand-edited cell?)", file=str(path),
                             field=f"summary.{name}")  # fmt: skip


def _unread_cell(out: Path, key: str) -> None:
    """A cell file present but not a whole row of its cell: an integer past the reader's digit bound is
    one line naming the file and its column; any other (empty, truncated) counts as unfinished, said in a
    `warning:` line (a sweep's `--resume` recomputes it)."""
    path = Path(out) / "cells" / f"{key}.json"
    if not path.is_file():
        return  # not finished (or failed: errors/KEY.txt)
    try:
        text = inputs.read_text(path, what="sweep cell")
        doc = json.loads(text, parse_int=lambda t: t if len(t.lstrip("-")) > inputs.MAX_DIGITS else int(t))
    except (InputError, ValueError, RecursionError):
        doc = None
    summary = doc.get("summary") if isinstance(doc, dict) else None
    for name, value in (summary or {}).items() if isinstance(summary, dict) else ():
        if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) > inputs.MAX_DIGITS:
            raise InputError(f"an integer of {len(value.lstrip('-'))} digits (a hand-edited cell?)",
                             file=str(path), field=f"summary.{name}")  # fmt: skip
    inputs.warn(
        "not a whole result of its cell (empty, truncated or edited): left out as unfinished", file=str(path)
    )
