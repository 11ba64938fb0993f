"""`specbed fidelity`: the same closed-loop workload in the real engine and in the simulator, side by side.

Role: the bridge between engine/ and sim/ (the `twin` package is the only one allowed to import both). Steps:
1. Cost: profile the engine on this device at R = concurrency (engine.measure.profile: verify latency vs
   verify tokens B = R·(1 + ℓ), ℓ = 0..γ, and the drafter's seconds per step; the workload's prompt and
   output lengths, mean of the clean steps) just before AND just after each policy's engine run. The
   engine's policy plans with the first; the simulator times its steps with the mean of both (which
   cancels slow drifts of a shared machine) and its policy plans with the first, as the engine's did
   (cost.policy_table). When the mean step time of the two profiles differs by more than --max-drift the
   machine's speed changed during the run, and the policy is measured again (up to --attempts times; the
   drift and attempts are printed). Every profile and run times a speed probe (engine.measure.rollout.
   SpeedProbe, one target forward on a fixed batch) every --probe-every steps and reports its times in
   probe-normalized seconds, so the machine's speed drift between the profile and the run cancels. The
   profile also measures the drafter's intake of accepted drafts (draft seconds per extra token taken in),
   which the twin charges (drafter.intake_seconds), and moves every step to no context: the engine pads
   every row's KV to the step's longest context, which the twin charges per step from its own requests
   (server / drafter.padded_context_seconds), while the engine's policy plans on the table at the closed
   loop's steady longest context (twin.profile). Or read `--cost CSV` (a measured profile,
   specsched.contracts.profile: draft, join and intake seconds by R from its comments, or
   `--draft-seconds`), used by both sides.
2. Curves: measure the drafter's per-position acceptance, confidence stats and request-step samples in the
   engine (engine.measure.evaluate, all γ verified): by default on the workload's own requests, noise seeds
   included (`--curves-prompts workload`, `--curves-noise same`: common random numbers; `other` for other
   seeds; the simulator's i-th request of a domain then replays the steps measured for the engine's i-th
   request of that domain near its own text position: acceptance.groups "in_order"), or on
   --eval-prompts fresh test prompts per domain (`fresh`); or read `--curves JSON` (sim.curves). The
   simulator's acceptance model (`--acceptance`): "empirical" (default) resamples the measured request-steps
   (the confidences the policy saw and their outcomes; sim.empirical), "parametric" fits its truth +
   estimate model to the measured curves with acceptance.auc = the measured mean raw AUC.
3. For each policy: N requests, `concurrency` at a time (a closed loop with zero think time), fixed prompt
   and output lengths, γ drafts, temperature 1; request i has the domain the simulator draws for its
   request i (chat = our prose). Run in the engine (engine.measure.rollout) and in the simulator
   (sim.simulate: workload closed, the engine's cost CSV with cost_mode "linear", the engine's curves, the
   draft pass priced from what was drafted: `drafter.cost` = draft_<arm>.csv, the profile's draft seconds
   by drafting requests (StepOutput.drafting: R with full drafting, #{depth > 0} with planned depths; the
   drain tail gives the smaller R), exact at R = concurrency, Markov head included).
   Draft modes (`--draft full|adaptive|both`, default both): each policy with full drafting, then each but
   `ar` with draft = "adaptive" (arm `<policy>+adaptive`): the engine's policy plans depths with the same
   draft cost rule the twin prices with, and its young requests' stale prior is the population curve the
   simulator gives them (the measured curves of the workload's domains, averaged over its requests).
   Engine times are this process's CPU seconds by default on the CPU (`--clock process`: other jobs on a
   shared machine leak into it less than into wall time; `--clock wall`), wall time on CUDA.
4. Print throughput (tok/s), TPOT mean / p50 / p99, mean accepted drafts and verify tokens per
   request-step, with relative errors (sim vs engine), and the two-sample KS statistic of the TPOT
   distributions (twin.compare). Goal: |error| ≤ 5% on throughput and mean TPOT. The default 160
   requests keep sampling noise below that (measured: docs/notes/2026-12-01-fidelity.md).
Writes cost_<arm>.csv (the simulator's timing table), cost_<arm>_policy.csv (the policy's), draft_<arm>.csv
(the draft pass by drafting requests), curves.json, fidelity.json and config.json (the resolved flags) to
--out DIR. This module holds the command line and the orchestration; each step is a named function of
twin.run.

May import: stdlib, specsched.io.errors, twin.run and twin.workload (which import
engine.* and sim.* lazily).
"""

