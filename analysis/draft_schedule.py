"""`specbed plan --draft-schedule`: the batch-size → draft-depth table adaptive DSpark settles on.

In steady state a request's lagged confidences are its domain's population curve, so for each batch size
R the adaptive policy's depth plan (`specsched.depth.plan_depths`) and the verify lengths DSpark then picks
on those depths are fixed numbers: the schedule a vLLM deployment can set (num_speculative_tokens per batch
size). R requests are spread over the domains in order (chat, math, code, chat, …). Estimated throughput
Θ = expected tokens / step seconds is shown beside full drafting and no speculation.

May import: numpy, the standard library, specsched (and its contracts), sim (config, run, stepcost: the
deployment path, lazily).
"""

from __future__ import annotations

import json

import numpy as np

import specsched as S
from sim.config import DrafterConfig
from specsched.contracts import DOMAINS, curve_matrix, load_curves
from specsched.depth import DraftCost
from specsched.io import safeio
from specsched.io.errors import InputError
from specsched.io.results import write_json

BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _theta(conf: np.ndarray, lengths: np.ndarray, cost: S.CostTable, fixed_s: float) -> float:
    """Expected tokens per second of one step verifying `lengths` of `conf`'s survival; fixed_s: the step's
    ℓ-independent seconds (draft pass, KV reads)."""
    surv = np.cumprod(conf, axis=1)
    gamma = conf.shape[1]
    tokens = conf.shape[0] + float((surv * (np.arange(gamma) < lengths[:, None])).sum())
    seconds = (
        fixed_s + cost.request_seconds * conf.shape[0] + cost.latency(conf.shape[0] + int(lengths.sum()))
    )
    return tokens / seconds


def schedule(
    cost: S.CostTable, curves: np.ndarray, draft: DraftCost, sizes=BATCH_SIZES, *, kv=None
) -> list[dict]:
    """One row per batch size: per-domain depth, K (deepest), mean verify length, Θ adaptive/full/none.

    curves: float64[D, γ] population curves, rows in DOMAINS order. kv: None, or (seconds per KV token
    held with drafting, without, KV tokens a running request holds on average): the context's reads, a
    fixed term of every step, as the simulator's policy sees it (`sim.deployment.Deployment.view`).
    """
    policy = S.make_policy("dspark", draft="adaptive")
    full_policy = S.make_policy("dspark")
    gamma, D = curves.shape[1], curves.shape[0]
    rows = []
    for R in sizes:
        # R requests over the domains in turn; when R is not a multiple of D, every rotation in turn (so
        # one request is not always a chat one) and the figures averaged: equal domain shares
        turns = [(np.arange(R) + o) % D for o in range(1 if R % D == 0 else D)]
        ctx, ctx_none = (0.0, 0.0) if kv is None else (kv[0] * kv[2] * R, kv[1] * kv[2] * R)
        depth: dict[str, int] = {}
        acc, kmax = np.zeros(4), 0  # mean ℓ, Θ adaptive, full, none; the deepest depth
        for dom in turns:
            conf = curves[dom]
            depths = policy.trusted_depths(conf, cost, draft, None, ctx or None)
            draft_s = draft.seconds(depths, cost)
            lengths = policy(conf, cost.with_draft(draft_s + ctx), stale=conf, depths=depths)
            full_s = draft.seconds(np.full(R, gamma), cost)
            full = full_policy(conf, cost.with_draft(full_s + ctx))
            for i, d in enumerate(DOMAINS[:D]):
                if np.any(dom == i):
                    depth.setdefault(d, int(depths[dom == i][0]))
            kmax = max(kmax, int(depths.max()))
            acc += [
                lengths.mean(),
                _theta(conf, lengths, cost, draft_s + ctx),
                _theta(conf, full, cost, full_s + ctx),
                _theta(conf, np.zeros(R, dtype=np.int64), cost, ctx_none),
            ]
        verify, adaptive, full_theta, none = acc / len(turns)
        rows.append(
            {
                "batch_size": R,
                "depth": {d: depth[d] for d in DOMAINS if d in depth},
                "k": kmax,
                "verify_mean": float(verify),
                "theta_adaptive": float(adaptive),
                "theta_full": float(full_theta),
                "theta_none": float(none),
            }
        )
    return rows


def deployment_schedule(cfg, sizes) -> tuple[S.CostTable, DraftCost, list[dict]]:
    """(the table, the drafter's pricing, the schedule) of a simulator config's deployment — built exactly
    as `specbed run` builds it (`sim.run.prepare`: the catalogue + calibrated roofline + CUDA graphs of
    `cost.model`/`cost.gpu`, or `cost.table`; `sim.stepcost.step_cost`: the drafter's price and the
    KV reads), its acceptance model's population curves as the steady-state confidences, and the mean
    context a running request holds (input + half the output tokens)."""
    from sim.run import prepare
    from sim.stepcost import step_cost

    prep = prepare(cfg)
    curves = getattr(prep.model, "curves", None)
    if curves is None or cfg.drafter.effective_gamma == 0:
        raise InputError("a draft schedule needs a drafter with γ ≥ 1 (drafter.name, drafter.gamma)",
                         field="drafter.name")  # fmt: skip
    step = step_cost(prep.config, prep.cost)
    held = float(cfg.workload.input_tokens + cfg.workload.output_tokens / 2)
    kv = (step.kv_s, prep.cost.kv_token_seconds, held)
    return prep.cost, step.drafter, schedule(prep.cost, curves, step.drafter, sizes, kv=kv)


