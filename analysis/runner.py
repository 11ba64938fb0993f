"""Running a sweep: cells to results, serially, on a local process pool, or on a Ray cluster.

Role: execution and bookkeeping. `run_sweep` expands and resolves every cell first (bad input fails before
any folder is touched), prepares the results folder (`analysis.store.prepare`), skips cells whose result
file exists (`--resume`), runs the rest, and writes each cell's row the moment its result reaches this
process — so a sweep killed at any instant loses at most the cells in flight and never duplicates one.
Results always travel back to the driver; workers write nothing (one writer, no races).

Backends
- "local": `jobs` = 1 runs in this process; more uses a process pool with at most `jobs` cells in flight. A
  worker that dies (killed, out of memory) breaks the pool: the pool is rebuilt and the cells that were in
  flight are retried, each at most MAX_ATTEMPTS times in all, then recorded as failed.
- "ray": `ray.init(address)` (None: a local Ray instance with `jobs` CPUs); one task per cell, Ray's own
  retries for dead workers. Ray is optional and imported only here.

May import: the standard library, `specsched.io.errors`, `analysis.sweepfile`, `analysis.store`,
`specsched.io.progress`, `analysis.model`; `analysis.report` and `ray` lazily.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from analysis import store
from analysis.model import load_model
from analysis.sweepfile import Cell, Sweep, expand, fingerprint
from specsched.io.errors import InputError
from specsched.io.progress import Progress

MAX_ATTEMPTS = 3
BACKENDS = ("local", "ray")


@dataclass
class SweepRun:
    """What a run did: `rows` (every finished cell, in cell order), counts, and failures (key, message)."""

    out: Path
    rows: list[dict]
    total: int
    cached: int
    ran: int
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_cell(model, config: dict) -> tuple[dict, float]:
    """(summary, wall seconds) of one cell — what every backend's worker calls."""
    start = time.perf_counter()
    summary = model.run(config)
    return summary, time.perf_counter() - start


def manifest_of(sweep: Sweep, cells: list[Cell], model) -> dict:
    a = sweep.analysis
    return {
        "format": store.FORMAT,
        "name": sweep.name,
        "model": model.name,
        "fingerprint": fingerprint(cells, model.name),
        "analysis": {"baseline": a.baseline, "slo": a.slo, "x": a.x, "y": a.y},
        "cells": [c.row_head() for c in cells],
    }


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    *,
    model=None,
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    resume: bool = False,
    force: bool = False,
    progress: bool = True,
) -> SweepRun:
    """Run every cell of `sweep` not already finished in `out`; see the module docstring."""
    start = time.perf_counter()
    model = model if model is not None else load_model(None)
    if backend not in BACKENDS:
        raise InputError(
            f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})", field="--backend"
        )
    if address is not None and backend != "ray":
        raise InputError("--address needs --backend ray", field="--address")
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise InputError(f"must be ≥ 1, got {jobs}", field="--jobs")
    cells = expand(sweep, model)
    if sweep.analysis.baseline is not None:  # before any cell runs, not after
        from analysis.report import resolve_baseline

        series = sorted({c.row_head()["series"] for c in cells})
        resolve_baseline(sweep.analysis.baseline, series, file=sweep.file, field="analysis.baseline")
    # Ray: import and connect before the folder is touched (a missing package or a bad address is bad input).
    with ray_session(jobs, address) if backend == "ray" else contextlib.nullcontext():
        return _execute(sweep, cells, Path(out), model, jobs, backend, resume, force, progress, start)


def _execute(
    sweep: Sweep,
    cells: list[Cell],
    out: Path,
    model,
    jobs: int,
    backend: str,
    resume: bool,
    force: bool,
    progress: bool,
    start: float,
) -> SweepRun:
    manifest = manifest_of(sweep, cells, model)
    with store.locked(out):  # one writer per folder, for the sweep's whole life
        store.prepare(out, manifest, resume=resume, force=force)
        return _run_cells(sweep, cells, out, model, manifest, jobs, backend, progress, start)


def _run_cells(
    sweep: Sweep,
    cells: list[Cell],
    out: Path,
    model,
    manifest: dict,
    jobs: int,
    backend: str,
    progress: bool,
    start: float,
) -> SweepRun:
    done = store.finished_keys(out)
    todo = [c for c in cells if c.key not in done]
    bar = Progress(len(cells), done=len(cells) - len(todo), label=f"sweep {sweep.name}", enabled=progress)
    failed: list[tuple[str, str]] = []

    def on_done(cell: Cell, summary: dict, wall: float) -> None:
        store.write_cell(out, {**cell.row_head(), "summary": summary, "wall_s": round(wall, 4)})
        bar.advance()

    def on_error(cell: Cell, text: str) -> None:
        store.write_error(out, cell.key, text)
        failed.append((cell.key, text.strip().splitlines()[-1] if text.strip() else "failed"))
        bar.advance()

    try:
        execute(todo, model, jobs, backend, on_done, on_error)
    finally:
        bar.close()
        rows = store.consolidate(out, manifest["cells"])
    return SweepRun(
        out,
        rows,
        len(cells),
        len(cells) - len(todo),
        len(todo) - len(failed),
        failed,
        time.perf_counter() - start,
    )


