"""`specbed validate --spec FILE…` and `specbed cost calibrate --spec FILE… [--out KNOBS.json]`: the
speculative dataset replayed through the simulator's speculative pricing.

    specbed validate --spec validate/data/spec_train.csv [validate/data/spec_check.csv] [--knobs K.json]
                     [--json FILE]
    specbed cost calibrate --spec validate/data/spec_train.csv [--out KNOBS.json]

validate prints, a case a line, measured → predicted and the signed error (the shipped speculative knobs, or
a `cost calibrate --spec` file), the median |error| per split, the sign of every speedup, and the
leave-one-source-out table (knobs refitted without each source's cases: `validate.spec_fit.loso`); calibrate
fits the knobs (`validate.spec_fit`). Bad input: one line naming file, row and field, exit 2.

May import: argparse, json, the standard library, `specsched`, `validate.spec_*`.
"""

from __future__ import annotations

import argparse
import sys

from specsched.io import inputs, safeio
from specsched.io.errors import InputError
from specsched.io.results import write_json
from specsched.spec_knobs import SpecKnobs, shipped_spec_knobs
from validate.spec_bench import Deployment, cases_from_pair
from validate.spec_cases import read_cases
from validate.spec_fit import _median, engine_lines, loso, table
from validate.spec_replay import engine_bands, medians, replay, sign_right


def _validate_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="specbed validate --spec", description="measured speculative cases")
    p.add_argument("files", nargs="*", help="dataset CSVs (validate/data/spec_train.csv, spec_check.csv)")
    p.add_argument("--knobs", help="a `specbed cost calibrate --spec` knobs file (default: the shipped)")
    p.add_argument(
        "--json", dest="json_out", metavar="FILE", help="per-case rows and medians here ('-': stdout)"
    )
    p.add_argument("--no-loso", action="store_true", help="skip the leave-one-source-out refits")
    g = p.add_argument_group("vllm bench serve --save-result pairs (acceptance from the spec run's counters)")
    g.add_argument("--bench-pair", nargs=2, action="append", default=[], metavar=("SPEC.json", "BASE.json"))
    g.add_argument("--model", help="catalogue name or HF id (default: the files' model_id)")
    g.add_argument("--gpu", default="h100")
    g.add_argument("--tp", type=int, default=1)
    g.add_argument("--drafter", default="eagle3", help="eagle | eagle3 | mtp | draft_model | ngram")
    g.add_argument("--engine-version", default="0.15", help="the vLLM version the pair ran (e.g. 0.10.1)")
    return p


def load_spec_knobs(path: str | None) -> SpecKnobs:
    """The knobs of a `cost calibrate --spec` file, or the shipped ones."""
    if not path:
        return shipped_spec_knobs()
    raw = inputs.mapping(inputs.load_json(path, what="knobs file", field="--knobs"), file=path, field="knobs")
    return SpecKnobs.from_dict(raw.get("knobs"), file=path)


def validate_main(argv: list[str]) -> int:
    args = _validate_parser().parse_args(argv)
    given = [*args.files, *(f for pair in args.bench_pair for f in pair), *filter(None, [args.knobs])]
    with safeio.claimed_file(args.json_out, field="--json", inputs=given):  # held until written
        return _validate_held(args)


def _validate_held(args: argparse.Namespace) -> int:
    if not args.files and not args.bench_pair:
        raise InputError("give dataset CSVs or --bench-pair SPEC.json BASE.json", field="files")
    if args.tp < 1:
        raise InputError(f"must be ≥ 1, got {args.tp}", field="--tp")
    knobs = load_spec_knobs(args.knobs)
    cases = [c for f in args.files for c in read_cases(f)]
    dep = Deployment(args.gpu, args.tp, args.drafter, args.engine_version, args.model)
    cases += [c for spec, base in args.bench_pair for c in cases_from_pair(spec, base, dep)]
    rows = replay(cases, knobs)
    train = [c for c in cases if c.split == "train"]
    held = [] if args.no_loso else loso(train)
    print(table(rows, held))
    med = medians(rows)
    right, total = sign_right(rows)
    if med:
        print("median |error| " + ", ".join(f"{k} {v:.1f} %" for k, v in med.items())
              + f"; sign of the gain right in {right} of {total}")  # fmt: skip
    else:
        print("specbed validate --spec: no case could be modelled", file=sys.stderr)
    if held:
        print(f"leave-one-source-out (train) median |error| {_median(held):.1f} %")
    bands = engine_bands(rows, held)
    if bands:
        print("by engine version (the band a prediction for that engine quotes):")
        print("\n".join(engine_lines(bands)))
    if args.json_out:
        doc = {"cases": rows, "medians": med, "loso": held, "by_engine": bands, "knobs": knobs.as_dict()}
        write_json(args.json_out, doc, indent=1, sort_keys=False)
    return 0 if med else 1


def calibrate_main(argv: list[str]) -> int:
    from validate.spec_fit import main

    p = argparse.ArgumentParser(prog="specbed cost calibrate --spec", description="fit the speculative knobs")
    p.add_argument("files", nargs="+", help="dataset CSVs (their train cases are fitted)")
    p.add_argument(
        "--out", metavar="FILE", help="write the knobs file here (specsched/data/spec_knobs.json ships it)"
    )
    args = p.parse_args(argv)
    return main(args.files, args.out)
