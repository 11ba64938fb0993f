"""Safe output files, shared by every command that writes results.

Role: the output half of the bad-input contract. Before any work, `check_dir` / `check_file` prove that
an output can be written (the folder is created and a probe file written and removed there), so a command
never computes for an hour and then dies on `--out`. Results are then written with `write_text` /
`write_bytes` / `write_files`: each file goes to a temporary name in its own folder, is flushed and
fsynced, and `os.replace`d over the old one — readers see the old file or the whole new one, never a
part. When a write fails (a full disk, ENOSPC; a folder made read-only meanwhile), the temporary files
are removed, the previous results stay as they were, and an `InputError` says so in one line (exit 2 via
specbed.cli).

Temporary files are named `.tmp-NAME.PID`; a reader never opens them.

May import: the standard library, `specsched.errors`.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TextIO

from specsched.errors import InputError

#: file content: text, bytes, or a function writing to an open handle (text mode unless `binary`)
Content = str | bytes | Callable[[TextIO], None] | Callable[[BinaryIO], None]


def os_reason(err: OSError) -> str:
    """A short lower-case reason for an OSError ("no space left on device", ...), for one-line errors."""
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    if err.errno == errno.EDQUOT:
        return "disk quota exceeded"
    return (err.strerror or type(err).__name__).lower()


def check_dir(path: str | os.PathLike[str], *, field: str = "--out") -> Path:
    """Create folder `path` (and parents) and prove it writable with a probe file; InputError otherwise."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", file=str(out), field=field)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".tmp-probe.{os.getpid()}"
        with open(probe, "wb") as fh:
            fh.write(b"probe")
        probe.unlink()
    except OSError as err:
        raise InputError(f"cannot write here ({os_reason(err)})", file=str(out), field=field) from None
    return out


def check_file(path: str | os.PathLike[str], *, field: str = "--out") -> Path:
    """Prove that file `path` can be (re)written: its folder is writable and it is not a folder itself."""
    out = Path(path)
    if out.is_dir():
        raise InputError("is a folder; give a file name", file=str(out), field=field)
    if str(path).endswith(os.sep):
        raise InputError("ends with a path separator; give a file name", file=str(out), field=field)
    check_dir(out.parent if str(out.parent) else ".", field=field)
    return out


def _tmp(path: Path) -> Path:
    return path.parent / f".tmp-{path.name}.{os.getpid()}"


def _fill(tmp: Path, content: Content, binary: bool) -> None:
    with open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8") as fh:
        if callable(content):
            content(fh)
        else:
            fh.write(content)
        fh.flush()
        os.fsync(fh.fileno())


def _drop(tmp: Path) -> None:
    try:
        tmp.unlink()
    except OSError:
        pass


def write_files(
    directory: str | os.PathLike[str], files: dict[str, Content], *, field: str = "--out"
) -> None:
    """Write every file of `files` (name -> content) into `directory`.

    Each goes to a temporary name first; only when all are complete are they renamed over the old
    files, back to back, so a failure while writing (ENOSPC, permissions) leaves every previous file
    untouched and raises one line. (A kill -9 between two of the renames, a window of microseconds, would
    leave whole files of both runs, never a partial one.)
    """
    folder = Path(directory)
    tmps = {name: _tmp(folder / name) for name in files}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            _fill(tmps[name], content, isinstance(content, bytes))
        for name in files:
            os.replace(tmps[name], folder / name)
    except OSError as err:
        names = ", ".join(files)
        raise InputError(
            f"could not write {names} ({os_reason(err)}); the previous results are intact",
            file=str(folder),
            field=field,
        ) from None
    finally:
        for tmp in tmps.values():
            _drop(tmp)


def write_text(
    path: str | os.PathLike[str], content: str | Callable[[TextIO], None], *, field: str = "--out"
) -> None:
    """Write one text file atomically (see `write_files`)."""
    _write_one(Path(path), content, False, field)


def write_bytes(
    path: str | os.PathLike[str], content: bytes | Callable[[BinaryIO], None], *, field: str = "--out"
) -> None:
    """Write one binary file atomically; a callable gets a binary handle."""
    _write_one(Path(path), content, True, field)


def _write_one(path: Path, content: Content, binary: bool, field: str) -> None:
    tmp = _tmp(path)
    try:
        _fill(tmp, content, binary)
        os.replace(tmp, path)
    except OSError as err:
        raise InputError(
            f"could not write ({os_reason(err)}); the previous file is intact", file=str(path), field=field
        ) from None
    finally:
        _drop(tmp)
