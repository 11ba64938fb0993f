"""Low-level streaming readers for trace files: gzip-transparent text opening, CSV blocks as column
lists (their conversion to numpy arrays is `traces._columns`).

Role: the speed-critical core of `traces.formats`. A CSV is read in blocks of about 1 MB; a block of
regular unquoted lines is split with C-level `str.split` calls, anything else (quotes, blank lines,
ragged rows) goes through the `csv` module, which also produces the precise error for a bad row.
Only one block of text is alive at a time, so memory is the numeric columns plus one block.
Imports: numpy, the standard library, specsched.io.errors, specsched.io.inputs.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import os
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np

from specsched.io import inputs
from specsched.io.errors import InputError

BLOCK_CHARS = 1 << 20


class TextSource:
    """An open trace file (plain or gzip, detected from the magic bytes) read as UTF-8 text.

    Also reports reading progress with an ETA on stderr when `progress` is set and the read is slow.
    """

    def __init__(self, path: str | os.PathLike[str], *, progress: bool = False) -> None:
        self.name = str(path)
        # a regular file only (a FIFO or /dev/zero is refused before a byte is read); closed in close()
        raw = inputs.open_input(path, what="trace", limit=inputs.LIMITS["trace"])
        self._raw = raw
        self._size = os.fstat(raw.fileno()).st_size
        binary: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if raw.peek(2)[:2] == b"\x1f\x8b" else raw
        self.gzipped = binary is not raw
        #: rough size of the decoded text in chars (gzip'd CSV traces compress about 4×), to size buffers
        self.size_estimate = self._size * (4 if self.gzipped else 1)
        self.text = io.TextIOWrapper(binary, encoding="utf-8-sig", newline=None)
        self._progress = progress
        self._t0 = time.monotonic()
        self._last = self._t0
        self.line = 0  # lines consumed so far (1-based number of the last line read)

    def __enter__(self) -> TextSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.text.close()
        self._raw.close()

    def read(self, n: int) -> str:
        try:
            chunk = self.text.read(n)
        except UnicodeDecodeError:
            raise self._bad_utf8() from None
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as err:  # zlib: a corrupt gzip stream
            raise InputError(f"cannot read: {err}", file=self.name, line=self.line + 1) from None
        if self._progress:
            self._report()
        return chunk

    def readline(self) -> str:
        try:
            return self.text.readline()
        except UnicodeDecodeError:
            raise self._bad_utf8() from None
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as err:  # zlib: a corrupt gzip stream
            raise InputError(f"cannot read: {err}", file=self.name, line=self.line + 1) from None

    def _bad_utf8(self) -> InputError:
        """Find the first line that is not UTF-8 (decoding runs ahead in chunks, so rescan; error path)."""
        opener = gzip.open if self.gzipped else open
        with opener(self.name, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    return InputError(
                        f"not UTF-8 text (byte {err.start + 1} of the line: {raw[err.start : err.end]!r})",
                        file=self.name,
                        line=lineno,
                    )
        return InputError("not UTF-8 text", file=self.name)

    def _report(self) -> None:
        now = time.monotonic()
        if now - self._last < 2.0 or self._size <= 0:
            return
        self._last = now
        done = min(self._raw.tell() / self._size, 1.0)
        eta = (now - self._t0) * (1 - done) / done if done > 0 else float("nan")
        print(f"reading {self.name}: {100 * done:.0f}% (ETA {eta:.0f} s)", file=sys.stderr, flush=True)


@dataclass
class Block:
    """Up to ~1 MB of CSV rows as text columns; `line_of(k)` = file line number of the block's row k."""

    columns: list[list[str]]
    first_line: int
    lines: list[int] | None  # None when row k is on line first_line + k
    chars: int = 0  # length of the block's text

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def line_of(self, k: int) -> int:
        return self.first_line + k if self.lines is None else self.lines[k]


def first_line(src: TextSource) -> str:
    """The first non-blank line (without its newline); InputError naming the header on an empty file."""
    while True:
        line = src.readline()
        if not line:
            raise InputError(
                "file is empty (expected a header line)", file=src.name, line=src.line + 1, field="header"
            )
        src.line += 1
        if line.strip():
            return line.rstrip("\n")


def split_header(line: str) -> list[str]:
    """Column names of a CSV header line, stripped of spaces."""
    return [name.strip() for name in next(csv.reader([line]))]


