"""Sweep throughput: cells per second of a small simulator sweep, serial vs the local process pool.

24 cells (3 policies × 4 closed-loop concurrencies × 2 seeds, 96 requests of 64 tokens each), run once in
this process (`--jobs 1`) and once on a pool with every CPU. Printed figures, no assertion: the pool's
speed-up is bounded by the core count and by the per-cell start-up it amortizes.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from analysis.runner import default_jobs, run_sweep
from analysis.sweepfile import parse_sweep

SWEEP = """
name = "bench"
[base.workload]
kind = "closed"
num_requests = 96
input_tokens = 64
output_tokens = 64
[[zip]]
"drafter.name" = ["mtp", "dspark", "dspark"]
"drafter.gamma" = [1, 7, 7]
"policy.name" = ["fixed", "fixed", "dspark"]
"policy.k" = [1, 7, "none"]
[axes]
"workload.concurrency" = [8, 16, 32, 64]
seed = [0, 1]
"""


def main() -> None:
    sweep = parse_sweep(SWEEP, None)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, jobs in (("serial", 1), (f"pool ({default_jobs()} workers)", default_jobs())):
            start = time.perf_counter()
            run = run_sweep(sweep, Path(tmp) / label.split()[0], jobs=jobs, progress=False)
            seconds = time.perf_counter() - start
            results[label] = (run.total, seconds)
            cell_s = sum(r["wall_s"] for r in run.rows) / max(1, len(run.rows))
            print(
                f"{label:<20} {run.total} cells in {seconds:6.2f} s = {run.total / seconds:6.2f} cells/s "
                f"(mean {cell_s * 1e3:.0f} ms simulating per cell)"
            )
    (n, serial), (_, pool) = results.values()
    print(f"pool speed-up over serial: {serial / pool:.2f}x")


if __name__ == "__main__":
    main()
