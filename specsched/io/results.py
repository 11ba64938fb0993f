"""The one results writer: one strict JSON dialect and one CSV writer for every command and paper figure.

Role: every results file specbed writes goes through here, so they all read the same way.
- JSON is strict (RFC 8259): NaN and ±inf become `null` (never a bare `NaN`, which most JSON readers
  refuse), numpy scalars and arrays become plain numbers and lists, dict keys become strings, one
  trailing newline (non-ASCII as \\u escapes). `dumps_json` is the only `json.dumps` that writes a result
  (tests/test_results_writer.py holds the repository to that).
- CSV: `write_csv` writes equal-length numpy columns (ints `%d`, floats `%.9g`, NaN as `nan`, bounded
  memory for million-row tables); `csv_text` writes a header and rows of plain values.
- `write_results(DIR, files, config=...)` writes a results folder: every file plus the resolved config
  that produced it (`config.toml`, or `config.json` for commands whose settings are flags), all to
  temporary names first and renamed together (`specsched.io.safeio.write_files`), so a failure leaves the
  previous results whole. `write_json` writes one JSON file atomically (or to stdout for `-`).
- The output flags' one vocabulary: `--out DIR` where a folder is meant (`add_out_dir`), `--out FILE` for
  one file, `--json FILE` for a JSON summary (`-`: standard output); the retired `--out-dir` is read as
  `--out` with a `warning:` line for one release.

May import: numpy, the standard library, `specsched` (safeio, errors, inputs).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
from collections.abc import Iterable
from typing import Any, TextIO

import numpy as np

from specsched.io import inputs, jobdir, safeio

#: `--json -` writes to standard output
STDOUT = "-"
_CHUNK = 65_536  # rows per formatting chunk: memory stays bounded for million-request runs


def plain(value: Any, digits: int | None = None) -> Any:
    """`value` as plain JSON types: NaN/inf -> None, numpy -> Python, tuples -> lists, keys/paths -> str;
    floats rounded to `digits` significant digits when given."""
    if isinstance(value, dict):
        return {str(k): plain(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, digits) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist(), digits)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return value if digits is None else float(f"{value:.{digits}g}")
    return value


def dumps_json(data: Any, *, indent: int | None = 2, sort_keys: bool = True) -> str:
    """`data` as strict JSON text with one trailing newline (`indent=None`: one line, for JSON Lines)."""
    text = json.dumps(plain(data), indent=indent, sort_keys=sort_keys, allow_nan=False)
    return text + "\n"


def write_json(
    path: str | os.PathLike[str], data: Any, *, field: str = "--json", indent: int | None = 2,
    sort_keys: bool = True,
) -> None:  # fmt: skip
    """`data` to `path` atomically as strict JSON; `path` "-" prints it to standard output."""
    text = dumps_json(data, indent=indent, sort_keys=sort_keys)
    if str(path) == STDOUT:
        sys.stdout.write(text)
    else:
        safeio.write_text(path, text, field=field)


def write_csv(handle: TextIO, columns: dict[str, np.ndarray], formats: dict[str, str] | None = None) -> None:
    """Equal-length columns as CSV (ints %d, floats %.9g with NaN as 'nan', or `formats[name]`)."""
    formats = formats or {}
    names = list(columns)
    arrays = [np.asarray(columns[name]) for name in names]
    fmts = [formats.get(n, "%d" if a.dtype.kind in "iub" else "%.9g") for n, a in zip(names, arrays)]
    handle.write(",".join(names) + "\n")
    n = len(arrays[0]) if arrays else 0
    for lo in range(0, n, _CHUNK):
        cols = [np.char.mod(f, a[lo : lo + _CHUNK]).astype(object) for f, a in zip(fmts, arrays)]
        rows = cols[0]
        for col in cols[1:]:
            rows = rows + "," + col
        handle.write("\n".join(rows.tolist()) + "\n")


def csv_text(header: Iterable[str] | None, rows: Iterable[Iterable[Any]]) -> str:
    """A header and rows of plain values as CSV text (`csv` quoting, "\\n" line ends)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header is not None:
        writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def write_results(
    out: str | os.PathLike[str], files: dict[str, Any], *, config: str | dict, field: str = "--out",
    command: str | None = None, adopt: Iterable[str] | None = None, inputs_hash: str | None = None,
) -> None:  # fmt: skip
    """Write a results folder: `files` (name -> text, bytes, a callable of a handle, or a dict/list written
    as strict JSON) and the resolved config beside them, all or none (`safeio.write_files`).

    config: TOML text (written as config.toml, which `specbed run` replays) or a dict of the command's
    resolved settings (written as config.json). The folder is one job's, swapped in whole
    (`specsched.io.jobdir.write_folder`): `command` (default: config["command"], else "run") is recorded in
    its `.job.json` and a folder of another command's results is refused; `adopt` names the old folder's
    entries the new one keeps (None: every entry not rewritten)."""
    body = {name: dumps_json(v) if isinstance(v, (dict, list)) else v for name, v in files.items()}
    if isinstance(config, str):
        body["config.toml"] = config
    else:
        body["config.json"] = dumps_json(config)
    if command is None:
        command = str(config.get("command", "results")) if isinstance(config, dict) else "run"
    job = {"command": command, "config_hash": job_hash(config)}
    if inputs_hash is not None:  # what `--resume` must find unchanged (jobdir.check_inputs)
        job["inputs_hash"] = inputs_hash
    body[jobdir.JOB_FILE] = dumps_json(job)
    jobdir.write_folder(out, body, command=command, adopt=adopt, field=field)


def job_hash(config: str | dict | list) -> str:
    """A short stable hash of a job's resolved config (TOML text) or settings (hashed as strict JSON)."""
    return jobdir.text_hash(config if isinstance(config, str) else dumps_json(plain(config, None)))


class _Retired(argparse.Action):
    """A retired flag still read for one release, as its successor, with a one-line warning."""

    def __call__(self, parser, namespace, values, option_string=None):
        inputs.warn(f"{option_string} is retired; use --out (a folder)", field=option_string)
        setattr(namespace, self.dest, values)


def add_out_dir(parser: argparse.ArgumentParser, *, default: str | None = None, help: str) -> None:
    """`--out DIR` (dest `out`) and the retired `--out-dir` as its hidden alias (see the module doc)."""
    parser.add_argument("--out", metavar="DIR", default=default, help=help)
    parser.add_argument("--out-dir", dest="out", action=_Retired, help=argparse.SUPPRESS)
