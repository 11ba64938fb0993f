"""The simulator's configuration: frozen dataclasses, one per TOML section, validated on construction.

Role: say everything a run depends on, check it before anything runs, and name the key when it is wrong.
Loading TOML, `--set section.key=value` overrides and dumping live in `sim.config_io`.

Sections (TOML tables) and their public keys — every key can be set with `--set section.key=value`:

- top level: `seed` (int ≥ 0; every random stream is spawned from it).
- `[workload]` (`WorkloadConfig`): traffic — kind, rate, cv, concurrency, think time, lengths, domains, trace.
- `[drafter]` (`DrafterConfig`): which drafter, γ, how its pass is priced, optional curves file.
- `[policy]` (`PolicyConfig`, sim.config_policy): the one `specsched` policy and the parameters every
  registered policy declares (`specsched.registry`).
- `[server]` (`ServerConfig`): replicas, GPUs per replica, router, batching and KV limits.
- `[cost]` (`sim.deploy.keys.CostKeys`): the price of a step — a cost table or a catalogue deployment.
- `[acceptance]` (`sim.acceptance.AcceptanceConfig`, owned by the acceptance models): truth and
  confidence-estimate knobs (difficulty spread, step noise, AUC, over-confidence, STS).
- `[metrics]` (`MetricsConfig`): steady-state window, SLOs for goodput, time-series resolution.

May import: the standard library, `specsched` (errors, policy/cost names), `sim.acceptance`, `sim.curves`,
`sim.deploy.keys`, `sim.config_policy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from sim.acceptance import AcceptanceConfig
from sim.bounds import check_bounds, check_not_empty
from sim.bounds import check_choice as _check_choice
from sim.bounds import check_range as _check_range
from sim.bounds import fail as _fail
from sim.config_policy import PolicyConfig, check_tree_policy
from sim.curves import DOMAINS, DRAFTERS
from sim.deploy.keys import COST_NAME, CostKeys, check_preset

WORKLOAD_KINDS = ("poisson", "gamma", "closed", "trace")
LENGTH_DISTS = ("fixed", "uniform", "exponential", "lognormal", "trace")
THINK_DISTS = ("fixed", "exponential")
ROUTERS = ("round_robin", "least_outstanding", "random", "session")
#: how a drafter's pass is priced (see sim.drafter): drafter.kind, or the built-in name's own kind
DRAFTER_KINDS = ("parallel", "autoregressive", "free")
BUILTIN_KINDS = {"none": "free", "mtp": "autoregressive", "eagle3": "autoregressive", "dflash": "parallel",
                 "dspark": "parallel"}  # fmt: skip
PARALLEL_DRAFTERS = tuple(name for name, kind in BUILTIN_KINDS.items() if kind == "parallel")


@dataclass(frozen=True)
class WorkloadConfig:
    """Traffic.

    kind: "poisson" (rate), "gamma" (rate, cv), "closed" (concurrency users, each sends a request, waits
        for it to finish, thinks, repeats), "trace" (replays `trace`; `rate`/`cv` unused).
    rate: mean arrivals per second (poisson, gamma). cv: inter-arrival coefficient of variation (gamma).
    concurrency: closed-loop users; all start at t = 0. think_s: mean think time between a user's
        requests (seconds, 0 = none); think_dist: "fixed" or "exponential".
    num_requests: requests to simulate; for kind="trace", 0 means the whole trace, N the first N.
    input_tokens / output_tokens: the fixed value, or the mean of `input_dist` / `output_dist`:
        "fixed"; "uniform" on [1, 2·mean − 1]; "exponential"; "lognormal" with CV `input_cv`/`output_cv`;
        "trace" (resample (input, output) pairs jointly from `trace`). kind="trace" always replays the
        trace's own lengths. All lengths are clipped to [1, max_input_tokens] / [1, max_output_tokens]
        (the count of clipped requests is reported).
    domain: "chat" | "math" | "code" | "mix"; "mix" draws each request's domain with the shares `mix`
        (chat, math, code; normalized), or takes it from the trace when the trace labels domains.
    trace: a trace file or built-in trace name (`traces.load`); speedup: replay k× faster (arrival
        times divided by k).
    hash_block_tokens: tokens per trace `hash_ids` block (Mooncake's 512), for prefix caching of a replay.
    """

    _section: ClassVar[str] = "workload"
    kind: str = "poisson"
    rate: float = 4.0
    cv: float = 1.0
    concurrency: int = 32
    think_s: float = 0.0
    think_dist: str = "exponential"
    num_requests: int = 1000
    input_tokens: int = 1024
    output_tokens: int = 256
    input_dist: str = "fixed"
    output_dist: str = "fixed"
    input_cv: float = 1.0
    output_cv: float = 1.0
    max_input_tokens: int = 131072
    max_output_tokens: int = 32768
    domain: str = "mix"
    mix: tuple[float, ...] = (1.0, 1.0, 1.0)
    trace: str | None = None
    speedup: float = 1.0
    hash_block_tokens: int = 512

    def __post_init__(self) -> None:
        s = self._section
        check_bounds(s, self)
        _check_choice(s, "kind", self.kind, WORKLOAD_KINDS)
        _check_range(s, "rate", self.rate, 0, lo_open=True)
        _check_range(s, "cv", self.cv, 0, lo_open=True)
        _check_range(s, "concurrency", self.concurrency, 1)
        _check_range(s, "think_s", self.think_s, 0)
        _check_choice(s, "think_dist", self.think_dist, THINK_DISTS)
        _check_range(s, "num_requests", self.num_requests, 1 if self.kind != "trace" else 0)
        _check_range(s, "input_tokens", self.input_tokens, 1)
        _check_range(s, "output_tokens", self.output_tokens, 1)
        for key in ("input_dist", "output_dist"):
            _check_choice(s, key, getattr(self, key), LENGTH_DISTS)
        _check_range(s, "input_cv", self.input_cv, 0, lo_open=True)
        _check_range(s, "output_cv", self.output_cv, 0, lo_open=True)
        _check_range(s, "max_input_tokens", self.max_input_tokens, 1)
        _check_range(s, "max_output_tokens", self.max_output_tokens, 1)
        _check_choice(s, "domain", self.domain, (*DOMAINS, "mix"))
        if len(self.mix) != len(DOMAINS):
            raise _fail(s, "mix", f"needs {len(DOMAINS)} shares ({', '.join(DOMAINS)}); got {len(self.mix)}")
        for share in self.mix:
            _check_range(s, "mix", share, 0)
        if not sum(self.mix) > 0:
            raise _fail(s, "mix", "shares must not all be 0")
        _check_range(s, "speedup", self.speedup, 0, lo_open=True)
        if self.hash_block_tokens < 16 or self.hash_block_tokens % 16:
            raise _fail(s, "hash_block_tokens", f"must be a multiple of 16 (got {self.hash_block_tokens})")
        check_not_empty(s, "trace", self.trace)
        uses_trace = self.kind == "trace" or "trace" in (self.input_dist, self.output_dist)
        if uses_trace and not self.trace:
            raise _fail(s, "trace", "is required when workload.kind or a length distribution is 'trace'")


@dataclass(frozen=True)
class DrafterConfig:
    """The drafter and how its pass is priced (see `sim.drafter`).

    name: a built-in ("none" | "mtp" | "eagle3" | "dflash" | "dspark") or any drafter the `curves` file
        names (n-gram, suffix, a team's own). gamma: drafts per request per step (γ; ignored, i.e. 0, for
        "none"; at most the length of the drafter's acceptance curve).
    kind: how its draft pass is priced (`sim.drafter`): "parallel" (one pass over R·γ positions, like
        DFlash), "autoregressive" (γ passes over R tokens, like EAGLE-3) or "free" (no draft cost, like
        n-gram lookup). Default (None): the built-in name's kind (dflash/dspark parallel, eagle3/mtp
        autoregressive); required for any other name. engine: a `model` drafter's server, spec_versions.
    layers: draft layers; default (None) 5 for parallel drafters (the paper's offline drafters), 1 for
        the others. layer_cost: price of one draft layer relative to one target layer.
    markov_overhead: DSpark's Markov head, as a fraction of an AR step over the same requests
        (paper Fig. 4: +0.2–1.3 % per round); only charged for "dspark".
    curves: optional JSON curves file (`sim.curves.load_curves`); default: the built-in curves.
    cost: optional measured draft cost, replacing the layer-ratio pricing for any drafter kind: a CSV
        `tokens,seconds` (drafted positions in the step, R·γ → seconds of the whole draft pass), a CSV
        `requests,seconds` (requests drafting, R → seconds), or a fit file (`specbed cost fit` on
        `phase = draft` rows, priced at R·γ tokens over R requests). A `context_tokens` column (or a
        context-aware fit) adds the drafter's KV reads per context token held. See `sim.drafter`.
    intake_seconds: seconds per draft a drafting request verified since it last drafted: a draft pass after
        longer verify steps costs more (measured on specbed's CPU engine: the verify forward's size carries
        over into the next pass; `specbed engine profile` and `specbed fidelity` regress it). 0 (default):
        the draft pass does not depend on the previous step.
    intake_tokens: the mean such drafts per drafting request at which the draft cost (`cost`, or the layer
        pricing) was measured; a step is charged intake_seconds × (its drafts − that).
    padded_context_seconds: draft seconds per padded KV slot: (drafting requests) × the longest context
        among the running requests (prompt + generated). Specbed's engine drafts over every drafting row's
        context padded to the longest (`specbed engine profile --context 0` measures it, with draft
        seconds at no context); 0 (default) = the draft cost holds the context (or its kv column does).
    model: a `specsched.price.draft_shape` preset priced from its own shape (needs cost.model, validation.md).
    topk: children per expanded node of a draft TREE (`sim.tree`, docs/trees.md; SGLang's
        speculative_eagle_topk): 1 (default) = today's chain; > 1 drafts EAGLE-2/3 trees γ deep (γ = depth)
        and needs a tree policy ([policy] name fixed_tree or dspark_tree). tree_nodes: node cap per request
        (0 = every candidate: topk + (γ − 1)·topk²). rank_hit: the tree acceptance model's h (the chance the
        next-ranked child holds the target's token when the better ones missed it). tree_penalty: the tree
        kernel's extra attention seconds per KV token, × cost's KV-read seconds (0.12: vLLM#20401's table).
    """

    _section: ClassVar[str] = "drafter"
    name: str = "dspark"
    gamma: int = 7
    layers: int | None = None
    layer_cost: float = 1.0
    markov_overhead: float = 0.007
    curves: str | None = None
    cost: str | None = None
    kind: str | None = None
    intake_seconds: float = 0.0
    intake_tokens: float = 0.0
    padded_context_seconds: float = 0.0
    model: str | None = None
    engine: str = "vllm"
    topk: int = 1
    tree_nodes: int = 0
    rank_hit: float = 0.3
    tree_penalty: float = 0.12

    def __post_init__(self) -> None:
        s = self._section
        check_bounds(s, self)
        check_preset(s, self.model, self.engine)
        if not isinstance(self.name, str) or not self.name:
            raise _fail(s, "name", f"must be a drafter name; got {self.name!r}")
        if self.name not in DRAFTERS and self.curves is None:
            msg = f"{self.name!r} is not a built-in drafter ({', '.join(DRAFTERS)}): set drafter.curves to a "
            raise _fail(s, "name", msg + "curves file that names it (e.g. from `specbed curves from-vllm`)")
        if self.kind is not None:
            _check_choice(s, "kind", self.kind, DRAFTER_KINDS)
        elif self.name not in BUILTIN_KINDS:
            msg = f"is required for drafter {self.name!r}: one of {', '.join(DRAFTER_KINDS)}"
            raise _fail(s, "kind", msg)
        if self.cost is not None and (not isinstance(self.cost, str) or not self.cost):
            raise _fail(s, "cost", "must name a CSV (tokens,seconds or requests,seconds) or a fit .json")
        _check_range(s, "gamma", self.gamma, 0)
        _check_range(s, "layers", 1 if self.layers is None else self.layers, 1)
        _check_range(s, "layer_cost", self.layer_cost, 0)
        _check_range(s, "markov_overhead", self.markov_overhead, 0, 1)
        for key in ("intake_seconds", "intake_tokens", "padded_context_seconds"):
            _check_range(s, key, getattr(self, key), 0.0)
        check_not_empty(s, "curves", self.curves)
        _check_range(s, "topk", self.topk, 1)
        _check_range(s, "tree_nodes", self.tree_nodes, 0)
        _check_range(s, "rank_hit", self.rank_hit, 0.0, 1.0)
        _check_range(s, "tree_penalty", self.tree_penalty, 0.0)
        if self.topk > 1 and (self.effective_gamma < 1 or self.model is not None):
            raise _fail(s, "topk", "> 1 (a draft tree) needs a drafter with gamma ≥ 1 and no drafter.model")

    @property
    def effective_gamma(self) -> int:
        """γ the server drafts with: 0 for "none"."""
        return 0 if self.name == "none" else self.gamma

    @property
    def effective_kind(self) -> str:
        """How the draft pass is priced: `kind`, else the built-in name's kind."""
        return self.kind if self.kind is not None else BUILTIN_KINDS[self.name]

    @property
    def effective_layers(self) -> int:
        if self.layers is not None:
            return self.layers
        return 5 if self.effective_kind == "parallel" else 1


@dataclass(frozen=True)
class ServerConfig(CostKeys):
    """The serving fleet and its scheduler limits (the keys that price a step are the `[cost]` section's,
    `sim.deploy.keys.CostKeys`, whose values live here in code).

    replicas: copies behind the router. tp: GPUs per replica (for throughput per GPU, a fit file's
        tensor-parallel degree, a deployment's tensor parallelism); None = the built-in table's own GPU
        count (1 for a CSV or fit file).
    router: "round_robin", "least_outstanding" (fewest queued + running; ties to the lowest index),
        "random" (uniform, from the run's "router" stream) or "session" (a hash of the session: the user
        in closed loop, the trace's session column, else the request id); see `sim.routing`.
    max_num_seqs: running requests per replica. max_num_batched_tokens: per-step token budget shared by
        verify tokens (first) and prefill chunks. kv_tokens: KV cache capacity per replica, in tokens
        (None: 2,000,000 for a table, sized as vLLM sizes it for a deployment).
    """

    _section: ClassVar[str] = "server"
    replicas: int = 1
    tp: int | None = None
    router: str = "least_outstanding"
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    kv_tokens: int | None = None  # None: 2,000,000, or sized as vLLM does (sim.deploy.keys)

    def __post_init__(self) -> None:
        s = self._section
        check_bounds(s, self, names={f: f"cost.{k}" for f, k in COST_NAME.items()})
        self._check_cost()
        _check_range(s, "replicas", self.replicas, 1)
        if self.tp is not None:
            _check_range(s, "tp", self.tp, 1)
        _check_choice(s, "router", self.router, ROUTERS)
        _check_range(s, "max_num_seqs", self.max_num_seqs, 1)
        _check_range(s, "max_num_batched_tokens", self.max_num_batched_tokens, 1)
        if self.max_num_batched_tokens < self.max_num_seqs:
            msg = f"must be ≥ server.max_num_seqs ({self.max_num_seqs}) so every running request can verify"
            raise _fail(s, "max_num_batched_tokens", msg + " its anchor token")


@dataclass(frozen=True)
class MetricsConfig:
    """What is measured (see `sim.metrics` for every aggregate).

    warmup / drain: fractions of the requests that define the steady-state window [t0, t1]: t0 = when
        ⌈warmup·N⌉ requests have completed, t1 = the arrival of request ⌈(1 − drain)·N⌉ in arrival order.
        Requests arriving inside the window are "measured"; throughput is tokens emitted inside it.
    slo_ttft_s / slo_tpot_s: a request meets its SLO when TTFT ≤ slo_ttft_s and TPOT ≤ slo_tpot_s.
    series_bins: time-series resolution (bins over simulated time; memory is bounded by it).
    """

    _section: ClassVar[str] = "metrics"
    warmup: float = 0.1
    drain: float = 0.1
    slo_ttft_s: float = 2.0
    slo_tpot_s: float = 0.05
    series_bins: int = 512

    def __post_init__(self) -> None:
        s = self._section
        check_bounds(s, self)
        _check_range(s, "warmup", self.warmup, 0, 1, hi_open=True)
        _check_range(s, "drain", self.drain, 0, 1, hi_open=True)
        if self.warmup + self.drain >= 1:
            raise _fail(s, "drain", f"warmup + drain must be < 1; got {self.warmup} + {self.drain}")
        _check_range(s, "slo_ttft_s", self.slo_ttft_s, 0, lo_open=True)
        _check_range(s, "slo_tpot_s", self.slo_tpot_s, 0, lo_open=True)
        _check_range(s, "series_bins", self.series_bins, 8, 1_000_000)


@dataclass(frozen=True)
class SimConfig:
    """One simulator run. Build it with `sim.config_io.load_config` (TOML + overrides) or directly."""

    seed: int = 0
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    drafter: DrafterConfig = field(default_factory=DrafterConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    acceptance: AcceptanceConfig = field(default_factory=AcceptanceConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)

    #: section name -> dataclass type (TOML tables)
    SECTIONS: ClassVar[tuple[str, ...]] = ("workload", "drafter", "policy", "server", "acceptance", "metrics")

    def __post_init__(self) -> None:
        _check_range("", "seed", self.seed, 0)
        check_bounds("", self), check_bounds("acceptance", self.acceptance)  # the others check their own
        if self.drafter.gamma > self.server.max_num_batched_tokens:
            raise _fail("drafter", "gamma", "must be ≤ server.max_num_batched_tokens")
        if self.policy.k is not None and 0 < self.drafter.effective_gamma < self.policy.k:  # never clamped
            raise _fail("policy", "k", f"must be ≤ drafter.gamma ({self.drafter.effective_gamma})")
        if self.drafter.topk > 1:
            check_tree_policy(self.policy)
