"""The input half of the bad-input contract: every user file is read through here.

Role: one bounded, typed reading layer shared by every reader (traces, sim configs, cost tables, curves,
measured CSV, fit.json, vLLM scrapes / logs / JSON, sweep files and cells, summary.json). It

* opens a path without ever blocking (O_NONBLOCK, so a FIFO cannot hang the open), then refuses anything
  that is not a regular file (a FIFO, /dev/zero, /dev/urandom, a socket, a folder) before reading a byte;
* caps the bytes read (`LIMITS`, named in the error), so no input can grow memory without bound;
* parses JSON and TOML with a nesting-depth limit, an integer-digit limit and (JSON) finite floats, so a
  400-digit integer, `[` × 5000 or `1e400` becomes one line, never OverflowError / RecursionError / Python's
  digit-limit message;
* maps every failure of validating what was parsed (`reading`: OverflowError, TypeError, KeyError,
  RecursionError, numpy overflow warnings, ...) to one `InputError` naming the input file and field.

Surprising but legal input gets a one-line `InputWarning` (`warn`); `collect_warnings` prints each as one
stderr line and hands them to the caller (e.g. to record in summary.json).

May import: the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import stat
import sys
import tomllib
import warnings
from collections.abc import Iterator
from typing import BinaryIO

from specsched.io.errors import InputError, os_reason

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
#: largest input read, by kind (bytes); the error names the limit
LIMITS = {
    "config": 4 * MIB,  # TOML configs and sweep files
    "table": 64 * MIB,  # cost tables, measured CSV, profiles
    "json": 256 * MIB,  # curves, fit.json, summary.json, vLLM JSON, sweep cells
    "log": 1 * GIB,  # vLLM logs and scrapes
    "trace": 16 * GIB,  # traces (streamed, never held whole)
}
MAX_DEPTH = 64  # nesting of JSON / TOML values
MAX_DIGITS = 30  # digits of an integer literal (int64 has 19)
MAX_INT = (1 << 63) - 1
MAX_CELL = 64  # characters of one numeric CSV cell


class InputWarning(UserWarning):
    """Input that is legal but surprising: one stderr line, recorded where the command records results."""


def human(n: int) -> str:
    """1073741824 -> '1 GiB'."""
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory (folder)"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_input(
    path, *, what: str = "input", field: str | None = None, limit: int = LIMITS["json"]
) -> BinaryIO:
    """Open regular file `path` for binary reading; InputError if it is anything else or over `limit`."""
    file = str(path)
    if not file:
        raise InputError(f"empty path for the {what}", field=field)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens without a writer
    except OSError as err:
        raise InputError(f"cannot read {what} ({os_reason(err)})", file=file, field=field) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            raise InputError(f"is {kind}, not a regular file (a {what} must be one)", file=file, field=field)
        if st.st_size > limit:
            raise InputError(
                f"is {human(st.st_size)}, over the {human(limit)} limit for a {what}", file=file, field=field
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path, *, what: str = "input", field: str | None = None, limit: int = LIMITS["json"]) -> bytes:
    """The bytes of regular file `path`, at most `limit` of them (InputError naming the limit beyond)."""
    with open_input(path, what=what, field=field, limit=limit) as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as err:
            raise InputError(f"cannot read {what} ({os_reason(err)})", file=str(path), field=field) from None
    if len(data) > limit:
        raise InputError(f"grew over the {human(limit)} limit for a {what}", file=str(path), field=field)
    return data


def read_text(
    path,
    *,
    what: str = "input",
    field: str | None = None,
    limit: int = LIMITS["json"],
    errors: str = "strict",
) -> str:
    """UTF-8 text of `path` (a BOM is not an error); an undecodable byte is named by line."""
    data = read_bytes(path, what=what, field=field, limit=limit)
    try:
        return data.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(
            f"not a UTF-8 text {what} (undecodable byte at offset {err.start})", file=str(path), line=line
        ) from None


# -- JSON and TOML ------------------------------------------------------------------------------------------


class _Bad(Exception):
    pass


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Bad(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(text)


def parse_json(text: str, file: str, *, field: str | None = None, nonfinite: bool = False) -> object:
    """A JSON document with integer-digit, finite-float (unless `nonfinite`) and depth limits."""
    try:
        doc = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({err.msg})", file=file, line=err.lineno, field=field) from None
    except _Bad as err:
        raise InputError(f"not accepted JSON: {err}", file=file, field=field) from None
    except RecursionError:
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels", file=file, field=field) from None
    check_tree(doc, file, field=field, nonfinite=nonfinite)
    return doc


def load_json(
    path, *, what: str = "JSON file", field: str | None = None, limit: int = LIMITS["json"], nonfinite=False
) -> object:
    """Read and parse JSON file `path` through the limits above."""
    return parse_json(
        read_text(path, what=what, field=field, limit=limit), str(path), field=field, nonfinite=nonfinite
    )


def parse_toml(text: str, file: str, *, field: str | None = None) -> dict:
    """A TOML document; digit-limit, depth and int64 failures named by file (and key)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML: {err}", file=file, field=field) from None
    except RecursionError:
        raise InputError(f"TOML nested deeper than {MAX_DEPTH} levels", file=file, field=field) from None
    except ValueError as err:  # Python's integer-digit limit, raised inside tomllib
        raise InputError(f"not accepted TOML: {_short(err)}", file=file, field=field) from None
    check_tree(doc, file, field=field)
    return doc


