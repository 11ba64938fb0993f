"""A held-back probe of the bad-input contract: ≥ 500 hostile but realistic inputs NOT in tests/fuzz.

    python bench/probe_inputs.py [--root DIR] [--only SUBSTRING] [--show N]

Every input is run by `specbed.cli.main` in a forked child of one preloaded parent (so 500 runs take
minutes, not an hour of imports), with a wall-clock limit and an address-space cap (a reader that grows
without bound dies instead of swapping). An input is HANDLED when:

- "refuse": exit 2, exactly one `specbed ...: error:` line on stderr (warning lines aside) naming the
  input (a file name, a field or a flag), no traceback, every workspace file unchanged, nothing added;
- "warn": exit 0 and a one-line `warning:` on stderr naming the input (legal but surprising input);

within the time limit. Anything else (a hang, a blown memory cap, a traceback, a multi-line error, exit 0
on nonsense, a changed input) is counted against the contract and listed. `--root` points at another
checkout (e.g. an older commit) to measure it the same way. Not a benchmark of speed: a figure of
robustness, printed as `handled: H/N`.

The classes (generated over every reader slot and command, not listed one by one): special files (FIFO,
/dev/zero, /dev/urandom, /dev/null, a socket, a symlink to a device, a folder), numbers (400 / 5,000-digit
integers, ±1e400, NaN, Infinity), wrong types (null, list, string, object, bool) in every JSON document,
5,000-deep nesting, outputs onto inputs and onto a result folder's own files, runs into sweep folders
(finished or locked), names over 255 bytes, late flag checks, and the silent-nonsense list of issue 27.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from bench.probe_cases import (
    BENCH,
    CONFIG,
    COST,
    CURVES,
    FAKE,
    FIT,
    MEASURED,
    PROM,
    RUN,
    SWEEP,
    TRACE,
    VRES,
    Probe,
    _j,
    _raw,
)
from bench.probe_more import all_probes
from tests.fuzz import runner  # imports no command: with --root, the children read that checkout

# -- running ---------------------------------------------------------------------------------------------


def build_template(root: Path, tmp: Path) -> Path:
    """The good workspace every probe starts from: inputs, a finished run and a finished sweep."""
    import subprocess

    t = tmp / "template"
    t.mkdir()
    files = {
        "cost.csv": COST,
        "measured.csv": MEASURED,
        "trace.csv": TRACE,
        "good.toml": CONFIG,
        "s.toml": SWEEP,
        "curves.json": _j(CURVES),
        "bench.json": _j(BENCH),
        "vres.json": _j(VRES),
        "fit.json": _j(FIT),
        "prom.txt": PROM,
        "afile": b"keep me\n",
    }
    for name, data in files.items():
        (t / name).write_bytes(data)
    env = dict(os.environ, PYTHONPATH=str(root))
    py = [sys.executable, "-m", "specbed"]
    for argv in (
        [*RUN, "--out", str(t / "run")],
        ["sweep", str(t / "s.toml"), "--out", str(t / "sweep"), "--model", FAKE, "--quiet"],
    ):
        subprocess.run([*py, *argv], cwd=root, env=env, check=True, capture_output=True)
    return t


def _edit_json(path: Path, edit) -> None:
    doc = json.loads(path.read_text())
    path.write_bytes(edit(doc))


def setup(ws: Path, spec: dict) -> None:
    for name, what in spec.items():
        if name == "@summary":
            key, literal = what
            _edit_json(ws / "run" / "summary.json", lambda d, k=key, v=literal: _raw(d, (k,), v))
            continue
        if name == "@cell":
            cell = sorted((ws / "sweep" / "cells").glob("*.json"))[0]
            _edit_json(cell, lambda d, v=what: _raw(d, ("summary", "throughput_tok_s_per_gpu"), v))
            continue
        path = ws / name.rstrip("/")
        if path.is_symlink() or path.exists():
            path.unlink() if not path.is_dir() or path.is_symlink() else shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if what == "fifo":
            os.mkfifo(path)
        elif what == "chain":
            os.mkfifo(path.with_name(path.name + ".fifo"))
            os.symlink(path.name + ".fifo", path.with_name(path.name + ".link"))
            os.symlink(path.name + ".link", path)
        elif what == "socket":
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(path))
            s.close()
        elif what == "dir":
            path.mkdir()
        elif isinstance(what, tuple):
            os.symlink(what[1], path)
        else:
            path.write_bytes(what)


snapshot = runner.snapshot  # {relative path: sha256 | 'dir' | 'special MODE'}, never opening a FIFO


def run_child(p: Probe, ws: Path, argv: list[str]) -> tuple[str, int, str]:
    """(status, exit code, stderr) of argv in a forked child (tests.fuzz.runner): status ok | hang | killed;
    a probe that does not import torch runs under the memory cap."""
    status, code, _, err = runner.run(ws, argv, p.limit_s, cap=p.limit_s <= 20)
    return status, code, err


def judge(p: Probe, status: str, code: int, err: str, before: dict, after: dict) -> str | None:
    """None when handled, else why not."""
    if status != "ok":
        return status
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    if "Traceback" in err:
        return "traceback: " + (lines[-1][:100] if lines else "")
    errors = [ln for ln in lines if ": error:" in ln]
    warns = [ln for ln in lines if ": warning:" in ln]
    other = [ln for ln in lines if ln not in errors and ln not in warns]
    if p.expect == "warn":
        if code != 0:
            return f"exit {code}: {lines[-1][:100] if lines else ''}"
        if not any(n in w for w in warns for n in p.names):
            return "no warning naming the input (silent)"
        return None
    if code == 0:
        return "accepted (exit 0, silent)"
    if code != 2 or len(errors) != 1 or other:
        return f"exit {code}, {len(lines)} stderr lines: {(lines or [''])[-1][:100]}"
    if not any(n in errors[0] for n in p.names):
        return f"does not name {p.names[0]!r}: {errors[0][:120]}"
    if after != before:
        changed = sorted(set(after.items()) ^ set(before.items()))[:2]
        return f"workspace changed: {changed}"
    return None


def run_all(probes: list[Probe], root: Path) -> list[tuple[str, str]]:
    """(probe id, why) of every probe not handled."""
    bad: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
        template = build_template(root, Path(tmp))
        for i, p in enumerate(probes):
            case = Path(tmp) / f"c{i}"
            ws = case / "w"
            shutil.copytree(template, ws, symlinks=True)
            setup(ws, p.setup)
            argv = [a.replace("{W}", str(ws)) for a in p.argv]
            before = snapshot(ws)
            lock_fd = None
            if p.lock:
                lock_fd = os.open(ws / p.lock, os.O_RDONLY)
                fcntl.flock(lock_fd, fcntl.LOCK_EX)
            try:
                status, code, err = run_child(p, ws, argv)
            finally:
                if lock_fd is not None:
                    os.close(lock_fd)
            why = judge(p, status, code, err, before, snapshot(ws))
            if why is not None:
                bad.append((p.id, why))
            shutil.rmtree(case, ignore_errors=True)
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="checkout to probe")
    ap.add_argument("--only", default="", help="run only probes whose id contains this")
    ap.add_argument("--show", type=int, default=40, help="list this many unhandled probes")
    ap.add_argument("--skip-slow", action="store_true", help="skip the probes that import torch")
    ap.add_argument("--limit", type=float, default=None, help="seconds before a light probe counts as a hang")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    os.chdir(root)
    runner.preload()  # the light commands once; each child inherits them
    probes = [p for p in all_probes() if args.only in p.id and not (args.skip_slow and p.limit_s > 20)]
    for p in probes:
        if args.limit is not None and p.limit_s <= 20:
            p.limit_s = args.limit
    start = time.monotonic()
    bad = run_all(probes, root)
    n = len(probes)
    print(f"probe: {n} inputs, {time.monotonic() - start:.0f} s, root {root}")
    classes: dict[str, list[int]] = {}
    for p in probes:
        classes.setdefault(p.id.split()[0], [0, 0])[0] += 1
    for pid, _ in bad:
        classes[pid.split()[0]][1] += 1
    for cls, (total, failed) in sorted(classes.items()):
        print(f"  {cls:<10} {total - failed:4d}/{total:<4d} handled")
    for pid, why in bad[: args.show]:
        print(f"  NOT HANDLED {pid}: {why}")
    print(f"handled: {n - len(bad)}/{n} ({100 * (n - len(bad)) / n:.1f} %)")


if __name__ == "__main__":
    main()
