"""A prefill pool with prefix caches: one `sim.prefix_cache.PrefixCache` per prefill replica, and routing.

Role: `prefix_keys` gives every request block keys from a stated shared-prefix model (traces carry no
prompt contents): request i belongs to one of `prefix_groups` groups (uniform, from its own stream), the
first ⌊prefix_share · prompt / 16⌋ blocks are its group's shared prefix and the rest its own, chained
(`PrefixCache.chain`) so a hit is a run of leading blocks. `run_prefill_cached` runs the prefill pool with
one cache per replica (each a `sim.deployment.Deployment` of its own, sharing the clock and the recorder),
its prompts looked up and cached by the colocated engine (`sim.server.Replica`: vLLM v1's automatic
prefix caching), and routes arrivals by `cache_routing`: "affinity" — to the replica whose cache holds the
longest leading run of the request's blocks (ties: fewest outstanding, then the lowest index), or
"least_outstanding" — blind to the caches. The caches' hit rate is reported.

May import: numpy, simpy, the standard library, `sim.prefix_cache`, `sim.server`, `sim.wiring`,
`sim.recorder`, `sim.routing`.
"""

from __future__ import annotations

import numpy as np
import simpy

from sim.prefix_cache import PrefixCache
from sim.recorder import Recorder
from sim.routing import OpenLoop
from sim.server import Replica
from sim.wiring import Prepared, _deployment

BLOCK = 16


def prefix_keys(prompts: np.ndarray, groups: int, share: float, seed: int) -> list[list[int]]:
    """Chained block keys per request (module docstring). The group draw uses its own child of the run's
    SeedSequence (index 1000, after every stream `sim.run` spawns), so no other draw moves."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1001)[1000])
    group = rng.integers(0, max(groups, 1), size=prompts.size)
    out = []
    for i, (tokens, g) in enumerate(zip(prompts.tolist(), group.tolist())):
        blocks = tokens // BLOCK
        shared = min(int(share * tokens) // BLOCK, blocks)
        contents = [("group", g, j) for j in range(shared)] + [("own", i, j) for j in range(shared, blocks)]
        out.append(PrefixCache.chain(contents))
    return out


class CacheRouter:
    """Submits each request to a prefill replica: by prefix affinity, or to the least outstanding."""

    def __init__(self, replicas: list[Replica], keys: list[list[int]], affinity: bool) -> None:
        self.replicas, self.keys, self.affinity = replicas, keys, affinity

    def submit(self, rid: int) -> None:
        best, best_key = 0, None
        for k, rep in enumerate(self.replicas):
            held = rep.eng.prefix_cache.peek(self.keys[rid]) if self.affinity else 0
            key = (-held, rep.outstanding, k)
            if best_key is None or key < best_key:
                best, best_key = k, key
        self.replicas[best].enqueue(rid)


def run_prefill_cached(prep: Prepared, keys: list[list[int]], affinity: bool) -> tuple[Recorder, dict]:
    """The prefill pool of `prep` with a prefix cache per replica; (its recorder, the caches' summed
    statistics)."""
    cfg, wl = prep.config, prep.workload
    rec = Recorder(len(wl), max_bins=4 * cfg.metrics.series_bins, gamma=cfg.drafter.effective_gamma,
                   replicas=cfg.server.replicas)  # fmt: skip
    env = simpy.Environment()
    replicas = []
    for i in range(cfg.server.replicas):
        eng = _deployment(prep, env, rec, None)
        eng.prefix_cache = PrefixCache(cfg.server.kv_tokens // BLOCK, BLOCK)
        eng.block_keys = keys
        replicas.append(Replica(i, eng))
    loop = OpenLoop(env, CacheRouter(replicas, keys, affinity).submit, wl.arrival_s)
    for rep in replicas:
        rep.eng.horizon = loop.horizon
    with np.errstate(divide="ignore", over="ignore"):
        env.run()
    rec.close(env.now)
    if rec.completed != len(wl) or any(rep.n or rep.queue for rep in replicas):
        raise RuntimeError(f"prefill pool ended with {len(wl) - rec.completed} requests unfinished")
    stats = [rep.eng.prefix_cache.stats() for rep in replicas]
    total = {k: sum(s[k] for s in stats) for k in ("lookups", "tokens_asked", "tokens_hit", "evictions")}
    total["hit_rate"] = total["tokens_hit"] / total["tokens_asked"] if total["tokens_asked"] else 0.0
    return rec, total
