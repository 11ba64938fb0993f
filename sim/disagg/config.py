"""The configuration of a fleet: `[[pool]]` tables — one `both` pool (colocated), or a prefill pool, a
decode pool and the KV hand-off between them.

Role: frozen, validated dataclasses for the `[[pool]]` tables and the `[handoff]` table, and `load_pools`
(TOML + `--set` overrides → the SimConfig of a one-pool fleet, or a `DisaggConfig`). Every other section
of the file (`[workload]`, `[drafter]`, `[policy]`, `[acceptance]`, `[metrics]`, `seed`) means what it
means for a colocated run (`sim.config`); `[server]` gives the defaults each pool starts from. A config
without `[[pool]]` tables is an ordinary colocated config; one with a single `role = "both"` pool runs
exactly as that config with the pool's keys in `[server]` (`specbed run` takes both).

    [handoff]
    link = "ib-400g"            # specsched.comm.LINKS, or bandwidth + latency below
    layerwise = true            # each layer's KV leaves as soon as that layer is prefilled
    draft_kv = "transfer"       # or "rebuild": the decode side re-prefills the drafter over the prompt
    model = "deepseek-v3"       # the KV layout (kv bytes per token) and the drafter's share of it

    [[pool]]
    role = "prefill"            # one "prefill" and one "decode" pool (or one "both" pool alone)
    replicas = 4
    cost = "..."                # any cost.table; default [server]'s
    prefix_hit = 0.563          # stated share of every prompt served from a prefix cache (0 = none)

    [[pool]]
    role = "decode"
    replicas = 1
    ep_gpus = 144               # optional: one DP-attention + EP group (specsched.price.ep) per replica
    attention_ranks = 144

`--set pool.decode.replicas=2` and `--set handoff.link=roce-400g` override them.

May import: the standard library, `sim.config`, `sim.config_io`, `sim.bounds`, `specsched` (comm,
hardware, ep_decode, errors, inputs).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from sim.bounds import check_bounds, check_choice, check_range, fail
from sim.config import ROUTERS, SimConfig
from sim.config_io import _toml_value, coerce, config_to_toml, load_config, parse_override
from specsched.comm import LINKS
from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.price import GPUS, MODELS
from specsched.price.ep import ep_models

#: the slowest hand-off link taken (bytes/s): 1 MB/s, a thousandth of 1 GbE; anything slower is a unit slip
MIN_LINK_BYTES_PER_S = 1e6
ROLES = ("prefill", "decode")  # the two pools of a disaggregated fleet
BOTH = "both"  # the one pool of a colocated fleet: prefills and decodes its own requests
DRAFT_KV = ("transfer", "rebuild")
BUDGETS = ("group", "rank")
CACHE_ROUTING = ("affinity", "least_outstanding")


@dataclass(frozen=True)
class HandoffConfig:
    """How a request's KV moves from its prefill replica to its decode replica (`specsched.comm.KVHandoff`).

    link: a preset of `specsched.comm.LINKS`; bandwidth (bytes/s) / latency (s): override the preset's.
    layerwise: send each layer's KV as it is computed (only what the prefill does not cover is exposed).
    draft_kv: "transfer" (the prefill side also prefills the drafter and sends its KV: more bytes, a
        dearer prefill) or "rebuild" (the decode side prefills the drafter over the prompt itself).
    model: catalogue model (`specsched.price.roofline.MODELS`) giving the KV bytes per token.
    kv_bytes_per_token: overrides the model's. streams: parallel transfers per request (the prefill's TP
        ranks, one NIC each).
    contention: each prefill replica's link carries one transfer at a time, first come first served
        (false: every transfer has the link to itself).
    """

    _section: ClassVar[str] = "handoff"
    link: str = "ib-400g"
    bandwidth: float | None = None
    latency: float | None = None
    layerwise: bool = True
    draft_kv: str = "transfer"
    model: str = "deepseek-v3"
    kv_bytes_per_token: float | None = None
    streams: int = 1
    contention: bool = True

    def __post_init__(self) -> None:
        s = self._section
        check_bounds(s, self)
        check_choice(s, "link", self.link, tuple(LINKS))
        check_choice(s, "draft_kv", self.draft_kv, DRAFT_KV)
        check_choice(s, "model", self.model, tuple(MODELS))
        if self.bandwidth is not None:
            check_range(s, "bandwidth", self.bandwidth, MIN_LINK_BYTES_PER_S)  # below: a typo, not a link
        if self.latency is not None:
            check_range(s, "latency", self.latency, 0)
        if self.kv_bytes_per_token is not None:
            check_range(s, "kv_bytes_per_token", self.kv_bytes_per_token, 0, lo_open=True)
        check_range(s, "streams", self.streams, 1)

    @property
    def kv_bytes(self) -> float:
        return float(self.kv_bytes_per_token or MODELS[self.model].kv_bytes_per_token)


@dataclass(frozen=True)
class PoolConfig:
    """One pool: `replicas` engines of one role. Unset (None) keys take `[server]`'s value.

    role: "prefill" (prefills only; each request leaves after its first token), "decode" (receives the
        KV and decodes with speculation), or "both" (the one pool of a colocated fleet: runs as [server]).
    replicas: engines (or EP groups) in the pool.
    cost: the pool's cost table, as cost.table. tp: GPUs per replica, as server.tp.
    max_num_seqs: running requests per replica, as in `[server]`. max_num_batched_tokens: per-step token
        budget, as in `[server]`. kv_tokens: KV capacity per replica, as in `[server]` — a replica being
        the whole group for a decode EP group with budget "group", one attention rank for a prefill EP
        group or budget "rank". router: as server.router.
    prefix_hit: the share of each prompt's tokens a prefix cache serves, not recomputed (prefill pool
        only; stated: see docs/disaggregation.md, "Prefix caching").
    prefix_cache: simulate a prefix cache per prefill replica (`sim.prefix_cache`, vLLM v1's automatic
        prefix caching; `sim.disagg.prefix`) instead of a stated `prefix_hit`, over a stated shared-prefix
        model: prefix_groups groups of requests, each prompt's first prefix_share of tokens its group's.
    prefix_groups: shared-prefix groups (requests drawn uniformly among them).
    prefix_share: the share of each prompt that is its group's shared prefix, in [0, 1].
    cache_routing: "affinity" — a request goes to the prefill replica whose cache holds its longest
        leading run of blocks (ties: fewest outstanding); "least_outstanding" — blind to the caches.
    draft_prefix_cached: the drafter's KV of a cached prefix is cached alongside the target's (true);
        false — only the target's is, so the prefill pool recomputes the drafter over the cached prefix
        (the "hits drop with a drafter on" engines, vLLM #54360), priced as its share of target tokens.
    ep_gpus: price each replica as one DP-attention + EP group of this many GPUs (`specsched.price.ep`)
        instead of `cost`; a prefill pool's per attention rank (a request prefills on one DP rank) at the
        workload's mean prompt and its prefix hits, with the NVLink-forwarding all-to-all.
    attention_ranks: the group's data-parallel attention ranks (dividing ep_gpus).
    ep_model: the group's model (one with attention facts: `specsched.price.ep.ep_models`).
    ep_gpu: the group's GPU (`specsched.price.roofline.GPUS`). ep_inter: its network link, ep_intra: its
        in-node link (`specsched.comm.LINKS`).
    micro_batches: 1, or 2 for two-micro-batch overlap of communication with compute.
    expert_imbalance: the busiest GPU's routed tokens over the mean (≥ 1, stated).
    attention_imbalance: the slowest rank's attention work over the mean (≥ 1, stated).
    redundant_experts: extra expert copies spread over the group (DeepSeek: 32).
    budget: "group" — the policy plans verify lengths over the whole group's batch (one budget, as
        DeepSeek's production scheduler); "rank" — each attention rank plans its own
        (`attention_ranks` replicas of one rank each, not in lockstep).
    context_tokens: every decoding request's KV context for the EP group's pricing (tokens).
    query_tokens: the verify tokens per request (1 + ℓ) at which the group's KV reads are priced (its
        attention FLOPs follow the tokens; `specsched.price.ep.group_table`).
    """

    _section: ClassVar[str] = "pool"
    role: str = "decode"
    replicas: int = 1
    cost: str | None = None
    tp: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_tokens: int | None = None
    router: str | None = None
    prefix_hit: float = 0.0
    prefix_cache: bool = False
    prefix_groups: int = 1
    prefix_share: float = 0.0
    cache_routing: str = "affinity"
    draft_prefix_cached: bool = True
    ep_gpus: int | None = None
    attention_ranks: int | None = None
    ep_model: str = "deepseek-v3"
    ep_gpu: str = "h800"
    ep_inter: str = "ib-400g"
    ep_intra: str = "nvlink-h800"
    micro_batches: int = 2
    expert_imbalance: float = 1.0
    attention_imbalance: float = 1.0
    redundant_experts: int = 0
    budget: str = "group"
    context_tokens: float = 4096.0
    query_tokens: float = 2.0

    def __post_init__(self) -> None:
        s = f"pool.{self.role}" if self.role in (*ROLES, BOTH) else "pool"
        check_bounds(s, self)
        check_choice("pool", "role", self.role, (*ROLES, BOTH))
        if not isinstance(self.replicas, int) or isinstance(self.replicas, bool):  # 2.0 is not a count
            raise InputError(f"must be a whole number (an int); got {self.replicas!r}", field=f"{s}.replicas")
        check_range(s, "replicas", self.replicas, 1)
        for key in ("tp", "max_num_seqs", "max_num_batched_tokens", "kv_tokens"):
            if getattr(self, key) is not None:
                check_range(s, key, getattr(self, key), 1)
        if self.router is not None:
            check_choice(s, "router", self.router, ROUTERS)
        if self.cost is not None and not self.cost.strip():
            raise fail(s, "cost", "is empty: name a cost table, or leave it out for [server]'s")
        check_range(s, "prefix_hit", self.prefix_hit, 0, 1, hi_open=True)
        if self.role == "decode" and self.prefix_hit:
            raise fail(s, "prefix_hit", "applies to the prefill pool (the decode pool receives whole KV)")
        check_range(s, "prefix_groups", self.prefix_groups, 1)
        check_range(s, "prefix_share", self.prefix_share, 0, 1)
        check_choice(s, "cache_routing", self.cache_routing, CACHE_ROUTING)
        if self.prefix_cache and self.role == "decode":
            raise fail(s, "prefix_cache", "applies to the prefill pool (the decode pool receives whole KV)")
        if self.prefix_cache and self.prefix_hit:
            raise fail(s, "prefix_hit", "a simulated prefix_cache replaces the stated prefix_hit: set one")
        if self.role == BOTH:
            for key in ("prefix_hit", "prefix_cache", "ep_gpus"):
                if getattr(self, key):
                    raise fail(s, key, "applies to a prefill or decode pool (a 'both' pool runs as [server])")
        self._check_ep(s)

    def _check_ep(self, s: str) -> None:
        if (self.ep_gpus is None) != (self.attention_ranks is None):
            raise fail(s, "attention_ranks", "ep_gpus and attention_ranks go together")
        check_choice(s, "budget", self.budget, BUDGETS)
        if self.ep_gpus is None:
            if self.budget == "rank":
                raise fail(s, "budget", "'rank' needs an EP group (ep_gpus, attention_ranks)")
            return
        if self.role == "prefill" and self.budget == "rank":
            raise fail(s, "budget", "a prefill pool has no verify budget: leave budget = 'group'")
        check_range(s, "ep_gpus", self.ep_gpus, 1)
        check_range(s, "attention_ranks", self.attention_ranks, 1)
        if self.ep_gpus % self.attention_ranks:
            raise fail(s, "attention_ranks", f"must divide ep_gpus ({self.ep_gpus})")
        check_choice(s, "ep_model", self.ep_model, ep_models())  # the models with attention facts
        self._check_experts(s)
        check_choice(s, "ep_gpu", self.ep_gpu, tuple(GPUS))
        check_choice(s, "ep_inter", self.ep_inter, tuple(LINKS))
        check_choice(s, "ep_intra", self.ep_intra, tuple(LINKS))
        check_choice(s, "micro_batches", self.micro_batches, (1, 2))
        check_range(s, "expert_imbalance", self.expert_imbalance, 1)
        check_range(s, "attention_imbalance", self.attention_imbalance, 1)
        check_range(s, "redundant_experts", self.redundant_experts, 0)
        check_range(s, "context_tokens", self.context_tokens, 0)
        check_range(s, "query_tokens", self.query_tokens, 1)

    def _check_experts(self, s: str) -> None:
        """An EP group spreads its model's routed experts (and the redundant copies) evenly over its GPUs,
        as SGLang's expert placement does: a dense model, or a group size that does not divide them,
        cannot be deployed."""
        model = MODELS[self.ep_model]
        if not model.experts:
            raise fail(s, "ep_model", f"{self.ep_model} is dense: an EP group needs a MoE model")
        physical = model.experts + self.redundant_experts
        if physical % self.ep_gpus:
            what = f"{model.experts} experts + {self.redundant_experts} redundant copies"
            raise fail(s, "ep_gpus", f"{self.ep_gpus} GPUs do not divide {self.ep_model}'s {what}: each GPU "
                       "hosts the same number of experts")  # fmt: skip

    @property
    def gpus(self) -> int:
        """GPUs in one replica."""
        return self.ep_gpus if self.ep_gpus is not None else (self.tp or 1)


@dataclass(frozen=True)
class DisaggConfig:
    """A disaggregated run: the colocated sections (`base`), the two pools and the hand-off."""

    base: SimConfig
    prefill: PoolConfig
    decode: PoolConfig
    handoff: HandoffConfig = dataclasses.field(default_factory=HandoffConfig)

    def __post_init__(self) -> None:
        if self.prefill.role != "prefill" or self.decode.role != "decode":
            raise InputError(
                "needs one pool with role 'prefill' and one with role 'decode'", field="pool.role"
            )

    def pool_config(self, pool: PoolConfig) -> SimConfig:
        """The SimConfig one pool's replicas run as ([server] with the pool's keys)."""
        return pool_config(self.base, pool)


def pool_config(base: SimConfig, pool: PoolConfig) -> SimConfig:
    """The SimConfig `pool`'s replicas run as: `base` with the pool's keys in its [server]."""
    keys = ("cost", "tp", "max_num_seqs", "max_num_batched_tokens", "kv_tokens", "router")
    server = {k: getattr(pool, k) for k in keys if getattr(pool, k) is not None}
    server["replicas"] = pool.replicas
    if pool.ep_gpus is not None:
        per_rank = pool.budget == "rank" or pool.role == "prefill"
        server["tp"] = pool.ep_gpus // pool.attention_ranks if per_rank else pool.ep_gpus
    try:
        srv = dataclasses.replace(base.server, **server)
        return dataclasses.replace(base, server=srv)
    except InputError as err:  # a [server] check failing on the pool's values names the pool's key
        name = (err.field or "").removeprefix("server.")
        where = f"pool.{pool.role}.{name}"
        raise InputError(f"{err.message} (the {pool.role} pool's)", field=where) from None


def _hints(cls: type) -> dict[str, object]:
    return {f.name: typing.get_type_hints(cls)[f.name] for f in dataclasses.fields(cls)}


def _make(cls: type, section: str, values: dict, texts: set[str], fname: str | None):
    """cls(**values) with each value coerced to its annotation (`texts`: keys given as --set text)."""
    hints = _hints(cls)
    kwargs = {}
    for key, value in values.items():
        where = None if key in texts else fname
        if key not in hints:
            known = ", ".join(hints)
            raise InputError(f"unknown key (known: {known})", file=where, field=f"{section}.{key}")
        try:
            kwargs[key] = coerce(f"{section}.{key}", value, hints[key], from_text=key in texts)
        except ValueError as err:
            raise InputError(str(err), file=where, field=f"{section}.{key}") from None
    try:
        return cls(**kwargs)
    except InputError as err:
        key = (err.field or "").rpartition(".")[2]
        raise InputError(err.message, file=None if key in texts else fname, field=err.field) from None


def load_pools(path: str | Path, overrides: typing.Iterable[str] = ()) -> SimConfig | DisaggConfig:
    """The fleet in TOML file `path` (`[[pool]]` tables), with `--set` overrides (`pool.<role>.key=v`,
    `handoff.key=v`, and any colocated key): one `both` pool → the SimConfig it runs as (a fleet of one
    colocated pool is an ordinary `specbed run`); one prefill and one decode pool → a DisaggConfig.
    InputError naming the file and key when it is wrong."""
    overrides = list(overrides)
    fname = str(path)
    base = load_config(path, overrides, skip=("pool", "handoff"))
    by_role, handoff = _tables(path, fname)
    texts: dict[str, set[str]] = {"handoff": set(), **{role: set() for role in by_role}}
    for item in overrides:
        section, key, text = parse_override(item)
        top, _, role = section.partition(".")
        if top == "handoff" and not role:
            handoff[key] = text
            texts["handoff"].add(key)
        elif top == "pool":
            if role not in by_role:
                raise InputError(f"no pool with role {role!r} (in --set)", field=f"{section}.{key}")
            by_role[role][key] = text
            texts[role].add(key)
    if BOTH in by_role:
        if len(by_role) > 1 or handoff:
            raise InputError("a 'both' pool is the whole fleet: no other pool and no [handoff]", file=fname,
                             field="pool.role")  # fmt: skip
        return pool_config(base, _make(PoolConfig, "pool.both", by_role[BOTH], texts[BOTH], fname))
    missing = [r for r in ROLES if r not in by_role]
    if missing:
        raise InputError(f"no [[pool]] with role {missing[0]!r}: a disaggregated config needs one "
                         "prefill and one decode pool", file=fname, field="pool.role")  # fmt: skip
    made = {r: _make(PoolConfig, f"pool.{r}", by_role[r], texts[r], fname) for r in ROLES}
    ho = _make(HandoffConfig, "handoff", handoff, texts["handoff"], fname)
    return DisaggConfig(base, made["prefill"], made["decode"], ho)


def _tables(path: str | Path, fname: str) -> tuple[dict[str, dict], dict]:
    """The file's `[[pool]]` tables by role and its `[handoff]` table (copies)."""
    text = inputs.read_text(path, what="config", limit=inputs.LIMITS["config"])
    data = inputs.parse_toml(text, fname)
    pools = data.get("pool", [])
    if not isinstance(pools, list) or not all(isinstance(p, dict) for p in pools):
        raise InputError("must be an array of tables [[pool]]", file=fname, field="pool")
    handoff = data.get("handoff", {})
    if not isinstance(handoff, dict):
        raise InputError("must be a table [handoff]", file=fname, field="handoff")
    by_role: dict[str, dict] = {}
    for p in pools:
        if "role" not in p:  # a pool without its role would silently be a decode pool
            raise InputError('missing: each [[pool]] names its role ("prefill", "decode" or "both")',
                             file=fname, field="pool.role")  # fmt: skip
        role = str(p["role"])
        if role in by_role:
            raise InputError(f"two pools with role {role!r}: one prefill and one decode pool", file=fname,
                             field="pool.role")  # fmt: skip
        by_role[role] = dict(p)
    return by_role, dict(handoff)


