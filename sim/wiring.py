"""Wire one pool's simpy model (deployment, replicas, router, arrivals) and run it to a Recorder.

Role: `run_pool(prep, feed)` — the one run loop of every pool — builds the `Deployment` every replica
shares, the replicas and how requests reach them, runs the event loop and returns the closed `Recorder`.
A colocated pool takes the workload's own arrivals; a `Feed` says how requests reach any other pool (a
decode pool: at their KV's ready times, holding it; a prefill pool: through cache-aware routing, one
prefix cache per replica). `sim.run.simulate` runs a colocated pool whole, `sim.disagg.run` a fleet's
pools one after the other, and `sim.shard` subsets of a pool's replicas in separate processes (`only`).
With a router in `sim.routing.STATE_FREE` in open loop, arrivals are routed up front (`route`) and each
replica is fed its own (`OpenLoop` with rids and the replica's own horizon), in both cases, so a replica's
events, draws and `Recorder` tally do not depend on which other replicas run beside it.

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
from sim.tree_step import tree_step
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
    #: vLLM v1 serving (`specsched.price.vllm`): each request's prompt block keys, the cache's block size and
    #: whether automatic prefix caching is on; async scheduling (`Deployment.async_scheduling`)
    block_keys: list | None = None
    block_size: int = 16
    prefix_caching: bool = False
    prefix_offload_blocks: int = 0
    async_scheduling: bool = False


@dataclass(frozen=True)
class Feed:
    """How requests reach a pool when not as the workload's own arrivals (None fields: the workload's).

    arrival_s: float64[N] when each request reaches the pool (a decode pool: when its KV is in place);
    rids: int64[M] the requests the pool serves, in arrival order (default all N);
    external: int64[N] KV tokens each holds on arrival (`Deployment.external`);
    emitted: int64[N] tokens each has already emitted on arrival (a prefill pool's first token);
    cache: () -> a fresh `PrefixCache`, one per replica over `block_keys` (a prefill pool's caches);
    router: replicas -> submit(rid), a router that reads the replicas (cache affinity).
    """

    arrival_s: np.ndarray | None = None
    rids: np.ndarray | None = None
    external: np.ndarray | None = None
    emitted: np.ndarray | None = None
    cache: Callable[[], PrefixCache] | None = None
    block_keys: list | None = None
    router: Callable[[list[Replica]], Callable[[int], None]] | None = None


def route(prep: Prepared) -> np.ndarray:
    """int64[N]: each open-loop request's replica, for a router in `sim.routing.STATE_FREE` (drawn from
    the "router" stream for "random": call it once per Prepared)."""
    cfg, wl = prep.config, prep.workload
    return route_up_front(cfg.server.router, cfg.server.replicas, len(wl), prep.rngs["router"], wl.session)


def run_pool(
    prep: Prepared,
    feed: Feed = Feed(),
    *,
    only: list[int] | None = None,
    progress: bool | Callable[[int, float], None] = False,
    observer: Callable[..., None] | None = None,
    watch: Callable[[Recorder, float], None] | None = None,
) -> Recorder:
    """Simulate the pool of `prep` fed by `feed` and return its closed Recorder (the one run loop of
    every pool: colocated, prefill, decode).

    watch: called as watch(recorder, now) every 1024 engine steps, beside `progress`; it may raise to stop
    the run early (`specbed search` stops runs whose SLO is already lost).

    With a state-free router in open loop the arrivals are routed up front and each replica is fed its
    own (replicas never interact); `only` then simulates just those replicas (a shard of `sim.shard`),
    each exactly as in the whole run: every replica is built, so each draws from its own child stream.
    """
    cfg, wl = prep.config, prep.workload
    closed = cfg.workload.kind == "closed" and feed.arrival_s is None
    if only is not None and (closed or cfg.server.router not in STATE_FREE or feed.router is not None):
        raise ValueError("run_pool: only an open-loop pool with a state-free router can be sharded")
    rec = Recorder(len(wl), max_bins=4 * cfg.metrics.series_bins, gamma=cfg.drafter.effective_gamma,
                   replicas=cfg.server.replicas)  # fmt: skip
    if feed.emitted is not None:
        rec.generated[:] = feed.emitted
    env = simpy.Environment()
    eng = _deployment(prep, env, rec, observer, feed)
    replicas = [Replica(i, eng) for i in range(cfg.server.replicas)]
    if feed.cache is not None:
        for rep in replicas:
            rep.cache = feed.cache()
    expected = _arrivals(prep, feed, eng, replicas, only, closed)
    if progress or watch is not None:
        eng.on_step = _on_step(rec, len(wl), progress, watch)
    with np.errstate(divide="ignore", over="ignore"):  # once per run: the hot path's logits of 0 and 1
        env.run()
    rec.close(env.now)
    rec.prefix_cache_stats = _cache_stats(replicas)
    if rec.completed != expected or any(rep.n or rep.kv_used or rep.queue for rep in replicas):
        raise RuntimeError(
            f"simulation ended with {expected - rec.completed} of {expected} requests unfinished"
        )
    return rec


#: the old name of `run_pool`, for callers outside the simulator (validate, paper figures) until they move


def _arrivals(prep: Prepared, feed: Feed, eng: Deployment, replicas: list[Replica], only, closed) -> int:
    """Start the processes that bring requests to `replicas`; returns how many requests they bring."""
    cfg, wl = prep.config, prep.workload
    kind = cfg.server.router
    if closed:
        router = Router(replicas, kind, prep.rngs["router"])
        loop = ClosedLoop(eng.env, router, cfg.workload.concurrency, wl.think_s, wl.arrival_s)
        eng.on_complete = loop.on_complete
        return len(wl)
    times = wl.arrival_s if feed.arrival_s is None else feed.arrival_s
    order = feed.rids
    if feed.router is not None:
        eng.horizon = OpenLoop(eng.env, feed.router(replicas), times, order).horizon
    elif kind in STATE_FREE:
        target = route(prep)
        expected = 0
        for k in range(len(replicas)) if only is None else only:
            mine = np.flatnonzero(target == k) if order is None else order[target[order] == k]
            expected += mine.size
            replicas[k].horizon = OpenLoop(eng.env, replicas[k].enqueue, times, mine).horizon
        return expected
    else:
        eng.horizon = OpenLoop(eng.env, Router(replicas, kind).submit, times, order).horizon
    return len(times) if order is None else order.size


def _on_step(rec: Recorder, n: int, progress, watch) -> Callable[[float], None]:
    """The per-step callback reporting progress and calling `watch` every 1024 engine steps."""
    report = _progress_printer(n) if progress is True else (progress or None)
    counter = [0]

    def on_step(now: float) -> None:
        counter[0] += 1
        if counter[0] & 1023 == 0:
            if report is not None:
                report(rec.completed, now)
            if watch is not None:
                watch(rec, now)

    return on_step


def _cache_stats(replicas: list[Replica]) -> dict | None:
    """The prefix caches' counters, summed over distinct caches (None when there is none)."""
    caches = list({id(rep.cache): rep.cache for rep in replicas if rep.cache is not None}.values())
    if not caches:
        return None
    if len(caches) == 1:
        return caches[0].stats()
    stats = [c.stats() for c in caches]
    total = {k: sum(s[k] for s in stats) for k in ("lookups", "tokens_asked", "tokens_hit", "evictions")}
    total["hit_rate"] = total["tokens_hit"] / total["tokens_asked"] if total["tokens_asked"] else 0.0
    return total


def _deployment(prep: Prepared, env: simpy.Environment, rec: Recorder, observer, feed: Feed) -> Deployment:
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
        block_keys=prep.block_keys if feed.block_keys is None else feed.block_keys,
        async_scheduling=prep.async_scheduling,
        external=None if feed.external is None else feed.external.astype(np.int64),  # a copy: used up
        tree=tree_step(cfg),
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
