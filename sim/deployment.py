"""What every replica of one simulated deployment shares: tables, policy, streams, per-request inputs.

Role: the read-only model of one deployment that `sim.server.Replica`s step against (distinct from the real
engine's `engine.loop.Engine`): the cost table and the per-R draft seconds, the policy and the views it
plans with, the acceptance model and the random streams, and the switches of the multi-step path.

May import: numpy, simpy, the standard library, `sim.recorder`, `specsched` (CostTable, DraftCost, Policy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from sim.recorder import Recorder
from specsched import CostTable, DraftCost, Policy


@dataclass
class Deployment:
    """What every replica shares: the model of one deployment (read-only during a run).

    input_tokens, output_tokens, domain, latent: per-request arrays (int64/int64/int64/float64[N]).
    draft_s: float64[max_num_seqs + 1], draft seconds by decoding-request count R.
    latency: float64[max_num_batched_tokens + 1], verify seconds by step tokens B.
    views: cost table with draft_s[R] as its draft cost, by R (what the policy is given).
    policy_cost, policy_draft_s: the table and draft seconds the policy plans with when they differ from
    the ones that time the steps (server.policy_cost); None = cost and draft_s.
    prefill_request_s: seconds added per request prefilling in a step (server.prefill_request_seconds).
    drafter: how the draft pass is priced from planned depths (used with draft = "adaptive").
    pad_s: seconds per padded verify slot on a pure-decode step (server.pad_token_seconds).
    context_pad_s: seconds per padded KV slot, running requests × their longest context, every step
    (server.padded_context_seconds); draft_context_s: draft seconds per padded KV slot, drafting requests ×
    the longest context (drafter.padded_context_seconds).
    intake_s, intake_ref: draft seconds per draft a drafting request verified since it last drafted, and
    such drafts per drafting request the draft cost was measured at (drafter.intake_seconds / intake_tokens).
    observer: optional per-step callback (e.g. `sim.timeline.TimelineWriter`), see the field.
    draft_kv_s: the measured draft cost's seconds per KV token held (drafter.cost with a context column).
    rng_accept, rng_conf, rng_verify: truth noise, estimate noise, accept/reject uniforms; replica i draws
    from the i-th child of each (`Generator.spawn`), so its draws never depend on the other replicas.
    horizon: () -> simulated time of the next outside event that could reach a replica (the next arrival in
    open loop; default simpy's next event); max_run: most pure-decode steps decided in one pass (1 = off).
    """

    env: simpy.Environment
    recorder: Recorder
    model: object  # sim.acceptance.AcceptanceModel or sim.empirical.EmpiricalModel
    policy: Policy
    cost: CostTable
    gamma: int
    max_num_seqs: int
    max_batch_tokens: int
    kv_tokens: int
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    domain: np.ndarray
    latent: np.ndarray
    draft_s: np.ndarray
    latency: np.ndarray
    rng_accept: np.random.Generator
    rng_conf: np.random.Generator
    rng_verify: np.random.Generator
    on_complete: Callable[[np.ndarray, float], None] | None = None
    on_step: Callable[[float], None] | None = None
    policy_cost: CostTable | None = None
    policy_draft_s: np.ndarray | None = None
    prefill_request_s: float = 0.0
    intake_s: float = 0.0
    intake_ref: float = 0.0
    pad_s: float = 0.0
    context_pad_s: float = 0.0
    draft_context_s: float = 0.0
    drafter: DraftCost | None = None
    #: called at the end of every step as observer(replica, start, seconds, decoding requests, verify
    #: tokens, prefill tokens, lengths, accepted, emitted tokens); None (the default) costs nothing
    observer: Callable[..., None] | None = None
    draft_kv_s: float = 0.0
    horizon: Callable[[], float] | None = None
    max_run: int = 256
    #: vLLM v1's automatic prefix caching (`sim.prefix_cache.PrefixCache`) and each request's block keys;
    #: None = off (every prompt token is computed)
    prefix_cache: object | None = None
    block_keys: list | None = None
    #: vLLM v1's async scheduling: step k+1 is scheduled while step k runs, so a request that arrives
    #: during step k joins step k+2 at the earliest (unless the engine is idle)
    async_scheduling: bool = False

    def __post_init__(self) -> None:
        self.views: list[CostTable | None] = [None] * (self.max_num_seqs + 1)
        self.adaptive = getattr(self.policy, "draft", "full") == "adaptive"
        if self.adaptive and self.drafter is None:
            raise ValueError("Deployment: an adaptive policy needs `drafter` (how to price the draft pass)")
        #: seconds per KV token held by the running requests, charged every step (target + drafter)
        self.kv_s = self.cost.kv_token_seconds + self.draft_kv_s
        plan_kv_s = (self.policy_cost or self.cost).kv_token_seconds + self.draft_kv_s
        self._shortest: dict[int, float] = {}
        self.latency_list: list[float] = self.latency.tolist()  # the same, for per-step Python sums
        self.replicas = 0  # replicas built on this deployment (each `sim.server.Replica` counts itself)
        if self.horizon is None:
            self.horizon = self.env.peek
        self.vector_draws = hasattr(self.model, "draw_steps")
        # The multi-step path needs K steps' draws at once, no per-request history, and one step cost for
        # the whole run: a per-KV-token term moves the cost (and the policy's fixed term) every step.
        self.multi_step = (
            self.max_run > 1
            and self.vector_draws
            and not self.policy.uses_stale
            and self.kv_s == 0.0
            and plan_kv_s == 0.0
            and self.intake_s == 0.0  # the draft pass then depends on the previous step's acceptance
            and self.context_pad_s == 0.0  # the longest context grows within a run
            and self.draft_context_s == 0.0
            and not self.async_scheduling  # admission looks at the previous step's start
        )

    def step_seconds(self, r: int, n: int, tokens):
        """Seconds of a step with r decoding of n running requests and `tokens` batched tokens (int or
        int64[K]): draft + KV reads of every running request + verify/prefill forward (module doc, 4.)."""
        return self.draft_s[r] + self.cost.request_seconds * n + self.latency[tokens]

    def shortest_step(self, n: int) -> float:
        """A lower bound on a pure-decode step of n requests (seconds): the cheapest B in n..n·(γ + 1)."""
        got = self._shortest.get(n)
        if got is None:
            lat = self.latency[n : n * (self.gamma + 1) + 1]
            got = self._shortest[n] = float(self.draft_s[n] + self.cost.request_seconds * n + lat.min())
        return got

    def view(self, r: int, kv: int = 0) -> CostTable:
        """The table the policy plans with at R = r decoding requests holding `kv` KV tokens in all: the
        draft seconds and the context's KV reads both go into its fixed (ℓ-independent) term."""
        v = self._view(r)
        extra = (v.kv_token_seconds + self.draft_kv_s) * kv
        return v.with_draft(v.draft_seconds + extra) if extra else v

    def _view(self, r: int) -> CostTable:
        v = self.views[r]
        if v is None:
            if self.policy_cost is None:
                v = self.cost.with_draft(float(self.draft_s[r]))
            else:
                v = self.policy_cost.with_draft(float(self.policy_draft_s[r]))
            self.views[r] = v
        return v