def load_toml(
    path, *, what: str = "TOML file", field: str | None = None, limit: int = LIMITS["config"]
) -> dict:
    return parse_toml(read_text(path, what=what, field=field, limit=limit), str(path), field=field)


def check_tree(doc: object, file: str, *, field: str | None = None, nonfinite: bool = True) -> None:
    """Refuse a parsed document nested deeper than MAX_DEPTH, holding an integer beyond int64 or (unless
    `nonfinite`) a NaN / infinite number (JSON's NaN, Infinity, 1e400); the error names the field."""
    stack: list[tuple[object, str, int]] = [(doc, field or "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(f"nested deeper than {MAX_DEPTH} levels", file=file, field=where or None)
        if isinstance(value, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise InputError("integer out of range (beyond 64 bits)", file=file, field=where or None)
        elif isinstance(value, float) and not nonfinite and not math.isfinite(value):
            raise InputError(f"not a finite number: {value!r}", file=file, field=where or None)


# -- typed values -------------------------------------------------------------------------------------------


def _short(err: BaseException) -> str:
    text = " ".join(str(err).split())
    if "Exceeds the limit" in text and "digits" in text:
        return "an integer with too many digits"
    return text[:200] or type(err).__name__


def number(
    value: object,
    *,
    file: str | None = None,
    line: int | None = None,
    field: str | None = None,
    integer: bool = False,
    lo: float | None = None,
    hi: float | None = None,
    text: bool = True,
) -> float:
    """A finite number (an int when `integer`) from a parsed value or (when `text`) a text cell, within
    [lo, hi]. A JSON reader passes text=False: "3" where a count belongs is a string, not a number."""
    if isinstance(value, str) and text:
        text = value.strip()
        if len(text) > MAX_CELL:
            raise InputError(f"a number of {len(text)} characters", file=file, line=line, field=field)
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"not a number: {text[:40]!r}", file=file, line=line, field=field) from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        got = "null" if value is None else type(value).__name__
        raise InputError(f"expected a number, got {got}", file=file, line=line, field=field)
    if not math.isfinite(value) or abs(value) > 1e300:
        raise InputError(f"not a finite number: {value!r}"[:80], file=file, line=line, field=field)
    if integer and (value != int(value) or abs(value) > MAX_INT):
        raise InputError(f"expected a whole number, got {value!r}"[:80], file=file, line=line, field=field)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"[{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        raise InputError(f"{value!r} is outside {rng}"[:120], file=file, line=line, field=field)
    return int(value) if integer else float(value)


def unique_columns(names: list[str], file: str, line: int | None = None) -> None:
    """Refuse a CSV header that names a column twice (`tokens,seconds,seconds`: which one is meant?)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"column {name!r} appears twice in the header", file=file, line=line, field=name)
        seen.add(name)


def mapping(value: object, *, file: str | None = None, field: str | None = None) -> dict:
    """`value` if it is a JSON object / TOML table, else InputError naming what it is."""
    if not isinstance(value, dict):
        got = "null" if value is None else type(value).__name__
        raise InputError(f"expected an object (a mapping), got {got}", file=file, field=field)
    return value


@contextlib.contextmanager
def reading(file: str | os.PathLike[str], *, field: str | None = None) -> Iterator[None]:
    """Map any failure while validating input `file` to one InputError naming it (and `field`).

    Wrong types (TypeError, AttributeError, KeyError, IndexError), magnitudes (OverflowError, numpy's
    overflow warnings), nesting (RecursionError), CSV errors and bare ValueErrors all become
    ``FILE: field 'F': REASON``; an InputError without a file gets this one.
    """
    file = str(file)
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "error", message=".*(overflow|invalid value|divide by zero).*", category=RuntimeWarning
        )
        try:
            yield
        except InputError as err:
            if err.file is None:
                raise InputError(err.message, file=file, line=err.line, field=err.field or field) from None
            raise
        except KeyError as err:
            raise InputError(f"missing field {err.args[0]!r}"[:120], file=file, field=field) from None
        except (TypeError, AttributeError, IndexError) as err:
            raise InputError(f"wrong type or shape ({_short(err)})", file=file, field=field) from None
        except (OverflowError, FloatingPointError, RuntimeWarning) as err:
            raise InputError(f"a number out of range ({_short(err)})", file=file, field=field) from None
        except RecursionError:
            raise InputError(f"nested deeper than {MAX_DEPTH} levels", file=file, field=field) from None
        except csv.Error as err:
            raise InputError(f"malformed CSV ({_short(err)})", file=file, field=field) from None
        except ValueError as err:
            raise InputError(_short(err), file=file, field=field) from None


# -- warnings -----------------------------------------------------------------------------------------------


def warn(message: str, *, file: str | None = None, line: int | None = None, field: str | None = None) -> None:
    """A one-line warning about legal but surprising input (see `collect_warnings`)."""
    warnings.warn(InputWarning(InputError(message, file=file, line=line, field=field).args[0]), stacklevel=2)


@contextlib.contextmanager
def collect_warnings(prefix: str = "specbed") -> Iterator[list[str]]:
    """Inside the block, each InputWarning prints as one stderr line `PREFIX: warning: ...` and is
    appended to the yielded list (each distinct message once)."""
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        original = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if not issubclass(category, InputWarning):
                return original(message, category, filename, lineno, file, line)
            text = " ".join(str(message).split())
            if text not in notes:
                notes.append(text)
                print(f"{prefix}: warning: {text}", file=sys.stderr)
            return None

        warnings.showwarning = show
        yield notes
