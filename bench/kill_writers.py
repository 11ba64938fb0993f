"""kill -9 each writing command at a random instant, then rerun (or --resume): is its output whole?

Role: the check of issue 36's folder goals, for every command that writes (bench/kill_registry.py lists
them; tests/test_kill_registry.py keeps that list complete). Per command: N trials, each starting the
command (a new seed or setting each trial) onto the previous trial's output, killing its process group
with SIGKILL after a uniform random delay within the command's measured wall time, and classifying what
is left: `whole` (a folder: one job's complete results, `.job.json` naming the config beside it and every
result file there, nothing of another job; a file: complete by its own format), `none`, else `MIXED`.
Then it reruns (`--resume` for sweep and search) and classifies again. Temporaries left after the last
rerun are counted (a dead writer's wait `safeio.STALE_S` before removal, for writers on other hosts), then
aged past it and counted again after one more run. `--pairs` also starts two writers on one output
together: one should be refused (exit 2), the other's output whole.

    nice python -m bench.kill_writers [--trials 20] [--commands run,sweep,...|all|light] [--pairs]

`light` (the default) is every writer but the torch-engine ones (seconds per start); `all` adds them.

May import: the standard library, `bench.kill_registry`.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.kill_registry import ROOT, WRITERS, Writer, debris, prepare, state, target


def timed(argv: list[str]) -> tuple[int, float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    return p.returncode, time.perf_counter() - t0, p.stderr.strip()[-200:]


def _count(tally: dict, key: str) -> None:
    tally[key] = tally.get(key, 0) + 1


def trials(label: str, w: Writer, n: int, work: Path, rng: random.Random) -> dict:
    prepare(work, w.needs)
    out = target(w, work, label)
    out.parent.mkdir(parents=True, exist_ok=True)
    rc, wall, err = timed(w.argv(work, out, 0, False))
    assert rc in (0, 1), (label, rc, err)
    tally: dict = {"killed": {}, "after": {}, "wall_s": round(wall, 2)}
    for i in range(1, n + 1):
        p = subprocess.Popen(w.argv(work, out, i, False), cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        time.sleep(rng.uniform(0.0, wall))
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        _count(tally["killed"], state(w, out))
        rc, _, err = timed(w.argv(work, out, i, True))
        s = state(w, out)
        if rc not in (0, 1):  # e.g. a kill before `sweep --force` cleared the last trial's sweep: the
            s = f"{s}, rerun refused (exit {rc}: {err[-90:]})"  # folder still holds that one whole
        _count(tally["after"], s)
    where = out.parent  # a folder's temporaries are its siblings; a file's lie beside it
    tally["debris"] = debris(where)
    for name in tally["debris"]:  # a dead writer's temporaries wait safeio.STALE_S: age them, rerun once
        os.utime(where / name, (1, 1), follow_symlinks=False)
    timed(w.argv(work, out, n + 1, True))
    tally["debris_later"] = debris(where)
    return tally


def pair(label: str, w: Writer, work: Path) -> str:
    out = target(w, work, label + "-pair")
    out.parent.mkdir(parents=True, exist_ok=True)
    ps = [subprocess.Popen(w.argv(work, out, i, False), cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True) for i in (1, 2)]  # fmt: skip
    rcs = [p.wait() for p in ps]
    errs = [p.stderr.read().strip()[-120:] for p in ps]
    refused = sum(rc == 2 for rc in rcs)
    return f"exit codes {rcs}, refused {refused}, output {state(w, out)}; {[e for e in errs if e]}"


def pair_held(label: str, w: Writer, work: Path, wait_s: float = 30.0) -> str:
    """A file writer's pair made to overlap: writer A is stopped (SIGSTOP) once its lock file is seen
    (`.NAME.lock`: it has checked its output and not yet written it), writer B runs meanwhile, then A
    resumes. B must be refused; A's output whole. (A fast writer's window is milliseconds: two started
    together rarely overlap, so `pair` alone may see both succeed one after the other.)"""
    out = target(w, work, label + "-held")
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.parent / f".{out.name}.lock"
    a = subprocess.Popen(w.argv(work, out, 1, False), cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + wait_s
    while not lock.exists() and a.poll() is None and time.monotonic() < deadline:
        time.sleep(0.0005)
    if not lock.exists():
        a.wait()
        return f"no overlap caught (A exit {a.returncode} before its lock was seen)"
    os.kill(a.pid, signal.SIGSTOP)
    if not lock.exists():  # A wrote and released between our look and the stop: no overlap this time
        os.kill(a.pid, signal.SIGCONT)
        a.wait()
        return "no overlap caught (A wrote before it was stopped)"
    try:
        rc_b, _, err_b = timed(w.argv(work, out, 2, False))
    finally:
        os.kill(a.pid, signal.SIGCONT)
    rc_a = a.wait()
    return f"A held, B exit {rc_b} ({err_b[-70:]}); A exit {rc_a}, output {state(w, out)}"


def chosen(spec: str) -> list[str]:
    if spec in ("all", "light"):
        return [k for k, w in WRITERS.items() if spec == "all" or not w.heavy]
    names = [s.strip() for s in spec.split(",")]
    unknown = [s for s in names if s not in WRITERS]
    if unknown:
        raise SystemExit(f"unknown writer(s) {unknown}; known: {', '.join(WRITERS)}")
    return names


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--commands", default="light", help="comma-separated labels, `light` or `all`")
    ap.add_argument("--pairs", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="killw-") as tmp:
        for label in chosen(args.commands):
            w = WRITERS[label]
            t0 = time.perf_counter()
            tally = trials(label, w, args.trials, Path(tmp), rng)
            took = time.perf_counter() - t0
            print(f"{label}: {args.trials} kills, one wall {tally['wall_s']} s; right after the kill "
                  f"{tally['killed']}; after the rerun {tally['after']}; temporaries left "
                  f"{len(tally['debris'])}, after a later run {len(tally['debris_later'])} "
                  f"({took:.0f} s)")  # fmt: skip
            if args.pairs:
                print(f"{label}: two writers at once: {pair(label, w, Path(tmp))}")
                for _ in range(5 if not w.folder else 0):  # retried while A outruns the stop
                    held = pair_held(label, w, Path(tmp))
                    if not held.startswith("no overlap"):
                        break
                if not w.folder:
                    print(f"{label}: B while A holds its file: {held}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
