"""`simulate_disagg(cfg) -> DisaggResult`: a prefill pool, the KV hand-off, a decode pool; one run.

Role: run a `DisaggConfig` (sim.disagg.config) as three stages on one set of requests (the workload, the
latent difficulties and the random streams are the colocated run's: `sim.run.prepare` on each pool's
config, same seed):

1. Prefill pool: the colocated engine (`sim.server.Replica`, chunked prefill, its router) on requests whose
   output is their first token only and whose prompt is the part the prefix cache does not serve
   (prompt − ⌊prefix_hit · prompt⌋). With draft_kv = "transfer" its cost table is scaled by
   1 + (drafter layers · layer_cost) / target layers: it prefills the drafter too.
2. Hand-off: each request's KV (whole prompt, + the drafter's with "transfer") moves over the link
   (`specsched.comm.KVHandoff`); with layer-wise transfer only what the request's prefill time (first
   token − admission) does not cover is exposed. With handoff.contention (default) each prefill
   replica's link carries one transfer at a time (FIFO); without it transfers never wait for each other.
   The user sees the first token when the decode side holds the KV: TTFT = ready − arrival.
3. Decode pool: `sim.disagg.replica.DecodeReplica` engines fed at the ready times, routed by the pool's
   router; speculation, the policy and acceptance exactly as colocated. A pool with `ep_gpus` is priced
   by `specsched.ep_decode.group_table` (one table per group, or per rank with budget = "rank").

Closed-loop workloads are refused (a user's next request would wait on the decode pool's completion
across both pools; not modelled).

May import: numpy, simpy, the standard library, specsched, and the other sim modules.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np
import simpy

from sim.disagg.config import DisaggConfig, PoolConfig
from sim.disagg.prefix import prefix_keys, run_prefill_cached
from sim.disagg.replica import DecodeReplica
from sim.metrics import request_table, summarize
from sim.recorder import Recorder
from sim.routing import STATE_FREE, OpenLoop, Router, route_up_front
from sim.run import prepare
from sim.wiring import Prepared, _deployment, run_replicas
from specsched.comm import KVHandoff, Link, get_link
from specsched.errors import InputError
from specsched.price import MODELS
from specsched.price.ep import EPGroup, group_table, prefill_table


@dataclass(frozen=True)
class DisaggResult:
    """summary: the fleet's figures (module `summary`); prefill / decode: each pool's colocated-style
    summary (`sim.metrics.summarize`); requests: per-request columns (arrival, ready, finish, TTFT, …)."""

    config: DisaggConfig
    summary: dict
    prefill: dict
    decode: dict
    requests: dict[str, np.ndarray]
    timing: dict


def _draft_share(cfg: DisaggConfig) -> float:
    """The drafter's prefill/KV as a share of the target's (layers × layer_cost / target layers)."""
    drafter = cfg.base.drafter
    if drafter.effective_gamma == 0:
        return 0.0
    layers = MODELS[cfg.handoff.model].layers
    return drafter.effective_layers * drafter.layer_cost / layers


def _link(cfg: DisaggConfig) -> Link:
    preset = get_link(cfg.handoff.link)
    bw = cfg.handoff.bandwidth if cfg.handoff.bandwidth is not None else preset.bandwidth
    lat = cfg.handoff.latency if cfg.handoff.latency is not None else preset.latency
    return Link(preset.name, bw, lat, preset.note)


def ep_group(pool: PoolConfig) -> EPGroup:
    """The pool's DP-attention + EP group (`pool.ep_gpus` set): DeepEP's low-latency (pure RDMA)
    all-to-all for a decode pool, the NVLink-forwarding one for a prefill pool."""
    return EPGroup(
        pool.ep_model, pool.ep_gpu, pool.ep_gpus, pool.attention_ranks,
        redundant_experts=pool.redundant_experts, inter=pool.ep_inter, intra=pool.ep_intra,
        micro_batches=pool.micro_batches, expert_imbalance=pool.expert_imbalance,
        attention_imbalance=pool.attention_imbalance, low_latency=pool.role == "decode",
    )  # fmt: skip


def _prefill_group_table(cfg: DisaggConfig, prep: Prepared, cached: np.ndarray):
    """A prefill EP group's table per attention rank (a request prefills on one DP rank: attention is
    data-parallel), at the workload's mean prompt and mean cached prefix, every rank as loaded."""
    wl = prep.workload
    prompt = float(np.mean(wl.input_tokens))
    hit = min(float(np.mean(cached)), prompt - 1.0)
    budget = prep.config.server.max_num_batched_tokens
    return prefill_table(ep_group(cfg.prefill), budget, prompt=prompt, cached=hit, ranks=1)


