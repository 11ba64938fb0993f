"""The search: screen every candidate, then successive halving over fidelities, with a resumable cache.

Role: `run_search` turns a space (candidates), an SLO and a price table into ranked candidates. After
the screen, candidates are judged cheapest first in price tiers (`analysis.search.bound`; with
`[search] top = 0`, one tier of all), and after each tier every candidate left that cannot rank in the
top `top` is dropped. Within a tier, rung k runs every surviving candidate on the first ⌈rungs[k]·N⌉
requests of the traffic (the last rung is the whole traffic, judged exactly), a family of candidates
differing only in `max_num_seqs` sharing one run while the cap never binds (`analysis.search.siblings`);
after a rung, a candidate is dropped when its SLO margin is below −tolerance[k] (0 at the last rung) or
its run was stopped early (`analysis.search.early`), and the rest are ranked (objective, then SLO
margin) and the best max(keep, ⌈n/eta⌉) go on — within each group of the `[search] group` keys when
given (e.g. GPU kind × series, so each one's best is judged at full length). Every dropped candidate
keeps the reason. Runs go to one pool of workers kept for the whole search (`analysis.search.workers`).

Cache: each run is a cell of the output folder (`analysis.store`: cells/KEY.json, written whole, keyed by
the run's simulator config), under the folder's writer lock for the search's life; with `resume` a later
search (another space, SLO, prices or halving options too) reuses every run that ran to the end, and
every run stopped early under the same stop rule. Results do not depend on `jobs` or the
backend: a rung's decisions read only its runs' summaries, and runs are deterministic in their config.
`budget_s` stops submitting runs once a run submitted now would end past it (the rung's mean run wall
time so far is the estimate: runs in flight are not cut short); the candidates are then ranked on the
last rung each reached.

May import: the standard library, `specsched`, `analysis` (model, runner, store, sweepfile) and
`analysis.search` modules.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from analysis import store
from analysis.model import SimModel
from analysis.runner import BACKENDS, default_jobs, ray_session
from analysis.search import bound, pools, siblings
from analysis.search.bound import group_of, rank_key
from analysis.search.cellmodel import SearchModel
from analysis.search.prices import gpu_count, gpu_kind
from analysis.search.screen import Screen, traffic_of
from analysis.search.space import Space, with_traffic
from analysis.search.workers import Workers
from analysis.sweepfile import Cell, config_key, expand
from specsched.io.errors import InputError
from specsched.io.progress import Progress

MIN_REQUESTS = 200  # a rung never runs fewer requests than this (warm-up and drain need some)


@dataclass
class Candidate:
    """One deployment of the space and what the search learned about it."""

    cell: Cell
    gpu: str
    gpus: int
    usd_per_hour: float
    alive: bool = True
    reason: str = ""
    rung: int = -1  # the last rung it ran at
    summary: dict = field(default_factory=dict)
    capacity: float = math.nan

    @property
    def cost(self) -> float:
        """Cost per million output tokens (price × GPUs ÷ throughput), NaN without a throughput."""
        tput = self.summary.get("throughput_tok_s")
        gpus = self.summary.get("gpus") or self.gpus
        if not isinstance(tput, (int, float)) or not tput or not math.isfinite(tput):
            return math.nan
        return self.usd_per_hour * gpus / 3600.0 / tput * 1e6

    @property
    def goodput_per_gpu(self) -> float:
        good = self.summary.get("goodput_tok_s")
        gpus = self.summary.get("gpus") or self.gpus
        return float(good) / gpus if isinstance(good, (int, float)) and math.isfinite(good) else math.nan


@dataclass
class Outcome:
    candidates: list[Candidate]
    ranked: list[Candidate]  # SLO met at the last rung reached, best first
    rungs: list[dict]  # per rung: requests, ran, cached, dropped, kept
    traffic: object
    seconds: float
    budget_hit: bool
    complete: bool  # the ranking comes from full-length runs


def fingerprint() -> str:
    """A search folder's identity, the same for every search: its cells are runs keyed by their own
    simulator config, valid for any space, SLO, prices or options, so `--resume` lets any later search
    reuse them (without it, a folder holding a search is refused; `--force` clears it)."""
    return hashlib.sha256(SearchModel.name.encode()).hexdigest()[:16]


def candidates_of(space: Space, traffic, prices) -> list[Candidate]:
    """Every candidate of the space, resolved, keyed and priced (InputError before any work)."""
    swept = {key for axis in space.sweep.axes for key in axis.keys}
    for key in space.options.group:
        if key != "series" and key not in swept:
            known = ", ".join(["series", *sorted(swept)])
            raise InputError(
                f"{key!r} is not swept (known: {known})", file=space.sweep.file, field="search.group"
            )
    pooled = pools.is_pool_space(space.sweep.base_path)
    cells = expand(with_traffic(space.sweep, traffic), pools.PoolModel() if pooled else SimModel())
    out = []
    for cell in cells:
        try:
            if pooled:
                gpu, gpus, price = pools.price(cell.config, prices, space.options.gpus)
            else:
                gpu, gpus = gpu_kind(cell.config, space.options.gpus), gpu_count(cell.config)
                price = prices.per_hour(gpu)
        except InputError as err:
            file = err.file or space.sweep.file
            raise InputError(f"{err.message} (candidate {cell.axes})", file=file, field=err.field) from None
        out.append(Candidate(cell, gpu, gpus, price))
    return out


def job_of(c: Candidate, requests: int, slo, tol: float, full: bool) -> dict:
    sim = json.loads(json.dumps(c.cell.config))
    if not full:
        sim["workload"]["num_requests"] = requests
    return {"sim": sim, "stop": {"slo": slo.text(), "tol": tol}}


def run_search(
    space: Space,
    traffic: list,
    slo,
    prices,
    out: str | Path,
    *,
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    budget_s: float | None = None,
    resume: bool = False,
    force: bool = False,
    progress: bool = True,
) -> Outcome:
    start = time.perf_counter()
    if backend not in BACKENDS:
        raise InputError(
            f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})", field="--backend"
        )
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise InputError(f"must be ≥ 1, got {jobs}", field="--jobs")
    if budget_s is not None and not (budget_s > 0):
        raise InputError(f"must be > 0 seconds, got {budget_s:g}", field="--budget-s")
    cands = candidates_of(space, traffic, prices)
    stats = traffic_of(pools.colocated(cands[0].cell.config))
    manifest = {
        "format": store.FORMAT,
        "name": space.sweep.name,
        "model": SearchModel.name,
        "kind": "search",
        "fingerprint": fingerprint(),
        "slo": slo.text(),
        "cells": [c.cell.row_head() for c in cands],
    }
    out = Path(out)
    with ray_session(jobs, address) if backend == "ray" else contextlib.nullcontext():
        with store.locked(out):
            store.prepare(out, manifest, resume=resume, force=force)
            ctx = _Run(space, slo, out, jobs, backend, start, budget_s, progress)
            rungs = ctx.run(cands, stats)
    ranked = sorted(
        [c for c in cands if c.alive and slo.met(c.summary)],
        key=lambda c: rank_key(c, slo, space.options.objective),
    )
    last = len(space.options.rungs) - 1
    complete = bool(ranked) and all(c.rung == last for c in ranked)
    return Outcome(cands, ranked, rungs, stats, time.perf_counter() - start, ctx.budget_hit, complete)


class _Run:
    """The rung loop of one search (state shared by its steps)."""

    def __init__(self, space, slo, out, jobs, backend, start, budget_s, progress) -> None:
        self.space, self.slo, self.out, self.jobs, self.backend = space, slo, out, jobs, backend
        self.start, self.budget_s, self.progress = start, budget_s, progress
        self.model = SearchModel()
        self.budget_hit = False
        self.bar: Progress | None = None
        self.cands: list[Candidate] = []

    def _left(self, cands: list[Candidate], stats) -> int:
        """Requests the live candidates are expected to simulate (the bar's total): each runs its next
        rung, a later one at halving's survival (1/eta a rung, never below `keep` in total)."""
        opts = self.space.options
        sizes = [stats.requests if k == len(opts.rungs) - 1
                 else max(MIN_REQUESTS, math.ceil(f * stats.requests))
                 for k, f in enumerate(opts.rungs)]  # fmt: skip
        alive = [c for c in cands if c.alive]
        total = 0.0
        for k, size in enumerate(sizes):
            runs = sum(1.0 if c.rung + 1 == k else opts.eta ** -(k - c.rung - 1) for c in alive if c.rung < k)
            total += size * min(sum(c.rung < k for c in alive), max(runs, min(opts.keep, len(alive))))
        return math.ceil(total)

    def _retotal(self, cands: list[Candidate], stats, note: str = "") -> None:
        self.bar.total = self.bar.done + self._left(cands, stats)
        self.bar.update(self.bar.done, note)

    def run(self, cands: list[Candidate], stats) -> list[dict]:
        screen = Screen(stats, self.slo, self.space.options.grace)
        skipped = 0
        for c in cands:
            verdict = screen(c.cell.config)
            c.capacity = verdict.capacity
            skipped += verdict.reason == "not screened"
            if not verdict.ok:
                c.alive, c.reason = False, verdict.reason
        report = [{"rung": "screen", "requests": 0, "candidates": len(cands),
                   "dropped": sum(not c.alive for c in cands), "ran": 0, "cached": 0}]  # fmt: skip
        if skipped:
            report[0]["note"] = f"{skipped} disaggregated (EP pools): not screened"
        opts = self.space.options
        rows = {}
        last, tiers, pruned = len(opts.rungs) - 1, 0, 0
        self.cands = cands
        # one bar over the whole search, in simulated requests (a full-length run weighs its length)
        self.bar = Progress(max(1, self._left(cands, stats)), label="search", unit="req",
                            enabled=self.progress)  # fmt: skip
        with Workers(self.model, self.jobs, self.backend) as self.workers:
            try:
                while not self.budget_hit:
                    pruned += bound.prune(cands, self.slo, opts, last)
                    pending = [c for c in cands if c.alive and c.rung < last]
                    if not pending:
                        break
                    members = pending
                    if opts.top:
                        members = bound.tier(pending, opts.objective, opts.throughput_slack, opts.top)
                    tiers += 1
                    self._retotal(cands, stats, f"price tier {tiers}")
                    self._tier(members, stats, rows, tiers)
            finally:
                self.bar.close()
        report += [rows[k] for k in sorted(rows)]
        if opts.top:
            note = f"{tiers} price tiers; cannot rank in the top {opts.top}"
            report.append({"rung": "bound", "requests": 0, "candidates": pruned, "dropped": pruned, "ran": 0,
                           "cached": 0, "note": note})  # fmt: skip
        return report

    def _tier(self, members: list[Candidate], stats, rows: dict, tier: int = 1) -> None:
        """Every rung over the candidates of one price tier (all of them when the bound is off)."""
        opts = self.space.options
        for k, frac in enumerate(opts.rungs):
            alive = [c for c in members if c.alive]
            if not alive or self.budget_hit:
                break
            full = k == len(opts.rungs) - 1
            requests = stats.requests if full else max(MIN_REQUESTS, math.ceil(frac * stats.requests))
            if not full and requests >= stats.requests:
                continue  # the traffic is too short for this fidelity: go on to the next
            note = f"price tier {tier}, rung {k + 1}/{len(opts.rungs)} ({requests} requests)"
            self.bar.note = note
            ran, cached, shared = self._rung(alive, k, requests, full)
            dropped = self._judge(alive, k, full)
            self._retotal(self.cands, stats, note)
            row = rows.setdefault(k, {"rung": k + 1, "requests": requests, "candidates": 0, "dropped": 0,
                                      "ran": 0, "cached": 0, "shared": 0})  # fmt: skip
            counts = {"candidates": len(alive), "dropped": dropped, "ran": ran, "cached": cached,
                      "shared": shared}  # fmt: skip
            for key, n in counts.items():
                row[key] += n

    def _rung(self, alive: list[Candidate], k: int, requests: int, full: bool) -> tuple[int, int, int]:
        """Run rung k for `alive`: each family of siblings (`analysis.search.siblings`) smallest cap
        first, a larger cap taking the run of one whose cap never bound; returns (ran, cached, shared)."""
        tol = self.space.options.tol(k)
        jobs, families = {}, {}
        for c in sorted(alive, key=lambda c: (siblings.cap(c.cell.config), c.cell.index)):
            job = job_of(c, requests, self.slo, tol, full)
            jobs[c.cell.index] = Cell(
                c.cell.index, config_key(job["sim"]), c.cell.axes, c.cell.series, "", "", job
            )
            families.setdefault(siblings.family(job), []).append(c)
        bar = _Scaled(self.bar, requests)
        ran = cached = shared = 0
        while families and not self.budget_hit:
            heads = [members[0] for members in families.values()]
            todo = [jobs[c.cell.index] for c in heads]
            todo = [c for c in todo if not _reusable(store.read_cell(self.out, c.key), c.config)]
            ran, cached = ran + len(todo), cached + len(heads) - len(todo)
            bar.advance(len(heads) - len(todo))
            self._execute(todo, bar)
            for name, members in list(families.items()):
                head, rest = members[0], members[1:]
                row = store.read_cell(self.out, jobs[head.cell.index].key)
                self._take(head, row, k, jobs[head.cell.index].key)
                if row is not None and siblings.covers(row["summary"], siblings.cap(head.cell.config)):
                    for c in rest:
                        c.summary, c.rung = {**row["summary"], "same_run_as": head.cell.key}, k
                    shared += len(rest)
                    bar.advance(len(rest))
                    rest = []
                if rest:
                    families[name] = rest
                else:
                    del families[name]
        return ran, cached, shared

    def _take(self, c: Candidate, row: dict | None, k: int, key: str) -> None:
        if row is not None:
            c.summary, c.rung = row["summary"], k
        elif (self.out / "errors" / f"{key}.txt").exists():
            c.alive, c.reason = False, f"rung {k + 1}: the run failed (errors/{key}.txt)"

    def _execute(self, todo: list[Cell], bar) -> None:
        walls: list[float] = []

        def on_done(cell: Cell, summary: dict, wall: float) -> None:
            store.write_cell(
                self.out, {"key": cell.key, "job": cell.config, "summary": summary, "wall_s": wall}
            )
            walls.append(wall)
            bar.advance()

        def on_error(cell: Cell, text: str) -> None:
            store.write_error(self.out, cell.key, text)
            bar.advance()

        def spent() -> bool:  # submit no run that would end past the budget (in-flight runs are not cut)
            ahead = sum(walls) / len(walls) if walls else 0.0
            if self.budget_s is not None and time.perf_counter() - self.start + ahead > self.budget_s:
                self.budget_hit = True
            return self.budget_hit

        self.workers.run(sorted(todo, key=_work, reverse=True), on_done, on_error, spent)

    def _judge(self, alive: list[Candidate], k: int, full: bool) -> int:
        """Drop the SLO-lost, then halve the rest (not after the last rung); returns how many dropped."""
        opts, dropped = self.space.options, 0
        tol = opts.tol(k)
        ran = [c for c in alive if c.alive and c.rung == k]
        for c in ran:
            if c.summary.get("stopped"):
                c.alive, c.reason = False, f"rung {k + 1}: stopped early, {c.summary['stopped']}"
            elif self.slo.margin(c.summary) < -tol:
                slack = f" (beyond the rung's {tol:.0%} tolerance)" if tol else ""
                c.alive, c.reason = False, f"rung {k + 1}: SLO missed, {self.slo.worst(c.summary)}{slack}"
            dropped += not c.alive
        if full or self.budget_hit:
            return dropped
        groups: dict[tuple, list[Candidate]] = {}
        for c in ran:
            if c.alive:
                groups.setdefault(group_of(c, opts.group), []).append(c)
        for name, members in groups.items():
            left = sorted(members, key=lambda c: rank_key(c, self.slo, opts.objective))
            keep = max(opts.keep, math.ceil(len(left) / opts.eta))
            where = f" in group {', '.join(map(str, name))}" if name else ""
            for i, c in enumerate(left[keep:]):
                c.alive = False
                c.reason = (
                    f"rung {k + 1}: halved out (rank {keep + i + 1} of {len(left)}{where}, kept {keep})"
                )
                dropped += 1
        return dropped


class _Scaled:
    """The search's one bar as seen by a rung: each run advances it by the rung's request count."""

    def __init__(self, bar: Progress, requests: int) -> None:
        self.bar, self.requests = bar, requests

    def advance(self, n: int = 1) -> None:
        if n:
            self.bar.advance(n * self.requests, self.bar.note)


def _work(cell: Cell) -> tuple:
    """A run's expected length within a rung, for submitting the longest first (fewer idle workers at
    the rung's end): replicas, drafting first."""
    sim = cell.config["sim"]
    gamma = sim.get("drafter", {}).get("gamma") or 0
    return (sim.get("server", {}).get("replicas", 1), gamma > 0, -cell.index)


def _reusable(row: dict | None, job: dict) -> bool:
    """A cached run serves a job when it ran to the end (valid under any SLO) or stopped under the same
    early-stop rule."""
    if row is None:
        return False
    return row["summary"].get("stopped") is None or row.get("job", {}).get("stop") == job["stop"]
