"""`specbed search` over a 540-candidate space on the 1-hour Azure 2023 conversation replay at 2× its rate.

The space (`SPACE`): 3 GPU kinds (H100 / H200 / B200, a Llama-3-70B-like model at TP 4) × 4 replica
counts × 5 speculation arms (none, MTP-1, EAGLE-3 fixed k = 3, DSpark, DSpark with adaptive drafting) ×
3 `max_num_seqs` × 3 `max_num_batched_tokens` (512, 1024, 2048), under `SLO`, with `SEARCH` (price tiers
and the top-5 bound, no rank halving, SLO tolerances 25 % / 10 % at 10 % / 30 % of the trace). Printed:
the search's wall time and the load average around it, its stages (screen, rungs: requests, ran,
shared, dropped; the price bound), the winner and the top 5.

Opt-in, `SPECBED_BENCH_SEARCH_FULL=1`: the exhaustive full-length sweep of the same space (the plain
simulator, no screen, no early stop, no sharing), cheapest deployments first, ranked the same way, with
its wall time beside the search's and whether the winner and the top 5 (as a set) agree. It is
resumable: `SPECBED_BENCH_SEARCH_SWEEP=DIR` keeps its cells (each with its measured seconds) in DIR
across runs; `SPECBED_BENCH_SEARCH_FULL=cached` runs nothing more and compares on the cells DIR holds,
printing the measured part and the projected total (measured seconds per replica of each arm, times
the replicas of each cell missing) — labelled as projected — and whether the cells missing can still
matter (their price over the exhaustive #5's). `SPECBED_BENCH_SEARCH_GRID=small` shrinks the space for both (1
× `max_num_seqs`, 1 × `max_num_batched_tokens`: 60 candidates); `SPECBED_BENCH_SEARCH_N=N` replays only
the trace's first N requests (both sides); `SPECBED_BENCH_JOBS` (default: every CPU) sets the workers
of both.

May import: the standard library, `analysis`, `specsched.io.progress`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from analysis import store
from analysis.model import load_model
from analysis.runner import default_jobs, execute, manifest_of
from analysis.search.bound import price_of, rank_key
from analysis.search.halving import candidates_of, run_search
from analysis.search.prices import load_prices
from analysis.search.slo import parse_slo
from analysis.search.space import parse_space, traffic_overrides, with_traffic
from analysis.sweepfile import expand
from specsched.io.progress import Progress

SLO = "ttft_p90<=2s,itl_p50<=25ms,itl_p99<=60ms"
ARMS = """[[zip]]
label = ["no-spec", "MTP-1", "EAGLE-3 k=3", "DSpark", "DSpark adaptive"]
"drafter.name" = ["none", "mtp", "eagle3", "dspark", "dspark"]
"drafter.gamma" = [0, 1, 3, 7, 7]
"policy.name" = ["ar", "fixed", "fixed", "dspark", "dspark"]
"policy.k" = ["none", 1, 3, "none", "none"]
"policy.draft" = ["full", "full", "full", "full", "adaptive"]
"""
SPACE = (
    'name = "azure-conv-2x"\n'
    + ARMS
    + """[axes]
