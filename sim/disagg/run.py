"""`simulate_disagg(cfg) -> DisaggResult`: a prefill pool, the KV hand-off, a decode pool; one run.

Role: run a `DisaggConfig` (sim.disagg.config) as three stages on one set of requests (the workload, the
latent difficulties and the random streams are the colocated run's: `sim.run.prepare` on each pool's
config, same seed):

1. Prefill pool: the one engine (`sim.server.Replica`, chunked prefill, its router) on requests whose
   output is their first token only and whose prompt is the part the prefix cache does not serve
   (prompt − ⌊prefix_hit · prompt⌋). With draft_kv = "transfer" its cost table is scaled by
   1 + (drafter layers · layer_cost) / target layers: it prefills the drafter too.
2. Hand-off: each request's KV (whole prompt, + the drafter's with "transfer") moves over the link
   (`specsched.comm.KVHandoff`); with layer-wise transfer only what the request's prefill time (first
   token − admission) does not cover is exposed. With handoff.contention (default) each prefill
   replica's link carries one transfer at a time (FIFO); without it transfers never wait for each other.
   The user sees the first token when the decode side holds the KV: TTFT = ready − arrival.
3. Decode pool: the one engine (`sim.wiring.run_pool`, `sim.server.Replica`) fed at the ready times,
   each request holding its prompt's KV (an external prefix hit: `decode_feed`) and its first token out,
   routed by the pool's router; speculation, the policy and acceptance exactly as colocated. A pool
   with `ep_gpus` is priced by `specsched.price.ep.group_table` (one table per group, or per rank
   with budget = "rank").

Closed-loop workloads are refused (a user's next request would wait on the decode pool's completion
across both pools; not modelled).

May import: numpy, the standard library, specsched, and the other sim modules.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from sim.disagg.config import DisaggConfig, PoolConfig
from sim.disagg.prefix import prefill_feed
from sim.metrics import request_table, summarize
from sim.recorder import Recorder
from sim.run import prepare
from sim.wiring import Feed, Prepared, run_pool
from specsched.comm import KVHandoff, Link, get_link
from specsched.io.errors import InputError
from specsched.price import MODELS
from specsched.price.ep import EPGroup, group_table, prefill_table


@dataclass(frozen=True)
class DisaggResult:
    """summary: the fleet's figures (`results`); prefill / decode: each pool's summary
    (`sim.metrics.summarize`); requests: per-request columns (arrival, ready, finish, TTFT, …)."""

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


def decode_feed(cfg: DisaggConfig, dprep: Prepared, ready: np.ndarray) -> Feed:
    """Stage 3's feed: the requests with more than one output token, at their `ready` times, each holding
    its prompt's KV (less the drafter's share it rebuilds, `rebuild_tokens`) and its first token out."""
    prompt = dprep.workload.input_tokens
    send = np.flatnonzero(dprep.workload.output_tokens > 1)
    order = send[np.argsort(ready[send], kind="stable")]
    emitted = np.zeros_like(prompt)
    emitted[send] = 1
    return Feed(arrival_s=ready, rids=order, external=prompt - rebuild_tokens(cfg, prompt), emitted=emitted)


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


def simulate_disagg(cfg: DisaggConfig, watch=None) -> DisaggResult:
    """Run the three stages of the module docstring and summarize them.

    watch: (prepared decode pool, heads) -> a `run_pool` watch of the fleet (`specbed search`'s early
    stop, `analysis.search.early.Watch`): the prefill stage on TTFT and E2E (its first tokens and
    finishes are lower bounds of the fleet's) when the steady window is known before the decode stage
    (metrics.warmup = 0: it opens at the first arrival, not at a fleet completion), every 1,024 steps
    and once when it ends; the decode stage on every head, over the fleet as it stands (`FleetView`)."""
    t0 = time.perf_counter()
    pprep, cached, prompt = prefill_prep(cfg)
    dprep = decode_prep(cfg)
    early = watch is not None and cfg.base.metrics.warmup == 0
    pwatch = watch(dprep, ("ttft", "e2e")) if early else None
    prec = run_pool(pprep, prefill_feed(cfg, pprep, prompt), watch=pwatch)
    if pwatch is not None:
        pwatch(prec, float(np.nanmax(prec.finish_s)))  # every prefill is done: decode may be moot
    hand, exposed = handoff(cfg, prec, prompt)
    ready = prec.first_token_s + exposed
    feed = decode_feed(cfg, dprep, ready)
    dwatch = None
    if watch is not None:
        view, fleet_watch = FleetView(prec, ready, feed), watch(dprep, WATCHED)
        dwatch = lambda rec, now: fleet_watch(view.at(rec, now), now)  # noqa: E731
    drec = run_pool(dprep, feed, watch=dwatch)
    t1 = time.perf_counter()
    return results(cfg, (pprep, prec), (dprep, drec), (hand, exposed, prompt, cached), (t0, t1))


#: the latencies a fleet's decode stage is watched on (all of `analysis.search.early.WATCHED`)
WATCHED = ("ttft", "tpot", "e2e", "queue", "itl")


class FleetView:
    """The fleet as its decode stage stands at `now`, read by a `run_pool` watch as a Recorder: a request's
    arrival and first admission are its prefill pool's, its first token is at `ready` (float64[N] s), its
    finish the decode pool's (at `ready` for one-token outputs); `completed` counts both by `now`;
    everything else (tallies, tokens, preemptions, replicas) is the decode pool's."""

    def __init__(self, prec: Recorder, ready: np.ndarray, feed: Feed) -> None:
        self.arrival_s, self.admit_s, self.first_token_s = prec.arrival_s, prec.admit_s, ready
        self._sent = np.zeros(ready.size, dtype=bool)
        self._sent[feed.rids] = True
        self._early = np.sort(ready[~self._sent])  # one-token outputs: done when their KV would be ready
        self._rec = None
        self.completed, self.finish_s = 0, ready

    def at(self, rec: Recorder, now: float) -> FleetView:
        self._rec = rec
        self.completed = rec.completed + int(np.searchsorted(self._early, now, side="right"))
        self.finish_s = np.where(self._sent, rec.finish_s, self.first_token_s)
        return self

    def __getattr__(self, name: str):
        return getattr(self._rec, name)


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


def results(cfg: DisaggConfig, pre, dec, hand_off, marks) -> DisaggResult:
    """The DisaggResult of finished stages: pre = (prepared, recorder) of the prefill pool, dec = the
    decode pool's, hand_off = (KVHandoff, exposed s, prompt tokens, cached tokens), marks = wall-clock
    (start, end of the loops).

    The fleet's summary is `sim.metrics.summarize` of the fleet (`Recorder.fleet`: the pools summed, a
    request's first token when the decode side holds its KV), so every key means what it means for
    `specbed run` (one steady window, from arrivals and fleet completions), plus the pools' own figures
    (`_pool_figures`)."""
    (pprep, prec), (dprep, drec), (hand, exposed, prompt, cached) = pre, dec, hand_off
    ready = prec.first_token_s + exposed
    wl, dwl = pprep.workload, dprep.workload
    fleet = Recorder.fleet(prec, drec, ready)
    req = request_table(fleet, dwl)
    gpus = pprep.gpus + dprep.gpus
    s = summarize(fleet, dwl, req, dprep.config, gpus=gpus, confidence=dprep.model.report)
    psum = summarize(prec, wl, request_table(prec, wl), pprep.config, gpus=pprep.gpus, confidence={})
    dsum = summarize(drec, dwl, request_table(drec, dwl), dprep.config, gpus=dprep.gpus,
                     confidence=dprep.model.report)  # fmt: skip
    base = cfg.base
    s.update(policy=base.policy.name, drafter=base.drafter.name, gamma=base.drafter.effective_gamma,
             cost=f"{pprep.cost.name} (prefill) + {dprep.cost.name} (decode)", seed=base.seed)  # fmt: skip
    s.update(_pool_figures(cfg, (pprep, prec), (dprep, dsum), (hand, exposed, prompt, cached), s))
    s.update(_ep_parts(cfg, dsum))
    requests = {"arrival_s": prec.arrival_s, "prefill_done_s": prec.first_token_s, "ready_s": ready,
                "finish_s": fleet.finish_s, "ttft_s": req["ttft_s"], "tpot_s": req["tpot_s"],
                "input_tokens": prompt, "cached_tokens": cached, "output_tokens": dwl.output_tokens,
                "handoff_exposed_s": exposed}  # fmt: skip
    timing = {"loop_s": marks[1] - marks[0], "total_s": time.perf_counter() - marks[0]}
    return DisaggResult(cfg, s, psum, dsum, requests, timing)


#: the figures only a fleet of two pools has (`_pool_figures`), in the order `specbed run` prints them
POOL_FIGURES = (
    "prefill_gpus",
    "decode_gpus",
    "prefill_input_tok_s_per_gpu",
    "prefill_computed_tok_s_per_gpu",
    "prefix_hit_rate",
    "decode_output_tok_s_per_gpu",
    "handoff_bytes_mean",
    "handoff_exposed_s_mean",
    "handoff_exposed_s_p99",
    "decode_batch_mean",
    "decode_step_s_mean",
)


def _pool_figures(cfg: DisaggConfig, pre, dec, hand_off, fleet: dict) -> dict:
    """What only a fleet of two pools has: each pool's GPUs and tok/s per GPU in the fleet's window, the
    prefix hits, the hand-off's bytes and exposed seconds, the decode pool's batch and step."""
    (pprep, prec), (dprep, dsum), (hand, exposed, prompt, cached) = pre, dec, hand_off
    t0, t1 = fleet["window_start_s"], fleet["window_end_s"]
    span = max(t1 - t0, 1e-12)
    pgpus, dgpus = pprep.gpus, dprep.gpus
    done = (prec.first_token_s >= t0) & (prec.first_token_s <= t1)
    stats = prec.prefix_cache_stats if cfg.prefill.prefix_cache else None
    hit = 0.0 if stats is None else float(stats["hit_rate"])  # the caches' own (whole run)
    computed = pprep.workload.input_tokens[done].sum()
    return {
        "prefill_gpus": int(pgpus),
        "decode_gpus": int(dgpus),
        "prefill_input_tok_s_per_gpu": float(prompt[done].sum() / span / pgpus),
        "prefill_computed_tok_s_per_gpu": float(computed / span / pgpus * (1 - hit)),
        "prefix_hit_rate": float(cached.sum() / max(prompt.sum(), 1)) if stats is None else hit,
        "decode_output_tok_s_per_gpu": float(dsum["throughput_tok_s_per_gpu"]),
        "handoff_bytes_mean": float(hand.bytes(1.0) * prompt.mean()),
        "handoff_exposed_s_mean": float(exposed.mean()),
        "handoff_exposed_s_p99": float(np.quantile(exposed, 0.99)),
        "decode_batch_mean": float(dsum["mean_batch_size"]),
        "decode_step_s_mean": float(dsum["step_s_mean"]),
    }
