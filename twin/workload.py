"""The workload `specbed fidelity` serves in both the engine and the simulator, request for request.

Role: the closed-loop workload config, the simulator's own domain draw for it (request i of the engine gets
the domain the simulator draws for its request i; the contract maps the simulator's chat to our prose), and
the engine requests cut for those domains (plus the same prompts with other noise, to measure curves on),
and the simulator's twin of one engine run (`twin_config`, whose measured step-cost terms reach the
config through `sim.stepcost.term_settings`; `run_twin`).

May import: stdlib, specsched, engine.lm.data, sim.*, twin.compare, twin.engine_run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from specsched.contracts import DOMAINS as SIM_DOMAINS
from specsched.contracts import engine_domain
from twin.engine_run import EngineRun

# The domain draw does not depend on the cost table: a built-in one stands in (no file is written).
_DRAW_COST = "h200-dense8b"


def workload_config(args: argparse.Namespace):
    """The closed-loop workload both sides serve."""
    from sim.config import WorkloadConfig

    return WorkloadConfig(
        kind="closed",
        concurrency=args.concurrency,
        num_requests=args.requests,
        input_tokens=args.prompt_len,
        output_tokens=args.output_len,
        domain="mix",
    )


def requests_by_domain(corpus, domains: list[str], prompt_len: int, output_len: int, seed: int):
    """Engine requests i = 0..N−1 of the given (engine) domains, prompts cut from the test split."""
    from engine.lm.data import requests_for

    pools = {
        d: requests_for(corpus, d, max(domains.count(d), 1), prompt_len, output_len, seed=seed + i)
        for i, d in enumerate(sorted(set(domains)))
    }
    used = dict.fromkeys(pools, 0)
    out = []
    for rid, d in enumerate(domains):
        r = pools[d][used[d]]
        used[d] += 1
        out.append(type(r)(rid, r.prompt, r.max_new_tokens, r.params, seed=r.seed))
    return out


def build_workload(args: argparse.Namespace, corpus) -> tuple[list[str], list]:
    """(engine domains, engine requests): request i of the engine has the domain the simulator draws for
    its request i (the simulator's own draw from the same seed; the contract maps chat to prose)."""
    from sim.config import DrafterConfig, ServerConfig, SimConfig
    from sim.run import prepare

    a = args
    draw = SimConfig(
        seed=a.seed,
        workload=workload_config(a),
        drafter=DrafterConfig(name="none", gamma=0),
        server=ServerConfig(cost=_DRAW_COST, max_num_seqs=a.concurrency),
    )
    domains = [engine_domain(SIM_DOMAINS[int(d)]) for d in prepare(draw).workload.domain]
    reqs = requests_by_domain(corpus, domains, a.prompt_len, a.output_len, a.seed + 1000)
    return domains, reqs


#: noise-seed offset of `--curves-noise other` (any fixed number: a second, independent draw of the noise)
OTHER_NOISE = 7_919


def measurement_requests(reqs, domains: list[str], corpus, args: argparse.Namespace) -> dict:
    """The workload's requests by (engine) domain, rids kept (so the simulator's in-order groups match them),
    with the workload's own noise seeds (`--curves-noise same`: common random numbers) or other ones
    (`other`); a domain the workload lacks gets a few fresh test prompts."""
    from engine.lm.data import DOMAINS, requests_for

    shift = OTHER_NOISE if getattr(args, "curves_noise", "same") == "other" else 0
    out = {}
    for i, d in enumerate(DOMAINS):
        mine = [
            type(r)(r.rid, r.prompt, r.max_new_tokens, r.params, seed=r.seed + shift)
            for r, x in zip(reqs, domains)
            if x == d
        ]
        out[d] = mine or requests_for(
            corpus, d, 4, args.prompt_len, args.output_len, seed=args.seed + 2000 + i
        )
    return out


def twin_config(ctx, pol: str, params: dict, run: EngineRun, curves_path: Path, acc_cfg):
    """The simulator's twin of an engine run: the engine's cost table (linear), its curves, the draft pass
    priced by the measured draft cost by drafting requests (`drafter.cost` = the run's draft CSV, which the
    engine's adaptive policy planned with too; the same policy.draft), the measured per-join seconds
    beyond the prompt tokens' table cost (which the simulator already charges), the draft pass's intake
    (drafter.intake_seconds), the padded verify slots of ragged steps (server.pad_token_seconds) and every
    row's KV padded to the step's longest context (server.padded_context_seconds), as the profiles
    measured them."""
    from sim.config import DrafterConfig, MetricsConfig, PolicyConfig, ServerConfig, SimConfig
    from sim.stepcost import term_settings

    a, n, table = ctx.args, ctx.n, run.table
    mid = n * (1 + a.gamma) // 2
    by_tokens = float(table.latency(mid + a.prompt_len) - table.latency(mid))
    sets = term_settings({**run.terms, "prefill_request_s": max(run.join_s - by_tokens, 0.0)})
    dcfg = DrafterConfig(
        name=ctx.sim_drafter,
        gamma=a.gamma,
        layers=ctx.net.cfg.layers,
        markov_overhead=0.0,
        curves=str(curves_path),
        cost=str(run.draft_path),
        **sets["drafter"],
    )
    return SimConfig(
        seed=a.seed,
        workload=workload_config(a),
        drafter=dcfg,
        policy=PolicyConfig(name=pol, **params),
        server=ServerConfig(
            cost=str(run.cost_path),
            cost_mode="linear",
            layers=ctx.bundle.config.n_layers,
            tp=1,
            max_num_seqs=n,
            policy_cost=None if run.policy_path is None else str(run.policy_path),
            **sets["server"],
        ),
        acceptance=acc_cfg,
        metrics=MetricsConfig(warmup=a.warmup, drain=a.drain),
    )


def run_twin(scfg) -> tuple[dict, object]:
    """(summary, TPOT sample) of the simulator's twin run."""
    import sim
    from twin.compare import sim_summary

    return sim_summary(sim.simulate(scfg))
