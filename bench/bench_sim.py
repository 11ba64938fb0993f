"""Simulator speed: engine steps per wall second at R≈128, γ=7; Azure 2023 conversation replay; 1M requests.

`python -m bench` runs `main()`. The 1M-request run (goal ≤ 10 min, peak RSS ≤ 2 GB) is opt-in:
`SPECBED_BENCH_1M=1 python -m bench.bench_sim` (it runs in a subprocess so its peak RSS is its own).
Also prints where a step's time goes at R = 128 (policy call, acceptance model, the simulator itself).

May import: numpy, the standard library, sim, specsched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np

import specsched
from sim import simulate
from sim.acceptance import AcceptanceModel
from sim.config_io import load_config
from sim.curves import curve_matrix

#: R ≈ 128 running requests (closed loop), DSpark γ = 7 on the V4-Flash-like table.
STEPS_SETS = [
    "workload.kind=closed",
    "workload.concurrency=128",
    "workload.num_requests=2560",
    "workload.input_tokens=256",
    "workload.output_tokens=512",
    "drafter.name=dspark",
    "drafter.gamma=7",
    "policy.name=dspark",
    "server.cost=h200-v4flash",
]
AZURE_SETS = [
    "workload.kind=trace",
    "workload.trace=azure2023-conv",
    "workload.num_requests=0",
    "drafter.name=dspark",
    "policy.name=dspark",
    "server.cost=h200-v4flash",
]
#: 1M requests, Poisson near the capacity of one V4-Flash-like GPU with DSpark (mean batch ≈ 60).
MILLION_SETS = [
    "workload.kind=poisson",
    "workload.num_requests=1000000",
    "workload.rate=50",
    "workload.input_tokens=512",
    "workload.output_tokens=128",
    "workload.input_dist=lognormal",
    "workload.output_dist=lognormal",
    "drafter.name=dspark",
    "policy.name=dspark",
    "server.cost=h200-v4flash",
    "server.max_num_seqs=512",
]


def _timed_run(sets: list[str]) -> tuple[dict, dict]:
    """(summary, timing) of one run: timing has setup_s, loop_s (the event loop), results_s, total_s."""
    result = simulate(load_config(None, sets))
    return result.summary, result.timing


def _per_step_parts(r: int = 128, gamma: int = 7, reps: int = 2000) -> dict[str, float]:
    """Microseconds per call, at R requests: the policy, and the acceptance model's three calls."""
    cfg = load_config(None, [])
    model = AcceptanceModel(curve_matrix(None, "dspark", gamma), cfg.acceptance, np.random.default_rng(0))
    policy = specsched.make_policy("dspark")
    cost = specsched.builtin_cost("h200-v4flash").with_draft(0.001)
    rng = np.random.default_rng(1)
    dom, lat = rng.integers(0, 3, r), model.request_latent(r, rng)
    true = model.true_probs(dom, lat, rng)
    conf = model.estimate(true, rng)
    lengths = policy(conf, cost, max_batch_tokens=8192)
    out = {}
    for name, call in (
        ("policy", lambda: policy(conf, cost, max_batch_tokens=8192)),
        ("true_probs", lambda: model.true_probs(dom, lat, rng)),
        ("estimate", lambda: model.estimate(true, rng)),
        ("sample_accepted", lambda: model.sample_accepted(true, lengths, rng)),
    ):
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        out[name] = (time.perf_counter() - t0) / reps * 1e6
    return out


def _million() -> None:
    code = (
        "import json, resource, sys, time\n"
        "from sim import simulate\nfrom sim.config_io import load_config\n"
        f"cfg = load_config(None, {MILLION_SETS!r})\n"
        "t0 = time.perf_counter()\nres = simulate(cfg, progress=True)\nwall = time.perf_counter() - t0\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "s = res.summary\n"
        "print(json.dumps({'wall_s': wall, 'peak_rss_mb': rss, 'steps': s['steps'],"
        " 'requests': s['requests_completed'], 'batch': s['mean_batch_size'],"
        " 'throughput_tok_s': s['throughput_tok_s']}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    sys.stderr.write(proc.stderr[-2000:])
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"sim 1M requests: {got['wall_s']:.0f} s wall (goal ≤ 600 s), peak RSS {got['peak_rss_mb']:.0f} MB "
        f"(goal ≤ 2048 MB); {got['steps']} steps, mean batch {got['batch']:.0f}, "
        f"{got['throughput_tok_s']:.0f} tok/s simulated"
    )


def main() -> None:
    summary, timing = _timed_run(STEPS_SETS)
    loop = timing["loop_s"]
    print(
        f"sim steps/s at R≈{summary['mean_batch_size']:.0f}, γ=7 (dspark, h200-v4flash): "
        f"{summary['steps'] / loop:.0f} steps/s ({summary['steps']} steps in {loop:.2f} s of event loop; "
        f"set-up {timing['setup_s']:.2f} s, results {timing['results_s']:.2f} s)"
    )
    parts = _per_step_parts()
    step_us = loop / summary["steps"] * 1e6
    outside = sum(parts.values())
    print(
        f"  per step {step_us:.0f} µs = policy {parts['policy']:.0f} + acceptance model "
        f"{parts['true_probs'] + parts['estimate'] + parts['sample_accepted']:.0f} (true_probs "
        f"{parts['true_probs']:.0f}, estimate {parts['estimate']:.0f}, sample {parts['sample_accepted']:.0f})"
        f" + simulator {max(step_us - outside, 0.0):.0f} (policy/model timed alone at R=128)"
    )
    summary, timing = _timed_run(AZURE_SETS)
    print(
        f"sim Azure 2023 conv replay ({summary['requests_completed']} requests, dspark): "
        f"{timing['total_s']:.1f} s wall (goal ≤ 10 s); {summary['steps']} steps, "
        f"{summary['steps'] / timing['loop_s']:.0f} steps/s, mean batch {summary['mean_batch_size']:.1f}"
    )
    if os.environ.get("SPECBED_BENCH_1M"):
        _million()
    else:
        print("sim 1M requests: skipped (set SPECBED_BENCH_1M=1 to run it, ~minutes)")


if __name__ == "__main__":
    main()
