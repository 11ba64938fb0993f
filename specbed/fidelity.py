"""`specbed fidelity`: the same closed-loop workload in the real engine and in the simulator, side by side.

Role: the bridge between engine/ and sim/ (the only module allowed to import both). Steps:
1. Cost: profile the engine on this device at R = concurrency (engine.measure.profile: verify latency vs
   verify tokens B = R·(1 + ℓ), ℓ = 0..γ, and the drafter's seconds per step) just before AND just after
   each policy's engine run (the engine's policy gets the first; the simulator the mean of both, which
   cancels slow drifts of a shared machine; their largest relative difference is printed as "profile
   drift"), or read `--cost CSV` (draft seconds from its `# draft_seconds_by_R:` comment, or
   `--draft-seconds`).
2. Curves: measure the drafter's per-position acceptance and confidence stats in the engine
   (engine.measure.evaluate on test-split prompts of the workload's lengths), or read `--curves JSON`
   (validated by sim.curves); the simulator's acceptance.auc is the measured mean raw AUC (its other
   acceptance knobs keep their defaults).
3. For each policy: N requests, `concurrency` at a time (a closed loop with zero think time), fixed prompt
   and output lengths, γ drafts, temperature 1; request i has the domain the simulator draws for its
   request i (chat = our prose). Run in the engine (engine.measure.rollout; its policy gets the profiled
   table with the measured draft seconds) and in the simulator (sim.simulate: workload closed, the
   engine's cost CSV with cost_mode "linear", the engine's curves, the draft priced as
   `layers · layer_cost · layer_seconds(...)` with layer_cost fitted so the simulated draft seconds at
   R = concurrency equal the measured ones, the Markov overhead folded into it).
   Engine times are this process's CPU seconds by default on the CPU (`--clock process`: other jobs on a
   shared machine leak into it less than into wall time; `--clock wall`), wall time on CUDA.
4. Print throughput (tok/s), TPOT mean / p50 / p99, mean accepted drafts and verify tokens per
   request-step, with relative errors (sim vs engine), and the two-sample KS statistic of the TPOT
   distributions. Both sides use the simulator's steady-state window (metrics.warmup / drain) and
   definitions (TPOT = (finish − first token) / (output − 1); a request's first engine step is its prefill
   step and is not counted as a decode step). Goal: |error| ≤ 10% on throughput and mean TPOT.
Writes cost_<policy>.csv, curves.json and fidelity.json to --out-dir.

May import: numpy, torch, stdlib, specsched, engine.*, sim.*.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from specsched.errors import InputError

SIM_NAME = {"eagle": "eagle3", "dflash": "dflash", "dspark": "dspark"}
ENGINE_DOMAIN = {"chat": "prose", "math": "math", "code": "code"}
METRICS = (
    ("throughput_tok_s", "throughput tok/s", 1.0),
    ("tpot_s_mean", "TPOT mean ms", 1e3),
    ("tpot_s_p50", "TPOT p50 ms", 1e3),
    ("tpot_s_p99", "TPOT p99 ms", 1e3),
    ("accepted_per_step", "accepted/step", 1.0),
    ("verify_tokens_per_request_step", "verify tok/req-step", 1.0),
)


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov–Smirnov statistic sup |F_a − F_b| (NaN if a sample is empty)."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    if a.size == 0 or b.size == 0:
        return math.nan
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def window(arrival: np.ndarray, finish: np.ndarray, warmup: float, drain: float) -> tuple[float, float]:
    """The simulator's steady-state window (sim.metrics): t0 = ⌈warmup·N⌉-th completion, t1 = arrival of
    rank ⌈(1 − drain)·N⌉; the whole run if t1 <= t0."""
    n = arrival.size
    arr, fin = np.sort(arrival), np.sort(finish)
    k0 = math.ceil(warmup * n)
    t0 = float(fin[min(k0, n) - 1]) if k0 > 0 else float(arr[0])
    t1 = float(arr[min(max(math.ceil((1.0 - drain) * n), 1), n) - 1])
    return (float(arr[0]), float(fin[-1])) if t1 <= t0 else (t0, t1)


def _percentiles(tpot: np.ndarray, out: dict) -> None:
    out["tpot_s_mean"] = float(tpot.mean()) if tpot.size else math.nan
    p50, p99 = np.percentile(tpot, [50, 99]) if tpot.size else (math.nan, math.nan)
    out["tpot_s_p50"], out["tpot_s_p99"] = float(p50), float(p99)


def engine_summary(ro, warmup: float, drain: float) -> tuple[dict, np.ndarray]:
    """The simulator's summary keys computed from an engine rollout; also the measured TPOTs."""
    req, st, rs = ro.requests, ro.steps, ro.request_steps
    t0, t1 = window(req["arrival_s"], req["finish_s"], warmup, drain)
    measured = (req["arrival_s"] >= t0) & (req["arrival_s"] <= t1)
    out_tok = req["output_tokens"]
    tpot = ((req["finish_s"] - req["first_token_s"]) / np.maximum(out_tok - 1, 1))[measured & (out_tok > 1)]
    inside = (st["end_s"] > t0) & (st["end_s"] <= t1)
    s = {
        "throughput_tok_s": float(st["emitted"][inside].sum() / (t1 - t0)),
        "requests_measured": int(measured.sum()),
    }
    _percentiles(tpot, s)
    sel = np.isin(rs["rid"], req["rid"][measured]) & ~rs["first"]
    s["accepted_per_step"] = float(rs["accepted"][sel].mean()) if sel.any() else math.nan
    s["verify_tokens_per_request_step"] = float((1 + rs["length"][sel]).mean()) if sel.any() else math.nan
    s["steps"] = int(st["end_s"].size)
    return s, tpot


