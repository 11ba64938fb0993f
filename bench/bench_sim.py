"""Simulator speed, side by side with the simulator of main 8d90704 (before issue 15) in the same run.

Prints, for the new and the reference code: µs per engine step and steps per second at R ≈ 128 (closed
loop, DSpark γ = 7); the Azure 2023 conversation replay (configs/azure-conv-replay.toml: 19,366 requests,
one hour) wall time, µs per step, steps/s and speed-up over real time; and the ratios. Goals (issue 15):
the replay ≤ 8 s and ≥ 3× faster than the reference. Every run is its own subprocess (same measuring code
for both; the reference is `git archive 8d90704` unpacked into a temporary folder and put first on
sys.path), so neither inherits the other's warm caches. On a shared machine read the ratios: absolute
figures are inflated by the other load.

The 1M-request run (a stable load below capacity on Azure-like lengths: Poisson arrivals, prompt and
output lengths resampled from the Azure 2023 conversation trace; goal ≤ 10 min, peak RSS ≤ 2 GB) is
opt-in: `SPECBED_BENCH_1M=1 python -m bench sim`. `SPECBED_BENCH_NO_REF=1` skips the reference runs;
`SPECBED_BENCH_REPEAT=N` (default 2) alternates N runs of each side and keeps each side's fastest. CPU time
(process time) is printed beside wall time: under contention it is the steadier of the two.

The sharded run (issue 15 part 3) is opt-in too: `SPECBED_BENCH_RAY=1 python -m bench sim` runs 20
replicas for one simulated hour (387,320 requests, Poisson at 20 × the Azure 2023 conversation trace's
rate with its lengths, round-robin) in one process and on a local 2-CPU Ray instance (`sim.shard`), checks
the two summaries are identical, and prints both wall times, the ratio (goal ≥ 1.7×), the per-replica-hour
cost and the cluster-day estimate of docs/notes/2026-11-30-speed.md.

The fleet replay (issue 24; was bench/bench_disagg.py): configs/azure-conv-disagg.toml (the same trace on
20 prefill + 80 decode GPUs, DSpark, KV hand-off over 400 Gb/s IB) beside the trace on 100 colocated
replicas (same tables, policy, least-outstanding router), both in this process through the one run loop;
goal: the fleet replay ≤ 2 min of CPU on 2 cores. `SPECBED_BENCH_NO_FLEET=1` skips it.

May import: numpy, the standard library, sim, specsched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_COMMIT = "8d90704"
REPEAT = int(os.environ.get("SPECBED_BENCH_REPEAT", "2"))
FLEET_GOAL_S = 120.0

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
    "cost.table=h200-v4flash",
]
AZURE = ("configs/azure-conv-replay.toml", [])
#: 1M requests, Poisson at 12 req/s with Azure 2023 conversation lengths (prompt ≈ 1155, output ≈ 211
#: tokens): ~2,500 output tok/s offered against a DSpark capacity of several thousand on one
#: V4-Flash-like GPU, so the queue stays bounded (the old 1M run offered more than capacity).
MILLION_SETS = [
    "workload.kind=poisson",
    "workload.num_requests=1000000",
    "workload.rate=12",
    "workload.trace=azure2023-conv",
    "workload.input_dist=trace",
    "workload.output_dist=trace",
    "drafter.name=dspark",
    "policy.name=dspark",
    "cost.table=h200-v4flash",
    "server.max_num_seqs=512",
]

#: 20 replicas × one hour at the Azure 2023 conversation trace's own rate per replica (19,366 requests/h,
#: a stable load for one V4-Flash-like GPU), its prompt and output lengths resampled: 387,320 requests.
RAY_SETS = [
    "workload.kind=poisson",
    "workload.num_requests=387320",
    "workload.rate=107.5889",
    "workload.trace=azure2023-conv",
    "workload.input_dist=trace",
    "workload.output_dist=trace",
    "drafter.name=dspark",
    "policy.name=dspark",
    "cost.table=h200-v4flash",
    "server.replicas=20",
    "server.router=round_robin",
]
RAY_REPLICAS, CLUSTER_REPLICA_HOURS, CLUSTER_CORES = 20, 100 * 24, 32

_SHARDED_CODE = """
import json, sys, time
sys.path.insert(0, {root!r})
from sim.cli import dumps_json
from sim.config_io import load_config
cfg = load_config(None, {sets!r})
t0, c0 = time.perf_counter(), time.process_time()
if {ray!r}:
    from sim.shard import simulate_sharded
    res = simulate_sharded(cfg)
