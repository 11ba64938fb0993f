"""One way to price a config's deployment: `deployment(cfg)` and `deployment_cost(cfg)`.

Role: the one function every tool prices a config with — `specbed run`, `sweep`, `search` (its screen and
its runs), `validate` and `plan --draft-schedule` — so a deployment named the same way costs the same
everywhere. A config's `[cost]` section names either

- a table: a built-in name, a `tokens,seconds` CSV or a fit file (`cost.cost`), read with its mode, layers,
  CUDA-graph sizes and replica shape (tp, ep: fit files only); or
- a deployment: a catalogue `model` on a `gpu` (`specsched.price.vllm`): the catalogue step with the GPU's
  shipped (calibrated) knobs, KV sized as vLLM sizes it, tp set on the config.

(The keys still live on `ServerConfig`; `sim.deploy.keys` reads `[cost]` and the old `[server]` spelling.)

May import: numpy, the standard library, `specsched`, `sim.config`, `sim.deploy.keys`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import specsched
from sim.config import ServerConfig, SimConfig
from sim.deploy.keys import check_room
from specsched.io.errors import InputError
from specsched.price.knobs import shipped_knobs
from specsched.price.vllm import VllmSpec, cost_table


@dataclass(frozen=True)
class Priced:
    """A config's deployment, priced: `config` with what pricing resolves (a vLLM deployment's KV
    capacity and tp), the `cost` table steps are timed with, the `policy_cost` the policy plans with (None:
    `cost`) and `tp`, GPUs per replica."""

    config: SimConfig
    cost: specsched.CostTable
    policy_cost: specsched.CostTable | None
    tp: int


def deployment(cfg: SimConfig) -> Priced:
    """`cfg`'s deployment priced (module docstring); InputError naming the key when an input is bad."""
    if cfg.server.model is not None:  # a deployment from vLLM's knobs: catalogue cost, vLLM's KV sizing
        cfg, cost = server_deployment(cfg)
    else:
        cost = load_table(cfg, cfg.server.cost, "cost.table")
    policy_cost = None
    if cfg.server.policy_cost is not None:
        policy_cost = load_table(cfg, cfg.server.policy_cost, "cost.policy_table")
    if cfg.server.tp is not None:
        tp = cfg.server.tp
    elif cfg.server.cost in specsched.BUILTIN_COSTS:
        tp = specsched.builtin_gpus_per_replica(cfg.server.cost)
    else:
        tp = 1
    return Priced(cfg, cost, policy_cost, tp)


def deployment_cost(cfg: SimConfig) -> specsched.CostTable:
    """The table `cfg`'s steps are timed with (`deployment(cfg).cost`)."""
    return deployment(cfg).cost


def server_deployment(cfg: SimConfig) -> tuple[SimConfig, specsched.CostTable]:
    """(cfg with KV sized and tp set, the catalogue step cost) for a config with a `model`: the knobs are
    the GPU's shipped ones (`shipped_knobs`); `kv_tokens`, when set, overrides vLLM's sizing."""
    spec = config_spec(cfg.server)
    kv = spec.kv_capacity()
    where = f"{spec.model} on {spec.tp}× {spec.gpu} at gpu_memory_utilization {spec.gpu_memory_utilization}"
    check_room(kv, spec.max_model_len, sized=spec.kv_tokens is None, where=where)  # as vLLM at start-up
    new = replace(cfg, server=replace(cfg.server, kv_tokens=kv, tp=spec.tp))
    return new, cost_table(spec, shipped_knobs(spec.gpu))


def config_spec(srv: ServerConfig) -> VllmSpec:
    """The `VllmSpec` of a server with `model` set (no `gpu`: an H100)."""
    return VllmSpec(
        model=srv.model,
        gpu=srv.gpu or "h100",
        precision=srv.precision,
        tp=srv.tp or 1,
        dp=srv.replicas,
        gpu_memory_utilization=srv.gpu_memory_utilization,
        max_model_len=srv.max_model_len,
        max_num_seqs=srv.max_num_seqs,
        max_num_batched_tokens=srv.max_num_batched_tokens,
        cpu_offload_gb=srv.cpu_offload_gb,
        prefix_caching=srv.prefix_caching,
        async_scheduling=srv.async_scheduling,
        kv_tokens=srv.kv_tokens,
        kv_cache_dtype=srv.kv_cache_dtype,
    )


def as_input_error(err: ValueError, fieldname: str) -> InputError:
    """`err` as a one-line InputError naming `fieldname` (an InputError passes through)."""
    if isinstance(err, InputError):
        return err
    return InputError(" ".join(str(err).split()), field=fieldname)


def load_table(cfg: SimConfig, source: str, fieldname: str) -> specsched.CostTable:
    """A cost table named by `source` (built-in name, CSV or fit file) with cfg.server's mode, layers and
    replica shape (tp, ep: fit files only)."""
    try:
        cost = specsched.load_cost(source, mode=cfg.server.cost_mode, tp=cfg.server.tp, ep=cfg.server.ep)
        cost = _with_graphs(cfg, source, cost)
    except InputError as err:  # load_cost names cost.table; the table may be cost.policy_table's
        field = fieldname if err.field in (None, "cost.table") else err.field
        raise InputError(err.message, file=err.file, line=err.line, field=field) from None
    except ValueError as err:
        raise as_input_error(err, fieldname) from None
    if cfg.server.layers is not None:
        cost = specsched.CostTable.from_points(
            cost.tokens,
            cost.seconds,
            mode=cost.mode,
            layers=cfg.server.layers,
            name=cost.name,
            request_seconds=cost.request_seconds,
            kv_token_seconds=cost.kv_token_seconds,
            attn_pair_seconds=cost.attn_pair_seconds,
        )
    elif (
        source not in specsched.BUILTIN_COSTS
        and not source.lower().endswith(".json")
        and cfg.drafter.effective_gamma > 0
        and cfg.drafter.cost is None
    ):
        raise InputError(
            "is required with a CSV cost table to price the draft layers "
            "(the number of target layers the table's latency covers)",
            field="cost.layers",
        )
    return cost


def _with_graphs(cfg: SimConfig, source: str, cost: specsched.CostTable) -> specsched.CostTable:
    """`cost` re-padded to the config's CUDA-graph capture sizes, when the config sets them."""
    srv = cfg.server
    if srv.max_cudagraph_capture_size is None and srv.cudagraph_capture_sizes is None:
        return cost
    builtin = source in specsched.BUILTIN_COSTS
    own = specsched.builtin_graphs(source) if builtin else None
    eager = srv.eager_factor or (own[1] if own else specsched.graphs.EAGER_FACTOR)
    growth = own[2] if own and not srv.eager_factor else 0.0  # the built-in's growth goes with its factor
    base = specsched.builtin_cost(source, graphs=False) if builtin else cost
    return specsched.with_cudagraphs(
        base,
        srv.cudagraph_capture_sizes,
        max_capture_size=srv.max_cudagraph_capture_size,
        eager_factor=eager,
        eager_growth=growth,
        name=cost.name,
    )
