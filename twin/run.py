"""The named steps of `specbed fidelity` (twin.cli holds the command line and the orchestration).

Role: each function is one step of the comparison: read the given inputs (`load_inputs`), set up the
engine (`setup`), measure the acceptance curves (`measure_curves`), run one policy in the engine
(`run_engine`, with the profiles bracketing it, twin.profile, and the drift retries); its simulator
twin is `twin.workload.twin_config` / `run_twin` and the comparison `twin.compare.compare`. Files between
the two sides go through specsched.contracts (curves, profile, domains).

May import: numpy, torch, stdlib, specsched, engine.*, sim.*, twin.compare,
twin.profile, twin.workload.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from specsched.contracts import DOMAINS as SIM_DOMAINS
from specsched.contracts import Profile, load_curves, read_profile, save_curves
from specsched.io import safeio
from specsched.io.errors import InputError
from specsched.stepcost import profile_terms
from twin.compare import engine_summary
from twin.engine_run import EngineRun
from twin.profile import (
    at_context,
    bracketed,
    profile_now,
    speed_ratio,
    steady_longest,
    write_draft_cost,
)
from twin.workload import measurement_requests

SIM_NAME = {"eagle": "eagle3", "dflash": "dflash", "dspark": "dspark"}


@dataclass
class Inputs:
    """What the user gave: a measured profile (`--cost`) with its draft / join seconds at R = concurrency,
    and a curves file (`--curves`); None where fidelity measures them itself."""

    given: Profile | None
    draft_s: float | None
    join_s: float
    curves: object | None
    #: the given profile's step-cost terms by name (`specsched.stepcost.profile_terms`)
    terms: dict = field(default_factory=dict)


@dataclass
class Setup:
    """The engine side: models, corpus, timing clock, output folder, progress printer."""

    args: argparse.Namespace
    bundle: object
    corpus: object
    net: object
    clock: str
    out: Path
    say: object
    prior: tuple[float, ...] = ()  # the young requests' stale prior (population_prior), set with the curves
    probe: object = None  # engine.measure.rollout.SpeedProbe timed in every profile and run (--probe-every)

    @property
    def n(self) -> int:
        return self.args.concurrency

    @property
    def sim_drafter(self) -> str:
        return SIM_NAME[self.net.cfg.kind]


def load_inputs(args: argparse.Namespace) -> Inputs:
    """Read `--cost` and `--curves` before any work: a bad file is reported first (InputError)."""
    given = read_profile(args.cost) if args.cost else None
    curves = load_curves(args.curves) if args.curves else None
    draft_s, join_s = None, 0.0
    if given is not None:
        n = args.concurrency
        draft_s = args.draft_seconds if args.draft_seconds is not None else given.draft_s.get(n)
        join_s = given.join_s.get(n, 0.0)
        if draft_s is None:
            raise InputError(
                f"no draft seconds for R={n} in the cost file; pass --draft-seconds", file=args.cost
            )
    if given is None:
        return Inputs(None, None, 0.0, curves)
    n = args.concurrency
    return Inputs(given, draft_s, join_s, curves, profile_terms(given, n))


def setup(args: argparse.Namespace, inputs: Inputs) -> Setup:
    """Load the checkpoints, check the drafter against the given curves and the context, warm the engine."""
    import torch

    from engine.lm.checkpoint import corpus_for, load_bundle
    from engine.measure.profile import warm_up
    from engine.measure.rollout import check_device

    torch.set_num_threads(args.threads)
    check_device(args.device)
    clock = args.clock or ("process" if args.device == "cpu" else "wall")
    start = time.perf_counter()

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"  [{time.perf_counter() - start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    bundle = load_bundle(args.checkpoints, [args.drafter])
    out = safeio.check_dir(args.out, field="--out")  # created and probed before any measuring
    corpus = corpus_for(bundle)
    ctx = Setup(args, bundle, corpus, bundle.net(args.drafter), clock, out, say)
    curves = inputs.curves
    if curves is not None and args.acceptance == "empirical" and curves.samples_for(ctx.sim_drafter) is None:
        raise InputError(
            f"has no samples of drafter {ctx.sim_drafter!r} for --acceptance empirical (a version-1 file?); "
            "measure them with `specbed engine curves` or pass --acceptance parametric",
            file=args.curves,
            field="samples",
        )
    max_len = bundle.config.max_len
    if args.prompt_len + args.output_len + args.gamma + 1 > max_len:
        raise InputError(
            f"prompt + output + gamma + 1 exceeds the target's context {max_len}", field="--output-len"
        )
    warm_up(bundle, corpus, args.drafter, ctx.n, args.gamma, args.prompt_len, args.device)
    if args.probe_every:
        from engine.measure.rollout import SpeedProbe

        ctx.probe = SpeedProbe(bundle.target(args.device), rows=ctx.n)
    return ctx


def measure_curves(ctx: Setup, inputs: Inputs, reqs, domains: list[str]) -> tuple[object, Path, bool]:
    """(curves, curves.json path in the output folder, in_order): the given curves file copied, or the
    drafter's curves and request-step samples measured now (on the workload's own prompts with other noise
    by default: then the simulator's request i replays the engine's request i, in_order = True)."""
    from engine.measure.curves import build_curves
    from engine.measure.evaluate import EvalConfig, evaluate

    a = ctx.args
    path = ctx.out / "curves.json"
    if inputs.curves is not None:
        safeio.write_text(path, Path(a.curves).read_text())  # atomic
        return inputs.curves, path, False
    ecfg = EvalConfig(
        prompts=a.eval_prompts,
        prompt_len=a.prompt_len,
        new_tokens=a.output_len,
        gamma=a.gamma,
        seed=a.seed + 3,
        device=a.device,
    )
    in_order = a.curves_prompts == "workload"
    measure_on = measurement_requests(reqs, domains, ctx.corpus, a) if in_order else None
    ctx.say(f"measuring acceptance curves and samples on {a.curves_prompts} prompts")
    res = evaluate(ctx.bundle, ctx.corpus, ecfg, [a.drafter], progress=ctx.say, requests=measure_on)
    save_curves(build_curves(res, {ctx.sim_drafter: a.drafter}, "specbed fidelity"), path)
    return load_curves(path), path, in_order


def acceptance_config(ctx: Setup, curves, in_order: bool):
    """The simulator's acceptance model: the measured mean raw AUC (for "parametric") and the groups."""
    from sim.acceptance import AcceptanceConfig

    aucs = [(curves.confidence_stats(ctx.sim_drafter, d) or {}).get("auc_raw") for d in SIM_DOMAINS]
    aucs = [float(np.mean(x)) for x in aucs if x is not None]
    auc = min(max(float(np.mean(aucs)) if aucs else 0.85, 0.51), 1.0)
    groups = "in_order" if in_order else "random"
    return AcceptanceConfig(auc=auc, overconfidence=0.0, model=ctx.args.acceptance, groups=groups)