else:
    from sim import simulate
    res = simulate(cfg)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({{"wall_s": wall, "cpu_s": cpu, "tasks_cpu_s": res.timing.get("task_cpu_s", []),
    "summary": dumps_json(res.summary), "sim_s": res.summary["sim_time_s"],
    "steps": res.summary["steps"], "requests": res.summary["requests_completed"]}}))
"""

_CODE = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from sim import simulate
from sim.config_io import load_config
cfg = load_config({config!r}, {sets!r})
t0, c0 = time.perf_counter(), time.process_time()
res = simulate(cfg, progress={progress})
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
s = res.summary
print(json.dumps({{"wall_s": wall, "cpu_s": cpu, "loop_s": res.timing["loop_s"], "steps": s["steps"],
    "requests": s["requests_completed"], "batch": s["mean_batch_size"], "sim_s": s["sim_time_s"],
    "throughput_tok_s": s["throughput_tok_s"], "queue": s["queue_len_mean"],
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def _run(root: Path, config: str | None, sets: list[str], progress: bool = False) -> dict:
    """One simulate() in a fresh interpreter with `root`'s code first on sys.path; its figures."""
    cfg = None if config is None else str(ROOT / config)
    return _python(root, _CODE.format(root=str(root), config=cfg, sets=sets, progress=progress), progress)


