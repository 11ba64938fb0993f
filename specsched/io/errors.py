"""One exception type for bad user input, shared by every specbed package.

May import only the standard library. The CLI (`specbed.cli`) turns an `InputError` (and any other
`ValueError` raised while validating user input) into one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import errno
import math
from collections.abc import Callable
from typing import NoReturn


class InputError(ValueError):
    """Bad user input: a file, a line in it, a field, or a CLI flag.

    `str(err)` is one line: ``FILE:LINE: field 'NAME': MESSAGE`` with the parts that are known.
    """

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        self.message = message
        self.file = None if file is None else str(file)
        self.line = line
        self.field = field
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        what = f"field '{self.field}': " if self.field is not None else ""
        return " ".join(f"{where}{what}{self.message}".split())


def os_reason(err: OSError) -> str:
    """A short lower-case reason for an OSError ("no space left on device", ...), for one-line errors."""
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    if err.errno == errno.EDQUOT:
        return "disk quota exceeded"
    if err.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return (err.strerror or type(err).__name__).lower()


class ArgParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one `InputError` line (exit 2 via `specbed.cli`) instead of
    usage + exit: naming `field` when given, and pointing at `PROG --help` when `hint`."""

    def __init__(self, *args, field: str | None = None, hint: bool = False, **kwargs) -> None:
        self.field, self.hint = field, hint
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        raise InputError(f"{message} (see '{self.prog} --help')" if self.hint else message, field=self.field)


def bounded(kind: type = int, lo: float | None = None, hi: float | None = None) -> Callable[[str], float]:
    """An argparse `type=`: a finite `kind` (int or float) in [lo, hi], else argparse's one-line error
    naming the flag (`argument --jobs: must be in [1, 4096], got 10**40`)."""

    def parse(text: str):
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(
                f"expected {'a whole number' if kind is int else 'a number'}, got {text[:40]!r}"
            ) from None
        shown = text if len(text) <= 24 else text[:20] + "..."
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {shown}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            span = f"in [{lo:g}, {hi:g}]" if lo is not None and hi is not None else (
                f"≥ {lo:g}" if lo is not None else f"≤ {hi:g}")  # fmt: skip
            raise argparse.ArgumentTypeError(f"must be {span}, got {shown}")
        return value

    parse.__name__ = "bounded"  # argparse names the type in "invalid bounded value"; the message above wins
    return parse