def load_disagg(path: str | Path, overrides: typing.Iterable[str] = ()) -> DisaggConfig:
    """`load_pools` for a file that must hold a prefill and a decode pool."""
    cfg = load_pools(path, overrides)
    if not isinstance(cfg, DisaggConfig):
        raise InputError("needs one prefill and one decode pool (a 'both' pool runs with `specbed run`)",
                         file=str(path), field="pool.role")  # fmt: skip
    return cfg


def fleet_to_toml(cfg: DisaggConfig) -> str:
    """TOML text that `load_pools` reads back to an equal DisaggConfig (None values left out)."""
    pools = [dataclasses.asdict(cfg.prefill), dataclasses.asdict(cfg.decode)]
    tables = fleet_tables(dataclasses.asdict(cfg.handoff), pools)
    return "\n".join([config_to_toml(cfg.base).rstrip("\n"), *tables]) + "\n"


def fleet_tables(handoff: dict, pools: list[dict], changed_only: bool = False) -> list[str]:
    """TOML lines of a fleet's `[handoff]` and `[[pool]]` tables (values by key; None left out; with
    `changed_only` also the defaults, but a pool's role)."""
    lines = ["", "[handoff]"]
    dflt = dataclasses.asdict(HandoffConfig())
    lines += [f"{k} = {_toml_value(v)}" for k, v in handoff.items()
              if v is not None and not (changed_only and v == dflt[k])]  # fmt: skip
    for pool in pools:
        dflt = dataclasses.asdict(PoolConfig(role=pool["role"]))
        lines += ["", "[[pool]]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in pool.items()
                  if v is not None and not (changed_only and v == dflt[k] and k != "role")]  # fmt: skip
    return lines


def is_disaggregated(path: str | Path) -> bool:
    """True when the TOML file at `path` has `[[pool]]` tables (read errors: False, the loader reports)."""
    try:
        text = inputs.read_text(path, what="config", limit=inputs.LIMITS["config"])
        return "pool" in inputs.parse_toml(text, str(path))
    except InputError:
        return False