def iter_blocks(src: TextSource, header: list[str], wanted: list[int]) -> Iterator[Block]:
    """Data rows after the header, as blocks holding the text of columns `wanted` (header indices)."""
    ncols = len(header)
    carry = ""
    while True:
        chunk = src.read(BLOCK_CHARS)
        text = carry + chunk
        if not text:
            return
        if chunk:
            cut = text.rfind("\n")
            if cut < 0:  # one line longer than a block: read on
                carry = text
                continue
            body, carry = text[:cut], text[cut + 1 :]
        else:
            body, carry = text.rstrip("\n"), ""
        first = src.line + 1
        lines = body.split("\n")
        src.line += len(lines)
        block = _fast_block(body, lines, ncols, wanted, first)
        if block is None:
            block = _slow_block(lines, header, wanted, first, src.name)
        block.chars = len(body) + 1
        if len(block):
            yield block
        if not chunk:
            return


def _fast_block(body: str, lines: list[str], ncols: int, wanted: list[int], first: int) -> Block | None:
    """Split a block of plain lines with C-level string calls; None if any line is not plain."""
    if '"' in body or set(map(str.count, lines, itertools.repeat(","))) != {ncols - 1}:
        return None
    fields = body.replace("\n", ",").split(",")
    return Block([fields[j::ncols] for j in wanted], first, None)


def _slow_block(lines: list[str], header: list[str], wanted: list[int], first: int, name: str) -> Block:
    """Parse with the csv module: handles quotes, skips blank lines, rejects ragged rows by line."""
    ncols = len(header)
    cols: list[list[str]] = [[] for _ in wanted]
    linenos: list[int] = []
    reader = csv.reader(lines)
    rows = iter(reader)
    while True:
        try:
            row = next(rows)
        except StopIteration:
            break
        except csv.Error as err:  # e.g. a quote never closed (quoted fields may not hold line breaks)
            raise InputError(
                f"malformed CSV ({err})", file=name, line=first + reader.line_num - 1, field=header[0]
            ) from None
        lineno = first + reader.line_num - 1
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != ncols:
            if len(row) < ncols:
                what = f"row has {len(row)} fields, the header has {ncols}: missing value"
                raise InputError(what, file=name, line=lineno, field=header[len(row)])
            what = f"row has {len(row)} fields, the header has {ncols}: extra value {row[ncols]!r}"
            raise InputError(what, file=name, line=lineno, field=f"after {header[-1]}")
        for out, j in zip(cols, wanted):
            out.append(row[j])
        linenos.append(lineno)
    return Block(cols, first, linenos)


class Grow:
    """A numpy column filled block by block: one allocation sized from an estimate, grown ×1.5 when
    the estimate was short, trimmed in place at the end (no list of per-block arrays to concatenate)."""

    def __init__(self, dtype: type | np.dtype) -> None:
        self.buf = np.empty(0, dtype=dtype)
        self.n = 0

    def reserve(self, capacity: int) -> None:
        if capacity > self.buf.shape[0]:
            new = np.empty(capacity, dtype=self.buf.dtype)
            new[: self.n] = self.buf[: self.n]
            self.buf = new

    def extend(self, values: np.ndarray) -> None:
        end = self.n + values.shape[0]
        if end > self.buf.shape[0]:
            self.reserve(max(end, self.buf.shape[0] * 3 // 2))
        self.buf[self.n : end] = values
        self.n = end

    def result(self) -> np.ndarray:
        buf, self.buf = self.buf, np.empty(0, dtype=self.buf.dtype)
        buf.resize(self.n, refcheck=False)  # shrink in place; nothing else refers to buf
        return buf


class Labels:
    """A text column kept as int32 codes into a small list of distinct values, then materialized as an
    object array whose rows share one str per value (1.4M rows: 11 MB instead of ~90 MB of str)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.values: list[str] = []
        self.codes = Grow(np.int32)

    def extend(self, values: list[str]) -> None:
        index = self.index
        for v in set(values).difference(index):
            index[v] = len(self.values)
            self.values.append(v.strip())
        self.codes.extend(np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values)))

    def result(self) -> np.ndarray:
        table = np.empty(len(self.values), dtype=object)
        table[:] = self.values
        return table[self.codes.result()]


class Coder:
    """Numbers distinct text values 0, 1, ... in order of first appearance (blank → -1), across blocks."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.count = 0

    def __call__(self, values: list[str]) -> np.ndarray:
        codes = self.codes
        for v in values:
            if v not in codes:
                if v.strip():
                    codes[v] = self.count
                    self.count += 1
                else:
                    codes[v] = -1
        return np.fromiter(map(codes.__getitem__, values), dtype=np.int64, count=len(values))
