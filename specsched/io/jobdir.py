"""A results folder is one job's, written whole: the folder swap every results writer goes through.

Role: `write_folder(out, files, job=...)` builds the new folder as a sibling temporary folder
(`.tmp-NAME.PID`, beside `out`), fills and fsyncs every file there, writes the job's manifest
(`.job.json`: command and a hash of its config) and then swaps it into place in one step (Linux
`renameat2(RENAME_EXCHANGE)`; a plain rename when `out` does not exist yet). A reader — or a kill -9 at any
instant — sees the old folder whole or the new folder whole, never a mix. The old folder is then removed;
a killed job's temporary folder is removed by the next writer (`safeio.clean_stale` on the parent).

`claim(out, command)` holds a folder for one job from its first check to its swap (the checks below, the
folder created and probed, its writer lock held: a second writer is refused). `refuse_other_job(out,
command)` refuses a folder that holds another command's results (a `.job.json`
naming another command, or a run's / sweep's files under a command that writes neither), before the work.
`adopt` names entries of the old folder that the new one keeps (hard links for files, a move for folders:
a run's streamed timeline.json, a search's run cache); `adopt=None` keeps every entry not rewritten.

May import: the standard library, `specsched.io` (errors, inputs, safeio).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from specsched.io import inputs, safeio
from specsched.io.errors import InputError, os_reason

JOB_FILE = ".job.json"
_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def text_hash(text: str) -> str:
    """A short stable hash of a job's config or inputs as text (`specsched.io.results.job_hash`)."""
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def read_job(out: str | os.PathLike[str]) -> dict | None:
    """The manifest of folder `out` (`.job.json`), or None when it has none or an unreadable one."""
    path = Path(out) / JOB_FILE
    try:  # through the input layer: a FIFO, /dev/zero or a hand-broken manifest is "none"
        if not path.exists():
            return None
        data = inputs.load_json(path, what="job manifest")
    except (InputError, OSError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("command"), str) else None


def refuse_other_job(out: str | os.PathLike[str], command: str, *, field: str = "--out") -> None:
    """InputError if folder `out` holds another command's results (mixing them would make neither whole)."""
    folder = Path(out)
    job = read_job(folder)
    if job is not None:
        other = job["command"]
    else:
        kind = safeio.result_kind(folder)
        other = {"run": "run", "sweep": "sweep"}.get(kind or "", "")
        if kind == "sweep" and command == "search":
            other = "search"  # a search's run cache is a sweep folder of its own
    if other and other != command:
        raise InputError(
            f"holds the results of another command ({other}); `{command}` needs its own folder",
            file=str(folder),
            field=field,
        )


def check_inputs(out: str | os.PathLike[str], command: str, inputs_hash: str, *, field: str) -> None:
    """InputError if folder `out` holds a finished `command` job whose inputs hash differs (a `--resume`
    with another space, another SLO): resuming would silently rewrite the finished job's results."""
    refuse_other_job(out, command, field="--out")
    job = read_job(out)
    if job is not None and job.get("inputs_hash") not in (None, inputs_hash):
        raise InputError(
            f"holds a finished {command} of other inputs (hash {job.get('inputs_hash')}, this one "
            f"{inputs_hash}); resume with the same inputs, or choose another folder",
            file=str(out),
            field=field,
        )


@contextlib.contextmanager
def claim(out: str | os.PathLike[str] | None, command: str, *, field: str = "--out") -> Iterator[None]:
    """Hold results folder `out` for one `command` job from its first check to its final swap.

    Before the work: a folder of another command's results is refused, a sweep's folder (or one inside
    a sweep's) is refused, the folder is created and probed writable (a killed job's temporaries
    cleaned), and its writer lock is taken — a second writer is refused (exit 2) while this one works. A
    folder this job created and left empty (it failed) is removed again. `out` None: nothing to hold."""
    if out is None:
        yield
        return
    folder = Path(out)
    fresh = not os.path.lexists(folder)
    refuse_other_job(folder, command, field=field)
    safeio.check_run_dir(folder, field=field)  # names, sweeps, created + probed, lock free
    try:
        with safeio.held(folder, field=field):
            yield
    finally:
        if fresh:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if still empty: the job failed before its swap


def _exchange(a: Path, b: Path) -> None:
    """Swap folders `a` and `b` atomically; OSError when the kernel or filesystem cannot."""
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        raise OSError(errno.ENOSYS, "renameat2 unavailable")
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _adopt(old: Path, new: Path, names: Iterable[str] | None, written: set[str]) -> None:
    try:
        present = os.listdir(old)
    except OSError:
        return
    keep = set(present) if names is None else set(names) & set(present)
    for name in sorted(keep - written - {JOB_FILE}):
        if safeio._STALE.match(name):
            continue
        src, dst = old / name, new / name
        if src.is_dir() and not src.is_symlink():
            os.rename(src, dst)  # a cache folder moves (cheap); a kill after this loses only the cache
        else:
            os.link(src, dst, follow_symlinks=False)


def write_folder(
    out: str | os.PathLike[str], files: dict[str, safeio.Content], *, command: str,
    adopt: Iterable[str] | None = None, field: str = "--out",
) -> None:  # fmt: skip
    """Write results folder `out` whole: `files` (name -> content, see `safeio.write_files`; JOB_FILE among
    them, the job's manifest naming `command`) and the `adopt`ed entries of the old folder, at once."""
    folder = Path(os.path.realpath(out)) if os.path.islink(out) else Path(out)  # swap the folder, not a link
    refuse_other_job(folder, command, field=field)
    parent = folder.parent if str(folder.parent) else Path(".")
    tmp = parent / f".tmp-{folder.name}.{os.getpid()}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        safeio.clean_stale(parent)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        safeio.write_files(tmp, files, field=field)
        if folder.is_dir() and not folder.is_symlink():
            _adopt(folder, tmp, adopt, set(files))
            _fsync_dir(tmp)
            try:
                _exchange(tmp, folder)
            except OSError:  # no renameat2: two renames (a kill between them leaves none, not a mix)
                aside = parent / f".tmp-{folder.name}.old.{os.getpid()}"
                os.rename(folder, aside)
                os.rename(tmp, folder)
                tmp = aside
        else:
            _fsync_dir(tmp)
            os.rename(tmp, folder)
        _fsync_dir(parent)
    except OSError as err:
        raise InputError(
            f"could not write the results ({os_reason(err)}); the previous results are intact",
            file=str(folder),
            field=field,
        ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # after the swap: the old folder


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