Done = Callable[[Cell, dict, float], None]
Failed = Callable[[Cell, str], None]


def execute(todo: list[Cell], model, jobs: int, backend: str, on_done: Done, on_error: Failed) -> None:
    """Run `todo` on `backend` ("ray" inside a `ray_session`), calling on_done / on_error in this process
    as each cell's result arrives (every backend's one dispatch; `specbed search` runs its rungs with it)."""
    if not todo:
        return
    if backend == "ray":
        _run_ray(todo, model, on_done, on_error)
    elif jobs == 1 or len(todo) == 1:
        _run_serial(todo, model, on_done, on_error)
    else:
        _run_pool(todo, model, jobs, on_done, on_error)


def _run_serial(todo: list[Cell], model, on_done: Done, on_error: Failed) -> None:
    for cell in todo:
        try:
            summary, wall = run_cell(model, cell.config)
        except Exception:  # a cell's failure is recorded; the sweep goes on
            on_error(cell, traceback.format_exc())
        else:
            on_done(cell, summary, wall)


def _watch_parent(parent: int) -> None:
    """Pool worker: exit when the sweep process is gone (e.g. kill -9), instead of lingering."""

    def loop() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=loop, daemon=True).start()


def _context():
    # fork starts workers in milliseconds and shares the imported simulator; spawn elsewhere.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def settle(finished, inflight: dict, on_done: Done, on_error: Failed) -> tuple[list[Cell], bool]:
    """Hand each finished future of `inflight` (future -> cell, popped here) to on_done or on_error.
    Returns the cells whose worker died (BrokenProcessPool: the caller retries them) and whether any run
    ended, well or badly."""
    died: list[Cell] = []
    ended = False
    for fut in finished:
        cell = inflight.pop(fut)
        try:
            summary, wall = fut.result()
        except BrokenProcessPool:
            died.append(cell)
        except Exception as err:
            ended = True
            on_error(cell, "".join(traceback.format_exception(err)))
        else:
            ended = True
            on_done(cell, summary, wall)
    return died, ended


def _run_pool(todo: list[Cell], model, jobs: int, on_done: Done, on_error: Failed) -> None:
    attempts: Counter[str] = Counter()
    queue = list(reversed(todo))  # pop() from the end keeps cell order
    # Cells in flight when a pool broke with several in flight: each is retried alone (a pool of one), so
    # only the cell that really kills its worker is charged an attempt.
    suspects: list[Cell] = []
    idle_pools = 0
    while queue or suspects:
        alone = bool(suspects)
        source = [suspects.pop()] if alone else queue
        window = 1 if alone else jobs
        progressed = False
        with ProcessPoolExecutor(
            max_workers=min(window, len(source)),
            mp_context=_context(),
            initializer=_watch_parent,
            initargs=(os.getpid(),),
        ) as pool:
            inflight: dict = {}
            broken: list[Cell] = []
            while source or inflight:
                while source and len(inflight) < window and not broken:
                    cell = source.pop()
                    try:
                        inflight[pool.submit(run_cell, model, cell.config)] = cell
                    except BrokenProcessPool:  # broke before a future said so: not this cell's fault
                        source.append(cell)
                        break
                if not inflight:
                    break
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                died, ended = settle(finished, inflight, on_done, on_error)
                broken.extend(died)
                progressed = progressed or ended
        if alone and source:
            suspects.extend(source)
        if len(broken) == 1:
            cell = broken[0]
            attempts[cell.key] += 1
            if attempts[cell.key] >= MAX_ATTEMPTS:
                progressed = True
                on_error(
                    cell,
                    f"worker process died {MAX_ATTEMPTS} times running this cell "
                    "(killed, or out of memory)\n",
                )
            else:
                (suspects if alone else queue).append(cell)
        elif broken:
            suspects.extend(broken)
        idle_pools = 0 if progressed or broken else idle_pools + 1
        if idle_pools >= MAX_ATTEMPTS:  # pools that die before running anything: give up cleanly
            for cell in [*reversed(queue), *suspects]:
                on_error(cell, "could not start worker processes\n")
            return


def _import_ray():
    from sim.raysession import import_ray

    return import_ray()


@contextlib.contextmanager
def ray_session(jobs: int, address: str | None):
    """`sim.raysession.ray_session` (shared with `specbed run --backend ray`), imported when used."""
    from sim.raysession import ray_session

    with ray_session(jobs, address) as ray:
        yield ray


def _run_ray(todo: list[Cell], model, on_done: Done, on_error: Failed) -> None:
    ray = _import_ray()
    task = ray.remote(num_cpus=1, max_retries=MAX_ATTEMPTS - 1)(run_cell)
    model_ref = ray.put(model)
    pending = {task.remote(model_ref, cell.config): cell for cell in todo}
    refs = list(pending)
    while refs:
        ready, refs = ray.wait(refs, num_returns=1)
        for ref in ready:
            cell = pending.pop(ref)
            try:
                summary, wall = ray.get(ref)
            except Exception as err:  # RayTaskError wraps the cell's exception; WorkerCrashedError etc.
                on_error(cell, f"{type(err).__name__}: {err}\n")
            else:
                on_done(cell, summary, wall)
