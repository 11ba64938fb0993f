"""The analytical screen: drop, without a simulation, deployments that cannot carry the traffic's mean load
or whose fastest possible step already breaks a latency bound.

Role: one steady-state estimate per candidate from the step model the simulator itself prices steps with
(the candidate's cost table, draft pricing, policy and acceptance curves, read by `sim.run.prepare`). For
a batch of B decoding requests (B over a grid up to server.max_num_seqs) whose confidences are the
traffic's population curves, the candidate's policy picks the verify lengths; a step then emits
B + Σ survival tokens, carries the prefill that keeps pace with them (input/output tokens of the traffic)
within max_num_batched_tokens, and costs what the simulator's `StepCost` bills that step (`step_shape`:
draft, per-request, KV at the traffic's mean context, forward, and every engine term; a `drafter.model`
priced from its own shape) — the screen prices no step by hand. Capacity = replicas × the best B's output
rate ÷ mean output tokens (requests/s).

A disaggregated candidate (`[[pool]]`): the decode pool is screened as above without prompt tokens in
its steps, the prefill pool by its best prompt tokens per second (its token budget per step) over the
prompt tokens a request computes (its `prefix_hit` share cached); its capacity is the smaller of the
two (EP pools, `ep_gpus`, are not screened).

Drops (each says why):
- capacity·(1 + grace) < the traffic's mean arrival rate (open-loop traffic only);
- an SLO bound on ITL or TPOT below the floor no load can beat: one step of one request without drafts
  (every inter-token gap is a whole step; TPOT ≥ that step ÷ (1 + γ)), with the same grace.
The estimate is first-order (population curves, mean context); `grace` keeps it from dropping a candidate
near the edge, which the simulation then judges.

May import: numpy, the standard library, `analysis.model`, `sim` (lazily).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.model import flatten, set_text
from specsched.stepcost import StepCost, StepShape

GRID = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)
#: config sections that do not change the step model (replicas and batch limits are the screen's own inputs)
_FREE = ("workload.", "metrics.", "seed", "server.replicas", "server.max_num_seqs", "server.max_num_batched")


@dataclass(frozen=True)
class Traffic:
    """Mean facts of the traffic: arrivals/s (NaN for closed loop), mean input and output tokens, requests."""

    rate: float
    input_tokens: float
    output_tokens: float
    requests: int


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str
    capacity: float  # requests/s the estimate can carry (NaN when not estimated)
    floor_s: float  # seconds of the fastest possible step


def _load(config: dict):
    from sim.config_io import load_config
    from sim.run import prepare

    return prepare(load_config(None, [f"{k}={set_text(v)}" for k, v in flatten(config).items()]))


def traffic_of(config: dict) -> Traffic:
    """The traffic of a candidate's resolved config (the same for every candidate of a search)."""
    prep = _load(config)
    wl = prep.workload
    n = len(wl)
    arr = np.asarray(wl.arrival_s, dtype=np.float64)
    span = float(arr.max() - arr.min()) if n > 1 else 0.0
    rate = n / span if prep.config.workload.kind != "closed" and span > 0 else math.nan
    return Traffic(rate, float(np.mean(wl.input_tokens)), float(np.mean(wl.output_tokens)), n)


