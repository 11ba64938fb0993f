"""The search's workers: one process pool kept alive for the whole search, fed one run at a time.

Role: `Workers(jobs, backend)` runs the jobs of every rung of a search. With the local backend and
jobs > 1, one pool of `jobs` forked processes lives as long as the search (no pool start-up per batch
of runs, and no batch barrier: a worker takes the next run as soon as it is free); `jobs` = 1 runs in
this process and Ray submits to the cluster (`analysis.runner.execute`, in slices so that `--budget-s`
can stop between them). `stop()` is asked before every submission: once it says so, nothing more is
submitted and the runs in flight finish. A pool that breaks (a worker killed or out of memory) hands
the runs not yet finished to `analysis.runner.execute`, which retries each alone and records a run that
kills its worker again as failed. Results do not depend on the backend or the order runs finish in: the
caller writes each one and reads them back by key.

May import: the standard library, `analysis.runner`, `analysis.sweepfile`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from analysis.runner import _context, _watch_parent, execute, run_cell, settle
from analysis.sweepfile import Cell


class Workers:
    """Runs cells of one model for a search's whole life (module docstring); use as a context manager."""

    def __init__(self, model, jobs: int, backend: str) -> None:
        self.model, self.jobs, self.backend = model, jobs, backend
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.jobs,
                mp_context=_context(),
                initializer=_watch_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    def run(
        self,
        todo: list[Cell],
        on_done: Callable[[Cell, dict, float], None],
        on_error: Callable[[Cell, str], None],
        stop: Callable[[], bool],
    ) -> None:
        """Run `todo` (in this order), calling on_done / on_error here as each run ends; submit nothing
        once `stop()` is true."""
        if self.backend != "local" or self.jobs == 1:
            step = max(2 * self.jobs, 1) if self.backend == "ray" else 1
            for i in range(0, len(todo), step):
                if stop():
                    return
                execute(todo[i : i + step], self.model, self.jobs, self.backend, on_done, on_error)
            return
        queue = list(reversed(todo))
        inflight: dict = {}
        died: list[Cell] = []
        try:
            while queue or inflight:
                while queue and len(inflight) < self.jobs and not stop():
                    cell = queue.pop()
                    try:
                        inflight[self._get_pool().submit(run_cell, self.model, cell.config)] = cell
                    except BrokenProcessPool:
                        queue.append(cell)
                        raise
                if not inflight:
                    return
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                died, _ = settle(finished, inflight, on_done, on_error)
                if died:
                    raise BrokenProcessPool("a search worker died")
        except BrokenProcessPool:
            self._pool = None  # a worker died: the runner's pool retries the unfinished runs one by one
            left = [*died, *inflight.values(), *reversed(queue)]
            left.sort(key=lambda c: todo.index(c))
            execute(left, self.model, self.jobs, "local", on_done, on_error)
