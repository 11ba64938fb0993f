"""Issue 33 item 5 (memory side): closed-loop runs under KV pressure, as `vllm bench serve
--max-concurrency N --dataset-name random` drives vLLM: preemptions, TTFT, TPOT and the KV capacity.

    python -m bench.bench_memory_pressure [--quick] [--prompts-per-user K] [--range-ratio R]

Deployments (H100, vLLM defaults: gpu_memory_utilization 0.9, max_num_seqs 256,
max_num_batched_tokens 8192, prefix caching and async scheduling on): Llama-3.1-70B TP 4 BF16,
Llama-3.1-8B TP 1 BF16, Llama-3.1-8B TP 1 FP8 weights with kv_cache_dtype fp8. Workloads: concurrency
64 / 128 / 256 × (4,096 in, 1,024 out) and (8,192 in, 256 out), K prompts per user (default 4), each
length drawn uniform in [(1 − R)·L, (1 + R)·L] as the random dataset's `--random-range-ratio R` does
(R = 0: every request alike). Prompts are distinct (random tokens: no shared prefix), so the prefix
cache holds only what a preempted request computed itself.

Per row: the KV tokens vLLM's sizing gives (`specsched.price.kv.size_kv`), the KV a full batch would
hold (concurrency × (in + out)), preemptions (total, and per request), TTFT mean / p90, TPOT mean (ms)
and the mean running batch. A storm is preemptions ≫ requests; vLLM under this pressure preempts a
request now and then and resumes it from its own cached blocks.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sim.deploy.prepare import prepare
from sim.metrics import request_table
from sim.wiring import run_pool
from sim.workload import Workload
from specsched.price.knobs import shipped_knobs
from specsched.price.vllm import VllmSpec

DEPLOYMENTS = (
    ("70B TP4 BF16", VllmSpec(model="llama3.1-70b", gpu="h100", tp=4)),
    ("8B TP1 BF16", VllmSpec(model="llama3.1-8b", gpu="h100")),
    ("8B TP1 FP8 kv fp8", VllmSpec(model="llama3.1-8b", gpu="h100", precision="fp8", kv_cache_dtype="fp8")),
)
SHAPES = ((4096, 1024), (8192, 256))
CONCURRENCY = (64, 128, 256)


def random_dataset(n: int, inp: int, out: int, ratio: float, seed: int) -> tuple[Workload, list]:
    """n requests as `vllm bench serve --dataset-name random` makes them (lengths uniform in
    [(1 − ratio)·L, (1 + ratio)·L]), and per-request block keys of distinct prompts (16-token blocks)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    lo_i, hi_i = max(1, int(inp * (1 - ratio))), int(inp * (1 + ratio))
    lo_o, hi_o = max(1, int(out * (1 - ratio))), int(out * (1 + ratio))
    ins = rng.integers(lo_i, hi_i + 1, size=n).astype(np.int64)
    outs = rng.integers(lo_o, hi_o + 1, size=n).astype(np.int64)
    wl = Workload(np.zeros(n), ins, outs, np.zeros(n, dtype=np.int64), None, 0)
    # distinct prompts: each request's own chain of block hashes (a preempted request finds its own)
    keys = [tuple(range(rid << 20, (rid << 20) + int(i) // 16)) for rid, i in enumerate(ins.tolist())]
    return wl, keys


def run_one(spec: VllmSpec, knobs, users: int, inp: int, out: int, per_user: int, ratio: float) -> dict:
    wl, keys = random_dataset(users * per_user, inp, out, ratio, seed=users * 7919 + inp)
    prep = prepare(spec, knobs, wl, keys, concurrency=users)
    rec = run_pool(prep)
    req = request_table(rec, wl)
    part = rec.parts[0]
    return {
        "kv": prep.config.server.kv_tokens,
        "need": users * (inp + out),
        "requests": len(wl),
        "preempt": int(rec.preemptions.sum()),
        "ttft": float(np.mean(req["ttft_s"]) * 1e3),
        "ttft90": float(np.percentile(req["ttft_s"], 90) * 1e3),
        "tpot": float(np.nanmean(req["tpot_s"]) * 1e3),
        "batch": float(part.system_area / max(rec.end_s, 1e-9)) if hasattr(rec, "end_s") else float("nan"),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="concurrency 64 and 256 only, 2 prompts per user")
    ap.add_argument("--prompts-per-user", type=int, default=4)
    ap.add_argument("--range-ratio", type=float, default=0.0)
    args = ap.parse_args(argv)
    per_user = 2 if args.quick else args.prompts_per_user
    conc = (64, 256) if args.quick else CONCURRENCY
    knobs = shipped_knobs("h100")
    head = f"{'deployment':<18} {'conc':>4} {'in/out':>9} {'KV tok':>9} {'need':>9} {'req':>5} " \
           f"{'preempt':>7} {'/req':>5} {'TTFT ms':>8} {'p90':>8} {'TPOT ms':>7} {'s':>5}"  # fmt: skip
    print(f"range ratio {args.range_ratio}, {per_user} prompts per user")
    print(head)
    for name, spec in DEPLOYMENTS:
        for inp, out in SHAPES:
            for users in conc:
                t0 = time.perf_counter()
                r = run_one(spec, knobs, users, inp, out, per_user, args.range_ratio)
                took = time.perf_counter() - t0
                print(f"{name:<18} {users:>4} {inp:>4}/{out:<4} {r['kv']:>9,} {r['need']:>9,} "
                      f"{r['requests']:>5} {r['preempt']:>7} {r['preempt'] / r['requests']:>5.2f} "
                      f"{r['ttft']:>8.0f} {r['ttft90']:>8.0f} {r['tpot']:>7.1f} {took:>5.1f}",
                      flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
