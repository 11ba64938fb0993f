"""`specbed search` over a 540-candidate space on the 1-hour Azure 2023 conversation replay at 2× its rate.

The space (`SPACE`): 3 GPU kinds (H100 / H200 / B200, a Llama-3-70B-like model at TP 4) × 4 replica
counts × 5 speculation arms (none, MTP-1, EAGLE-3 fixed k = 3, DSpark, DSpark with adaptive drafting) ×
3 `max_num_seqs` × 3 `max_num_batched_tokens` (512, 1024, 2048), under `SLO`. Printed: the search's wall
time, its stages (screen, rungs: requests, ran, dropped), the winner and the top 5.

Opt-in, `SPECBED_BENCH_SEARCH_FULL=1`: the exhaustive full-length sweep of the same space
(`analysis.runner.run_sweep`, the plain simulator, no screen, no early stop), ranked the same way, with its
wall time beside the search's and whether the winner and the top 5 (as a set) agree.
`SPECBED_BENCH_SEARCH_GRID=small` shrinks the space for both (1 × `max_num_seqs`, 1 ×
`max_num_batched_tokens`, 256 and 1024: 60 candidates) when the full sweep is too slow for the machine;
`SPECBED_BENCH_SEARCH_N=N` replays only the trace's first N requests (both sides);
`SPECBED_BENCH_JOBS` (default: every CPU) sets the workers of both.

May import: the standard library, `analysis`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from analysis.runner import default_jobs, run_sweep
from analysis.search.halving import candidates_of, rank_key, run_search
from analysis.search.prices import load_prices
from analysis.search.slo import parse_slo
from analysis.search.space import parse_space, traffic_overrides, with_traffic

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
"server.cost" = ["h100-dense70b-tp4", "h200-dense70b-tp4", "b200-dense70b-tp4"]
"server.replicas" = [1, 2, 3, 4]
"server.max_num_seqs" = SEQS
"server.max_num_batched_tokens" = TOKENS
"""
)


def space_text(small: bool) -> str:
    seqs, tokens = ("[256]", "[1024]") if small else ("[64, 128, 256]", "[512, 1024, 2048]")
    return SPACE.replace("SEQS", seqs).replace("TOKENS", tokens)


def _top(cands, slo, objective: str) -> list:
    met = [c for c in cands if slo.met(c.summary)]
    return sorted(met, key=lambda c: rank_key(c, slo, objective))


def _name(c) -> str:
    a = c.cell.axes
    return (
        f"{c.cell.series} on {a['server.replicas']}× {a['server.cost']}, seqs {a['server.max_num_seqs']}, "
        f"tokens {a['server.max_num_batched_tokens']}: ${c.cost:.3f}/Mtok"
    )


def _exhaustive(space, traffic, slo, prices, out: Path, jobs: int):
    start = time.perf_counter()
    run = run_sweep(with_traffic(space.sweep, traffic), out, jobs=jobs, progress=True)
    seconds = time.perf_counter() - start
    by_key = {row["key"]: row["summary"] for row in run.rows}
    cands = candidates_of(space, traffic, prices)
    for c in cands:
        c.summary = by_key.get(c.cell.key, {})
    return _top(cands, slo, space.options.objective), seconds, len(run.failed)


def main() -> None:
    small = os.environ.get("SPECBED_BENCH_SEARCH_GRID") == "small"
    jobs = int(os.environ.get("SPECBED_BENCH_JOBS", default_jobs()))
    space = parse_space(space_text(small), str(Path(__file__).with_name("search_space.toml")))
    traffic = traffic_overrides("azure2023-conv", 2.0)
    if os.environ.get("SPECBED_BENCH_SEARCH_N"):
        traffic.append(("workload.num_requests", int(os.environ["SPECBED_BENCH_SEARCH_N"]), ("bench", None)))
    slo, prices = parse_slo(SLO), load_prices()
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_search(space, traffic, slo, prices, Path(tmp) / "search", jobs=jobs, progress=True)
        n = len(outcome.candidates)
        rate = outcome.traffic.rate
        reqs = outcome.traffic.requests
        print(f"search: {n} candidates, Azure conv 2× ({reqs} requests, {rate:.2f} req/s), {jobs} jobs")
        print(f"SLO: {SLO}")
        for r in outcome.rungs:
            print(f"  {r['rung']!s:>6}: {r['requests']:>6} requests, {r['candidates']:>4} candidates, "
                  f"ran {r['ran']:>4}, dropped {r['dropped']:>4}")  # fmt: skip
        print(f"search wall time: {outcome.seconds:.1f} s (goal ≤ 600 s for 500 candidates on 2 cores)")
        top = outcome.ranked[:5]
        for i, c in enumerate(top):
            print(f"  search #{i + 1}: {_name(c)}")
        if not os.environ.get("SPECBED_BENCH_SEARCH_FULL"):
            print(
                "exhaustive full-length sweep: skipped (set SPECBED_BENCH_SEARCH_FULL=1; ~6 s per candidate)"
            )
            return
        ranked, seconds, failed = _exhaustive(space, traffic, slo, prices, Path(tmp) / "sweep", jobs)
        for i, c in enumerate(ranked[:5]):
            print(f"  sweep  #{i + 1}: {_name(c)}")
        same_winner = bool(top and ranked) and top[0].cell.key == ranked[0].cell.key
        same_top5 = {c.cell.key for c in top} == {c.cell.key for c in ranked[:5]}
        took = f"exhaustive sweep: {n} candidates in {seconds:.1f} s ({failed} failed); "
        print(took + f"search {outcome.seconds:.1f} s = {seconds / outcome.seconds:.1f}× faster")
        print(f"same winner: {same_winner}; same top 5 (as a set): {same_top5}")


if __name__ == "__main__":
    main()
