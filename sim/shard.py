"""Sharded runs: one run split by replica over Ray tasks, merged into exactly what the single-process run
returns — a colocated run (`sim.run.simulate`) or a fleet's pools (`sim.disagg.simulate_disagg`).

Role: `shard_reason(cfg)` says why a run cannot be sharded (None when it can); `simulate_sharded(cfg,
address)` and `simulate_disagg_sharded(cfg, address)` start (or join) Ray, give each task a group of a
pool's replicas (`run_shard` → `sim.wiring.run_pool(only=…)`: every task prepares the same run from the
config and seed, so it routes the same arrivals and each replica draws from its own child streams), and
merge the tasks' rows and per-replica tallies in replica order (`merge`, `sim.recorder.Recorder.merge`),
so summary, requests and series equal the single-process run's. A fleet runs its prefill pool's tasks,
the hand-off once, then its decode pool's tasks.

Sharding needs replicas that never interact: open loop (a closed-loop user's next request id depends on
completions anywhere) and a router in `sim.routing.STATE_FREE` in every pool (no cache-aware routing).

Ray is optional (the `ray` extra), imported lazily by `sim.raysession`. Without an address a local
instance is started with `LOCAL_CPUS` CPUs and no dashboard (and shut down after the run); its workers
import this package as the driver does. On a cluster every node needs this package and the run's input
files at the same paths.

May import: numpy, the standard library, `sim.run`, `sim.wiring`, `sim.recorder`, `sim.routing`,
`sim.config`, `sim.disagg`, `sim.raysession` (Ray, lazily).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from sim.config import SimConfig
from sim.disagg.config import DisaggConfig
from sim.disagg.run import DisaggResult, decode_feed, decode_prep, handoff, prefill_prep, results
from sim.raysession import ray_session
from sim.recorder import PER_REQUEST, Recorder
from sim.routing import STATE_FREE
from sim.run import SimResult, prepare
from sim.run import results as run_results
from sim.wiring import Feed, run_pool

#: CPUs of the local Ray instance started when no --address is given
LOCAL_CPUS = 2


def shard_reason(cfg: SimConfig | DisaggConfig) -> str | None:
    """Why `cfg`'s run has to stay in one process, or None when it shards by replica."""
    if isinstance(cfg, DisaggConfig):
        return _fleet_reason(cfg)
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


def _fleet_reason(cfg: DisaggConfig) -> str | None:
    if cfg.base.workload.kind == "closed":
        return "closed loop: not a disaggregated workload"
    if cfg.prefill.prefix_cache:
        return "pool.prefill.prefix_cache: cache-aware routing reads every prefill replica's cache"
    for pool in (cfg.prefill, cfg.decode):
        router = cfg.pool_config(pool).server.router
        if router not in STATE_FREE:
            return (
                f'pool.{pool.role}.router "{router}" reads replica state (shardable: {", ".join(STATE_FREE)})'
            )
    return None


def run_shard(cfg: SimConfig | DisaggConfig, group: list[int], ready: np.ndarray | None = None) -> dict:
    """Simulate replicas `group` of one pool (one Ray task): a colocated run's (`cfg` a SimConfig), a
    fleet's prefill pool (`ready` None) or its decode pool fed at the hand-off's `ready` times.

    Returns {"rows": int64[M] request ids, column: values[M] for column in PER_REQUEST, "completed": M,
    "parts": {replica: Tally}, "cpu_s": the task's CPU seconds}.
    """
    cpu = time.process_time()
    if isinstance(cfg, SimConfig):
        prep, feed = prepare(cfg), Feed()
    elif ready is None:
        prep, feed = prefill_prep(cfg)[0], Feed()
    else:
        prep = decode_prep(cfg)
        feed = decode_feed(cfg, prep, ready)
    rec = run_pool(prep, feed, only=group)
    rows = np.flatnonzero(np.isin(rec.replica, group))
    out = {name: getattr(rec, name)[rows] for name in PER_REQUEST}
    parts = {k: rec.parts[k] for k in group}
    out.update(rows=rows, completed=rec.completed, parts=parts, cpu_s=time.process_time() - cpu)
    return out


