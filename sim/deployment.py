"""What every replica of one simulated deployment shares: the step price, policy, streams, per-request inputs.

Role: the read-only model of one deployment that `sim.server.Replica`s step against (distinct from the real
engine's `engine.loop.Engine`): the `StepCost` that prices its steps and the one its policy plans with,
the policy and the views it plans with, the acceptance model and the random streams, and the switches of
the multi-step path.

May import: numpy, simpy, the standard library, `sim.model`, `sim.recorder`, `specsched` (CostTable, Policy,
StepCost).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from sim.model import AcceptanceSource
from sim.recorder import Recorder
from specsched import CostTable, Policy
from specsched.stepcost import StepCost


@dataclass
class Deployment:
    """What every replica shares: the model of one deployment (read-only during a run).

    input_tokens, output_tokens, domain, latent: per-request arrays (int64/int64/int64/float64[N]).
    step: the `StepCost` that prices every step (`sim.stepcost.step_cost`); plan: the one the policy plans
    with when it differs (cost.policy_table), None = step.
    views: cost table with the draft seconds of R drafting requests as its draft cost, by R (what the
    policy is given).
    observer: optional per-step callback (e.g. `sim.timeline.TimelineWriter`), see the field.
    rng_accept, rng_conf, rng_verify: truth noise, estimate noise, accept/reject uniforms; replica i draws
    from the i-th child of each (`Generator.spawn`), so its draws never depend on the other replicas.
    horizon: () -> simulated time of the next outside event that could reach a replica (the next arrival in
    open loop; default simpy's next event); max_run: most pure-decode steps decided in one pass (1 = off).
    """

    env: simpy.Environment
    recorder: Recorder
    model: AcceptanceSource  # sim.acceptance.AcceptanceModel, sim.empirical.EmpiricalModel, ...
    policy: Policy
    step: StepCost
    gamma: int
    max_num_seqs: int
    max_batch_tokens: int
    kv_tokens: int
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    domain: np.ndarray
    latent: np.ndarray
    rng_accept: np.random.Generator
    rng_conf: np.random.Generator
    rng_verify: np.random.Generator
    on_complete: Callable[[np.ndarray, float], None] | None = None
    on_step: Callable[[float], None] | None = None
    plan: StepCost | None = None
    #: called at the end of every step as observer(replica, start, seconds, decoding requests, verify
    #: tokens, prefill tokens, lengths, accepted, emitted tokens, bill: `specsched.stepcost.StepBill`);
    #: None (the default) costs nothing
    observer: Callable[..., None] | None = None
    horizon: Callable[[], float] | None = None
    max_run: int = 256
    #: vLLM v1's automatic prefix caching (`sim.prefix_cache.PrefixCache`) and each request's block keys;
    #: None = off (every prompt token is computed)
    prefix_cache: object | None = None
    block_keys: list | None = None
    #: vLLM v1's async scheduling: step k+1 is scheduled while step k runs, so a request that arrives
    #: during step k joins step k+2 at the earliest (unless the engine is idle)
    async_scheduling: bool = False
    #: int64[N] tokens of KV each request holds when it arrives (a prefill pool's hand-off: vLLM's
    #: `num_external_computed_tokens`), used at its first admission and zeroed then (a preempted request
    #: recomputes); None = none (a colocated pool). The run owns this copy.
    external: np.ndarray | None = None
    #: draft trees (`sim.tree_step.TreeStep`, drafter.topk > 1): each step drafts and verifies a tree;
    #: None (a chain) = today's code
    tree: object | None = None

    def __post_init__(self) -> None:
        self.views: list[CostTable | None] = [None] * (self.max_num_seqs + 1)
        self.adaptive = getattr(self.policy, "draft", "full") == "adaptive"
        if self.adaptive and self.step.drafter is None:
            raise ValueError(
                "Deployment: an adaptive policy needs `step.drafter` (how to price the draft pass)"
            )
        self.planned = self.step if self.plan is None else self.plan
        self._shortest: dict[int, float] = {}
        self.replicas = 0  # replicas built on this deployment (each `sim.server.Replica` counts itself)
        if self.horizon is None:
            self.horizon = self.env.peek
        # a `sim.model.VectorModel`; a tree step draws its rows one step at a time (`sim.tree_step`)
        self.vector_draws = bool(self.model.vector_draws) and self.tree is None
        # The multi-step path needs K steps' draws at once, no per-request history, and one step cost for
        # the whole run: a per-KV-token term moves the cost (and the policy's fixed term) every step.
        self.multi_step = (
            self.max_run > 1
            and self.vector_draws
            and not self.policy.uses_stale
            and not self.step.varies_within_run
            and self.planned.kv_s == 0.0
            and not self.async_scheduling  # admission looks at the previous step's start
        )

    def shortest_step(self, n: int) -> float:
        """A lower bound on a pure-decode step of n requests (seconds): the cheapest B in n..n·(γ + 1)."""
        got = self._shortest.get(n)
        if got is None:
            got = self._shortest[n] = self.step.shortest(n, self.gamma)
        return got

    def view(self, r: int, kv: int = 0) -> CostTable:
        """The table the policy plans with at R = r decoding requests holding `kv` KV tokens in all: the
        draft seconds and the context's KV reads both go into its fixed (ℓ-independent) term."""
        v = self.views[r]
        if v is None:
            plan = self.planned
            v = self.views[r] = plan.cost.with_draft(float(plan.draft_s[r]))
        extra = self.planned.kv_s * kv
        return v.with_draft(v.draft_seconds + extra) if extra else v