def render(rows: list[dict], cost: S.CostTable, draft: DraftCost, gamma: int) -> str:
    out = [
        f"adaptive DSpark draft schedule: cost={cost.name}, γ={gamma}, drafter={draft.kind} "
        f"{draft.layers:g} layers (+{draft.overhead:g} sampling)",
        f"{'batch':>6} {'depth chat/math/code':>21} {'K':>3} {'mean ℓ':>7} "
        f"{'Θ adaptive':>11} {'Θ full':>10} {'Θ no-spec':>10}",
    ]
    for r in rows:
        depth = "/".join(str(r["depth"].get(d, "-")) for d in DOMAINS)
        out.append(
            f"{r['batch_size']:>6} {depth:>21} {r['k']:>3} {r['verify_mean']:7.2f} "
            f"{r['theta_adaptive']:11.0f} {r['theta_full']:10.0f} {r['theta_none']:10.0f}"
        )
    out.append("K: the deepest draft any request drafts at that batch size (vLLM num_speculative_tokens);")
    out.append("Θ: estimated tokens/s of one replica in steady state (population-curve confidences).")
    return "\n".join(out)


def run(args) -> int:
    """The --draft-schedule mode of `specbed plan` (args from its parser)."""
    if args.cost is None:
        raise InputError("--draft-schedule needs --cost NAME|FILE", field="--cost")
    # before any work (`DIR/` is a folder, never a file named DIR); held until written
    with safeio.claimed_file(args.json, field="--json", inputs=[p for p in (args.cost, args.curves) if p]):
        return _run_held(args)


def _run_held(args) -> int:
    try:
        cost = S.load_cost(args.cost, mode=args.cost_mode)
    except InputError as err:  # name the flag, not the config key the loader knows
        raise InputError(
            err.message, file=err.file, line=err.line, field=err.field if err.file else "--cost"
        ) from None
    if args.layers is not None:
        cost = S.CostTable.from_points(
            cost.tokens,
            cost.seconds,
            mode=cost.mode,
            layers=args.layers,
            name=cost.name,
            request_seconds=cost.request_seconds,
        )
    elif args.cost not in S.BUILTIN_COSTS:
        raise InputError(
            "a CSV cost table needs --layers (target layers, to price draft layers)", field="--layers"
        )
    curves = None if args.curves is None else load_curves(args.curves)
    try:
        matrix = curve_matrix(curves, "dspark", args.gamma)
    except InputError as err:
        raise InputError(err.message, file=err.file, field="--gamma") from None
    cfg = DrafterConfig(name="dspark", gamma=args.gamma)
    draft = DraftCost("parallel", float(cfg.effective_layers * cfg.layer_cost), cfg.markov_overhead)
    rows = schedule(cost, matrix, draft, args.batch_sizes)
    print(render(rows, cost, draft, args.gamma))
    if args.json is not None:
        doc = {"cost": cost.name, "gamma": args.gamma, "drafter": "dspark", "schedule": rows}
        write_json(args.json, doc, sort_keys=False)  # atomic, strict JSON
        print(f"wrote {args.json}")
    return 0


def run_deployment(args) -> int:
    """--draft-schedule on a deployment named the way `specbed run` names it (args.config, args.sets):
    the schedule on its own table and drafter, and the vLLM speculative config it implies."""
    from sim.config_io import load_config

    cfg = load_config(args.config, args.sets)
    with safeio.claimed_file(args.json, field="--json", inputs=[p for p in (args.config,) if p]):
        return _deployment_held(args, cfg)


def _deployment_held(args, cfg) -> int:
    from analysis.spec_config import speculative_config
    from sim.config_io import config_to_dict

    cost, draft, rows = deployment_schedule(cfg, args.batch_sizes)
    print(render(rows, cost, draft, cfg.drafter.effective_gamma))
    doc = config_to_dict(cfg)
    doc["policy"] = {**doc["policy"], "name": "dspark", "draft": "adaptive"}
    spec = speculative_config(doc, {}, rows)
    table = {str(r["batch_size"]): r["k"] for r in rows}
    print("vLLM: --speculative-config " + json.dumps(spec, separators=(",", ":")))
    pairs = ", ".join(f"{b}: {k}" for b, k in table.items())
    print(f"vLLM: batch size -> K (num_speculative_tokens): {pairs}")
    if args.json is not None:
        out = {"cost": cost.name, "gamma": cfg.drafter.effective_gamma, "drafter": cfg.drafter.name,
               "schedule": rows, "speculative_config": spec, "k_by_batch_size": table}  # fmt: skip
        write_json(args.json, out, sort_keys=False)  # atomic, strict JSON
        print(f"wrote {args.json}")
    return 0
