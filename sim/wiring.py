"""Wire one prepared run's simpy model (deployment, replicas, router, arrivals) and run it to a Recorder.

Role: `run_replicas(prep)` builds the `Deployment` every replica shares, the replicas and how requests
reach them, runs the event loop and returns the closed `Recorder`; `sim.run.simulate` runs it whole and
`sim.shard` runs subsets of replicas of the same run in separate processes (`only`). With a router in
`sim.routing.STATE_FREE` in open loop, arrivals are routed up front (`route`) and each replica is fed its
own (`OpenLoop` with rids and the replica's own horizon), in both cases, so a replica's events, draws and
`Recorder` tally do not depend on which other replicas run beside it.

`Prepared` (a config resolved into the objects a run needs) is defined here, below `sim.run`, which builds it.

May import: numpy, simpy, the standard library, specsched, and the other sim modules except `sim.run`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

import specsched
from sim.acceptance import AcceptanceModel
from sim.config import SimConfig
from sim.deployment import Deployment
from sim.empirical import EmpiricalModel
from sim.prefix_cache import PrefixCache
from sim.recorder import Recorder
from sim.routing import STATE_FREE, ClosedLoop, OpenLoop, Router, route_up_front
from sim.server import Replica
from sim.stepcost import step_cost
from sim.workload import Workload


@dataclass(frozen=True)
class Prepared:
    """A config resolved into the objects a run needs (all inputs read and checked)."""

    config: SimConfig
    cost: specsched.CostTable
    gpus: int
    policy: specsched.Policy
    model: AcceptanceModel | EmpiricalModel
    workload: Workload
    latent: np.ndarray
    rngs: dict[str, np.random.Generator]
    policy_cost: specsched.CostTable | None = None
    #: vLLM v1 serving (`sim.vllm_deploy`): each request's prompt block keys, the cache's block size and
    #: whether automatic prefix caching is on; async scheduling (`Deployment.async_scheduling`)
    block_keys: list | None = None
    block_size: int = 16
    prefix_caching: bool = False
    prefix_offload_blocks: int = 0
    async_scheduling: bool = False


def route(prep: Prepared) -> np.ndarray:
    """int64[N]: each open-loop request's replica, for a router in `sim.routing.STATE_FREE` (drawn from
    the "router" stream for "random": call it once per Prepared)."""
    cfg, wl = prep.config, prep.workload
    return route_up_front(cfg.server.router, cfg.server.replicas, len(wl), prep.rngs["router"], wl.session)


def run_replicas(
    prep: Prepared,
    *,
    only: list[int] | None = None,
    progress: bool | Callable[[int, float], None] = False,
    observer: Callable[..., None] | None = None,
    watch: Callable[[Recorder, float], None] | None = None,
) -> Recorder:
    """Simulate the run of `prep` and return its closed Recorder.

    watch: called as watch(recorder, now) every 1024 engine steps, beside `progress`; it may raise to stop
    the run early (`specbed search` stops runs whose SLO is already lost).

    With a state-free router in open loop the arrivals are routed up front and each replica is fed its
    own (replicas never interact); `only` then simulates just those replicas (a shard of `sim.shard`),
    each exactly as in the whole run: every replica is built, so each draws from its own child stream.
    """
    cfg, wl = prep.config, prep.workload
    kind = cfg.server.router
    if only is not None and (cfg.workload.kind == "closed" or kind not in STATE_FREE):
        raise ValueError("run_replicas: only an open-loop run with a state-free router can be sharded")
    n = len(wl)
    rec = Recorder(
        n,
        max_bins=4 * cfg.metrics.series_bins,
        gamma=cfg.drafter.effective_gamma,
        replicas=cfg.server.replicas,
    )
    env = simpy.Environment()
    eng = _deployment(prep, env, rec, observer)
    replicas = [Replica(i, eng) for i in range(cfg.server.replicas)]
    expected = n
    if cfg.workload.kind == "closed":
        loop = ClosedLoop(
            env, Router(replicas, kind, prep.rngs["router"]), cfg.workload.concurrency, wl.think_s
        )
        eng.on_complete = loop.on_complete
    elif kind in STATE_FREE:
        target = route(prep)
        fed = range(cfg.server.replicas) if only is None else only
        expected = 0
        for k in fed:
            rids = np.flatnonzero(target == k)
            expected += rids.size
            replicas[k].horizon = OpenLoop(env, replicas[k].enqueue, wl.arrival_s, rids).horizon
    else:
        eng.horizon = OpenLoop(env, Router(replicas, kind).submit, wl.arrival_s).horizon
    if progress or watch is not None:
        report = _progress_printer(n) if progress is True else (progress or None)
        counter = [0]

        def on_step(now: float) -> None:
            counter[0] += 1
            if counter[0] & 1023 == 0:
                if report is not None:
                    report(rec.completed, now)
                if watch is not None:
                    watch(rec, now)

        eng.on_step = on_step
    with np.errstate(divide="ignore", over="ignore"):  # once per run: the hot path's logits of 0 and 1
        env.run()
    rec.close(env.now)
    rec.prefix_cache_stats = None if eng.prefix_cache is None else eng.prefix_cache.stats()
    if rec.completed != expected or any(rep.n or rep.kv_used or rep.queue for rep in replicas):
        raise RuntimeError(
            f"simulation ended with {expected - rec.completed} of {expected} requests unfinished"
        )
    return rec


def _deployment(prep: Prepared, env: simpy.Environment, rec: Recorder, observer) -> Deployment:
    """The `Deployment` every replica of `prep`'s run shares."""
    cfg, wl = prep.config, prep.workload
    return Deployment(
        env=env,
        recorder=rec,
        model=prep.model,
        policy=prep.policy,
        step=step_cost(cfg, prep.cost),
        gamma=cfg.drafter.effective_gamma,
        max_num_seqs=cfg.server.max_num_seqs,
        max_batch_tokens=cfg.server.max_num_batched_tokens,
        kv_tokens=cfg.server.kv_tokens,
        input_tokens=wl.input_tokens,
        output_tokens=wl.output_tokens,
        domain=wl.domain,
        latent=prep.latent,
        rng_accept=prep.rngs["acceptance"],
        rng_conf=prep.rngs["confidence"],
        rng_verify=prep.rngs["verify"],
        plan=None if prep.policy_cost is None else step_cost(cfg, prep.policy_cost),
        observer=observer,
        prefix_cache=_prefix_cache(prep),
        block_keys=prep.block_keys,
        async_scheduling=prep.async_scheduling,
    )


def _prefix_cache(prep: Prepared) -> PrefixCache | None:
    """A fresh, empty prefix cache for one run (None when prefix caching is off or no keys are known)."""
    if not prep.prefix_caching or prep.block_keys is None:
        return None
    cap = prep.config.server.kv_tokens // prep.block_size
    return PrefixCache(cap, prep.block_size, offload_blocks=prep.prefix_offload_blocks)


def _progress_printer(total: int, every_s: float = 2.0) -> Callable[[int, float], None]:
    """A progress callback printing completed/total, simulated time and an ETA to stderr."""
    start = time.perf_counter()
    last = [start]

    def report(done: int, now: float) -> None:
        wall = time.perf_counter()
        if wall - last[0] < every_s:
            return
        last[0] = wall
        frac = done / max(total, 1)
        eta = (wall - start) * (1 - frac) / frac if frac > 0 else float("nan")
        print(
            f"  sim: {done}/{total} requests ({100 * frac:.0f}%), t_sim={now:.1f}s, "
            f"wall {wall - start:.0f}s, ETA {eta:.0f}s",
            file=sys.stderr,
            flush=True,
        )

    return report
