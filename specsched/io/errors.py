"""One exception type for bad user input, shared by every specbed package.

May import only the standard library. The CLI (`specbed.cli`) turns an `InputError` (and any other
`ValueError` raised while validating user input) into one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import errno
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
