"""A disaggregated run sharded by replica over Ray: each pool's replicas in tasks, merged exactly.

Role: `disagg_shard_reason(cfg)` (None when the run shards) and `simulate_disagg_sharded(cfg, address)`,
which returns what `sim.disagg.simulate_disagg(cfg)` returns. The prefill pool's replicas run in tasks
(`sim.wiring.run_replicas(only=…)`, as `sim.shard` runs a colocated pool), their rows are merged, the
hand-off is computed once, then the decode pool's replicas run in tasks (`sim.disagg.run.run_decode(only=…)`)
and are merged. Every task prepares the same run from the config and seed, and each replica draws from its
own child streams, so the merged run equals the single-process one.

Sharding needs pools whose replicas never interact: open loop and state-free routers in both pools
(`sim.routing.STATE_FREE`). A pool of one replica runs as one task.

May import: numpy, the standard library, `sim.disagg`, `sim.shard`, `sim.recorder`, `sim.routing`,
`sim.wiring`, `sim.raysession` (Ray, lazily).
"""

from __future__ import annotations

import time

import numpy as np

from sim.disagg.config import DisaggConfig
from sim.disagg.run import (
    DisaggResult,
    decode_prep,
    handoff,
    prefill_prep,
    rebuild_tokens,
    results,
    run_decode,
)
from sim.raysession import ray_session
from sim.recorder import PER_REQUEST, Recorder
from sim.routing import STATE_FREE
from sim.shard import LOCAL_CPUS, groups
from sim.wiring import run_replicas


def disagg_shard_reason(cfg: DisaggConfig) -> str | None:
    """Why `cfg`'s disaggregated run has to stay in one process, or None when it shards by replica."""
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


def _rows(rec: Recorder, group: list[int]) -> dict:
    rows = np.flatnonzero(np.isin(rec.replica, group))
    out = {name: getattr(rec, name)[rows] for name in PER_REQUEST}
    out.update(rows=rows, completed=rec.completed, parts={k: rec.parts[k] for k in group})
    return out


def prefill_shard(cfg: DisaggConfig, group: list[int]) -> dict:
    """One task: the prefill pool's replicas `group`."""
    prep, _, _ = prefill_prep(cfg)
    return _rows(run_replicas(prep, only=group), group)


def decode_shard(cfg: DisaggConfig, ready: np.ndarray, send: np.ndarray, group: list[int]) -> dict:
    """One task: the decode pool's replicas `group`, fed at the merged hand-off's `ready` times."""
    prep = decode_prep(cfg)
    prompt = prep.workload.input_tokens
    return _rows(run_decode(prep, ready, send, rebuild_tokens(cfg, prompt), only=group), group)


def _merge(n: int, prep, shards: list[dict]) -> Recorder:
    cfg = prep.config
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


def simulate_disagg_sharded(cfg: DisaggConfig, address: str | None = None) -> DisaggResult:
    """`simulate_disagg(cfg)`'s result, computed pool by pool and replica by replica on Ray."""
    reason = disagg_shard_reason(cfg)
    if reason is not None:
        raise ValueError(f"simulate_disagg_sharded: {reason}")
    t0 = time.perf_counter()
    pprep, cached, prompt = prefill_prep(cfg)  # checks every input before Ray starts
    dprep = decode_prep(cfg)
    n = len(pprep.workload)
    with ray_session(LOCAL_CPUS, address) as ray:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        task = ray.remote(num_cpus=1)(prefill_shard)
        shards = ray.get([task.remote(cfg, g) for g in groups(pprep.config.server.replicas, cpus)])
        prec = _merge(n, pprep, shards)
        hand, exposed = handoff(cfg, prec, prompt)
        ready = prec.first_token_s + exposed
        send = np.flatnonzero(dprep.workload.output_tokens > 1)
        task = ray.remote(num_cpus=1)(decode_shard)
        shards = ray.get(
            [task.remote(cfg, ready, send, g) for g in groups(dprep.config.server.replicas, cpus)]
        )
        drec = _merge(n, dprep, shards)
    if prec.completed != n or drec.completed != send.size:
        raise RuntimeError("sharded disaggregated run ended with requests unfinished")
    return results(
        cfg, (pprep, prec), (dprep, drec), (hand, exposed, prompt, cached), (t0, time.perf_counter())
    )
