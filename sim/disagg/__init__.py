"""Prefill/decode disaggregation: pools, the KV hand-off between them, DP-attention + EP decode groups.

Role: the hand-off and the stage glue of a fleet of a prefill and a decode pool: `load_pools` /
`load_disagg` (sim.disagg.config: `[[pool]]` and `[handoff]` tables beside the colocated sections; a
single `both` pool is a colocated config) and `simulate_disagg` (sim.disagg.run: prefill pool →
hand-off → decode pool on one set of requests, each pool `sim.wiring.run_pool` fed by a `Feed`;
sim.disagg.prefix: the prefill pool's prefix caches and cache-aware routing; sharded on Ray by
`sim.shard`). Documented in docs/disaggregation.md.

May import: numpy, simpy, the standard library, specsched, and the other sim modules.
"""

from sim.disagg.config import (
    DisaggConfig,
    HandoffConfig,
    PoolConfig,
    is_disaggregated,
    load_disagg,
    load_pools,
)
from sim.disagg.run import DisaggResult, simulate_disagg

__all__ = [
    "DisaggConfig",
    "DisaggResult",
    "HandoffConfig",
    "PoolConfig",
    "is_disaggregated",
    "load_disagg",
    "load_pools",
    "simulate_disagg",
]