class Screen:
    """screen(config) -> Verdict; step models are prepared once per distinct cost/drafter/policy setup."""

    def __init__(self, traffic: Traffic, slo, grace: float) -> None:
        self.traffic, self.slo, self.grace = traffic, slo, grace
        self._preps: dict[str, object] = {}  # step-model signature -> prepared run
        self._steps: dict[tuple, StepCost] = {}  # (signature, batch limits) -> the candidate's StepCost

    def _prep(self, config: dict):
        flat = flatten(config)
        sig = repr(sorted((k, v) for k, v in flat.items() if not k.startswith(_FREE)))
        if sig not in self._preps:
            small = {
                **flat,
                "workload.num_requests": min(int(flat.get("workload.num_requests") or 0) or 2000, 2000),
            }
            self._preps[sig] = _load(_nest(small))
        prep = self._preps[sig]
        server = config["server"]
        limits = (int(server["max_num_seqs"]), int(server["max_num_batched_tokens"]))
        if (sig, limits) not in self._steps:
            self._steps[sig, limits] = step_cost_of(prep, *limits)
        return prep, self._steps[sig, limits]

    def __call__(self, config: dict) -> Verdict:
        if "pool" in config:  # disaggregated (analysis.search.pools)
            return self._pooled(config)
        prep, step = self._prep(config)
        server = config["server"]
        floor, lost = self._floor(prep, step)
        if lost:
            return Verdict(False, lost, math.nan, floor)
        if not math.isfinite(self.traffic.rate):
            return Verdict(True, "", math.nan, floor)
        capacity = _replica_rate(prep, step, server, self.traffic) * int(server.get("replicas", 1))
        return self._carry(capacity, floor, "")

    def _floor(self, prep, step: StepCost) -> tuple[float, str]:
        """(the fastest possible step's seconds, why it already breaks an ITL/TPOT bound or "")."""
        floor = step.bill(StepShape(1, 1, 1, 1, padded=1), draft=0.0).seconds  # one request, no drafts
        gamma = prep.config.drafter.effective_gamma
        for term in self.slo.terms:
            head = term.name.rpartition("_")[0]
            limit = floor if head == "itl" else floor / (1 + gamma) if head == "tpot" else None
            if limit is not None and limit > term.bound * (1 + self.grace):
                return floor, f"screen: its fastest step ({limit * 1e3:.1f} ms) already breaks {term.text()}"
        return floor, ""

    def _carry(self, capacity: float, floor: float, what: str) -> Verdict:
        if capacity * (1 + self.grace) < self.traffic.rate:
            why = (
                f"screen: {what}carries ≈ {capacity:.2f} req/s at most, below the traffic's mean "
                f"{self.traffic.rate:.2f} req/s"
            )
            return Verdict(False, why, capacity, floor)
        return Verdict(True, "", capacity, floor)

    def _pooled(self, config: dict) -> Verdict:
        """A disaggregated candidate: the decode pool's ITL/TPOT floor, and capacity = the smaller of the
        prefill pool's (its full token budget of uncached prompt tokens per step) and the decode pool's
        (the colocated estimate without prefill); an EP pool (`ep_gpus`) is not screened."""
        from analysis.search.pools import pool_dict

        if any(config["pool"][role].get("ep_gpus") for role in ("prefill", "decode")):
            return Verdict(True, "not screened", math.nan, math.nan)
        pre, dec = pool_dict(config, "prefill"), pool_dict(config, "decode")
        dprep, dstep = self._prep(dec)
        floor, lost = self._floor(dprep, dstep)
        if lost:
            return Verdict(False, lost.replace("screen: ", "screen: the decode pool: "), math.nan, floor)
        if not math.isfinite(self.traffic.rate):
            return Verdict(True, "", math.nan, floor)
        decode = _replica_rate(dprep, dstep, dec["server"], self.traffic, prefill=False)
        decode *= dec["server"]["replicas"]
        computed = self.traffic.input_tokens * (1.0 - float(config["pool"]["prefill"].get("prefix_hit", 0.0)))
        prefill = _prefill_rate(self._prep(pre)[1], pre["server"], computed) * pre["server"]["replicas"]
        if prefill < decode:
            return self._carry(prefill, floor, "the prefill pool ")
        return self._carry(decode, floor, "the decode pool ")


def _nest(flat: dict) -> dict:
    out: dict = {}
    for key, value in flat.items():
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def _curve(prep) -> np.ndarray | None:
    """float64[γ]: the traffic's population acceptance curve (domain rows weighted by their requests)."""
    curves = getattr(prep.model, "curves", None)
    if curves is None or np.ndim(curves) != 2 or curves.shape[1] == 0:
        return None
    counts = np.bincount(np.asarray(prep.workload.domain), minlength=curves.shape[0])
    present = counts[counts > 0] if counts[counts > 0].size == curves.shape[0] else np.ones(curves.shape[0])
    return np.average(np.asarray(curves, dtype=np.float64), axis=0, weights=present)