def _python(root: Path, code: str, progress: bool = False) -> dict:
    """Run `code` in a fresh interpreter in `root`; the JSON object its last stdout line holds."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    if proc.returncode:
        raise RuntimeError(f"bench run failed in {root}:\n{proc.stderr[-2000:]}")
    if progress:
        sys.stderr.write(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _best(old: dict | None, got: dict) -> dict:
    return got if old is None or got["wall_s"] < old["wall_s"] else old


def _reference(tmp: str) -> Path | None:
    """The tree of REFERENCE_COMMIT unpacked under `tmp`, or None (no git history: not a checkout)."""
    dest = Path(tmp) / "reference"
    dest.mkdir()
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", REFERENCE_COMMIT], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return dest


def _line(name: str, got: dict) -> str:
    us = got["loop_s"] / got["steps"] * 1e6
    return (
        f"  {name:<9} {got['wall_s']:7.2f} s wall ({got['cpu_s']:6.2f} s CPU), {us:6.1f} µs/step, "
        f"{got['steps'] / got['loop_s']:8.0f} steps/s, {got['sim_s'] / got['wall_s']:6.0f}x real time "
        f"({got['steps']} steps, mean batch {got['batch']:.1f})"
    )


def _compare(title: str, new: dict, ref: dict | None) -> None:
    print(title)
    print(_line("new", new))
    if ref is not None:
        print(_line("reference", ref))
        print(
            f"  speed-up: {ref['wall_s'] / new['wall_s']:.2f}x wall, {ref['cpu_s'] / new['cpu_s']:.2f}x CPU "
            f"time, {(ref['loop_s'] / ref['steps']) / (new['loop_s'] / new['steps']):.2f}x per step (best of "
            f"{REPEAT} alternating runs each)"
        )


def _million() -> None:
    got = _run(ROOT, None, MILLION_SETS, progress=True)
    print(
        f"sim 1M requests (Poisson 12/s, Azure conv lengths): {got['wall_s']:.0f} s wall, "
        f"{got['cpu_s']:.0f} s CPU (goal ≤ 600 s), "
        f"peak RSS {got['peak_rss_mb']:.0f} MB (goal ≤ 2048 MB); {got['steps']} steps, "
        f"{got['loop_s'] / got['steps'] * 1e6:.1f} µs/step, mean batch {got['batch']:.0f}, mean queue "
        f"{got['queue']:.1f}, {got['throughput_tok_s']:.0f} tok/s simulated, "
        f"{got['sim_s'] / got['wall_s']:.0f}x real time"
    )


def _sharded() -> None:
    """The 20-replica hour in one process, then on a local 2-CPU Ray instance: wall times, ratio, identity."""
    one = _python(ROOT, _SHARDED_CODE.format(root=str(ROOT), sets=RAY_SETS, ray=False))
    ray = _python(ROOT, _SHARDED_CODE.format(root=str(ROOT), sets=RAY_SETS, ray=True))
    same = "identical" if one["summary"] == ray["summary"] else "DIFFERENT"
    tasks = ", ".join(f"{c:.1f}" for c in ray["tasks_cpu_s"])
    replica_hours = RAY_REPLICAS * one["sim_s"] / 3600
    per_h, per_h_cpu = one["wall_s"] / replica_hours, one["cpu_s"] / replica_hours
    day, day_cpu = (CLUSTER_REPLICA_HOURS * x / CLUSTER_CORES / 60 for x in (per_h, per_h_cpu))
    print(
        f"sim 20 replicas × 1 h ({one['requests']} requests, Poisson, Azure conv lengths, round-robin; "
        f"{one['steps']} steps):\n"
        f"  1 process {one['wall_s']:7.1f} s wall, local Ray (2 CPUs) {ray['wall_s']:7.1f} s wall: "
        f"{one['wall_s'] / ray['wall_s']:.2f}x (goal ≥ 1.7x); summaries {same}\n"
        f"  CPU: one process {one['cpu_s']:.1f} s; Ray tasks {tasks} s "
        f"(+ driver {ray['cpu_s']:.1f} s): {one['cpu_s'] / max(ray['tasks_cpu_s']):.2f}x on 2 free CPUs\n"
        f"  one process: {per_h:.1f} s wall ({per_h_cpu:.1f} s CPU) per replica-hour → a cluster-day "
        f"(100 replicas × 24 h) on {CLUSTER_CORES} cores ≈ {day:.0f} min ({day_cpu:.0f} min from CPU time) "
        "if the shards scale linearly"
    )


def _timed(fn):
    import time

    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _fleet() -> None:
    """The fleet replay beside 100 colocated replicas (module docstring)."""
    from sim.config_io import load_config
    from sim.disagg import load_disagg, simulate_disagg
    from sim.run import simulate

    fleet, fwall, fcpu = _timed(
        lambda: simulate_disagg(load_disagg(ROOT / "configs" / "azure-conv-disagg.toml"))
    )
    sets = ["server.replicas=100", "server.router=least_outstanding"]
    colo_cfg = load_config(ROOT / "configs" / "azure-conv-replay.toml", sets)
    colo, cwall, ccpu = _timed(lambda: simulate(colo_cfg))
    print("sim fleet: Azure 2023 conv trace, 19,366 requests, one simulated hour, 100 GPUs")
    print(f"  {'run':<36} {'wall s':>8} {'cpu s':>8} {'out tok/s/GPU':>14} {'TTFT s':>8}")
    for name, r, wall, cpu in (("fleet: 20 prefill + 80 decode GPUs", fleet, fwall, fcpu),
                               ("colocated: 100 replicas", colo, cwall, ccpu)):  # fmt: skip
        tok, ttft = r.summary["throughput_tok_s_per_gpu"], r.summary["ttft_s_mean"]
        print(f"  {name:<36} {wall:>8.1f} {cpu:>8.1f} {tok:>14.2f} {ttft:>8.3f}")
    verdict = "met" if fcpu <= FLEET_GOAL_S else "MISSED"
    goal = f"fleet replay ≤ {FLEET_GOAL_S:.0f} s CPU on 2 cores"
    print(f"  goal: {goal}: {verdict} ({fcpu:.1f} s CPU, {fwall:.1f} s wall)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ref_root = None if os.environ.get("SPECBED_BENCH_NO_REF") else _reference(tmp)
        if ref_root is None:
            print(f"(reference {REFERENCE_COMMIT} not run: SPECBED_BENCH_NO_REF set or no git history)")
        for title, (config, sets) in (
            ("sim steps at R≈128, γ=7 (closed loop, dspark, h200-v4flash):", (None, STEPS_SETS)),
            ("sim Azure 2023 conv replay (19,366 requests, 1 h, dspark γ=7; goal ≤ 8 s, ≥ 3x):", AZURE),
        ):
            ref = new = None
            for _ in range(REPEAT):  # alternate, keep each side's fastest: load on a shared machine varies
                if ref_root is not None:
                    ref = _best(ref, _run(ref_root, config, sets))
                new = _best(new, _run(ROOT, config, sets))
            _compare(title, new, ref)
    print("  (shared machine: absolute times are inflated by other load; the ratios are the figures to read)")
    if not os.environ.get("SPECBED_BENCH_NO_FLEET"):
        _fleet()
    if os.environ.get("SPECBED_BENCH_1M"):
        _million()
    else:
        print("sim 1M requests: skipped (set SPECBED_BENCH_1M=1 to run it, ~minutes)")
    if os.environ.get("SPECBED_BENCH_RAY"):
        _sharded()
    else:
        print("sim 20 replicas on Ray: skipped (set SPECBED_BENCH_RAY=1 to run it, ~minutes)")


if __name__ == "__main__":
    main()
