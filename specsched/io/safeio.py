"""Safe output files, shared by every command that writes results.

Role: the output half of the bad-input contract. Before any work, `check_dir` / `check_file` prove that
an output can be written (the folder is created and a probe file written and removed there), so a command
never computes for an hour and then dies on `--out`. Results are then written with `write_text` /
`write_bytes` / `write_files`: each file goes to a temporary name in its own folder, is flushed and
fsynced, and `os.replace`d over the old one — readers see the old file or the whole new one, never a
part. When a write fails (a full disk, ENOSPC; a folder made read-only meanwhile), the temporary files
are removed, the previous results stay as they were, and an `InputError` says so in one line (exit 2 via
specbed.cli).

Temporary files are named `.tmp-NAME.PID`; a reader never opens them, and `check_dir` removes those
whose process is gone (a kill -9 mid-write). `check_file` also refuses an output that is one of the
command's inputs or a file a run / sweep folder owns (`refuse_clobber`); `claimed_file` is `check_file`
holding the file's lock (`.NAME.lock`, flock) until the write, so a second writer is refused;
`check_run_dir` keeps runs out of sweep folders; `held` is the folder writer lock (flock) a
read-modify-write holds.

May import: the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from specsched.io.errors import InputError, os_reason

#: the files a run folder (`specbed run --out`) and a sweep folder own (besides cells/ and errors/)
RUN_FILES = ("summary.json", "requests.csv", "series.csv", "confidence.json", "config.toml", "timeline.json")
SWEEP_FILES = ("sweep.json", "results.jsonl", "results.csv")

#: file content: text, bytes, or a function writing to an open handle (text mode unless `binary`)
Content = str | bytes | Callable[[TextIO], None] | Callable[[BinaryIO], None]


def check_dir(path: str | os.PathLike[str], *, field: str = "--out") -> Path:
    """Create folder `path` (and parents) and prove it writable with a probe file; InputError otherwise."""
    out = Path(path)
    check_names(out, field=field)
    try:
        if out.exists() and not out.is_dir():
            raise InputError("exists and is not a folder", file=str(out), field=field)
        out.mkdir(parents=True, exist_ok=True)
        clean_stale(out)
        probe = out / f".tmp-probe.{os.getpid()}"
        with open(probe, "wb") as fh:
            fh.write(b"probe")
        probe.unlink()
    except OSError as err:
        raise InputError(f"cannot write here ({os_reason(err)})", file=str(out), field=field) from None
    return out


NAME_MAX = 255  # bytes of one file or folder name on Linux filesystems


def check_names(path: str | os.PathLike[str], *, field: str = "--out") -> None:
    """Refuse a path with a name over NAME_MAX bytes before any folder of it is created."""
    for part in Path(path).parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise InputError(
                f"a name in the path is {len(os.fsencode(part))} bytes, over {NAME_MAX}: file name too long",
                file=str(path)[:120] + ("..." if len(str(path)) > 120 else ""),
                field=field,
            )


def check_file(
    path: str | os.PathLike[str], *, field: str = "--out", inputs: Iterable[str | os.PathLike[str]] = ()
) -> Path:
    """Prove that file `path` can be (re)written: its folder is writable, it is not a folder itself, not
    one of the command's `inputs` and not a file a run or sweep folder owns (see `refuse_clobber`)."""
    out = Path(path)
    check_names(out, field=field)
    if str(path).endswith(os.sep):
        raise InputError("ends with a path separator; give a file name", file=str(out), field=field)
    try:
        if out.is_dir():
            raise InputError("is a folder; give a file name", file=str(out), field=field)
        _refuse_special(out, field)
    except OSError as err:  # a name over 255 bytes, a loop of links
        raise InputError(f"cannot write here ({os_reason(err)})", file=str(out), field=field) from None
    refuse_clobber(out, inputs=inputs, field=field)
    check_dir(out.parent if str(out.parent) else ".", field=field)
    return out


def _refuse_special(out: Path, field: str) -> None:
    """An output is a regular file renamed into place: renaming it over a device, a FIFO or a socket
    (`--json /dev/full`, as root) would replace the node, and writing into one reports nothing."""
    try:
        mode = os.stat(out).st_mode  # through links: a link to /dev/null is a device too
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        what = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
        raise InputError(
            f"is {what}; an output is written as a regular file ('-' writes to standard output)",
            file=str(out),
            field=field,
        )


