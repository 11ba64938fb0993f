"""Issue 33 item 5 (memory side): closed-loop runs under KV pressure, as `vllm bench serve
--max-concurrency N --dataset-name random` drives vLLM: preemptions, TTFT, TPOT and the KV capacity.

    python -m bench.bench_memory_pressure [--quick] [--prompts-per-user K] [--range-ratio R]
                                          [--concurrency 1,8,64]

Deployments (H100, vLLM defaults: gpu_memory_utilization 0.9, max_num_seqs 256,
max_num_batched_tokens 8192, prefix caching and async scheduling on): Llama-3.1-70B TP 4 BF16,
Llama-3.1-8B TP 1 BF16, Llama-3.1-8B TP 1 FP8 weights with kv_cache_dtype fp8. Workloads: concurrency
64 / 128 / 256 × (4,096 in, 1,024 out) and (8,192 in, 256 out), K prompts per user (default 4), each
length drawn uniform in [(1 − R)·L, (1 + R)·L] as the random dataset's `--random-range-ratio R` does
(R = 0: every request alike). Prompts are distinct (random tokens: no shared prefix), so the prefix
cache holds only what a preempted request computed itself.

Per row: the KV tokens vLLM's sizing gives (`specsched.price.kv.size_kv`), the KV a full batch would
hold (concurrency × (in + out)); then, each as "before → after": preemptions, prompt tokens recomputed
(share of all prompt tokens), TTFT mean and TPOT mean (ms). "Before" sends every request at t = 0 with
no cap, as `specbed vllm validate` replayed a `vllm bench serve` file (its max_concurrency unread);
"after" is the client at fixed concurrency (`prepare(..., concurrency=N)`), the only reading of such a
file that times TTFT from the request's own send as the client does.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sim.deploy.prepare import prepare
from sim.metrics import request_table
from sim.prefix_cache import own_keys
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
    return wl, own_keys(ins)  # distinct prompts: a preempted request finds only its own blocks


def run_one(
    spec: VllmSpec, knobs, users: int, inp: int, out: int, per_user: int, ratio: float, closed: bool
) -> dict:
    """One run: closed (the client at fixed concurrency) or, closed False, every request sent at t = 0
    with no cap (how a `vllm bench serve` file was replayed before: its max_concurrency unread)."""
    wl, keys = random_dataset(users * per_user, inp, out, ratio, seed=users * 7919 + inp)
    prep = prepare(spec, knobs, wl, keys, concurrency=users if closed else None)
    prefill = [0]

    def observe(rep, start, seconds, r, verify, tokens, *rest):
        prefill[0] += tokens

    rec = run_pool(prep, observer=observe)
    req = request_table(rec, wl)
    return {
        "kv": prep.config.server.kv_tokens,
        "requests": len(wl),
        "preempt": int(rec.preemptions.sum()),
        "recompute": (prefill[0] - int(wl.input_tokens.sum())) / max(int(wl.input_tokens.sum()), 1),
        "ttft": float(np.mean(req["ttft_s"]) * 1e3),
        "tpot": float(np.nanmean(req["tpot_s"]) * 1e3),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="concurrency 64 and 256 only, 2 prompts per user")
    ap.add_argument("--prompts-per-user", type=int, default=4)
    ap.add_argument("--range-ratio", type=float, default=0.0)
    ap.add_argument("--concurrency", default=None, help="comma-separated (default 64,128,256)")
    args = ap.parse_args(argv)
    per_user = 2 if args.quick else args.prompts_per_user
    conc = (64, 256) if args.quick else CONCURRENCY
    if args.concurrency:
        conc = tuple(int(c) for c in args.concurrency.split(","))
    knobs = shipped_knobs("h100")
    print(
        f"range ratio {args.range_ratio}, {per_user} prompts per user; each cell: all sent at t = 0 → "
        "closed loop at the concurrency"
    )
    print(f"{'deployment':<18} {'conc':>4} {'in/out':>9} {'KV tokens':>9} {'need':>9} {'req':>5} "
          f"{'preemptions':>12} {'recomputed':>12} {'TTFT mean ms':>17} {'TPOT ms':>12} s")  # fmt: skip
    for name, spec in DEPLOYMENTS:
        for inp, out in SHAPES:
            for users in conc:
                t0 = time.perf_counter()
                args_ = (spec, knobs, users, inp, out, per_user, args.range_ratio)
                a, b = run_one(*args_, closed=False), run_one(*args_, closed=True)
                took = time.perf_counter() - t0
                print(f"{name:<18} {users:>4} {inp:>4}/{out:<4} {b['kv']:>9,} {users * (inp + out):>9,} "
                      f"{b['requests']:>5} {a['preempt']:>5} → {b['preempt']:<4} "
                      f"{a['recompute']:>5.0%} → {b['recompute']:<4.0%} "
                      f"{a['ttft']:>7.0f} → {b['ttft']:<7.0f} "
                      f"{a['tpot']:>5.1f} → {b['tpot']:<4.1f} {took:>4.0f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
