"""A prefill pool with prefix caches: one `sim.prefix_cache.PrefixCache` per prefill replica, and routing.

Role: `prefix_keys` gives every request block keys from a stated shared-prefix model (traces carry no
prompt contents): request i belongs to one of `prefix_groups` groups (uniform, from its own stream), the
first ⌊prefix_share · prompt / 16⌋ blocks are its group's shared prefix and the rest its own, chained
(`PrefixCache.chain`) so a hit is a run of leading blocks. `prefill_feed` gives the prefill pool
(`sim.wiring.run_pool`) one cache per replica, its prompts looked up and cached by the one engine
(`sim.server.Replica`: vLLM v1's automatic prefix caching), and routes arrivals by `cache_routing`:
"affinity" — to the replica whose cache holds the longest leading run of the request's blocks (ties:
fewest outstanding, then the lowest index), or "least_outstanding" — blind to the caches. The caches'
hit rate is reported.

May import: numpy, the standard library, `sim.prefix_cache`, `sim.server`, `sim.wiring`.
"""

from __future__ import annotations

import numpy as np

from sim.prefix_cache import PrefixCache
from sim.server import Replica
from sim.wiring import Feed, Prepared

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
            held = rep.cache.peek(self.keys[rid]) if self.affinity else 0
            key = (-held, rep.outstanding, k)
            if best_key is None or key < best_key:
                best, best_key = k, key
        self.replicas[best].enqueue(rid)


def prefill_feed(cfg, prep: Prepared, prompt: np.ndarray) -> Feed:
    """The prefill pool's feed: the workload's arrivals, with one prefix cache per replica and the cache
    router when `pool.prefill.prefix_cache` is on (else the pool's own router, no cache)."""
    pool = cfg.prefill
    if not pool.prefix_cache:
        return Feed()
    keys = prefix_keys(prompt, pool.prefix_groups, pool.prefix_share, cfg.base.seed)
    capacity = prep.config.server.kv_tokens // BLOCK
    affinity = pool.cache_routing == "affinity"
    return Feed(cache=lambda: PrefixCache(capacity, BLOCK), block_keys=keys,
                router=lambda replicas: CacheRouter(replicas, keys, affinity).submit)  # fmt: skip