@contextlib.contextmanager
def claimed_file(
    path: str | os.PathLike[str] | None,
    *,
    field: str = "--out",
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> Iterator[Path | None]:
    """`check_file`, then hold output file `path` from this first check until the block ends (its write):
    a second writer of the same file is refused (exit 2) instead of racing this one to the rename.

    The lock is an flock on `.NAME.lock` beside the file, removed when the block ends (a kill -9 leaves
    it unlocked: the next writer takes it over and removes it). `path` None (no output asked) or "-"
    (standard output) holds nothing.
    """
    if path is None or str(path) == "-":
        yield None if path is None else Path(path)
        return
    out = check_file(path, field=field, inputs=inputs)
    lock = out.parent / f".{out.name}.lock"
    fd = _lock_file(lock, out, field)
    try:
        yield out
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # while still held: a writer waiting on this inode re-checks and retries
        os.close(fd)


def _lock_file(lock: Path, out: Path, field: str) -> int:
    for _ in range(100):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError as err:
            raise InputError(f"cannot write here ({os_reason(err)})", file=str(out), field=field) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InputError(
                "another specbed process is writing this file (its lock is held)", file=str(out), field=field
            ) from None
        try:
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                return fd  # the lock file we hold is the one on disk (not one its last holder removed)
        except FileNotFoundError:
            pass
        os.close(fd)
    raise InputError("could not take this file's lock", file=str(out), field=field)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except (OSError, RuntimeError, ValueError):
        return False


def result_kind(folder: str | os.PathLike[str]) -> str | None:
    """ "sweep" (a sweep.json or cells/ folder), "run" (summary.json + requests.csv) or None."""
    d = Path(folder)
    try:
        if (d / "sweep.json").exists() or (d / "cells").is_dir():
            return "sweep"
        if (d / "summary.json").is_file() and (d / "requests.csv").is_file():
            return "run"
    except OSError:
        return None
    return None


def refuse_clobber(
    out: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str]] = (), field: str = "--out"
) -> None:
    """InputError if output file `out` is one of `inputs` or a file of a run / sweep folder's own (a
    report onto sweep.json, an export onto summary.json would destroy the results they read)."""
    out = Path(out)
    with contextlib.suppress(OSError, RuntimeError):
        real = out.resolve()  # through links: a link onto a run's summary.json is that file
        if real != out.absolute():
            refuse_clobber(real, inputs=inputs, field=field)
    for given in inputs:
        if _same(out, Path(given)):
            raise InputError(
                f"is also an input of this command ({given}); write the result elsewhere",
                file=str(out),
                field=field,
            )
    parent, grand = out.parent, out.parent.parent
    kind = result_kind(parent)
    owned = (kind == "run" and out.name in RUN_FILES) or (kind == "sweep" and out.name in SWEEP_FILES)
    if not owned and parent.name in ("cells", "errors") and result_kind(grand) == "sweep":
        kind, owned = "sweep", True
    if owned:
        raise InputError(
            f"is a file of the {kind} results in {parent}; write elsewhere", file=str(out), field=field
        )


def check_run_dir(path: str | os.PathLike[str], *, field: str = "--out") -> Path:
    """`check_dir` for a run's folder: refused when it holds (or a running sweep holds) a sweep."""
    out = Path(path)
    check_names(out, field=field)
    if result_kind(out) == "sweep":
        raise InputError("holds a sweep's results; a run needs its own folder", file=str(out), field=field)
    if any(os.path.isfile(up / "sweep.json") for up in out.parents):
        raise InputError(
            "is inside a sweep's results folder; a run needs its own", file=str(out), field=field
        )
    check_dir(out, field=field)
    if not try_lock(out):
        raise InputError(
            "another specbed process is writing this folder (its lock is held)", file=str(out), field=field
        )
    return out


def try_lock(folder: Path) -> bool:
    """Whether nobody holds `folder`'s writer lock (the flock a sweep or a run holds on the folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # releases a lock taken here


@contextlib.contextmanager
def held(folder: str | os.PathLike[str], *, wait_s: float = 0.0, field: str = "--out") -> Iterator[None]:
    """Hold `folder`'s writer lock (flock on the folder; dropped by the OS even on kill -9) for the block.

    `wait_s` > 0 waits that long for another holder (a read-modify-write of a shared file); 0 refuses.
    """
    fd = os.open(folder, os.O_RDONLY)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise InputError(
                        "another specbed process is writing this folder (its lock is held)",
                        file=str(folder),
                        field=field,
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


STALE_S = 60.0  # a temporary file untouched this long, of a process that is gone, is debris
_STALE = re.compile(r"^\.(?:tmp-.+\.|.+\.tmp-)(\d+)$")


def clean_stale(folder: str | os.PathLike[str]) -> None:
    """Remove `.tmp-NAME.PID` / `.NAME.tmp-PID` files whose writer process is gone (a kill -9)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        m = _STALE.match(name)
        if m is None or _alive(int(m.group(1))):
            continue
        path = os.path.join(folder, name)
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if time.time() - st.st_mtime > STALE_S:  # a writer elsewhere (another host) is slow
                if stat.S_ISDIR(st.st_mode):  # a results folder a killed job was filling (write_folder)
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


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
        _refuse_special(path, field)  # also where a writer skipped check_file
        _fill(tmp, content, binary)
        os.replace(tmp, path)
    except OSError as err:
        raise InputError(
            f"could not write ({os_reason(err)}); the previous file is intact", file=str(path), field=field
        ) from None
    finally:
        _drop(tmp)