from __future__ import annotations

import argparse
import sys

from specsched.io.errors import InputError
from specsched.io.results import add_out_dir, dumps_json, write_results
from twin import run as steps
from twin.compare import compare
from twin.workload import build_workload, measurement_requests, requests_by_domain, run_twin, twin_config

__all__ = ["arms", "main", "measurement_requests", "parse_args", "requests_by_domain"]

DRAFT_CHOICES = ("full", "adaptive", "both")


def arms(args: argparse.Namespace) -> list[tuple[str, str, dict]]:
    """(label, policy, params) of each engine-vs-simulator comparison: --policies in --draft's modes
    ("full" first; "ar" never drafts, so it has no adaptive arm; an adaptive arm is labelled pol+adaptive)."""
    out = []
    pols = [p.strip() for p in args.policies.split(",") if p.strip()]
    modes = ("full", "adaptive") if args.draft == "both" else (args.draft,)
    for mode in modes:
        for pol in pols:
            if mode == "adaptive" and pol == "ar":
                if args.draft == "adaptive":
                    out.append((pol, pol, {}))
                continue
            params = {"k": args.fixed_k} if pol == "fixed" else {}
            if mode == "adaptive":
                out.append((f"{pol}+adaptive", pol, dict(params, draft="adaptive")))
            else:
                out.append((pol, pol, params))
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="specbed fidelity", description="engine vs simulator, same workload")
    p.add_argument("--checkpoints", default=None, help="checkpoint directory (default: engine/checkpoints)")
    p.add_argument("--drafter", default="dspark2")
    p.add_argument("--policies", default="ar,fixed,dspark")
    p.add_argument(
        "--draft",
        default="both",
        help="draft modes to compare: full (gamma drafted per request), adaptive (depths planned too: "
        "policy.draft on both sides; ar ignores it) or both (default: each policy full, then each but ar "
        "adaptive)",
    )
    p.add_argument("--fixed-k", type=int, default=3, help="k of policy fixed")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--requests", type=int, default=160, help="requests in all (closed loop)")
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--gamma", type=int, default=7)
    p.add_argument("--eval-prompts", type=int, default=24, help="prompts per domain to measure curves")
    _measurement_args(p)
    return p


def _measurement_args(p: argparse.ArgumentParser) -> None:
    """The flags of what is measured and how: inputs given instead, curves, drift, probe, clock, output."""
    p.add_argument(
        "--cost", default=None, help="cost CSV from `specbed engine profile` (default: profile now)"
    )
    p.add_argument("--draft-seconds", type=float, default=None, help="draft seconds per step (with --cost)")
    p.add_argument("--curves", default=None, help="curves JSON (default: measure now)")
    p.add_argument(
        "--acceptance",
        choices=("empirical", "parametric"),
        default="empirical",
        help="simulator acceptance model: resample the engine's measured steps (default) or the parametric "
        "model over the measured curves and mean AUC",
    )
    p.add_argument(
        "--curves-prompts",
        choices=("workload", "fresh"),
        default="workload",
        help="measure the curves and samples on the workload's own prompts (other noise; the simulator "
        "replays request i's steps for request i) or on --eval-prompts fresh test prompts per domain",
    )
    p.add_argument(
        "--curves-noise",
        choices=("same", "other"),
        default="same",
        help="with --curves-prompts workload: measure with the workload's own noise seeds (default: common "
        "random numbers, so the twin's acceptance is not off by one noise draw against another) or others",
    )
    p.add_argument(
        "--max-drift",
        type=float,
        default=0.1,
        help="rerun a policy (up to --attempts times) when the mean step time of the profiles just before "
        "and after its engine run differ by more than this fraction (a machine whose speed changed)",
    )
    p.add_argument("--attempts", type=int, default=3)
    p.add_argument(
        "--probe-every",
        type=int,
        default=4,
        help="time a fixed slice of engine work (one target forward) every N engine steps, in the profiles "
        "and in the runs, and express every engine time in probe-normalized seconds (the machine's speed "
        "drift taken out; the probe's own time is excluded); 0 = off (raw times)",
    )
    p.add_argument("--warmup", type=float, default=0.1)
    p.add_argument("--drain", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="torch device: cpu (default), cuda or cuda:N")
    p.add_argument(
        "--clock",
        choices=("process", "wall"),
        default=None,
        help="engine timing: process CPU time (default on cpu: immune to other jobs) or wall time",
    )
    add_out_dir(p, default="results/fidelity", help="folder for fidelity.json, config.json, the cost and "
                "draft tables (default results/fidelity)")  # fmt: skip
    p.add_argument("--quiet", action="store_true")