def _draft_rule(path: Path):
    """The specsched.DraftCost both sides price a planned draft pass with (sim.drafter's measured rule)."""
    from specsched import CostTable, DraftCost

    return DraftCost(
        "parallel", measured=CostTable.from_csv(path, mode="linear", key="requests"), index="requests"
    )


def population_prior(ctx: Setup, curves, domains: list[str]) -> tuple[float, ...]:
    """The engine's stale prior for young requests: the population curve the simulator gives them (its
    domains' rows of the measured curves), averaged over the workload's requests; floored above 0 (an
    adaptive engine refuses a 0: that position would never be drafted)."""
    from specsched.contracts import engine_domain

    g, rows = ctx.args.gamma, {}
    for d in SIM_DOMAINS:
        if curves.has(ctx.sim_drafter, d):
            rows.setdefault(engine_domain(d), []).append(np.asarray(curves.get(ctx.sim_drafter, d))[:g])
    per = [np.mean(rows[d], axis=0) for d in domains if d in rows]
    mean = np.mean(per, axis=0) if per else np.full(g, 0.5)
    return tuple(float(x) for x in np.clip(mean, 1e-3, 1.0))


def _engine_once(ctx: Setup, pol: str, params: dict, reqs, table, draft_s: float, draft_path: Path):
    """Decode the workload once with policy `pol` planning on `table` + the draft seconds (and, with
    draft = "adaptive", the draft cost rule of `draft_path` and the population prior)."""
    from engine.lm.drafters import runtime_drafter
    from engine.measure.rollout import engine_config, run_rollout

    a, max_len = ctx.args, ctx.bundle.config.max_len
    extra = {}
    if params.get("draft") == "adaptive":
        extra = {"stale_prior": ctx.prior, "draft_cost": _draft_rule(draft_path)}
    ecfg = engine_config(
        a.device, gamma=a.gamma, policy=pol, policy_params=params, max_running=ctx.n, **extra
    )
    target = ctx.bundle.target(a.device)
    temps = ctx.bundle.drafters[a.drafter][1]
    drafter = runtime_drafter(ctx.net, target, slots=ctx.n, max_len=max_len, temps=temps)
    cost = table.with_draft(draft_s)
    ro, _ = run_rollout(
        target,
        drafter,
        ecfg,
        reqs,
        max_len=max_len,
        cost=cost,
        clock=ctx.clock,
        probe=ctx.probe,
        probe_every=a.probe_every,
    )
    return ro


