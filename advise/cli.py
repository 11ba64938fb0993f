"""`specbed advise`: would speculation help this vLLM deployment on this traffic, by how much, where does it
stop paying, and what `--speculative-config` (and batch-size → K schedule) to give vLLM — one command.

    specbed advise --model meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4 --gpu h100 \
        --runs runs.csv --row 60 --workloads workloads.json --vllm-version 0.15 --out results/advise
    specbed advise --model llama3.1-8b --gpu h100 --traffic vllm_result.json --out results/advise
    specbed advise --model llama3.1-8b --gpu a100 --traffic azure2023-conv --loads 1,8,64

The deployment is `vllm serve`'s flags as typed; the traffic a `vllm bench serve --save-result` file, a
trace (file or built-in name) or an inference-perf profile (`--profile`, default: the measured run's).
A measured run (`--runs` + `--row` + `--workloads`, or a bench file as `--measured`) is replayed first
and its fit reported (`validate.predict`, and `validate.calibrate` on it). Writes report.md, advise.json,
gain.png, pareto.png and config.json into `--out`; prints the answers. Bad input: one line, exit 2.

May import: the standard library, `advise`, `sim`, `specsched`, `validate`, `analysis`.
"""

from __future__ import annotations

import argparse
import shlex
import time

from advise import inputs, report, sweep
from specsched.io import jobdir
from specsched.io.errors import InputError, bounded
from specsched.io.progress import Progress
from specsched.io.results import write_results


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="specbed advise",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("\n\n")[1],
    )
    g = p.add_argument_group("the deployment (vllm serve's flags)")
    g.add_argument("--model", required=True, help="catalogue name or Hugging Face id")
    g.add_argument("--tensor-parallel-size", "-tp", "--tp", dest="tp", type=int, default=1)
    g.add_argument("--max-num-seqs", type=int, default=256)
    g.add_argument("--max-num-batched-tokens", type=int, default=8192)
    g.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    g.add_argument("--speculative-config", help="the deployment's current one (JSON): its K is tried")
    g.add_argument("--gpu", default="h100", help="catalogue GPU (default h100)")
    g.add_argument("--vllm-version", help="the vLLM version to price and to write the config for (e.g. 0.15)")
    g.add_argument("--draft-model", help="the EAGLE-3 / draft model id to write into --speculative-config")
    t = p.add_argument_group("the traffic and a measured run")
    t.add_argument(
        "--traffic", help="vllm bench serve --save-result JSON, a trace file or built-in trace name"
    )
    t.add_argument("--profile", help="an inference-perf profile of --workloads")
    t.add_argument("--runs", help="RUNS.csv of measured vLLM runs (validate's columns)")
    t.add_argument("--row", help="the exp_id of the run in --runs")
    t.add_argument("--workloads", help="PROFILES.json (the runs' inference-perf profiles)")
    t.add_argument("--measured", help="a vllm bench serve --save-result --save-detailed JSON measured here")
    t.add_argument(
        "--curves", help="measured acceptance curves (specbed vllm curves): adds n-gram if it names it"
    )
    s = p.add_argument_group("the sweep")
    s.add_argument("--loads", help="concurrency levels, comma-separated (default 1,2,4,… up to max-num-seqs)")
    s.add_argument(
        "--requests-per-user",
        type=bounded(float, 0, 1e4),
        default=4.0,
        help="requests simulated per user (horizon)",
    )
    s.add_argument("--set", dest="sets", action="append", default=[], help="extra simulator KEY=VALUE")
    s.add_argument("--out", metavar="DIR", help="folder: report.md, advise.json, gain.png, pareto.png")
    s.add_argument("--quiet", action="store_true", help="no progress")
    return p