def parse_args(argv: list[str]) -> argparse.Namespace:
    args = _parser().parse_args(argv)
    if args.draft not in DRAFT_CHOICES:
        raise InputError(f"one of {', '.join(DRAFT_CHOICES)}, got {args.draft!r}", field="--draft")
    if args.probe_every < 0:
        raise InputError(f"must be >= 0, got {args.probe_every}", field="--probe-every")
    if not args.max_drift >= 0:
        raise InputError(f"must be >= 0, got {args.max_drift}", field="--max-drift")
    for name in (
        "concurrency",
        "requests",
        "prompt_len",
        "output_len",
        "gamma",
        "eval_prompts",
        "threads",
        "attempts",
    ):
        if getattr(args, name) < 1:
            raise InputError(f"must be >= 1, got {getattr(args, name)}", field=f"--{name.replace('_', '-')}")
    _check_more(args)  # every flag before any measuring (a bad one used to surface after minutes)
    return args


def _check_more(args: argparse.Namespace) -> None:
    import math

    from specsched.policies import POLICIES

    pols = [p.strip() for p in args.policies.split(",") if p.strip()]
    bad = [p for p in pols if p not in POLICIES] or ([] if pols else [args.policies])
    if bad:
        raise InputError(f"unknown policy {bad[0]!r} (known: {', '.join(POLICIES)})", field="--policies")
    if not 1 <= args.fixed_k <= args.gamma:
        raise InputError(f"must be in [1, --gamma={args.gamma}], got {args.fixed_k}", field="--fixed-k")
    if args.draft_seconds is not None and not (math.isfinite(args.draft_seconds) and args.draft_seconds >= 0):
        raise InputError(f"must be a finite number >= 0, got {args.draft_seconds}", field="--draft-seconds")
    for name in ("warmup", "drain"):
        if not 0 <= getattr(args, name) < 1:
            raise InputError(f"must be in [0, 1), got {getattr(args, name)}", field=f"--{name}")
    if args.warmup + args.drain >= 1:
        raise InputError(f"--warmup + --drain must be < 1, got {args.warmup + args.drain:g}", field="--drain")
    if args.seed < 0:
        raise InputError(f"must be >= 0, got {args.seed}", field="--seed")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    inputs = steps.load_inputs(args)  # input files first: a bad one is reported before any work starts
    ctx = steps.setup(args, inputs)
    domains, reqs = build_workload(args, ctx.corpus)
    curves, curves_path, in_order = steps.measure_curves(ctx, inputs, reqs, domains)
    acc_cfg = steps.acceptance_config(ctx, curves, in_order)
    ctx.prior = steps.population_prior(ctx, curves, domains)
    report: dict = {
        "auc": acc_cfg.auc,
        "acceptance": args.acceptance,
        "clock": ctx.clock,
        "args": vars(args),
        "policies": {},
    }
    lines = [
        f"fidelity: {args.requests} requests, {ctx.n} concurrent (closed loop), prompt {args.prompt_len}, "
        f"output {args.output_len}, gamma {args.gamma}, drafter {args.drafter}, window warmup "
        f"{args.warmup} / drain {args.drain}, {ctx.clock} clock, {args.acceptance} acceptance",
        f"{'policy':<16}{'metric':<20}{'engine':>11}{'sim':>11}{'rel.err':>9}",
    ]
    worst = 0.0
    report["stale_prior"] = list(ctx.prior)
    for label, pol, params in arms(args):
        run = steps.run_engine(ctx, inputs, pol, params, reqs, label)
        scfg = twin_config(ctx, pol, params, run, curves_path, acc_cfg)
        simres, sim_tpot = run_twin(scfg)
        report["policies"][label], rows, err = compare(label, run, simres, sim_tpot, scfg)
        lines += rows
        worst = max(worst, err)
    lines.append(f"worst |error| on throughput / mean TPOT: {100 * worst:.1f}% (goal <= 5%)")
    report["worst_error"] = worst
    out = ctx.out
    fidelity = dumps_json(report, indent=1, sort_keys=False)
    write_results(out, {"fidelity.json": fidelity}, config={"command": "fidelity", **vars(args)})
    print("\n".join(lines))
    print(f"wrote {out}/fidelity.json, config.json, cost_<arm>.csv, draft_<arm>.csv, {curves_path}")
    return 0
