"""`specbed fidelity`: the same closed-loop workload in the real engine and in the simulator, side by side.

Role: the bridge between engine/ and sim/ (the only module allowed to import both). Steps:
1. Cost: profile the engine on this device at R = concurrency (engine.measure.profile: verify latency vs
   verify tokens B = R·(1 + ℓ), ℓ = 0..γ, and the drafter's seconds per step; the workload's prompt and
   output lengths, mean of the clean steps) just before AND just after each policy's engine run. The
   engine's policy plans with the first; the simulator times its steps with the mean of both (which
   cancels slow drifts of a shared machine) and its policy plans with the first, as the engine's did
   (server.policy_cost). When the mean step time of the two profiles differs by more than --max-drift the
   machine's speed changed during the run, and the policy is measured again (up to --attempts times; the
   drift and attempts are printed). Or read `--cost CSV` (a measured profile,
   specsched.contracts.profile: draft and join seconds by R from its comments, or `--draft-seconds`), used
   by both sides.
2. Curves: measure the drafter's per-position acceptance, confidence stats and request-step samples in the
   engine (engine.measure.evaluate, all γ verified): by default on the workload's own prompts with other
   sampling noise (`--curves-prompts workload`; the simulator's i-th request of a domain then replays the
   steps measured for the engine's i-th request of that domain: acceptance.groups "in_order"), or on
   --eval-prompts fresh test prompts per domain (`fresh`); or read `--curves JSON` (sim.curves). The
   simulator's acceptance model (`--acceptance`): "empirical" (default) resamples the measured request-steps
   (the confidences the policy saw and their outcomes; sim.empirical), "parametric" fits its truth +
   estimate model to the measured curves with acceptance.auc = the measured mean raw AUC.
3. For each policy: N requests, `concurrency` at a time (a closed loop with zero think time), fixed prompt
   and output lengths, γ drafts, temperature 1; request i has the domain the simulator draws for its
   request i (chat = our prose). Run in the engine (engine.measure.rollout) and in the simulator
   (sim.simulate: workload closed, the engine's cost CSV with cost_mode "linear", the engine's curves, the
   draft priced as `layers · layer_cost · layer_seconds(...)` with layer_cost fitted so the simulated draft
   seconds at R = concurrency equal the measured ones, the Markov overhead folded into it).
   Engine times are this process's CPU seconds by default on the CPU (`--clock process`: other jobs on a
   shared machine leak into it less than into wall time; `--clock wall`), wall time on CUDA.
4. Print throughput (tok/s), TPOT mean / p50 / p99, mean accepted drafts and verify tokens per
   request-step, with relative errors (sim vs engine), and the two-sample KS statistic of the TPOT
   distributions (specbed.fidelity_stats). Goal: |error| ≤ 10% on throughput and mean TPOT. Sampling noise
   alone moves a 64-request run's accepted drafts per step by ~4% (sd) under `dspark`, hence 160 requests.
Writes cost_<policy>.csv (the simulator's timing table), cost_<policy>_policy.csv (the policy's), curves.json
and fidelity.json to --out-dir.

May import: numpy, torch, stdlib, specsched, engine.*, sim.*.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from specbed.fidelity_stats import METRICS, engine_summary, ks_statistic, level_drift, sim_summary
from specsched.errors import InputError

SIM_NAME = {"eagle": "eagle3", "dflash": "dflash", "dspark": "dspark"}


def requests_by_domain(corpus, domains: list[str], prompt_len: int, output_len: int, seed: int):
    """Engine requests i = 0..N−1 of the given (engine) domains, prompts cut from the test split."""
    from engine.measure.stats import requests_for

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


def _workload(args: argparse.Namespace):
    from sim.config import WorkloadConfig

    return WorkloadConfig(
        kind="closed",
        concurrency=args.concurrency,
        num_requests=args.requests,
        input_tokens=args.prompt_len,
        output_tokens=args.output_len,
        domain="mix",
    )


def _probe_config(args: argparse.Namespace, out: Path):
    """A simulator config with the fidelity workload (its domain draws only; writes out/probe.csv)."""
    from sim.config import DrafterConfig, ServerConfig, SimConfig

    (out / "probe.csv").write_text("tokens,seconds\n1,1\n")
    return SimConfig(
        seed=args.seed,
        workload=_workload(args),
        drafter=DrafterConfig(name="none", gamma=0),
        server=ServerConfig(cost=str(out / "probe.csv"), cost_mode="linear", max_num_seqs=args.concurrency),
    )


def measurement_requests(reqs, domains: list[str], corpus, args: argparse.Namespace) -> dict:
    """The workload's requests by (engine) domain with other noise seeds, rids kept (so the simulator's
    in-order groups match them); a domain the workload lacks gets a few fresh test prompts."""
    from engine.lm.data import DOMAINS
    from engine.measure.stats import requests_for

    out = {}
    for i, d in enumerate(DOMAINS):
        mine = [
            type(r)(r.rid, r.prompt, r.max_new_tokens, r.params, seed=r.seed + 7_919)
            for r, x in zip(reqs, domains)
            if x == d
        ]
        out[d] = mine or requests_for(
            corpus, d, 4, args.prompt_len, args.output_len, seed=args.seed + 2000 + i
        )
    return out


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="specbed fidelity", description="engine vs simulator, same workload")
    p.add_argument("--checkpoints", default=None, help="checkpoint directory (default: engine/checkpoints)")
    p.add_argument("--drafter", default="dspark2")
    p.add_argument("--policies", default="ar,fixed,dspark")
    p.add_argument("--fixed-k", type=int, default=3, help="k of policy fixed")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--requests", type=int, default=160, help="requests in all (closed loop)")
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--gamma", type=int, default=7)
    p.add_argument("--eval-prompts", type=int, default=24, help="prompts per domain to measure curves")
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
        "--max-drift",
        type=float,
        default=0.1,
        help="rerun a policy (up to --attempts times) when the mean step time of the profiles just before "
        "and after its engine run differ by more than this fraction (a machine whose speed changed)",
    )
    p.add_argument("--attempts", type=int, default=3)
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
    p.add_argument("--out-dir", default="results/fidelity")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
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
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    import torch

    import sim
    from engine.lm.checkpoint import corpus_for, load_bundle
    from engine.lm.drafters import runtime_drafter
    from engine.measure.curves import build_curves
    from engine.measure.evaluate import EvalConfig, evaluate
    from engine.measure.profile import ProfileConfig, profile, warm_up
    from engine.measure.rollout import check_device, engine_config, run_rollout
    from sim.acceptance import AcceptanceConfig
    from sim.config import DrafterConfig, MetricsConfig, PolicyConfig, ServerConfig, SimConfig
    from sim.drafter import draft_seconds_table
    from sim.run import prepare
    from specsched import CostTable
    from specsched.contracts import DOMAINS as SIM_DOMAINS
    from specsched.contracts import Profile, engine_domain, load_curves, read_profile, save_curves

    torch.set_num_threads(args.threads)
    check_device(args.device)
    clock = args.clock or ("process" if args.device == "cpu" else "wall")
    start = time.perf_counter()

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"  [{time.perf_counter() - start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    # Input files first: a bad cost table or curves file is reported before any work starts.
    given = read_profile(args.cost) if args.cost else None
    curves = load_curves(args.curves) if args.curves else None
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bundle = load_bundle(args.checkpoints, [args.drafter])
    corpus = corpus_for(bundle)
    net = bundle.net(args.drafter)
    kind, layers = net.cfg.kind, net.cfg.layers
    if curves is not None and args.acceptance == "empirical" and curves.samples_for(SIM_NAME[kind]) is None:
        raise InputError(
            f"has no samples of drafter {SIM_NAME[kind]!r} for --acceptance empirical (a version-1 file?); "
            "measure them with `specbed engine curves` or pass --acceptance parametric",
            file=args.curves,
            field="samples",
        )
    n, tcfg = args.concurrency, bundle.config
    max_len = tcfg.max_len
    if args.prompt_len + args.output_len + args.gamma + 1 > max_len:
        raise InputError(
            f"prompt + output + gamma + 1 exceeds the target's context {max_len}", field="--output-len"
        )
    given_draft, given_join = None, 0.0
    if given is not None:
        given_draft = args.draft_seconds if args.draft_seconds is not None else given.draft_s.get(n)
        given_join = given.join_s.get(n, 0.0)
        if given_draft is None:
            raise InputError(
                f"no draft seconds for R={n} in the cost file; pass --draft-seconds", file=args.cost
            )
    warm_up(bundle, corpus, args.drafter, n, args.gamma, args.prompt_len, args.device)

    def profile_now():
        """Verify latency vs B and draft seconds at R = n, profiled now in the workload's regime: its prompt
        and output lengths (so contexts span the same range) and the MEAN of the clean steps (the expected
        cost, with the drafter's once-per-request context intake included as often as in the workload)."""
        pcfg = ProfileConfig(
            requests=(n,),
            gamma=args.gamma,
            drafter=args.drafter,
            prompt_len=args.prompt_len,
            new_tokens=args.output_len,
            device=args.device,
            clock=clock,
            statistic="mean",
            extra_requests=max(n // 2, 2),
        )
        return profile(bundle, corpus, pcfg, warm=False)

    # The engine serves the domain sequence the simulator draws (request i of both has the same domain).
    sim_domains = [SIM_DOMAINS[int(d)] for d in prepare(_probe_config(args, out)).workload.domain]
    (out / "probe.csv").unlink()
    eng_domains = [engine_domain(d) for d in sim_domains]
    reqs = requests_by_domain(corpus, eng_domains, args.prompt_len, args.output_len, args.seed + 1000)
    curves_path = out / "curves.json"
    in_order = False
    if curves is not None:
        curves_path.write_text(Path(args.curves).read_text())
    else:
        ecfg = EvalConfig(
            prompts=args.eval_prompts,
            prompt_len=args.prompt_len,
            new_tokens=args.output_len,
            gamma=args.gamma,
            seed=args.seed + 3,
            device=args.device,
        )
        measure_on = None
        if args.curves_prompts == "workload":
            # The workload's own prompts with other noise: the simulator's request i replays the steps
            # measured on the engine's request i, so prompt-to-prompt spread is not a simulator error.
            measure_on = measurement_requests(reqs, eng_domains, corpus, args)
            in_order = True
        say(f"measuring acceptance curves and samples on {args.curves_prompts} prompts")
        res = evaluate(bundle, corpus, ecfg, [args.drafter], progress=say, requests=measure_on)
        save_curves(build_curves(res, {SIM_NAME[kind]: args.drafter}, "specbed fidelity"), curves_path)
        curves = load_curves(curves_path)
    aucs = [(curves.confidence_stats(SIM_NAME[kind], d) or {}).get("auc_raw") for d in SIM_DOMAINS]
    aucs = [float(np.mean(a)) for a in aucs if a is not None]
    auc = min(max(float(np.mean(aucs)) if aucs else 0.85, 0.51), 1.0)
    acc_cfg = AcceptanceConfig(
        auc=auc, overconfidence=0.0, model=args.acceptance, groups="in_order" if in_order else "random"
    )

    def sim_config(
        pol: str, params: dict, table: CostTable, draft_s: float, join_s: float, cost_path, policy_path
    ):
        """The simulator's twin of the engine run. join_s: the measured extra seconds per joining request;
        the simulator already charges its prompt tokens through the table, so only the rest is added."""
        mid = n * (1 + args.gamma) // 2
        by_tokens = float(table.latency(mid + args.prompt_len) - table.latency(mid))
        dcfg = DrafterConfig(
            name=SIM_NAME[kind], gamma=args.gamma, layers=layers, markov_overhead=0.0, curves=str(curves_path)
        )
        base = draft_seconds_table(dcfg, table, n)[n]  # the simulator's draft seconds at layer_cost 1
        dcfg = replace(dcfg, layer_cost=draft_s / base if base > 0 else 0.0)
        return SimConfig(
            seed=args.seed,
            workload=_workload(args),
            drafter=dcfg,
            policy=PolicyConfig(name=pol, **params),
            server=ServerConfig(
                cost=str(cost_path),
                cost_mode="linear",
                layers=tcfg.n_layers,
                tp=1,
                max_num_seqs=n,
                policy_cost=None if policy_path is None else str(policy_path),
                prefill_request_seconds=max(join_s - by_tokens, 0.0),
            ),
            acceptance=acc_cfg,
            metrics=MetricsConfig(warmup=args.warmup, drain=args.drain),
        )

    report: dict = {
        "auc": auc,
        "acceptance": args.acceptance,
        "clock": clock,
        "args": vars(args),
        "policies": {},
    }
    lines = [
        f"fidelity: {args.requests} requests, {n} concurrent (closed loop), prompt {args.prompt_len}, output "
        f"{args.output_len}, gamma {args.gamma}, drafter {args.drafter}, window warmup {args.warmup} / drain "
        f"{args.drain}, {clock} clock, {args.acceptance} acceptance",
        f"{'policy':<8}{'metric':<20}{'engine':>11}{'sim':>11}{'rel.err':>9}",
    ]
    worst = 0.0
    for pol in args.policies.split(","):
        params = {"k": args.fixed_k} if pol == "fixed" else {}
        cost_path, policy_path = out / f"cost_{pol}.csv", None
        for attempt in range(1, args.attempts + 1):
            if given is None:
                before = profile_now()
                table, draft_s, join_s = before.table(layers=tcfg.n_layers), before.draft_s[n], 0.0
                policy_path = out / f"cost_{pol}_policy.csv"  # what the engine's policy plans with
                before.write(policy_path)
            else:
                table = given.table(layers=tcfg.n_layers, name=Path(args.cost).stem)
                draft_s, join_s = given_draft, given_join
                cost_path.write_text(Path(args.cost).read_text())
            ecfg = engine_config(
                args.device, gamma=args.gamma, policy=pol, policy_params=params, max_running=n
            )
            target = bundle.feature_target(args.device)
            drafter = runtime_drafter(
                net, target, slots=n, max_len=max_len, temps=bundle.drafters[args.drafter][1]
            )
            ro, _ = run_rollout(
                target, drafter, ecfg, reqs, max_len=max_len, cost=table.with_draft(draft_s), clock=clock
            )
            eng, eng_tpot = engine_summary(ro, args.warmup, args.drain)
            drift = 0.0
            if given is None:  # bracket the run: the simulator gets the mean of the profiles around it
                after = profile_now()
                drift = level_drift(before.seconds, before.draft_s[n], after.seconds, after.draft_s[n])
                draft_s = 0.5 * (before.draft_s[n] + after.draft_s[n])
                join_s = float(np.mean([p.join_s[n] for p in (before, after) if n in p.join_s] or [0.0]))
                avg = Profile(
                    before.tokens,
                    0.5 * (before.seconds + after.seconds),
                    {n: draft_s},
                    note=before.note + "; mean of the profiles just before and after the engine run",
                    join_s={n: join_s},
                )
                avg.write(cost_path)
                table = avg.table(layers=tcfg.n_layers)
            if drift <= args.max_drift or attempt == args.attempts:
                break
            say(
                f"{pol}: step time moved {100 * drift:.0f}% between the profiles around the run (> "
                f"{100 * args.max_drift:.0f}%); the machine's speed changed: attempt {attempt + 1} of "
                f"{args.attempts}"
            )
        ms = table.seconds * 1e3
        say(
            f"{pol}: engine {ro.wall_s:.1f}s, {eng['steps']} steps, verify {ms[0]:.2f}..{ms[-1]:.2f} ms, "
            f"draft {draft_s * 1e3:.2f} ms, join {join_s * 1e3:.2f} ms, profile drift {100 * drift:.0f}% "
            f"(attempt {attempt})"
        )
        scfg = sim_config(pol, params, table, draft_s, join_s, cost_path, policy_path)
        simres, sim_tpot = sim_summary(sim.simulate(scfg))
        ks = ks_statistic(eng_tpot, sim_tpot)
        report["policies"][pol] = {
            "profile_drift": drift,
            "attempts": attempt,
            "engine": eng,
            "sim": simres,
            "ks_tpot": ks,
            "draft_seconds": draft_s,
            "join_seconds": join_s,
            "prefill_request_seconds": scfg.server.prefill_request_seconds,
            "cost": {"tokens": table.tokens.tolist(), "seconds": table.seconds.tolist()},
        }
        for key, label, scale in METRICS:
            e, s_ = eng[key], simres[key]
            err = (s_ - e) / e if e else math.nan
            if key in ("throughput_tok_s", "tpot_s_mean") and math.isfinite(err):
                worst = max(worst, abs(err))
            first = pol if key == METRICS[0][0] else ""
            lines.append(f"{first:<8}{label:<20}{e * scale:>11.3f}{s_ * scale:>11.3f}{100 * err:>8.1f}%")
        lines.append(f"{'':<8}{'KS(TPOT)':<20}{ks:>11.3f}")
    lines.append(f"worst |error| on throughput / mean TPOT: {100 * worst:.1f}% (goal <= 10%)")
    report["worst_error"] = worst
    (out / "fidelity.json").write_text(json.dumps(report, indent=1, default=float) + "\n")
    print("\n".join(lines))
    print(f"wrote {out / 'fidelity.json'}, {out}/cost_<policy>.csv, {curves_path}")
    return 0