def prefill_prep(cfg: DisaggConfig) -> tuple[Prepared, np.ndarray, np.ndarray]:
    """Stage 1's prepared run (first-token-only requests over their uncached prompts, the drafter's
    prefill priced in with draft_kv = "transfer"), the cached prompt tokens and the prompts (int64[N])."""
    pcfg = cfg.pool_config(cfg.prefill)
    prep = prepare(pcfg)
    wl = prep.workload
    if wl.arrival_s is None:
        raise InputError("a disaggregated run needs open-loop traffic (poisson, gamma or trace)",
                         field="workload.kind")  # fmt: skip
    cached = np.floor(wl.input_tokens * cfg.prefill.prefix_hit).astype(np.int64)
    cached = np.minimum(cached, wl.input_tokens - 1)  # the last prompt token is always computed
    ones = np.ones_like(wl.output_tokens)
    cost = prep.cost if cfg.prefill.ep_gpus is None else _prefill_group_table(cfg, prep, cached)
    share = _draft_share(cfg) if cfg.handoff.draft_kv == "transfer" else 0.0
    if share:
        cost = dataclasses.replace(cost, seconds=cost.seconds * (1.0 + share), name=cost.name + "+draft")
    computed = wl.input_tokens - cached
    if share and not cfg.prefill.draft_prefix_cached:  # the drafter recomputes the cached prefix
        computed = computed + np.ceil(cached * share).astype(np.int64)
    work = dataclasses.replace(wl, input_tokens=computed, output_tokens=ones)
    prep = dataclasses.replace(prep, workload=work, cost=cost)
    pool = cfg.prefill
    if pool.ep_gpus is not None:  # one replica per attention rank
        srv = dataclasses.replace(pcfg.server, replicas=pool.replicas * pool.attention_ranks)
        config = dataclasses.replace(pcfg, server=srv)
        prep = dataclasses.replace(prep, config=config, gpus=pool.replicas * pool.ep_gpus)
    return prep, cached, wl.input_tokens


def decode_prep(cfg: DisaggConfig) -> Prepared:
    dcfg = cfg.pool_config(cfg.decode)
    prep = prepare(dcfg)
    pool = cfg.decode
    if pool.ep_gpus is None:
        return prep
    table = group_table(
        ep_group(pool), dcfg.server.max_num_batched_tokens, context=pool.context_tokens,
        query_tokens=pool.query_tokens, ranks=1 if pool.budget == "rank" else None,
    )  # fmt: skip
    replicas = pool.replicas * (pool.attention_ranks if pool.budget == "rank" else 1)
    srv = dataclasses.replace(dcfg.server, replicas=replicas)
    gpus = pool.replicas * pool.ep_gpus
    return dataclasses.replace(prep, config=dataclasses.replace(dcfg, server=srv), cost=table, gpus=gpus)


def run_decode(
    prep: Prepared, ready: np.ndarray, send: np.ndarray, rebuild: np.ndarray, only: list[int] | None = None
) -> Recorder:
    """Stage 3: the decode pool fed the requests `send` (ids) at their `ready` times; `only`: simulate just
    those replicas (a shard; the router must be state-free, so each replica's requests are known)."""
    cfg, wl = prep.config, prep.workload
    rec = Recorder(len(wl), max_bins=4 * cfg.metrics.series_bins, gamma=cfg.drafter.effective_gamma,
                   replicas=cfg.server.replicas)  # fmt: skip
    env = simpy.Environment()
    eng = _deployment(prep, env, rec, None)
    replicas = [DecodeReplica(i, eng, rebuild) for i in range(cfg.server.replicas)]
    order = send[np.argsort(ready[send], kind="stable")]
    kind = cfg.server.router
    expected = order.size
    if kind in STATE_FREE:
        target = route_up_front(kind, len(replicas), len(wl), prep.rngs["router"], wl.session)
        fed = range(len(replicas)) if only is None else only
        expected = 0
        for k in fed:
            mine = order[target[order] == k]
            expected += mine.size
            replicas[k].horizon = OpenLoop(env, replicas[k].enqueue, ready, mine).horizon
    elif only is not None:
        raise ValueError("run_decode: only a state-free router's pool can be sharded")
    else:
        eng.horizon = OpenLoop(env, Router(replicas, kind).submit, ready, order).horizon
    with np.errstate(divide="ignore", over="ignore"):
        env.run()
    rec.close(env.now)
    if rec.completed != expected or any(rep.n or rep.kv_used or rep.queue for rep in replicas):
        raise RuntimeError(f"decode pool ended with {expected - rec.completed} requests unfinished")
    return rec


