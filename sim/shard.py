"""Sharded runs: one multi-replica run split by replica over Ray tasks, merged into exactly what
`sim.run.simulate` returns.

Role: `shard_reason(cfg)` says why a run cannot be sharded (None when it can); `simulate_sharded(cfg,
address)` starts (or joins) Ray, gives each task a group of replicas (`sim.wiring.run_replicas(only=…)`:
every task prepares the same run from the config and seed, so it routes the same arrivals and each
replica draws from its own child streams), and merges the tasks' rows and per-replica tallies in replica
order (`sim.recorder.Recorder.merge`), so summary, requests and series equal the single-process run's.

Sharding needs replicas that never interact: open loop (a closed-loop user's next request id depends on
completions anywhere) and a router in `sim.routing.STATE_FREE`.

Ray is optional (the `ray` extra), imported lazily by `sim.raysession`. Without an address a local
instance is started with `LOCAL_CPUS` CPUs and no dashboard (and shut down after the run); its workers
import this package as the driver does. On a cluster every node needs this package and the run's input
files at the same paths.

May import: numpy, the standard library, `sim.run`, `sim.wiring`, `sim.recorder`, `sim.routing`,
`sim.config`, `sim.raysession` (Ray, lazily).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from sim.config import SimConfig
from sim.raysession import ray_session
from sim.recorder import PER_REQUEST, Recorder
from sim.routing import STATE_FREE
from sim.run import SimResult, prepare, results
from sim.wiring import run_replicas

#: CPUs of the local Ray instance started when no --address is given
LOCAL_CPUS = 2


def shard_reason(cfg: SimConfig) -> str | None:
    """Why `cfg`'s run has to stay in one process, or None when it shards by replica."""
    if cfg.server.replicas < 2:
        return "one replica: nothing to shard"
    if cfg.server.router not in STATE_FREE:
        return (
            f'router "{cfg.server.router}" reads replica state while the run goes '
            f"(shardable routers: {', '.join(STATE_FREE)})"
        )
    if cfg.workload.kind == "closed":
        return "closed loop: which request a user issues next depends on completions on every replica"
    return None


def run_shard(cfg: SimConfig, group: list[int]) -> dict:
    """Simulate replicas `group` of `cfg`'s run (one Ray task): their requests' rows and their tallies.

    Returns {"rows": int64[M] request ids, column: values[M] for column in PER_REQUEST, "completed": M,
    "parts": {replica: Tally}, "cpu_s": the task's CPU seconds}.
    """
    cpu = time.process_time()
    prep = prepare(cfg)
    rec = run_replicas(prep, only=group)
    rows = np.flatnonzero(np.isin(rec.replica, group))
    out = {name: getattr(rec, name)[rows] for name in PER_REQUEST}
    parts = {k: rec.parts[k] for k in group}
    out.update(rows=rows, completed=rec.completed, parts=parts, cpu_s=time.process_time() - cpu)
    return out


def groups(replicas: int, cpus: int) -> list[list[int]]:
    """Replicas dealt out to min(replicas, cpus) tasks, one group each (replica k to task k mod tasks)."""
    tasks = max(1, min(replicas, cpus))
    return [list(range(t, replicas, tasks)) for t in range(tasks)]


def simulate_sharded(cfg: SimConfig, address: str | None = None, *, progress: bool = False) -> SimResult:
    """`sim.run.simulate(cfg)`'s result, computed by replica on Ray (`shard_reason(cfg)` must be None).

    progress: print each finished task with an ETA to stderr (tasks report nothing until they finish).
    """
    reason = shard_reason(cfg)
    if reason is not None:
        raise ValueError(f"simulate_sharded: {reason}")
    t_start = time.perf_counter()
    prep = prepare(cfg)  # checks every input before Ray starts
    with ray_session(LOCAL_CPUS, address) as ray:
        t_loop = time.perf_counter()
        cpus = int(ray.cluster_resources().get("CPU", 1))
        task = ray.remote(num_cpus=1)(run_shard)
        pending = [task.remote(cfg, group) for group in groups(cfg.server.replicas, cpus)]
        shards, total = [], len(pending)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            shards.extend(ray.get(done))
            if progress:
                wall = time.perf_counter() - t_loop
                eta = wall * (total - len(shards)) / len(shards)
                print(
                    f"  sim (ray): {len(shards)}/{total} tasks done, wall {wall:.0f}s, ETA {eta:.0f}s",
                    file=sys.stderr,
                    flush=True,
                )
    rec = Recorder(
        len(prep.workload),
        max_bins=4 * cfg.metrics.series_bins,
        gamma=cfg.drafter.effective_gamma,
        replicas=cfg.server.replicas,
    )
    for shard in shards:
        for name in PER_REQUEST:
            getattr(rec, name)[shard["rows"]] = shard[name]
        rec.completed += shard["completed"]
        for k, part in shard["parts"].items():
            rec.parts[k] = part
    if rec.completed != rec.n:
        raise RuntimeError(f"sharded run ended with {rec.n - rec.completed} of {rec.n} requests unfinished")
    rec.merge()
    result = results(prep, rec, t_start, t_loop)
    result.timing["task_cpu_s"] = [shard["cpu_s"] for shard in shards]  # completion order
    return result