def step_cost_of(prep, max_num_seqs: int, max_num_batched_tokens: int) -> StepCost:
    """The `StepCost` the simulator prices `prep`'s steps with (`sim.stepcost.step_cost`), for a
    candidate with these batch limits (the prepared run is shared by candidates that differ in them)."""
    from dataclasses import replace

    from sim.stepcost import step_cost

    limits = {"max_num_seqs": max_num_seqs, "max_num_batched_tokens": max_num_batched_tokens}
    srv = replace(prep.config.server, **limits)
    return step_cost(replace(prep.config, server=srv), prep.cost)


def step_shape(
    b: int, lengths: np.ndarray, prefill: float, context: float, longest: int, prompt: float, drafting: bool
) -> StepShape:
    """The `StepShape` of a screened step: `b` requests decoding (all drafting, with `drafting`) with
    verify lengths `lengths`, `prefill` prompt tokens from requests of `prompt` tokens, every request
    holding `context` KV tokens, the longest `longest`."""
    verify = b + int(lengths.sum())
    prefilling = int(math.ceil(prefill / max(prompt, 1.0))) if prefill > 0 else 0
    padded = b * (1 + int(lengths.max())) if b else 0
    kv, drafters = int(round(b * context)), b if drafting else 0
    return StepShape(b, b, int(verify + prefill), verify, prefilling, padded, kv, longest, drafters)


def _prefill_rate(step: StepCost, server: dict, computed_tokens: float) -> float:
    """Requests/s one prefill-only replica carries at most: its best tokens per second over step sizes
    up to its token budget, over the prompt tokens each request computes."""
    budget = int(server["max_num_batched_tokens"])
    sizes = sorted({*(g for g in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384) if g < budget), budget})
    best = max(n / step.bill(StepShape(0, 0, n, 0), draft=0.0).seconds for n in sizes)
    return best / max(computed_tokens, 1.0)


def _replica_rate(prep, step: StepCost, server: dict, traffic: Traffic, prefill: bool = True) -> float:
    """Requests/s one replica carries at its best batch size (module docstring); `prefill` False: a
    decode-only replica (disaggregated), its steps carry no prompt tokens."""
    cost, cfg = prep.cost, prep.config
    seqs, budget = int(server["max_num_seqs"]), int(server["max_num_batched_tokens"])
    gamma = cfg.drafter.effective_gamma
    curve = _curve(prep) if gamma else None
    draft = step.draft_s
    ratio = traffic.input_tokens / max(traffic.output_tokens, 1.0) if prefill else 0.0
    context = traffic.input_tokens + traffic.output_tokens / 2
    longest = int(traffic.input_tokens + traffic.output_tokens)
    best = 0.0
    for b in sorted({*(g for g in GRID if g < seqs), seqs}):
        if curve is None:
            lengths, tokens = np.zeros(b, dtype=np.int64), float(b)
        else:
            conf = np.tile(curve, (b, 1))
            lengths = np.asarray(prep.policy(conf, cost.with_draft(float(draft[b])), stale=conf))
            surv = np.cumprod(conf, axis=1) * (np.arange(gamma) < lengths[:, None])
            tokens = b + float(surv.sum())
        verify = b + int(lengths.sum())
        if verify >= budget:
            continue
        prefill = tokens * ratio  # 0 for a decode-only replica
        if verify + prefill > budget:  # prefill-bound: the budget left caps the tokens a step can add
            tokens *= (budget - verify) / prefill
            prefill = budget - verify
        shape = step_shape(b, lengths, prefill, context, longest, traffic.input_tokens, curve is not None)
        best = max(best, tokens / step.bill(shape).seconds)
    return best / max(traffic.output_tokens, 1.0)