"cost.table" = ["h100-dense70b-tp4", "h200-dense70b-tp4", "b200-dense70b-tp4"]
"server.replicas" = [1, 2, 3, 4]
"server.max_num_seqs" = SEQS
"server.max_num_batched_tokens" = TOKENS
"""
)


SEARCH = """[search]
keep = 1000
tolerance = [0.25, 0.1]
top = 5
"""


def space_text(small: bool) -> str:
    seqs, tokens = ("[256]", "[1024]") if small else ("[64, 128, 256]", "[512, 1024, 2048]")
    return SPACE.replace("SEQS", seqs).replace("TOKENS", tokens) + SEARCH


def _top(cands, slo, objective: str) -> list:
    met = [c for c in cands if slo.met(c.summary)]
    return sorted(met, key=lambda c: rank_key(c, slo, objective))


def _name(c) -> str:
    a = c.cell.axes
    return (
        f"{c.cell.series} on {a['server.replicas']}× {a['cost.table']}, seqs {a['server.max_num_seqs']}, "
        f"tokens {a['server.max_num_batched_tokens']}: ${c.cost:.3f}/Mtok"
    )


def _kind(c) -> str:
    return c.cell.series


def _replicas(c) -> int:
    return int(c.cell.axes["server.replicas"])


def _sweep(todo: list, model, jobs: int, out: Path, total: int) -> None:
    if not todo:
        return
    bar = Progress(total, done=total - len(todo), label="exhaustive sweep")

    def on_done(cell, summary: dict, wall: float) -> None:
        store.write_cell(out, {**cell.row_head(), "summary": summary, "wall_s": round(wall, 4)})
        bar.advance()

    def on_error(cell, text: str) -> None:
        store.write_error(out, cell.key, text)
        bar.advance()

    try:
        execute(todo, model, jobs, "local", on_done, on_error)
    finally:
        bar.close()


def _by_axes(out: Path, cells: list) -> list:
    """The cells of `out` matched by their index and swept values, for a folder written before the
    simulator's config gained a key (its cell keys then differ; the runs are the same, say so)."""
    found = {}
    for path in (out / "cells").glob("*.json"):
        row = store.read_cell(out, path.stem)
        if row is not None:
            found[row.get("index")] = row
    rows = [found.get(c.index) if found.get(c.index, {}).get("axes") == c.axes else None for c in cells]
    print(f"exhaustive cache: cell keys differ from this code's config; {sum(r is not None for r in rows)} "
          "cells matched by index and swept values")  # fmt: skip
    return rows


def _exhaustive(space, traffic, prices, out: Path, jobs: int, run: bool) -> dict:
    """The exhaustive sweep, cheapest deployments first (resumable in `out`); with run False only what
    `out` already holds. Returns the candidates (summaries of the finished cells), wall seconds of this
    call, measured and projected cell seconds."""
    sweep = with_traffic(space.sweep, traffic)
    model = load_model(None)
    cells = expand(sweep, model)
    cands = {c.cell.key: c for c in candidates_of(space, traffic, prices)}
    manifest = manifest_of(sweep, cells, model)
    start = time.perf_counter()
    cached = 0
    if run:
        with store.locked(out):
            store.prepare(out, manifest, resume=True, force=False)
            done = store.finished_keys(out)
            cached = len(done)
            todo = sorted(
                (c for c in cells if c.key not in done), key=lambda c: (price_of(cands[c.key]), c.index)
            )
            _sweep(todo, model, jobs, out, len(cells))
    rows = [store.read_cell(out, c.key) for c in cells]  # cached: read only (a sweep may still be writing)
    if not run and not any(rows):
        rows = _by_axes(out, cells)
    seconds = time.perf_counter() - start
    per_replica: dict[str, list[float]] = {}  # measured cell seconds ÷ replicas, by arm
    measured = 0.0
    for cell, row in zip(cells, rows):
        if row is not None:
            c = cands[cell.key]
            c.summary = row["summary"]
            wall = float(row.get("wall_s") or 0.0)
            measured += wall
            per_replica.setdefault(_kind(c), []).append(wall / _replicas(c))
    missing = [cands[c.key] for c, row in zip(cells, rows) if row is None]
    every = [w for v in per_replica.values() for w in v]
    mean = {k: sum(v) / len(v) for k, v in per_replica.items()}
    overall = sum(every) / max(len(every), 1)
    projected = measured + sum(_replicas(c) * mean.get(_kind(c), overall) for c in missing)
    return {"cands": list(cands.values()), "seconds": seconds, "measured": measured, "projected": projected,
            "missing": missing, "done": len(cells) - len(missing), "cached": cached}  # fmt: skip


