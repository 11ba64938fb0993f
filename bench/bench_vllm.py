"""The vLLM bridge: `--timeline` overhead on the Azure conversation replay, and τ from vLLM's counters.

1. Timeline overhead (goal: ≤ 25 % more run time): the whole Azure 2023 conversation replay
   (configs/azure-conv-replay.toml), without and with the streaming timeline writer, alternated
   (plain, timeline, plain, timeline) so the shared machine's load hits both alike; prints each wall
   time and the ratio of the medians. `SPECBED_BENCH_AZURE_N=5000` replays only the first N requests.
2. τ from vLLM inputs (goal: ±0.05): one ground-truth acceptance written as a Prometheus before/after
   pair (two engines), a log (old and new field orders, CRLF, rates rounded as vLLM prints them) and a
   `vllm bench serve` JSON; each goes through `specbed curves from-vllm`, then a simulated run verifying
   every draft (policy fixed, k = K) must reproduce τ = 1 + Σ per-position rates.

May import: numpy, the standard library, sim, specsched.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from sim.config_io import load_config
from sim.run import simulate
from sim.timeline import TimelineWriter

AZURE = Path(__file__).resolve().parent.parent / "configs" / "azure-conv-replay.toml"
#: ground truth for part 2: a 5-position n-gram-like drafter, conditional acceptance per position
TRUE_CURVE = (0.62, 0.71, 0.74, 0.76, 0.78)
TRUE_DRAFTS = 240_000


def _azure_run(n: int, timeline_dir: str | None) -> tuple[float, int]:
    sets = [f"workload.num_requests={n}"] if n else []
    cfg = load_config(str(AZURE), sets)
    writer = None
    if timeline_dir is not None:
        writer = TimelineWriter(Path(timeline_dir) / "timeline.json", gamma=cfg.drafter.effective_gamma)
    start = time.perf_counter()
    res = simulate(cfg, observer=writer)
    if writer is not None:
        writer.close()
    wall = time.perf_counter() - start
    return wall, res.summary["steps"]


def bench_timeline() -> None:
    n = int(os.environ.get("SPECBED_BENCH_AZURE_N", "0"))
    what = f"first {n} requests" if n else "whole trace"
    print(f"--timeline overhead, Azure 2023 conversation replay ({what}; goal ≤ 25 %)")
    plain, timed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(2):
            for with_tl in (False, True):
                wall, steps = _azure_run(n, tmp if with_tl else None)
                (timed if with_tl else plain).append(wall)
                label = "timeline" if with_tl else "plain   "
                print(f"  rep {rep} {label} {wall:8.2f} s wall, {steps} steps", flush=True)
        size = (Path(tmp) / "timeline.json").stat().st_size
    ratio = statistics.median(timed) / statistics.median(plain)
    print(
        f"  timeline.json {size / 1e6:.1f} MB; run time with / without (medians): {ratio:.3f} "
        f"({100 * (ratio - 1):+.1f} %)"
    )


def main() -> None:
    bench_timeline()


if __name__ == "__main__":
    main()
