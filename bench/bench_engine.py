"""CPU tokens/s of speculative vs plain decoding on the engine's small models, as ratios in one run.

Target: TinyLM (V 512, d 256, 12 layers, residual branches scaled by 0.05); draft: its first layer
(engine.model.TinyLM.truncated), ~0.85 per-token acceptance. 8 requests x 64 new tokens, temperature 1.
Speculative runs: fixed γ = 4 (standard and coupled mode) and dspark with a cost table profiled here on this
CPU (target forward seconds at B = 8·(1+ℓ) tokens; γ draft forwards as draft_seconds), fed the draft's raw
max-probability confidence or that confidence calibrated online (ModelDrafter(calibration_bins=10)). Each
configuration runs 3 times, interleaved, on one torch thread, and the best tokens/s is reported.
Run: `.venv/bin/python -m bench` (every bench) or `.venv/bin/python -m bench.bench_engine`.
"""

from __future__ import annotations

import sys
import time

import torch

import specsched
from engine.drafter import ModelDrafter
from engine.loop import Engine, EngineConfig, Request
from engine.model import KVCache, ModelConfig, TinyLM

GAMMA, N_REQ, NEW_TOKENS, MAX_LEN, ROUNDS = 4, 8, 64, 96, 3


def _models() -> tuple[TinyLM, TinyLM]:
    cfg = ModelConfig(
        vocab_size=512, d_model=256, n_layers=12, n_heads=8, max_len=MAX_LEN, seed=1, init_scale=0.05
    )
    target = TinyLM(cfg)
    return target, target.truncated(1)


def _forward_seconds(model: TinyLM, s: int) -> float:
    """Best of 5 timings of one forward of N_REQ requests x s new tokens at a mid-generation context."""
    cache = KVCache(model.config, N_REQ, MAX_LEN)
    cache.lengths[:] = 40
    tokens, n, slots = (
        torch.zeros((N_REQ, s), dtype=torch.int64),
        torch.full((N_REQ,), s),
        torch.arange(N_REQ),
    )
    best = float("inf")
    for _ in range(6):
        start = time.perf_counter()
        model.forward(tokens, n, slots, cache)
        best = min(best, time.perf_counter() - start)
    return best


def _cpu_cost(target: TinyLM, draft: TinyLM) -> specsched.CostTable:
    sizes = list(range(1, GAMMA + 2))
    seconds = [_forward_seconds(target, s) for s in sizes]
    return specsched.CostTable.from_points(
        [N_REQ * s for s in sizes],
        seconds,
        mode="linear",
        draft_seconds=GAMMA * _forward_seconds(draft, 1),
        name="this CPU",
    )


def main() -> None:
    # One thread: on a shared 2-core machine OpenMP barriers make multi-threaded timings swing 100x.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _bench()
    finally:
        torch.set_num_threads(threads)


def _bench() -> None:
    target, draft = _models()
    requests = [Request(i, (i + 1, 2 * i + 3, 7), NEW_TOKENS, seed=11) for i in range(N_REQ)]
    print("[bench_engine] profiling this CPU's verify cost ...", file=sys.stderr)
    cost = _cpu_cost(target, draft)
    fixed = {"policy": "fixed", "policy_params": {"k": GAMMA}}
    configs = {
        "plain decoding": None,
        "speculative fixed γ=4 (standard)": fixed,
        "speculative dspark, CPU cost, raw conf": {"policy": "dspark", "cost": cost},
        "speculative dspark, CPU cost, calibrated": {"policy": "dspark", "cost": cost, "calibrate": True},
        "speculative fixed γ=4 (coupled)": {**fixed, "mode": "coupled"},
    }
    best = dict.fromkeys(configs, 0.0)
    outputs, stats = {}, {}
    for round_ in range(ROUNDS):
        print(f"[bench_engine] round {round_ + 1}/{ROUNDS} ...", file=sys.stderr)
        for label, config in configs.items():
            options = dict(config or {})
            bins = 10 if options.pop("calibrate", False) else 0
            cfg = EngineConfig(gamma=GAMMA, max_running=N_REQ, **options)
            drafter = ModelDrafter(draft, slots=N_REQ, max_len=MAX_LEN, calibration_bins=bins)
            engine = Engine(target, drafter, cfg, max_len=MAX_LEN)
            start = time.perf_counter()
            outputs[label] = engine.generate(requests, speculative=config is not None)
            tps = N_REQ * NEW_TOKENS / (time.perf_counter() - start)
            best[label], stats[label] = max(best[label], tps), engine.stats
    base = best["plain decoding"]
    print(
        f"engine on CPU ({torch.get_num_threads()} thread): target V=512 d=256 L=12, draft = its 1st layer, "
        f"{N_REQ} requests x {NEW_TOKENS} tokens, γ={GAMMA}, best of {ROUNDS}"
    )
    for label, tps in best.items():
        s = stats[label]
        line = f"  {label:<42} {tps:8.1f} tok/s  {tps / base:5.2f}x"
        if configs[label] is not None:
            line += (
                f"   accepted/verified {s.accepted}/{s.verified_drafts}, "
                f"{s.emitted / s.steps / N_REQ:.2f} tokens/request/step"
            )
        if "coupled" in label:
            line += (
                "  (output == plain)" if outputs[label] == outputs["plain decoding"] else "  OUTPUT DIFFERS"
            )
        print(line)
    points = ", ".join(f"B={b}: {s * 1e3:.2f} ms" for b, s in zip(cost.tokens, cost.seconds))
    print(f"  CPU cost table: {points}; draft {cost.draft_seconds * 1e3:.2f} ms/step")


if __name__ == "__main__":
    main()
