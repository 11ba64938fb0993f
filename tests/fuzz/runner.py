"""Run one generated variant in a forked child and judge it against the bad-input contract.

Role: `build(template, ws, files)` makes a variant's workspace (a copy of the template: the seed files, a
finished run and sweep; then the variant's own entries, special files included); `run(ws, argv)` runs
`specbed.cli.main(argv)` in a forked child of the (preloaded) caller with a wall-clock limit and an
address-space cap, stdout and stderr to files; `judge(...)` says why a result breaks the contract (None
when it keeps it): exit 0 with a result, or exit 2 with exactly one `error:` line (warning lines aside)
naming the file or flag — never a traceback, another exit code, a hang, `inf`/`nan` in an output table or
on stdout, or a file that was there before changed (an output written onto an input).

May import: the standard library, specbed.cli (in the child).
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import stat
import sys
import time
from pathlib import Path

MEM = 3 << 30  # address-space cap: a reader that grows without bound dies instead of swapping
NONFINITE = re.compile(r"(?i)(?<![A-Za-z_])[-+]?(nan|inf|infinity)(?![A-Za-z_])")
#: tables a person reads (a results CSV writes 'nan' for "no value", as documented; not checked)
TABLES = (".md", ".txt")
PROGRESS = re.compile(r"\[[=> ]*\] *\d+/\d+ .*(elapsed|ETA)")  # specsched.io.progress's bar on stderr


def _special(path: Path, name: str) -> None:
    if name == "directory" or name == "empty-dir":
        path.mkdir()
    elif name == "dev-null":
        os.symlink("/dev/null", path)
    elif name == "fifo":
        os.mkfifo(path)
    elif name == "symlink-loop":
        os.symlink(path.name + ".b", path)
        os.symlink(path.name, path.with_name(path.name + ".b"))
    elif name == "unreadable":
        path.write_bytes(b"x = 1\n")
        path.chmod(0)
    elif name == "regular-file":
        path.write_bytes(b"not a folder\n")
    elif name == "full-device":  # /dev/full's twin in the workspace: an output replacing it harms nothing
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        except PermissionError:
            os.symlink("/dev/full", path)
    elif name.startswith("link:"):
        os.symlink(name[5:], path)
    elif name != "missing":
        raise ValueError(f"unknown special file {name!r}")


def build(template: Path, ws: Path, files: dict[str, object]) -> None:
    """ws = template + files: name -> bytes | "SPECIAL_<name>" | ("copy", template entry)."""
    shutil.copytree(template, ws, symlinks=True)
    for name, what in sorted(files.items(), key=lambda kv: not isinstance(kv[1], tuple)):
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(what, tuple):
            shutil.copytree(ws / what[1], path, symlinks=True)
        elif isinstance(what, str):
            _special(path, what.removeprefix("SPECIAL_"))
        else:
            path.write_bytes(what)


def snapshot(ws: Path) -> dict[str, str]:
    """{relative path: sha256 | 'dir' | 'special MODE'}; never opens a special file (a FIFO would block)."""
    out = {}
    for dirpath, dirs, names in os.walk(ws):
        for name in names + dirs:
            p = Path(dirpath) / name
            rel = str(p.relative_to(ws))
            if os.path.islink(p) or (not os.path.isfile(p) and not os.path.isdir(p)):
                out[rel] = f"special {os.lstat(p).st_mode:o}"
            elif os.path.isdir(p):
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


#: the command modules a parent loads once, so that no forked child pays for their imports
PRELOAD = ("specbed.cli", "sim.cli", "analysis.cli", "traces.cli", "bridge.cli", "specbed.cost_cli",
           "specbed.plan_cli")  # fmt: skip


def preload() -> None:
    for mod in PRELOAD:
        __import__(mod)


def _child(ws: Path, argv: list[str], out_f: Path, err_f: Path, cap: bool) -> None:
    code = 99
    try:
        os.chdir(ws)
        if cap:
            resource.setrlimit(resource.RLIMIT_AS, (MEM, MEM))
        os.dup2(os.open(out_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
        os.dup2(os.open(err_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)  # not pytest's
        from specbed.cli import main

        code = main(argv)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 98)


def start(ws: Path, argv: list[str], tag: str = "", cap: bool = True) -> tuple[int, Path, Path]:
    """Fork a child running argv in ws (stdout, stderr to files beside ws; `cap`: the memory cap)."""
    out_f, err_f = ws.parent / f"stdout{tag}.txt", ws.parent / f"stderr{tag}.txt"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(ws, argv, out_f, err_f, cap)
    return pid, out_f, err_f


def wait(pid: int, out_f: Path, err_f: Path, limit_s: float) -> tuple[str, int, str, str]:
    """(status ok | hang | killed, exit code, stdout, stderr)."""
    deadline = time.monotonic() + limit_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return "hang", -1, "", err_f.read_text(errors="replace")
        time.sleep(0.005)
    out, err = out_f.read_text(errors="replace"), err_f.read_text(errors="replace")
    if os.WIFSIGNALED(status):
        return "killed", -os.WTERMSIG(status), out, err
    return "ok", os.WEXITSTATUS(status), out, err


def run(ws: Path, argv: list[str], limit_s: float, cap: bool = True) -> tuple[str, int, str, str]:
    return wait(*start(ws, argv, cap=cap), limit_s)


def _nonfinite(ws: Path, out: str, new: set[str]) -> str | None:
    texts = [("stdout", out)]
    for rel in sorted(new):
        p = ws / rel
        if p.suffix in TABLES and p.is_file() and not p.is_symlink() and p.stat().st_size < 8 << 20:
            texts.append((rel, p.read_text(errors="replace")))
    for where, text in texts:
        m = NONFINITE.search(text)
        if m:
            line = text[: m.start()].count("\n") + 1
            return f"{m.group(0)!r} in {where}:{line}"
    return None


def judge(result, names, expect: str, before: dict, after: dict, ws: Path, may_change=()) -> str | None:
    """None when the contract holds, else why not (see the module docstring)."""
    status, code, out, err = result
    if status != "ok":
        return status
    lines = [ln for ln in err.strip().splitlines() if ln.strip() and not PROGRESS.search(ln)]
    if "Traceback" in err:
        return "traceback: " + (lines[-1][:120] if lines else "")
    changed = [k for k, v in before.items() if after.get(k) != v and k not in may_change]
    changed = [k for k in changed if not any(k.startswith(m + "/") for m in may_change)]
    if changed:
        return f"an input changed: {changed[:2]}"
    if expect == "accept" and code != 0:
        return f"a valid input refused (exit {code}): {(lines or [''])[-1][:140]}"
    if code == 0:
        if expect == "refuse":
            return "accepted (exit 0) where it must be refused"
        return _nonfinite(ws, out, set(after) - set(before))
    errors = [ln for ln in lines if ": error:" in ln]
    other = [ln for ln in lines if ln not in errors and ": warning:" not in ln]
    if code == 1 and not errors and len(other) <= 1 and expect != "refuse":
        return None  # a negative answer, not bad input: `search` found no candidate meeting the SLO
    if code != 2 or len(errors) != 1 or other:
        return f"exit {code}, {len(lines)} stderr lines: {(lines or [''])[-1][:120]}"
    if names and not any(n and n in errors[0] for n in names):
        return f"does not name {names[0]!r}: {errors[0][:140]}"
    return None
