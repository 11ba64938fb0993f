"""Prefill/decode disaggregation: pools, the KV hand-off between them, DP-attention + EP decode groups.

Role: `load_disagg` (sim.disagg.config: `[[pool]]` and `[handoff]` tables beside the colocated sections)
and `simulate_disagg` (sim.disagg.run: prefill pool → hand-off → decode pool on one set of requests;
sim.disagg.prefix: per-replica prefix caches and cache-aware routing; sharded on Ray by `sim.shard`).
Colocated runs never touch this package. Documented in docs/disaggregation.md.

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