def sim_summary(result) -> tuple[dict, np.ndarray]:
    s, r = result.summary, result.requests
    t0, t1 = s["window_start_s"], s["window_end_s"]
    measured = (r["arrival_s"] >= t0) & (r["arrival_s"] <= t1) & ~np.isnan(r["finish_s"])
    tpot = r["tpot_s"][measured]
    tpot = tpot[~np.isnan(tpot)]
    out = {
        "throughput_tok_s": s["throughput_tok_s"],
        "requests_measured": s["requests_measured"],
        "accepted_per_step": s["tau_mean"] - 1.0,
        "verify_tokens_per_request_step": s["mean_verify_tokens_per_request_step"],
        "steps": s["steps"],
    }
    _percentiles(tpot, out)
    return out, tpot


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


def _draft_from_csv(path: Path, r: int) -> float | None:
    for line in path.read_text().splitlines():
        if line.startswith("# draft_seconds_by_R:"):
            pairs = dict(re.findall(r"(\d+)=([0-9.eE+-]+)", line))
            if str(r) in pairs:
                return float(pairs[str(r)])
    return None


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="specbed fidelity", description="engine vs simulator, same workload")
    p.add_argument("--checkpoints", default=None, help="checkpoint directory (default: engine/checkpoints)")
    p.add_argument("--drafter", default="dspark2")
    p.add_argument("--policies", default="ar,fixed,dspark")
    p.add_argument("--fixed-k", type=int, default=3, help="k of policy fixed")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--requests", type=int, default=64, help="requests in all (closed loop)")
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--gamma", type=int, default=7)
    p.add_argument("--eval-prompts", type=int, default=24, help="prompts per domain to measure curves")
    p.add_argument(
        "--cost", default=None, help="cost CSV from `specbed engine profile` (default: profile now)"
    )
    p.add_argument("--draft-seconds", type=float, default=None, help="draft seconds per step (with --cost)")
    p.add_argument("--curves", default=None, help="curves JSON (default: measure now)")
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
    for name in ("concurrency", "requests", "prompt_len", "output_len", "gamma", "eval_prompts", "threads"):
        if getattr(args, name) < 1:
            raise InputError(f"must be >= 1, got {getattr(args, name)}", field=f"--{name.replace('_', '-')}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    import torch

    import sim
    from engine.lm.checkpoint import corpus_for, load_bundle
    from engine.lm.drafters import runtime_drafter
    from engine.measure.curves import curves_document, write_curves
    from engine.measure.evaluate import EvalConfig, evaluate
    from engine.measure.profile import Profile, ProfileConfig, profile, warm_up
    from engine.measure.rollout import check_device, engine_config, run_rollout
    from sim.acceptance import AcceptanceConfig
    from sim.config import DrafterConfig, MetricsConfig, PolicyConfig, ServerConfig, SimConfig, WorkloadConfig
    from sim.curves import DOMAINS as SIM_DOMAINS
    from sim.curves import load_curves
    from sim.drafter import draft_seconds_table
    from sim.run import prepare
    from specsched import CostTable

    torch.set_num_threads(args.threads)
    check_device(args.device)
    clock = args.clock or ("process" if args.device == "cpu" else "wall")
    start = time.perf_counter()

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"  [{time.perf_counter() - start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    # Input files first: a bad cost table or curves file is reported before any work starts.
    given_table = CostTable.from_csv(args.cost, mode="linear") if args.cost else None
    curves = load_curves(args.curves) if args.curves else None
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bundle = load_bundle(args.checkpoints, [args.drafter])
    corpus = corpus_for(bundle)
    net = bundle.net(args.drafter)
    kind, layers = net.cfg.kind, net.cfg.layers
    n, tcfg = args.concurrency, bundle.config
    max_len = tcfg.max_len
    if args.prompt_len + args.output_len + args.gamma + 1 > max_len:
        raise InputError(
            f"prompt + output + gamma + 1 exceeds the target's context {max_len}", field="--output-len"
        )
    given_draft = None
    if given_table is not None:
        given_draft = (
            args.draft_seconds if args.draft_seconds is not None else _draft_from_csv(Path(args.cost), n)
        )
        if given_draft is None:
            raise InputError(
                f"no draft seconds for R={n} in the cost file; pass --draft-seconds", file=args.cost
            )
    warm_up(bundle, corpus, args.drafter, n, args.gamma, args.prompt_len, args.device)

    def profile_now():
        """Verify latency vs B and draft seconds at R = n, profiled now at mid-output context (prompts of
        prompt_len + output_len / 2 bytes, a few steps per verify length)."""
        mid = args.prompt_len + args.output_len // 2
        pcfg = ProfileConfig(
            requests=(n,),
            gamma=args.gamma,
            drafter=args.drafter,
            prompt_len=mid,
            new_tokens=max(4, min(24, max_len - mid - args.gamma - 1)),
            device=args.device,
            clock=clock,
        )
        return profile(bundle, corpus, pcfg, warm=False)

    curves_path = out / "curves.json"
    if curves is not None:
        curves_path.write_text(Path(args.curves).read_text())
    else:
        say("measuring acceptance curves")
        ecfg = EvalConfig(
            prompts=args.eval_prompts,
            prompt_len=args.prompt_len,
            new_tokens=args.output_len,
            gamma=args.gamma,
            seed=args.seed + 3,
            device=args.device,
        )
        res = evaluate(bundle, corpus, ecfg, progress=say)
        write_curves(curves_document(res, {SIM_NAME[kind]: args.drafter}, "specbed fidelity"), curves_path)
        curves = load_curves(curves_path)
    aucs = [(curves.confidence_stats(SIM_NAME[kind], d) or {}).get("auc_raw") for d in SIM_DOMAINS]
    aucs = [float(np.mean(a)) for a in aucs if a is not None]
    auc = min(max(float(np.mean(aucs)) if aucs else 0.85, 0.51), 1.0)
    acc_cfg = AcceptanceConfig(auc=auc, overconfidence=0.0)

    def sim_config(pol: str, params: dict, table: CostTable, draft_s: float, cost_path: Path) -> SimConfig:
        dcfg = DrafterConfig(
            name=SIM_NAME[kind], gamma=args.gamma, layers=layers, markov_overhead=0.0, curves=str(curves_path)
        )
        base = draft_seconds_table(dcfg, table, n)[n]  # the simulator's draft seconds at layer_cost 1
        dcfg = replace(dcfg, layer_cost=draft_s / base if base > 0 else 0.0)
        return SimConfig(
            seed=args.seed,
            workload=WorkloadConfig(
                kind="closed",
                concurrency=n,
                num_requests=args.requests,
                input_tokens=args.prompt_len,
                output_tokens=args.output_len,
                domain="mix",
            ),
            drafter=dcfg,
            policy=PolicyConfig(name=pol, **params),
            server=ServerConfig(
                cost=str(cost_path), cost_mode="linear", layers=tcfg.n_layers, tp=1, max_num_seqs=n
            ),
            acceptance=acc_cfg,
            metrics=MetricsConfig(warmup=args.warmup, drain=args.drain),
        )

    # The engine serves the domain sequence the simulator draws (request i of both has the same domain).
    probe = sim_config(
        "ar", {}, CostTable.from_points([1], [1.0], layers=tcfg.n_layers), 0.0, out / "probe.csv"
    )
    (out / "probe.csv").write_text("tokens,seconds\n1,1\n")
    sim_domains = [SIM_DOMAINS[int(d)] for d in prepare(probe).workload.domain]
    (out / "probe.csv").unlink()
    reqs = requests_by_domain(
        corpus, [ENGINE_DOMAIN[d] for d in sim_domains], args.prompt_len, args.output_len, args.seed + 1000
    )
    report: dict = {"auc": auc, "clock": clock, "args": vars(args), "policies": {}}
    lines = [
        f"fidelity: {args.requests} requests, {n} concurrent (closed loop), prompt {args.prompt_len}, output "
        f"{args.output_len}, gamma {args.gamma}, drafter {args.drafter}, window warmup {args.warmup} / drain "
        f"{args.drain}, {clock} clock",
        f"{'policy':<8}{'metric':<20}{'engine':>11}{'sim':>11}{'rel.err':>9}",
    ]
    worst = 0.0
    for pol in args.policies.split(","):
        params = {"k": args.fixed_k} if pol == "fixed" else {}
        cost_path = out / f"cost_{pol}.csv"
        if given_table is None:
            before = profile_now()
            table, draft_s = before.table(layers=tcfg.n_layers), before.draft_s[n]
        else:
            table = CostTable.from_points(
                given_table.tokens,
                given_table.seconds,
                mode="linear",
                layers=tcfg.n_layers,
                name=given_table.name,
            )
            draft_s = given_draft
            cost_path.write_text(Path(args.cost).read_text())
        ecfg = engine_config(args.device, gamma=args.gamma, policy=pol, policy_params=params, max_running=n)
        target = bundle.feature_target(args.device)
        drafter = runtime_drafter(
            net, target, slots=n, max_len=max_len, temps=bundle.drafters[args.drafter][1]
        )
        ro, _ = run_rollout(
            target, drafter, ecfg, reqs, max_len=max_len, cost=table.with_draft(draft_s), clock=clock
        )
        eng, eng_tpot = engine_summary(ro, args.warmup, args.drain)
        drift = 0.0
        if given_table is None:  # bracket the run: the simulator gets the mean of the profiles around it
            after = profile_now()
            both = np.stack([before.seconds, after.seconds])
            drift = float(np.max(np.abs(both[0] - both[1]) / both.mean(0)))
            draft_s = 0.5 * (before.draft_s[n] + after.draft_s[n])
            avg = Profile(
                before.tokens,
                both.mean(0),
                {n: draft_s},
                note=before.note + "; mean of the profiles just before and after the engine run",
            )
            avg.write(cost_path)
            table = avg.table(layers=tcfg.n_layers)
        ms = table.seconds * 1e3
        say(
            f"{pol}: engine {ro.wall_s:.1f}s wall, {eng['steps']} steps; verify {ms[0]:.2f}..{ms[-1]:.2f} ms"
            f", "
            f"draft {draft_s * 1e3:.2f} ms, profile drift {100 * drift:.0f}%"
        )
        simres, sim_tpot = sim_summary(sim.simulate(sim_config(pol, params, table, draft_s, cost_path)))
        ks = ks_statistic(eng_tpot, sim_tpot)
        report["policies"][pol] = {
            "profile_drift": drift,
            "engine": eng,
            "sim": simres,
            "ks_tpot": ks,
            "draft_seconds": draft_s,
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