def merge(n: int, cfg: SimConfig, shards: list[dict]) -> Recorder:
    """One Recorder of N requests from a pool's shards (`run_shard`), tallies merged in replica order."""
    rec = Recorder(n, max_bins=4 * cfg.metrics.series_bins, gamma=cfg.drafter.effective_gamma,
                   replicas=cfg.server.replicas)  # fmt: skip
    for shard in shards:
        for name in PER_REQUEST:
            getattr(rec, name)[shard["rows"]] = shard[name]
        rec.completed += shard["completed"]
        for k, part in shard["parts"].items():
            rec.parts[k] = part
    rec.merge()
    return rec


def groups(replicas: int, cpus: int) -> list[list[int]]:
    """Replicas dealt out to min(replicas, cpus) tasks, one group each (replica k to task k mod tasks)."""
    tasks = max(1, min(replicas, cpus))
    return [list(range(t, replicas, tasks)) for t in range(tasks)]


def _run_tasks(ray, cfg, replicas: int, ready=None, progress: bool = False) -> list[dict]:
    """The shards of one pool, one task per group of replicas (completion order)."""
    cpus = int(ray.cluster_resources().get("CPU", 1))
    task = ray.remote(num_cpus=1)(run_shard)
    pending = [task.remote(cfg, group, ready) for group in groups(replicas, cpus)]
    shards, total, t0 = [], len(pending), time.perf_counter()
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        shards.extend(ray.get(done))
        if progress:
            wall = time.perf_counter() - t0
            eta = wall * (total - len(shards)) / len(shards)
            print(f"  sim (ray): {len(shards)}/{total} tasks done, wall {wall:.0f}s, ETA {eta:.0f}s",
                  file=sys.stderr, flush=True)  # fmt: skip
    return shards


def _check(cfg, simulate: str) -> None:
    reason = shard_reason(cfg)
    if reason is not None:
        raise ValueError(f"{simulate}: {reason}")


def simulate_sharded(cfg: SimConfig, address: str | None = None, *, progress: bool = False) -> SimResult:
    """`sim.run.simulate(cfg)`'s result, computed by replica on Ray (`shard_reason(cfg)` must be None).

    progress: print each finished task with an ETA to stderr (tasks report nothing until they finish).
    """
    _check(cfg, "simulate_sharded")
    t_start = time.perf_counter()
    prep = prepare(cfg)  # checks every input before Ray starts
    with ray_session(LOCAL_CPUS, address) as ray:
        t_loop = time.perf_counter()
        shards = _run_tasks(ray, cfg, cfg.server.replicas, progress=progress)
    rec = merge(len(prep.workload), cfg, shards)
    if rec.completed != rec.n:
        raise RuntimeError(f"sharded run ended with {rec.n - rec.completed} of {rec.n} requests unfinished")
    result = run_results(prep, rec, t_start, t_loop)
    result.timing["task_cpu_s"] = [shard["cpu_s"] for shard in shards]  # completion order
    return result


def simulate_disagg_sharded(cfg: DisaggConfig, address: str | None = None) -> DisaggResult:
    """`sim.disagg.simulate_disagg(cfg)`'s result, computed pool by pool and replica by replica on Ray."""
    _check(cfg, "simulate_disagg_sharded")
    t0 = time.perf_counter()
    pprep, cached, prompt = prefill_prep(cfg)  # checks every input before Ray starts
    dprep = decode_prep(cfg)
    n = len(pprep.workload)
    with ray_session(LOCAL_CPUS, address) as ray:
        prec = merge(n, pprep.config, _run_tasks(ray, cfg, pprep.config.server.replicas))
        hand, exposed = handoff(cfg, prec, prompt)
        ready = prec.first_token_s + exposed
        drec = merge(n, dprep.config, _run_tasks(ray, cfg, dprep.config.server.replicas, ready))
    if prec.completed != n or drec.completed != decode_feed(cfg, dprep, ready).rids.size:
        raise RuntimeError("sharded disaggregated run ended with requests unfinished")
    marks = (t0, time.perf_counter())
    return results(cfg, (pprep, prec), (dprep, drec), (hand, exposed, prompt, cached), marks)
