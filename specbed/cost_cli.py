"""`specbed cost fit|check`: fit the roofline's knobs to measured steps, and check a fit against measurements.

    specbed cost fit MEASURED... --model NAME --gpu NAME [--where COL=VAL ...] --out FIT.json
    specbed cost check MEASURED... --fit FIT.json [--model NAME] [--gpu NAME] [--where C=V ...] [--json FILE]
    specbed cost calibrate RUNS.csv --workloads PROFILES.json --gpu NAME --out KNOBS.json

`fit` prints a per-point table (tp, phase, batch, tokens, measured ms, predicted ms, error %, outlier flag),
the MAPE per TP and phase (outliers excluded, and counted), and writes FIT.json (model, gpu, knobs,
provenance: data files and their sha256, rows used, outliers, MAPE). `check` predicts the selected points
with a fit's knobs — `--model`/`--gpu` swap in another shape or GPU — and prints the same table; `--json FILE`
writes one object (`-`: to stdout, instead of the table): {"points", "decode": {"points", "mape_pct",
"max_pct"}, "prefill": {...}, "by_tp": {"2": {"decode": {...}, "prefill": {...}}, ...}}. With `--gpu` another
GPU than the fit's, the knobs are carried by the GPU rule (`--gpu-rule`, default `kernels`:
`specsched.kernels.carry_knobs`, the rule a vLLM deployment on a GPU without calibrated knobs gets). Bad
input: one line, exit 2 (specbed.cli).

May import: the standard library, numpy, `specsched`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from specsched import price as hardware  # the catalogue (specsched.price)
from specsched.fit import Fit, error_pct, file_hash, fit, load_fit, predict, summary
from specsched.io import safeio
from specsched.io.errors import InputError
from specsched.io.results import STDOUT, write_json
from specsched.kernels import carry_knobs
from specsched.measured import Points, read_measured


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="specbed cost", description="fit / check a cost model on measured steps")
    sub = p.add_subparsers(dest="action", required=True)
    for name in ("fit", "check"):
        q = sub.add_parser(name)
        q.add_argument(
            "measured", nargs="+", help="measured-step files (Splitwise CSV, specbed CSV, vLLM JSON)"
        )
        q.add_argument(
            "--where", action="append", default=[], metavar="COLUMN=VALUE", help="keep matching rows"
        )
        q.add_argument("--model", required=name == "fit", help=f"model shape ({', '.join(hardware.MODELS)})")
        q.add_argument("--gpu", required=name == "fit", help=f"GPU ({', '.join(hardware.GPUS)})")
        if name == "fit":
            q.add_argument("--out", required=True, metavar="FILE", help="FIT.json to write")
        else:
            q.add_argument("--fit", required=True, help="FIT.json from `specbed cost fit`")
            q.add_argument("--json", metavar="FILE", help="write the summary as JSON here ('-': stdout)")
            q.add_argument(
                "--gpu-rule",
                choices=("kernels", "clock"),
                default="kernels",
                help="how a fit's knobs carry to another --gpu (specsched.kernels.carry_knobs; the rule "
                "`validate` applies to a GPU without calibrated knobs): measured kernel ratios (default) "
                "or the boost-clock rule",
            )
    from validate.calibrate_cli import add_parser

    add_parser(sub)
    return p


def _names(model: str, gpu: str) -> None:
    for kind, name, get in (("--model", model, hardware.get_model), ("--gpu", gpu, hardware.get_gpu)):
        try:
            get(name)
        except ValueError as err:
            raise InputError(str(err), field=kind) from None


def _print_table(points: Points, pred: np.ndarray, outlier: np.ndarray | None) -> None:
    err = error_pct(points, pred)
    print(
        f"{'tp':>3} {'phase':<8} {'batch':>6} {'tokens':>7} {'measured ms':>12} "
        f"{'predicted ms':>13} {'error %':>8}"
    )
    for i in range(len(points)):
        flag = "  outlier" if outlier is not None and outlier[i] else ""
        print(
            f"{int(points.tp[i]):>3} {points.phase[i]:<8} {int(points.requests[i]):>6} "
            f"{int(points.tokens[i]):>7} "
            f"{points.seconds[i] * 1e3:>12.2f} {pred[i] * 1e3:>13.2f} {err[i]:>+8.1f}{flag}"
        )


def _stat(st: dict) -> str:
    return f"n={st['points']:<4} MAPE {st['mape_pct']:6.2f} %  max {st['max_pct']:6.1f} %"


def _print_mape(summ: dict, outliers: int = 0) -> None:
    extra = f" ({outliers} outliers excluded)" if outliers else ""
    print(f"\nMAPE per TP and phase{extra}:")
    for tp, per in summ["by_tp"].items():
        for phase, st in per.items():
            if st["points"]:
                print(f"  tp={tp:<3} {phase:<8} " + _stat(st))
    for phase in ("decode", "prefill", "draft"):
        st = summ.get(phase)
        if st and st["points"]:
            print(f"  all    {phase:<8} " + _stat(st))


def _fit(args) -> int:
    _names(args.model, args.gpu)
    # before fitting: a bad --out (or an input) refused; held until written (a second writer is refused)
    with safeio.claimed_file(args.out, inputs=args.measured):
        return _fit_held(args)


def _fit_held(args) -> int:
    points = read_measured(args.measured, args.where)
    t0 = time.perf_counter()
    knobs, outlier = fit(points, args.model, args.gpu)
    seconds = time.perf_counter() - t0
    pred = predict(points, args.model, args.gpu, knobs)
    summ = summary(points, pred, ~outlier)
    provenance = {
        "files": [str(p) for p in args.measured],
        "sha256": file_hash(args.measured),
        "where": list(args.where),
        "points": len(points),
        "outliers": [str(s) + f" ({ph})" for s, ph in zip(points.source[outlier], points.phase[outlier])],
        "rows_used": int((~outlier).sum()),
        "mape": summ,
    }
    # Written before the long printout, so a closed pipe (`| head`) never loses the fit.
    Fit(args.model, args.gpu, knobs, provenance).save(args.out)
    _print_table(points, pred, outlier)
    _print_mape(summ, int(outlier.sum()))
    print("\nknobs: " + ", ".join(f"{k}={v:.4g}" for k, v in knobs.items()))
    print(f"fit: {len(points)} points in {seconds:.2f} s; {int(outlier.sum())} flagged as outliers")
    print(f"wrote {args.out}")
    return 0


def _check(args) -> int:
    with safeio.claimed_file(args.json, field="--json", inputs=[*args.measured, args.fit]):
        return _check_held(args)


def _check_held(args) -> int:
    fitted = load_fit(args.fit)
    model = args.model or fitted.model
    gpu = args.gpu or fitted.gpu
    _names(model, gpu)
    points = read_measured(args.measured, args.where)
    # Another GPU: the fit's knobs carried by the same GPU rule `validate` applies (specsched.kernels).
    knobs = carry_knobs(fitted.knobs, fitted.gpu, gpu, rule=args.gpu_rule)
    pred = predict(points, model, gpu, knobs)
    summ = summary(points, pred)
    if args.json is not None:
        write_json(args.json, summ, indent=None, sort_keys=False)
        if args.json == STDOUT:
            return 0
    rule = f", knobs carried by the {args.gpu_rule} GPU rule" if knobs != fitted.knobs else ""
    print(f"fit {args.fit} ({fitted.model}@{fitted.gpu}) predicting {model}@{gpu}{rule}")
    _print_table(points, pred, None)
    _print_mape(summ)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["calibrate"] and "--spec" in argv:  # speculative knobs (validate.spec_cli)
        from validate.spec_cli import calibrate_main

        return calibrate_main([a for a in argv[1:] if a != "--spec"])
    args = _parser().parse_args(argv)
    if args.action == "calibrate":
        from validate.calibrate_cli import run

        return run(args)
    return _fit(args) if args.action == "fit" else _check(args)