def _compare(outcome, slo, objective: str, full: dict, jobs: int) -> None:
    ranked = _top(full["cands"], slo, objective)
    for i, c in enumerate(ranked[:5]):
        print(f"  sweep  #{i + 1}: {_name(c)}")
    n, done = len(full["cands"]), full["done"]
    cpu = f"Σ per-cell {full['measured']:.0f} s"
    if full["missing"]:
        cheapest = min(price_of(c) for c in full["missing"])
        fifth = price_of(ranked[min(4, len(ranked) - 1)]) if ranked else float("nan")
        proj = full["projected"]
        print(f"exhaustive sweep: {done} of {n} cells measured ({cpu}); PROJECTED for all {n}: "
              f"Σ {proj:.0f} s, ≈ {proj / jobs:.0f} s on {jobs} workers")  # fmt: skip
        print(f"  the {len(full['missing'])} cells not measured cost ≥ ${cheapest:.2f}/h, "
              f"{cheapest / fifth:.2f}× the exhaustive #5's ${fifth:.2f}/h")  # fmt: skip
        total = full["projected"] / jobs
    else:
        print(f"exhaustive sweep: {n} cells, {full['seconds']:.1f} s wall this run ({cpu})")
        total = (
            full["seconds"] if full["seconds"] > 0.5 * full["measured"] / jobs else full["measured"] / jobs
        )
    print(
        f"search {outcome.seconds:.1f} s vs exhaustive ≈ {total:.0f} s: {total / outcome.seconds:.1f}× faster"
    )
    top = outcome.ranked[:5]
    same_winner = bool(top and ranked) and top[0].cell.key == ranked[0].cell.key
    same_top5 = {c.cell.key for c in top} == {c.cell.key for c in ranked[:5]}
    print(f"same winner: {same_winner}; same top 5 (as a set): {same_top5}")
    met = [c for c in full["cands"] if slo.met(c.summary)]
    speeds = [c.summary["throughput_tok_s"] for c in met]
    if speeds:
        print(f"throughput of the {len(met)} SLO-meeting cells: {min(speeds):.1f}–{max(speeds):.1f} tok/s "
              f"(spread {max(speeds) / min(speeds) - 1:.2%}; the price bound assumes ≤ 10 %)")  # fmt: skip


def main() -> None:
    small = os.environ.get("SPECBED_BENCH_SEARCH_GRID") == "small"
    jobs = int(os.environ.get("SPECBED_BENCH_JOBS", default_jobs()))
    space = parse_space(space_text(small), str(Path(__file__).with_name("search_space.toml")))
    traffic = traffic_overrides("azure2023-conv", 2.0)
    if os.environ.get("SPECBED_BENCH_SEARCH_N"):
        traffic.append(("workload.num_requests", int(os.environ["SPECBED_BENCH_SEARCH_N"]), ("bench", None)))
    slo, prices = parse_slo(SLO), load_prices()
    with tempfile.TemporaryDirectory() as tmp:
        load = os.getloadavg()[0]
        outcome = run_search(space, traffic, slo, prices, Path(tmp) / "search", jobs=jobs, progress=True)
        n = len(outcome.candidates)
        rate = outcome.traffic.rate
        reqs = outcome.traffic.requests
        print(f"search: {n} candidates, Azure conv 2× ({reqs} requests, {rate:.2f} req/s), {jobs} jobs")
        print(f"SLO: {SLO}")
        for r in outcome.rungs:
            print(f"  {r['rung']!s:>6}: {r['requests']:>6} requests, {r['candidates']:>4} candidates, "
                  f"ran {r['ran']:>4}, shared {r.get('shared', 0):>4}, dropped {r['dropped']:>4}"
                  + (f"  ({r['note']})" if r.get("note") else ""))  # fmt: skip
        print(f"search wall time: {outcome.seconds:.1f} s (goal ≤ 600 s for 500 candidates on 2 cores); "
              f"load average {load:.1f} → {os.getloadavg()[0]:.1f}")  # fmt: skip
        top = outcome.ranked[:5]
        for i, c in enumerate(top):
            print(f"  search #{i + 1}: {_name(c)}")
        mode = os.environ.get("SPECBED_BENCH_SEARCH_FULL")
        if not mode:
            print("exhaustive full-length sweep: skipped (set SPECBED_BENCH_SEARCH_FULL=1; hours on 2 cores)")
            return
        out = Path(os.environ.get("SPECBED_BENCH_SEARCH_SWEEP") or Path(tmp) / "sweep")
        full = _exhaustive(space, traffic, prices, out, jobs, run=mode != "cached")
        _compare(outcome, slo, space.options.objective, full, jobs)


if __name__ == "__main__":
    main()