def handoff(cfg: DisaggConfig, prec: Recorder, prompt: np.ndarray) -> tuple[KVHandoff, np.ndarray]:
    """Stage 2: the hand-off model and each request's exposed seconds (float64[N])."""
    share = _draft_share(cfg)
    transfer = cfg.handoff.draft_kv == "transfer"
    kv_bytes = cfg.handoff.kv_bytes
    hand = KVHandoff(_link(cfg), kv_bytes, MODELS[cfg.handoff.model].layers, cfg.handoff.layerwise,
                     kv_bytes * share if transfer else 0.0, cfg.handoff.streams)  # fmt: skip
    if cfg.handoff.contention:
        return hand, _queued(hand, prec.replica, prec.admit_s, prec.first_token_s, prompt)
    busy = prec.first_token_s - prec.admit_s
    return hand, np.array([hand.exposed_seconds(p, b) for p, b in zip(prompt.tolist(), busy.tolist())])


def _queued(hand: KVHandoff, link_of, admit, done, prompt) -> np.ndarray:
    """Exposed hand-off seconds (float64[N]) when each prefill replica's link carries one transfer at a
    time, first come first served: a transfer can start when its prefill starts (layer-wise: it follows
    the layers as they finish) or ends (not layer-wise), and not before the link's previous transfer
    ends; layer-wise, it also cannot end before the last layer is computed plus one layer's share."""
    exposed = np.empty(len(prompt))
    start = admit if hand.layerwise else done
    for k in np.unique(link_of).tolist():
        idx = np.flatnonzero(link_of == k)
        free = -np.inf
        for i in idx[np.argsort(start[idx], kind="stable")].tolist():
            total = hand.transfer_seconds(float(prompt[i]))
            end = max(float(start[i]), free) + total
            free = end
            floor = hand.exposed_seconds(float(prompt[i]), np.inf) if hand.layerwise else 0.0
            exposed[i] = max(end - float(done[i]), floor)
    return exposed


def rebuild_tokens(cfg: DisaggConfig, prompt: np.ndarray) -> np.ndarray:
    """int64[N]: the drafter's re-prefill on the decode side (zeros unless draft_kv = "rebuild")."""
    if cfg.handoff.draft_kv == "transfer":
        return np.zeros_like(prompt)
    return np.ceil(prompt * _draft_share(cfg)).astype(np.int64)


def simulate_disagg(cfg: DisaggConfig) -> DisaggResult:
    """Run the three stages of the module docstring and summarize them."""
    t0 = time.perf_counter()
    pprep, cached, prompt = prefill_prep(cfg)
    stats = None
    if cfg.prefill.prefix_cache:
        pool = cfg.prefill
        keys = prefix_keys(prompt, pool.prefix_groups, pool.prefix_share, cfg.base.seed)
        prec, stats = run_prefill_cached(pprep, keys, pool.cache_routing == "affinity")
    else:
        prec = run_replicas(pprep)
    hand, exposed = handoff(cfg, prec, prompt)
    ready = prec.first_token_s + exposed
    dprep = decode_prep(cfg)
    send = np.flatnonzero(dprep.workload.output_tokens > 1)
    drec = run_decode(dprep, ready, send, rebuild_tokens(cfg, prompt))
    t1 = time.perf_counter()
    return results(cfg, (pprep, prec), (dprep, drec), (hand, exposed, prompt, cached), (t0, t1), stats)


def _ep_parts(cfg: DisaggConfig, dsum: dict) -> dict:
    """An EP decode pool's step bill at the run's mean batch and verify length, part by part
    (`decode_ep_<part>_ms`: attention, dense, experts, dispatch, combine, overhead, hidden, total)."""
    pool = cfg.decode
    if pool.ep_gpus is None or not dsum["mean_batch_size"] > 0:
        return {}
    ranks = 1 if pool.budget == "rank" else pool.attention_ranks
    q = dsum["mean_verify_tokens_per_request_step"]
    q = q if q == q and q >= 1 else 1.0
    bill = ep_group(pool).decode_bill(dsum["mean_batch_size"] / ranks, q, pool.context_tokens)
    return {f"decode_ep_{k}_ms": 1e3 * v for k, v in bill.as_dict().items()}