def _loads(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        got = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise InputError(f"must be integers separated by commas, got {text!r}", field="--loads") from None
    if not got or any(not 1 <= c <= 16384 for c in got):
        raise InputError("each load must be in [1, 16384]", field="--loads")
    return got


def _curve_names(path: str | None) -> tuple[str, ...]:
    if path is None:
        return ()
    from specsched.contracts import load_curves

    return tuple(load_curves(path).keys()) if isinstance(load_curves(path), dict) else ()


def measured_fit(run, profiles, gpu: str) -> dict:
    """The measured run replayed on the GPU's shipped knobs, then calibrated on it (validate.calibrate)."""
    from specsched.price.knobs import shipped_knobs
    from validate.calibrate import calibrate
    from validate.predict import error_pct, simulate_run

    t0 = time.perf_counter()
    sim = simulate_run(run, shipped_knobs(gpu), profiles)
    cal = calibrate([run], profiles, base=shipped_knobs(gpu), rounds=1)
    return {
        "run": f"{run.exp_id} {run.folder}",
        "requests": sim["requests"],
        "actual": run.actual,
        "predicted": sim["predicted"],
        "error_pct": error_pct(sim["predicted"], run.actual),
        "calibrated_error_pct": error_pct(cal["in_sample"][0], run.actual),
        "saturated": sim["saturated"],
        "wall_s": time.perf_counter() - t0,
    }


def operating_load(tr, fit_run, loads: list[int], rows) -> tuple[int, str]:
    """(C, why): the traffic's concurrency by Little's law (rate × measured or predicted e2e), else the
    middle load."""
    if tr.rate is not None:
        if fit_run is not None:
            e2e, src = fit_run.actual["e2e_mean"] / 1e3, "measured"
        else:
            near = {r["users"]: r["e2e_s_mean"] for r in rows if r["option"] == "none"}
            e2e, src = near[loads[len(loads) // 2]], "predicted"
        c = max(1, round(tr.rate * e2e))
        return c, f"Little's law: {tr.rate:.2f} req/s × {e2e:.2f} s {src} e2e"
    return loads[len(loads) // 2], "no arrival rate known: the middle of the sweep"


def recommend(dep, tr, opts, gains, sched, users: int, why: str, draft_model: str | None) -> dict:
    """The best option at the operating load, its --speculative-config, and the best fixed-K one's."""
    best = sweep.best_option(gains, users)
    chosen = next((o for o in opts if o.key == best), None)
    fixed = sweep.best_option([g for g in gains if g["option"] != "adaptive"], users)
    fixed_opt = next((o for o in opts if o.key == fixed), None)
    return {
        "users": users,
        "why": why,
        "option": best,
        "label": chosen.name if chosen else "no speculation",
        "speculative_config": None
        if chosen is None
        else sweep.speculative_config(dep, tr, chosen, sched, draft_model),
        "fixed_k_label": fixed_opt.name if fixed_opt else None,
        "fixed_k_config": None
        if fixed_opt is None
        else sweep.speculative_config(dep, tr, fixed_opt, None, draft_model),
    }


def notes(dep, opts) -> list[str]:
    """What was not swept, and why."""
    lm = next((o for o in opts if o.key == "draft_model"), None)
    if lm is not None:
        out = [f"{lm.name}: {sweep.DRAFT_LM_ACCEPTANCE}."]
    else:
        out = [f"Draft model: {dep.model}'s family has no small sibling in specsched.draft_lm; not swept."]
    if not dep.has_mtp:
        out.append(f"MTP: {dep.model} ships no MTP heads; not swept.")
    if "ngram" not in {o.key for o in opts}:
        out.append(
            "n-gram: its acceptance is the traffic's own; give measured curves (--curves from "
            "`specbed vllm curves`) to sweep it."
        )
    return out


def advise(args, argv: list[str], progress_on: bool = True) -> dict:
    """The whole answer as a dict (advise.json)."""
    dep = inputs.deployment(args)
    run, profiles = inputs.measured_run(args, dep)
    if args.traffic is None and args.profile is None and run is not None and run.profile is not None:
        args.profile = run.profile
    if args.traffic is None and args.profile is None and args.measured:
        args.traffic = args.measured
    tr = inputs.traffic(args, profiles)
    engine = sweep.engine_name(args.vllm_version)
    opts = sweep.options(dep, engine, args.curves, _curve_names(args.curves))
    loads = sweep.loads(dep, _loads(args.loads))
    prog = Progress(len(opts) * len(loads) + 2, label="advise", unit="runs", every=5.0, enabled=progress_on)
    fit = measured_fit(run, profiles, dep.gpu) if run is not None else None
    prog.advance(1, "measured run")
    rows = sweep.run_all(
        dep, tr, opts, loads, requests_per_user=args.requests_per_user, extra=args.sets, progress=prog
    )
    gains = sweep.gains(rows)
    sched = sweep.k_schedule(dep, tr, next(o for o in opts if o.key == "adaptive"), loads, args.sets)
    prog.advance(1, "K schedule")
    prog.close()
    users, why = operating_load(tr, run, loads, rows)
    none_row = next(r for r in rows if r["option"] == "none")
    return {
        "command": "specbed advise " + " ".join(shlex.quote(a) for a in argv),
        "deployment": dep.__dict__,
        "engine": engine,
        "traffic": tr.__dict__,
        "loads": loads,
        "options": {o.key: o.name for o in opts},
        "fit": fit,
        "baseline_band": {k: v for k, v in none_row["accuracy"].items() if k.startswith("accuracy_baseline")},
        "runs": [{k: v for k, v in r.items() if k != "accuracy"} for r in rows],
        "gains": gains,
        "stops_paying": {o.key: sweep.stops_paying(gains, o.key) for o in opts if o.key != "none"},
        "recommendation": recommend(dep, tr, opts, gains, sched, users, why, args.draft_model),
        "k_schedule": sched,
        "notes": notes(dep, opts),
    }


def summary_text(doc: dict) -> str:
    rec = doc["recommendation"]
    out = []
    if doc["fit"]:
        e = doc["fit"]["error_pct"]
        out.append(
            f"fit to your run: e2e mean {e['e2e_mean']:.1f} %, TTFT mean {e['ttft_mean']:.1f} %, "
            f"ITL {e['itl_mean']:.1f} % |error| (shipped knobs)"
        )
    for key, label in doc["options"].items():
        pts = [g for g in doc["gains"] if g["option"] == key]
        if pts:
            cells = ", ".join(f"C={g['users']}: {report.cell(g)}" for g in pts)
            out.append(f"{label} gain: {cells}")
    for key, stop in doc["stops_paying"].items():
        out.append(
            f"{doc['options'][key]} stops paying: "
            + (f"C={stop['users']}" if stop["users"] else "not within the sweep")
            + (f" (inside its band from C={stop['within_band']})" if stop["within_band"] else "")
        )
    out.append(f"at C≈{rec['users']}: {rec['label']}")
    if rec["speculative_config"] is not None:
        import json

        out.append(
            "--speculative-config '" + json.dumps(rec["speculative_config"], separators=(",", ":")) + "'"
        )
    out.append("batch size -> K: " + ", ".join(f"{r['batch_size']}: {r['k']}" for r in doc["k_schedule"]))
    return "\n".join(out)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    with jobdir.claim(args.out, "advise"):  # checked before the work, held until the folder's swap
        return _advise_main(args, argv)


def _advise_main(args, argv: list[str]) -> int:
    t0 = time.perf_counter()
    doc = advise(args, argv, progress_on=not args.quiet)
    doc["wall_s"] = time.perf_counter() - t0
    print(summary_text(doc))
    if args.out is not None:
        files = {"report.md": report.markdown(doc), "advise.json": doc, **report.plots(doc)}
        write_results(args.out, files, config=vars(args), command="advise")
        print(f"wrote {args.out}/report.md, advise.json, gain.png, pareto.png, config.json")
    return 0
