"""`simulate(config) -> SimResult`: one simulator run, numpy in and out, no I/O besides reading inputs.

Role: resolve a `SimConfig` into its parts (cost table, trace, curves, acceptance model, policy,
workload), check them all before anything runs, wire the simpy model (`sim.server`) and collect results
(`sim.metrics`).

Random streams: `sim.streams.stream_rngs(config.seed)`, one Generator per name in `sim.streams.STREAMS`
(fixed order; a new stream is appended, never inserted, so existing ones keep their draws):
arrivals, lengths, domains, think (closed-loop think times), latent (per-request difficulty),
acceptance (true per-step probabilities), confidence (estimate noise), model (held-out samples the
acceptance model fits σ_η and STS on), verify (accept/reject uniforms; split from "acceptance" so that a
run of K pure-decode steps decided at once draws exactly what K single steps would), router (the
"random" router's draws). Replica i draws its
truth, estimate and verify noise from the i-th child of those three streams (`sim.server.Replica`), so
replicas never share a stream. Changing the policy therefore leaves the traffic and every request's latent
difficulty unchanged.

May import: numpy, simpy, the standard library, specsched, traces, and the other sim modules.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import specsched
from sim.acceptance import AcceptanceModel
from sim.config import SimConfig
from sim.curves import DOMAINS, curve_matrix, load_curves
from sim.deploy.cost import as_input_error as _as_input_error
from sim.deploy.cost import deployment, load_table
from sim.deploy.draft import accuracy
from sim.drafter import load_draft_cost
from sim.empirical import EmpiricalModel
from sim.metrics import load_factor, request_table, summarize, time_series
from sim.prefix_cache import own_keys
from sim.recorder import Recorder
from sim.streams import stream_rngs
from sim.wiring import Prepared, run_pool
from sim.workload import build_workload
from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.planner import idle_drafting


@dataclass(frozen=True)
class SimResult:
    """What one run produced.

    summary: flat dict (see `sim.metrics`); requests: per-request columns (numpy arrays, request-id
    order); series: time series (numpy arrays, ≤ metrics.series_bins rows); confidence: the acceptance
    model's report (ECE/AUC per position, STS temperatures); config: the resolved config; timing: wall
    seconds of set-up, the event loop and the results (not part of the summary: it varies run to run).
    """

    config: SimConfig
    summary: dict
    requests: dict[str, np.ndarray]
    series: dict[str, np.ndarray]
    confidence: dict
    timing: dict


def _load_trace(cfg: SimConfig):
    """The trace `cfg.workload` replays or resamples (a `traces.RequestTable`), or None if it uses none."""
    wcfg = cfg.workload
    if not (wcfg.kind == "trace" or "trace" in (wcfg.input_dist, wcfg.output_dist)):
        return None
    import traces

    try:
        table = traces.load(wcfg.trace)
    except InputError as err:
        raise InputError(
            err.message,
            file=err.file,
            line=err.line,
            field="workload.trace" if err.field in (None, "trace") else err.field,
        ) from None
    except ValueError as err:
        raise _as_input_error(err, "workload.trace") from None
    if len(table) == 0:
        raise InputError("the trace has no requests", file=wcfg.trace, field="workload.trace")
    if wcfg.kind == "trace" and wcfg.num_requests > len(table):  # legal (the whole trace) but say so
        inputs.warn(
            f"asks {wcfg.num_requests} requests of a trace of {len(table)}: "
            f"replaying {len(table)}",
            file=wcfg.trace,
            field="workload.num_requests",
        )
    return table


def _load_curves(cfg: SimConfig):
    """The curves file of `cfg.drafter.curves` (None: the built-ins); errors name the key too."""
    if not cfg.drafter.curves:
        return None
    try:
        return load_curves(cfg.drafter.curves)
    except InputError as err:
        field = "drafter.curves" if err.field is None else f"drafter.curves {err.field}"
        raise InputError(err.message, file=err.file, line=err.line, field=field) from None


def check_inputs(cfg: SimConfig) -> None:
    """Read and check the files `cfg` names (cost tables, draft cost, curves, trace) without building
    anything big.

    Sweeps call it for every cell before their results folder is touched; InputError if one is bad.
    """
    load_table(cfg, cfg.server.cost, "cost.table")
    if cfg.drafter.model is not None:
        from sim.deploy.draft import check_drafter_model

        check_drafter_model(cfg)
    if cfg.server.policy_cost is not None:
        load_table(cfg, cfg.server.policy_cost, "cost.policy_table")
    if cfg.drafter.cost is not None and cfg.drafter.effective_gamma > 0:
        load_draft_cost(cfg.drafter.cost, tp=cfg.server.tp or 1)
    _load_curves(cfg)  # γ against the curves is checked per run: it depends on the workload's domains
    _load_trace(cfg)


def prepare(cfg: SimConfig) -> Prepared:
    """Read and check every input of `cfg` (cost table, trace, curves, policy, KV fit); InputError if bad."""
    rngs = stream_rngs(cfg.seed)
    priced = deployment(cfg)  # the one price of a config's deployment (sim.deploy.cost)
    cfg, cost, policy_cost, tp = priced.config, priced.cost, priced.policy_cost, priced.tp
    if cfg.drafter.model is not None and cfg.server.model is None:
        from sim.deploy.draft import check_drafter_model

        check_drafter_model(cfg)
    if cfg.drafter.cost is not None and cfg.drafter.effective_gamma > 0:
        load_draft_cost(cfg.drafter.cost, tp=cfg.server.tp or 1)  # bad input fails before any work
    try:
        policy = specsched.make_policy(cfg.policy.name, **cfg.policy.params())
    except ValueError as err:
        raise _as_input_error(err, "policy.name") from None
    curves = _load_curves(cfg)
    table = _load_trace(cfg)
    workload = build_workload(cfg.workload, rngs, table)
    # int64 throughout: the config's bounds (sim.bounds.UPPER_BOUNDS) keep this sum far from overflow
    need = (
        np.asarray(workload.input_tokens, dtype=np.int64)
        + np.asarray(workload.output_tokens, dtype=np.int64)
        + cfg.drafter.effective_gamma
    )
    worst = int(np.argmax(need))
    if need[worst] > cfg.server.kv_tokens:
        raise InputError(
            f"request {worst} needs {int(need[worst])} KV tokens (input + output + γ), more than the "
            f"{cfg.server.kv_tokens} a replica holds; raise server.kv_tokens or lower "
            "workload.max_input_tokens / workload.max_output_tokens",
            field="server.kv_tokens",
        )
    vllm = cfg.server.model is not None
    keys = _trace_keys(cfg, table, workload) if vllm and cfg.server.prefix_caching else None
    if keys is None and vllm and cfg.server.prefix_caching:  # no shared prefix known: each its own blocks
        keys = own_keys(workload.input_tokens)
    return assemble(cfg, cost, tp * cfg.server.replicas, policy, workload, rngs, curves=curves,
                    policy_cost=policy_cost, block_keys=keys, prefix_caching=keys is not None,
                    async_scheduling=vllm and cfg.server.async_scheduling)  # fmt: skip


def assemble(
    cfg: SimConfig, cost, gpus: int, policy, workload, rngs: dict, *, curves=None, **serving
) -> Prepared:
    """The tail of every prepare (this one and a vLLM deployment's, `sim.deploy.prepare`), once the run is
    priced and its workload built: the acceptance model over the workload's domains and each request's
    latent difficulty. `serving`: `Prepared`'s other fields (policy_cost, the vLLM serving ones)."""
    # Only the workload's domains need a curve (a curves file may give a drafter any subset of them).
    present = tuple(DOMAINS[i] for i in np.unique(workload.domain)) or DOMAINS
    matrix = curve_matrix(curves, cfg.drafter.name, cfg.drafter.effective_gamma, present)
    model = _acceptance_model(cfg, curves, matrix, rngs["model"])
    latent = model.request_latent(len(workload), rngs["latent"], workload.domain)
    return Prepared(cfg, cost, gpus, policy, model, workload, latent, rngs, **serving)


def _trace_keys(cfg: SimConfig, table, workload) -> list | None:
    """Prefix-cache block keys of a trace replay (`sim.trace_prefix`; None: not a replay, or no keys)."""
    if cfg.workload.kind != "trace":
        return None
    from sim.trace_prefix import trace_block_keys

    return trace_block_keys(table, workload, cfg.workload.hash_block_tokens)


def _acceptance_model(cfg: SimConfig, curves, matrix: np.ndarray, rng: np.random.Generator):
    """The acceptance model of `cfg.acceptance.model`: parametric over the curves, or the engine's own
    request-steps (the curves file's samples for the drafter; InputError if it has none)."""
    if cfg.acceptance.model == "parametric" or cfg.drafter.effective_gamma == 0:
        return AcceptanceModel(matrix, cfg.acceptance, rng)
    samples = curves.samples_for(cfg.drafter.name) if curves is not None else None
    if samples is None:
        what = (
            "has no samples of"
            if cfg.drafter.curves
            else "is not set: it must name a curves file with samples of"
        )
        raise InputError(
            f'acceptance.model "empirical" resamples measured engine steps, but drafter.curves {what} '
            f"drafter {cfg.drafter.name!r} (write one with `specbed engine curves`)",
            file=cfg.drafter.curves,
            field="acceptance.model",
        )
    return EmpiricalModel(matrix, samples, in_order=cfg.acceptance.groups == "in_order")


def simulate(
    config: SimConfig,
    *,
    progress: bool | Callable[[int, float], None] = False,
    observer: Callable[..., None] | None = None,
) -> SimResult:
    """Run the simulator on `config` and return its results (no files written).

    progress: True prints progress with an ETA to stderr every ~2 s of wall time; a callable gets
    (completed requests, simulated seconds) every 1024 engine steps.
    observer: called at the end of every engine step (`Deployment.observer`), e.g. the timeline.
    """
    t_start = time.perf_counter()
    prep = prepare(config)
    t_loop = time.perf_counter()
    rec = run_pool(prep, progress=progress, observer=observer)
    return results(prep, rec, t_start, t_loop)


def run_load(prep: Prepared, summary: dict) -> dict:
    """`sim.metrics.load_factor` of a finished run (τ, verify tokens and hit rate from its summary)."""
    tau = summary.get("tau_mean", math.nan)
    verify = summary.get("mean_verify_tokens_per_request_step", math.nan)
    srv = prep.config.server
    return load_factor(
        prep.cost,
        prep.workload,
        max_num_seqs=srv.max_num_seqs,
        kv_tokens=srv.kv_tokens,
        replicas=srv.replicas,
        hit_rate=summary.get("prefix_cache_hit_rate", 0.0),
        tau=tau if math.isfinite(tau) else 1.0,
        verify=verify if math.isfinite(verify) else 1.0,
    )


def results(prep: Prepared, rec: Recorder, t_start: float, t_loop: float) -> SimResult:
    """The SimResult of a finished run: per-request table, summary, series; timing from the wall-clock
    marks t_start (before `prepare`) and t_loop (before the event loop)."""
    cfg, wl = prep.config, prep.workload
    gamma = cfg.drafter.effective_gamma
    t_results = time.perf_counter()
    requests = request_table(rec, wl)
    confidence = prep.model.report
    summary = summarize(rec, wl, requests, cfg, gpus=prep.gpus, confidence=confidence)
    summary.update(
        {
            "policy": cfg.policy.name,
            "drafter": cfg.drafter.name,
            "gamma": gamma,
            "cost": prep.cost.name or str(cfg.server.cost),
            "seed": cfg.seed,
        }
    )
    summary.update(accuracy(cfg))  # the validated error bands (sim.deploy.draft.accuracy)
    verified = summary.get("mean_verify_tokens_per_request_step", float("nan")) - 1.0  # drafts per step
    idle = idle_drafting(cfg.policy.name, gamma, verified, summary.get("draft_time_frac", 0.0))  # issue 32
    summary["drafts_unverified"] = idle is not None
    if idle is not None:
        inputs.warn(idle, field="policy.name")
    stats = getattr(rec, "prefix_cache_stats", None)
    if stats is not None:
        summary["prefix_cache_hit_rate"] = stats["hit_rate"]
        summary["prefix_cache_hit_tokens"] = stats["tokens_hit"]
    summary.update(run_load(prep, summary))  # issue 33: offered vs sustainable rate
    series = time_series(rec, cfg.metrics.series_bins)
    t_end = time.perf_counter()
    timing = {
        "setup_s": t_loop - t_start,
        "loop_s": t_results - t_loop,
        "results_s": t_end - t_results,
        "total_s": t_end - t_start,
    }
    return SimResult(cfg, summary, requests, series, confidence, timing)