def _window(arrival: np.ndarray, warmup: float, drain: float) -> tuple[float, float]:
    """The steady window [t0, t1]: arrivals of the requests at the warmup and 1 − drain quantiles."""
    times = np.sort(arrival)
    n = times.size
    return float(times[min(int(math.ceil(warmup * n)), n - 1)]), float(
        times[max(int((1 - drain) * n) - 1, 0)]
    )


def results(cfg: DisaggConfig, pre, dec, hand_off, marks, cache_stats: dict | None = None) -> DisaggResult:
    """The DisaggResult of finished stages: pre = (prepared, recorder) of the prefill pool, dec = the
    decode pool's, hand_off = (KVHandoff, exposed s, prompt tokens, cached tokens), marks = wall-clock
    (start, end of the loops)."""
    (pprep, prec), (dprep, drec), (hand, exposed, prompt, cached) = pre, dec, hand_off
    ready = prec.first_token_s + exposed
    wl, dwl = pprep.workload, dprep.workload
    arrival = prec.arrival_s
    finish = np.where(np.isnan(drec.finish_s), ready, drec.finish_s)
    out = dwl.output_tokens
    ttft = ready - arrival
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (finish - ready) / np.maximum(out - 1, 1), np.nan)
    t0, t1 = _window(arrival, cfg.base.metrics.warmup, cfg.base.metrics.drain)
    span = max(t1 - t0, 1e-12)
    measured = (arrival >= t0) & (arrival <= t1)
    pgpus, dgpus = pprep.gpus, dprep.gpus
    pf_done = (prec.first_token_s >= t0) & (prec.first_token_s <= t1)
    psum = summarize(prec, wl, request_table(prec, wl), pprep.config, gpus=pgpus, confidence={})
    dreq = request_table(drec, dwl)
    dsum = summarize(drec, dwl, dreq, dprep.config, gpus=dgpus, confidence=dprep.model.report)
    speed = 1.0 / tpot[measured & np.isfinite(tpot) & (tpot > 0)]
    hit = 0.0 if cache_stats is None else float(cache_stats["hit_rate"])  # the caches' own (whole run)
    s = {
        "requests": int(len(wl)),
        "prefill_gpus": int(pgpus),
        "decode_gpus": int(dgpus),
        "prefill_input_tok_s_per_gpu": float(prompt[pf_done].sum() / span / pgpus),
        "prefill_computed_tok_s_per_gpu": float(wl.input_tokens[pf_done].sum() / span / pgpus * (1 - hit)),
        "prefix_hit_rate": float(cached.sum() / max(prompt.sum(), 1)) if cache_stats is None else hit,
        "decode_output_tok_s_per_gpu": float(dsum["throughput_tok_s_per_gpu"]),
        "output_tok_s_per_gpu_fleet": float(dsum["throughput_tok_s"] / (pgpus + dgpus)),
        "per_user_tok_s_mean": float(speed.mean()) if speed.size else math.nan,
        "ttft_s_mean": float(np.nanmean(ttft[measured])),
        "ttft_s_p99": float(np.nanquantile(ttft[measured], 0.99)),
        "tpot_s_mean": float(np.nanmean(tpot[measured])) if np.isfinite(tpot[measured]).any() else math.nan,
        "handoff_bytes_mean": float(hand.bytes(1.0) * prompt.mean()),
        "handoff_exposed_s_mean": float(exposed.mean()),
        "handoff_exposed_s_p99": float(np.quantile(exposed, 0.99)),
        "tau_mean": float(dsum["tau_mean"]),
        "decode_batch_mean": float(dsum["mean_batch_size"]),
        "decode_step_s_mean": float(dsum["step_s_mean"]),
        "window_start_s": t0,
        "window_end_s": t1,
    }
    s.update(_ep_parts(cfg, dsum))
    requests = {"arrival_s": arrival, "prefill_done_s": prec.first_token_s, "ready_s": ready,
                "finish_s": finish, "ttft_s": ttft, "tpot_s": tpot, "input_tokens": prompt,
                "cached_tokens": cached, "output_tokens": out, "handoff_exposed_s": exposed}  # fmt: skip
    timing = {"loop_s": marks[1] - marks[0], "total_s": time.perf_counter() - marks[0]}
    return DisaggResult(cfg, s, psum, dsum, requests, timing)
