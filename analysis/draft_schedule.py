"""`specbed plan --draft-schedule`: the batch-size → draft-depth table adaptive DSpark settles on.

In steady state a request's lagged confidences are its domain's population curve, so for each batch size
R the adaptive policy's depth plan (`specsched.depth.plan_depths`) and the verify lengths DSpark then picks
on those depths are fixed numbers: the schedule a vLLM deployment can set (num_speculative_tokens per batch
size). R requests are spread over the domains in order (chat, math, code, chat, …). Estimated throughput
Θ = expected tokens / step seconds is shown beside full drafting and no speculation.

May import: numpy, the standard library, specsched (and its contracts), sim.config (drafter defaults).
"""

from __future__ import annotations

import numpy as np

import specsched as S
from sim.config import DrafterConfig
from specsched import safeio
from specsched.contracts import DOMAINS, curve_matrix, load_curves
from specsched.depth import DraftCost
from specsched.errors import InputError
from specsched.results import write_json

BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _theta(conf: np.ndarray, lengths: np.ndarray, cost: S.CostTable, draft_s: float) -> float:
    """Expected tokens per second of one step verifying `lengths` of `conf`'s survival."""
    surv = np.cumprod(conf, axis=1)
    gamma = conf.shape[1]
    tokens = conf.shape[0] + float((surv * (np.arange(gamma) < lengths[:, None])).sum())
    seconds = (
        draft_s + cost.request_seconds * conf.shape[0] + cost.latency(conf.shape[0] + int(lengths.sum()))
    )
    return tokens / seconds


def schedule(cost: S.CostTable, curves: np.ndarray, draft: DraftCost, sizes=BATCH_SIZES) -> list[dict]:
    """One row per batch size: per-domain depth, K (deepest), mean verify length, Θ adaptive/full/none.

    curves: float64[D, γ] population curves, rows in DOMAINS order.
    """
    policy = S.make_policy("dspark", draft="adaptive")
    full_policy = S.make_policy("dspark")
    gamma = curves.shape[1]
    rows = []
    for R in sizes:
        dom = np.arange(R) % curves.shape[0]
        conf = curves[dom]
        depths = policy.depths(conf, cost, draft)
        draft_s = draft.seconds(depths, cost)
        lengths = policy(conf, cost.with_draft(draft_s), stale=conf, depths=depths)
        full_s = draft.seconds(np.full(R, gamma), cost)
        full = full_policy(conf, cost.with_draft(full_s))
        rows.append(
            {
                "batch_size": R,
                "depth": {d: int(depths[dom == i][0]) for i, d in enumerate(DOMAINS) if np.any(dom == i)},
                "k": int(depths.max()),
                "verify_mean": float(lengths.mean()),
                "theta_adaptive": _theta(conf, lengths, cost, draft_s),
                "theta_full": _theta(conf, full, cost, full_s),
                "theta_none": _theta(conf, np.zeros(R, dtype=np.int64), cost, 0.0),
            }
        )
    return rows


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
    if args.json is not None:  # before any work; `DIR/` is a folder, never a file named DIR
        safeio.check_file(args.json, field="--json", inputs=[p for p in (args.cost, args.curves) if p])
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
