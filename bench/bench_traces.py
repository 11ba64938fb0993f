"""Benchmark of trace loading: a 1.4M-row BurstGPT-format CSV (generated, BurstGPT_1.csv's size) and
the shipped Azure 2023 traces. Goal: ≤ 10 s for 1.4M rows on a 2-core machine.

Each large load runs in a fresh child interpreter so its peak RSS delta (after imports → after
load) is measured cleanly. Run: `python -m bench.bench_traces` (or `make bench`).
Imports: numpy, the standard library, traces.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROWS = 1_400_000
_CHILD = """
import json, resource, sys, time
import traces

def peak_mb():
    # VmHWM belongs to this process's own address space; ru_maxrss would carry over the parent's
    # peak across fork + exec on Linux.
    try:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

before = peak_mb()
t0 = time.perf_counter()
table = traces.load(sys.argv[1])
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "rows": len(table), "dropped": table.meta["dropped_rows"],
                  "rss_delta_mb": peak_mb() - before}))
"""


def write_burstgpt_csv(path: Path, rows: int, seed: int = 0) -> None:
    """A BurstGPT v1-format CSV with `rows` requests: bursty float timestamps, ChatGPT/GPT-4, about 7%
    failed requests (0 response tokens), Conversation/API log types. Deterministic for a seed."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    t = np.cumsum(rng.gamma(0.25, 4.0, size=rows)).round(1)
    inp = np.clip(rng.lognormal(6.0, 1.0, size=rows), 0, 32000).astype(np.int64)
    out = np.clip(rng.lognormal(5.0, 1.0, size=rows), 1, 8000).astype(np.int64)
    out[rng.random(rows) < 0.07] = 0
    model = np.where(rng.random(rows) < 0.8, "ChatGPT", "GPT-4")
    log = np.where(rng.random(rows) < 0.9, "Conversation log", "API log")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
        for s in range(0, rows, 100_000):
            sl = slice(s, s + 100_000)
            fh.writelines(
                f"{a},{m},{i},{o},{i + o},{g}\n"
                for a, m, i, o, g in zip(
                    t[sl].tolist(), model[sl].tolist(), inp[sl].tolist(), out[sl].tolist(), log[sl].tolist()
                )
            )


def _child_load(path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    import traces

    tmp = Path(tempfile.mkdtemp(prefix="bench_traces_"))
    try:
        csv_path = tmp / "burstgpt_synthetic.csv"
        t0 = time.perf_counter()
        print(f"bench_traces: writing a {ROWS:,}-row BurstGPT-format CSV ...", file=sys.stderr, flush=True)
        write_burstgpt_csv(csv_path, ROWS)
        mb = csv_path.stat().st_size / 2**20
        print(f"  generated {mb:.1f} MB in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        r = _child_load(csv_path)
        print(
            f"traces.load BurstGPT CSV, {ROWS:,} rows ({mb:.0f} MB): {r['seconds']:.2f} s "
            f"({ROWS / r['seconds'] / 1e6:.2f} M rows/s), peak RSS delta {r['rss_delta_mb']:.0f} MB, "
            f"{r['rows']:,} kept, {r['dropped']:,} failed dropped  [goal ≤ 10 s]"
        )
        gz_path = tmp / "burstgpt_synthetic.csv.gz"
        with open(csv_path, "rb") as src, gzip.open(gz_path, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst)
        r = _child_load(gz_path)
        print(
            f"traces.load BurstGPT CSV.gz, {ROWS:,} rows: {r['seconds']:.2f} s, "
            f"peak RSS delta {r['rss_delta_mb']:.0f} MB"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name in traces.BUILTIN_TRACES:
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            table = traces.load(name)
            best = min(best, time.perf_counter() - t0)
        print(f"traces.load {name!r}: {len(table):,} requests in {1e3 * best:.0f} ms (best of 3)")


if __name__ == "__main__":
    main()
