"""`specbed cost calibrate`: one GPU's roofline knobs fitted to measured vLLM runs, end to end.

    specbed cost calibrate RUNS.csv --workloads PROFILES.json --gpu h100 --out knobs.json [--scale S]

Fits `specsched.price.vllm.Knobs` shared by every model on `--gpu` to the RUNS.csv rows on that GPU
(`validate.calibrate`), prints the knobs, the per-run table and the median |error| per metric in sample and
leave-one-model-out, and writes knobs.json: {"gpu", "knobs", "fitted_on": {"file", "sha256", "runs"},
"in_sample_median_error_pct", "lomo_median_error_pct", "lomo_knobs", "runs": [per-run predictions]}.
`specbed validate --knobs knobs.json` uses it; the catalogue ships the H100 knobs it gives on
../shared/real-vllm/runs.csv (specsched/data/vllm_knobs.json). `--scale` shortens every stage of the
regenerated traffic (same rates) for a quicker, noisier fit.

May import: the standard library, numpy, `sim`, `specsched`, `validate` modules.
"""

from __future__ import annotations

import time

from sim.inference_perf import load_profiles
from specsched.fit import file_hash
from specsched.io import safeio
from specsched.io.errors import InputError
from specsched.io.progress import Progress
from specsched.io.results import write_json
from specsched.price import get_gpu
from validate import calibrate as cal
from validate import predict as v
from validate.runs import add_run_flags, itl_readings, output_mean, read_runs


def add_parser(sub) -> None:
    q = sub.add_parser("calibrate", help="fit one GPU's knobs to measured vLLM runs (through the simulator)")
    q.add_argument("runs", help="RUNS.csv (the columns of ../shared/real-vllm/runs.csv)")
    q.add_argument("--workloads", required=True, help="PROFILES.json (inference-perf profiles)")
    q.add_argument("--gpu", required=True, help="the GPU whose runs to fit (h100, a100, ...)")
    q.add_argument("--out", required=True, metavar="FILE", help="knobs.json to write")
    q.add_argument("--scale", type=float, default=0.5, help="stage durations × this (0 < S ≤ 1; default 0.5)")
    add_run_flags(q)


def _results(runs, preds, profiles) -> list[dict]:
    out = []
    for run, pred in zip(runs, preds):
        entry = {
            "exp_id": run.exp_id,
            "folder": run.folder,
            "model": run.model,
            "hardware": run.hardware,
            "actual": run.actual,
        }
        if pred is None:
            out.append({**entry, "error": "no other model to fit on"})
        else:  # ITL per chunk at the chunk fraction the run implies (validate.runs.itl_readings)
            itl = itl_readings(run.actual, pred["itl_mean"], output_mean(run, profiles))
            pred = {**pred, "itl_mean": itl["predicted_per_chunk_ms"]}
            out.append(
                {
                    **entry,
                    "predicted": pred,
                    "error_pct": v.error_pct(pred, run.actual),
                    "hit_rate": None,
                    "saturated": False,
                }
            )
    return out


def run(args) -> int:
    if not 0 < args.scale <= 1:
        raise InputError(f"must be in (0, 1], got {args.scale}", field="--scale")
    gpu = get_gpu(args.gpu, field="--gpu").key
    # never onto what it reads; held until written (a second calibration into it is refused)
    with safeio.claimed_file(args.out, inputs=[args.runs, args.workloads]):
        return _run_held(args, gpu)


def _run_held(args, gpu: str) -> int:
    profiles = load_profiles(args.workloads)
    every = read_runs(args.runs, profiles, max_num_seqs=args.max_num_seqs, max_model_len=args.max_model_len)
    runs = [r for r in every if r.error is None and r.spec.gpu == gpu]
    models = {r.spec.model for r in runs}
    if len(runs) < len(cal.FEATURES) or len(models) < 2:
        raise InputError(
            f"needs ≥ {len(cal.FEATURES)} modellable runs of ≥ 2 models on {gpu}; found "
            f"{len(runs)} of {len(models)}",
            file=args.runs,
            field="hardware",
        )
    total = len(runs) * (cal.ROUNDS + 2)
    bar = Progress(total, label="calibrate", unit="simulations", every=10.0)
    t0 = time.perf_counter()
    try:
        got = cal.calibrate(
            runs,
            profiles,
            base=cal.base_knobs(gpu),
            seed=args.seed,
            scale=args.scale,
            progress=lambda: bar.advance(1),
        )
    except InputError as err:  # a fitted knob out of its bounds: the runs' times, not the code, are off
        if err.file is not None or not str(err.field).startswith("knobs."):
            raise
        raise InputError(
            f"the knobs fitted to these runs leave their bounds ({err.message}): do the runs' times mix "
            "seconds and milliseconds?",
            file=args.runs,
            field=err.field,
        ) from None
    bar.close()
    ins, lomo = _results(runs, got["in_sample"], profiles), _results(runs, got["lomo"], profiles)
    med_in, med_lomo = v.medians(ins), v.medians(lomo)
    doc = {
        "gpu": gpu,
        "knobs": got["knobs"].as_dict(),
        "fitted_on": {
            "file": str(args.runs),
            "sha256": file_hash([args.runs]),
            "runs": [r.exp_id for r in runs],
            "workloads": str(args.workloads),
            "scale": args.scale,
            "seed": args.seed,
        },
        "in_sample_median_error_pct": med_in,
        "lomo_median_error_pct": med_lomo,
        "lomo_knobs": {m: k.as_dict() for m, k in got["lomo_knobs"].items()},
        "runs": [
            {
                "exp_id": r["exp_id"],
                "in_sample": a.get("predicted"),
                "lomo": b.get("predicted"),
                "actual": r["actual"],
            }
            for r, a, b in zip(ins, ins, lomo)
        ],
    }
    write_json(args.out, doc, field="--out", indent=1, sort_keys=False)
    print(f"knobs ({gpu}, {len(runs)} runs of {len(models)} models): {cal.describe(got['knobs'])}")
    print("\nin sample:")
    print(v.table(ins))
    print("\nleave one model out (each model's runs predicted from knobs fitted on the others):")
    print(v.table(lomo))
    for name, med in (("in-sample", med_in), ("leave-one-model-out", med_lomo)):
        print(f"median |error| {name:<20} " + ", ".join(f"{m} {x:.1f} %" for m, x in med.items()))
    print(f"calibrated in {time.perf_counter() - t0:.0f} s; wrote {args.out}")
    return 0
