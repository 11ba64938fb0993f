"""Seconds of `specbed validate` on the 13 measured runs of ../shared/real-vllm/runs.csv.

Goal (issue 23): ≤ 2 min on 2 cores. Printed beside a reference measured in the same process: one
`specbed run`-style simulation (`sim.run.simulate`, policy "ar", the h100-dense8b table) of the largest
run's traffic (the codegen profile: 9,000 requests, Poisson at its mean rate, its prompt and output
lengths), so the ratio is readable on a loaded machine. Also the slowest single run inside validate.
"""

from __future__ import annotations

import time
from pathlib import Path

from sim.config import DrafterConfig, PolicyConfig, ServerConfig, SimConfig, WorkloadConfig
from sim.inference_perf import load_profiles
from sim.run import simulate
from specsched.price.knobs import shipped_knobs
from validate import predict as v
from validate.runs import read_runs

DATA = Path(__file__).resolve().parents[2] / "shared" / "real-vllm"


def main() -> None:
    runs_csv, prof_json = DATA / "runs.csv", DATA / "workloads.json"
    if not runs_csv.exists():
        print(f"bench_validate: {runs_csv} not found; skipped")
        return
    profiles = load_profiles(prof_json)
    runs = read_runs(runs_csv, profiles)
    knobs = shipped_knobs("h100")
    per_run = []
    t0 = time.perf_counter()
    for run in runs:
        s = time.perf_counter()
        v.validate([run], lambda _r: knobs, profiles)
        per_run.append((time.perf_counter() - s, run.folder))
    total = time.perf_counter() - t0
    p = profiles["codegen"]
    rate = p.num_requests / p.duration_s
    cfg = SimConfig(
        workload=WorkloadConfig(
            kind="poisson",
            rate=rate,
            num_requests=p.num_requests,
            input_tokens=p.system_tokens + p.question_tokens,
            output_tokens=p.output_tokens,
            domain="chat",
        ),
        drafter=DrafterConfig(name="none", gamma=0),
        policy=PolicyConfig(name="ar"),
        server=ServerConfig(cost="h100-dense8b", max_num_seqs=128, max_num_batched_tokens=2048),
    )
    s = time.perf_counter()
    simulate(cfg)
    ref = time.perf_counter() - s
    slow = max(per_run)
    print(f"specbed validate, {len(runs)} runs: {total:.1f} s (goal ≤ 120 s on 2 cores)")
    print(f"  slowest run: {slow[0]:.1f} s ({slow[1]})")
    print(f"  reference, one `specbed run` of the codegen traffic ({p.num_requests} requests): {ref:.1f} s")
    print(f"  ratio validate / one run: {total / ref:.1f}×")


if __name__ == "__main__":
    main()