def run_engine(
    ctx: Setup, inputs: Inputs, pol: str, params: dict, reqs, label: str | None = None
) -> EngineRun:
    """Run policy `pol` in the engine. Without --cost, profile just before (the policy plans with it) and
    just after; when the two differ by more than --max-drift the machine's speed changed: run again (up to
    --attempts times)."""
    a, layers = ctx.args, ctx.bundle.config.n_layers
    label = label or pol
    cost_path, policy_path = ctx.out / f"cost_{label}.csv", None
    draft_path = ctx.out / f"draft_{label}.csv"
    steady = steady_longest(a.prompt_len, a.output_len, ctx.n)
    for attempt in range(1, a.attempts + 1):
        terms, speed = inputs.terms, 1.0
        if inputs.given is None:
            before = profile_now(ctx)
            write_draft_cost(before.draft_s, ctx.n, draft_path)
            planned, draft_s, join_s = at_context(before, ctx.n, steady), None, 0.0
        else:
            draft_s, join_s = inputs.draft_s, inputs.join_s
            safeio.write_text(cost_path, Path(a.cost).read_text())  # atomic
            write_draft_cost({ctx.n: draft_s}, ctx.n, draft_path)
            planned = at_context(inputs.given, ctx.n, steady)
            if a.draft_seconds is not None:
                planned = dataclasses.replace(planned, draft_s={ctx.n: draft_s})
        if inputs.given is None or inputs.given.context_ref == 0:  # the engine policy's table: the twin's
            policy_path = ctx.out / f"cost_{label}_policy.csv"
            planned.write(policy_path)
        table = planned.table(layers=layers, name="engine" if inputs.given is None else Path(a.cost).stem)
        plan_draft_s = planned.draft_s.get(ctx.n, draft_s)
        draft_s = plan_draft_s if draft_s is None else draft_s
        ro = _engine_once(ctx, pol, params, reqs, table, plan_draft_s, draft_path)
        eng, eng_tpot = engine_summary(ro, a.warmup, a.drain)
        drift = 0.0
        if inputs.given is None:
            after = profile_now(ctx)
            speed = speed_ratio(ro.probe_s, before, after)
            table, draft_s, join_s, drift, terms = bracketed(ctx, before, after, cost_path, draft_path)
        if drift <= a.max_drift or attempt == a.attempts:
            break
        ctx.say(
            f"{label}: step time moved {100 * drift:.0f}% between the profiles around the run (> "
            f"{100 * a.max_drift:.0f}%); the machine's speed changed: attempt {attempt + 1} of {a.attempts}"
        )
    run = EngineRun(
        eng,
        eng_tpot,
        ro.wall_s,
        table,
        draft_s,
        join_s,
        drift,
        attempt,
        cost_path,
        policy_path,
        draft_path,
        dict(terms),
        speed,
    )
    ms = table.seconds * 1e3
    ctx.say(
        f"{label}: engine {ro.wall_s:.1f}s, {eng['steps']} steps, verify {ms[0]:.2f}..{ms[-1]:.2f} ms, "
        f"draft {draft_s * 1e3:.2f} ms, join {join_s * 1e3:.2f} ms, profile drift {100 * drift:.0f}% "
        f"(attempt {attempt}), probe time during the run x{speed:.3f} of the profiles'"
    )
    return run
