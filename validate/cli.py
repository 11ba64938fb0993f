"""`specbed validate`: measured vLLM runs against the simulator's prediction of them.

    specbed validate RUNS.csv --workloads PROFILES.json [--out DIR] [--json OUT] [--knobs KNOBS.json]
    specbed validate RESULT.json [--model NAME] [--gpu h100] [--tp 1] [--max-num-batched-tokens 8192]

RUNS.csv has the columns of ../shared/real-vllm/runs.csv (any subset of rows, any order); a RESULT.json is
a `vllm bench serve --save-result --save-detailed` file, replayed from its own requests. Prints the
per-run table (measured → predicted, |error| %) and the medians; `--out DIR` writes report.md,
validate.json and validate.png (predicted vs measured, log axes); `--json OUT` writes the JSON alone:
{"runs": [{"exp_id", "folder", "model", "hardware", "predicted", "actual", "error_pct"} or with
"error"], "median_error_pct"}. Exit 0 when at least one run was modelled; 2 on bad input (one line
naming file, row and field), and when no run could be modelled (naming the first row and column that
stopped it: an unknown model, GPU, precision or workload). Knobs: the catalogue's for each run's GPU
(`specsched.price.vllm.shipped_knobs`), or a `specbed cost calibrate` file for its GPU (`--knobs`).

May import: the standard library, numpy, `sim`, `specsched`, `validate` modules, matplotlib (plot only).
"""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path

from sim.inference_perf import load_profiles
from specsched.io import inputs, jobdir, safeio
from specsched.io.errors import InputError, bounded
from specsched.io.progress import Progress
from specsched.io.results import STDOUT, dumps_json, write_json, write_results
from specsched.load import saturation_note
from specsched.price import find_model, get_gpu
from specsched.price.knobs import Knobs, shipped_knobs
from specsched.price.vllm import VllmSpec
from validate import predict as v
from validate.runs import add_run_flags, read_bench, read_runs


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="specbed validate", description="measured vLLM runs vs the simulator")
    p.add_argument("runs", nargs="+", help="RUNS.csv (runs.csv columns) or vllm bench serve detailed JSON")
    p.add_argument("--workloads", help="PROFILES.json (inference-perf profiles; needed for a RUNS.csv)")
    p.add_argument("--out", metavar="DIR", help="folder: report.md, validate.json, validate.png, config.json")
    p.add_argument("--json", dest="json_out", metavar="FILE", help="write the JSON result here ('-': stdout)")
    p.add_argument("--knobs", help="a `specbed cost calibrate` knobs file (for runs on its GPU)")
    add_run_flags(p)
    g = p.add_argument_group("a vllm bench serve JSON's deployment")
    g.add_argument("--model", help="catalogue name or HF id (default: the file's model_id)")
    g.add_argument("--gpu", default="h100")
    g.add_argument("--tp", type=bounded(int, 1, 4096), default=1)
    g.add_argument("--max-num-batched-tokens", type=bounded(int, 1, 10_000_000), default=8192)
    return p


def load_knobs_file(path: str) -> tuple[str, Knobs]:
    """(gpu key, knobs) of a `specbed cost calibrate` file: {"gpu": ..., "knobs": {...}, ...}."""
    raw = inputs.load_json(path, what="knobs file", field="--knobs")  # regular, capped, bounded digits
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("knobs"), dict)
        or not isinstance(raw.get("gpu"), str)
    ):
        raise InputError('needs {"gpu": NAME, "knobs": {...}}', file=path, field="knobs")
    return get_gpu(raw["gpu"], field="gpu").key, Knobs.from_dict(raw["knobs"], file=path)


def knobs_chooser(knobs_path: str | None):
    """run -> Knobs: the --knobs file's for its GPU, else the catalogue's shipped ones."""
    own = load_knobs_file(knobs_path) if knobs_path else None
    cache: dict[str, Knobs] = {}

    def choose(run) -> Knobs:
        key = run.spec.gpu
        if own is not None and own[0] == key:
            return own[1]
        if key not in cache:
            cache[key] = shipped_knobs(key)
        return cache[key]

    return choose


def read_inputs(args) -> tuple[list, dict]:
    """(runs, profiles) from the command line (InputError on bad input)."""
    if args.max_num_seqs < 1 or args.max_model_len < 1 or args.tp < 1 or args.max_num_batched_tokens < 1:
        raise InputError("--max-num-seqs, --max-model-len, --tp and --max-num-batched-tokens must be ≥ 1")
    csvs = [f for f in args.runs if not f.lower().endswith(".json")]
    if csvs and not args.workloads:
        raise InputError("--workloads PROFILES.json is required to regenerate a RUNS.csv's traffic")
    profiles = load_profiles(args.workloads) if args.workloads else {}
    runs = []
    for f in args.runs:
        if f in csvs:
            runs += read_runs(f, profiles, max_num_seqs=args.max_num_seqs, max_model_len=args.max_model_len)
            continue
        model = args.model or _model_id(f)
        if find_model(model) is None:
            raise InputError(
                f"model {model!r} is not in the catalogue; pass --model", file=f, field="model_id"
            )
        spec = VllmSpec(
            model=model,
            gpu=get_gpu(args.gpu, field="--gpu").key,
            tp=args.tp,
            max_num_seqs=args.max_num_seqs,
            max_num_batched_tokens=max(args.max_num_batched_tokens, args.max_num_seqs),
            max_model_len=None,
        )
        runs.append(read_bench(f, spec, seed=args.seed))
    return runs, profiles


def saturation_notes(results: list[dict]) -> list[str]:
    """One line per run whose load factor is above 0.9 (`specsched.load.saturation_note`): the offered
    rate beside the rate the predicted step cost sustains (`sim.metrics.load_factor`)."""
    notes = (saturation_note(r["folder"] or r["exp_id"], r.get("load") or {}) for r in results)
    return [n for n in notes if n]


def itl_lines(results: list[dict]) -> list[str]:
    """Both ITL readings per modelled run (`validate.runs.itl_readings`): the chunk fraction the
    measurement implies, per token and per chunk, measured → predicted (ms)."""

    def pair(a: float | None, b: float) -> str:
        return ("—" if a is None else f"{a:.2f}") + f"→{b:.2f}"

    lines = [
        f"{'ITL readings':<34} {'chunks/token':>12} {'per token meas→pred':>22} {'per chunk meas→pred':>22}"
    ]
    for r in results:
        itl = r.get("itl")
        if itl:
            frac = "—" if itl["chunk_fraction"] is None else f"{itl['chunk_fraction']:.3f}"
            tok = pair(itl["measured_per_token_ms"], itl["predicted_per_token_ms"])
            chunk = pair(itl["measured_per_chunk_ms"], itl["predicted_per_chunk_ms"])
            lines.append(f"{(r['folder'] or r['exp_id'])[:34]:<34} {frac:>12} {tok:>22} {chunk:>22}")
    return lines if len(lines) > 1 else []


def _model_id(path: str) -> str:
    try:
        raw = inputs.load_json(path, what="vllm bench result", nonfinite=True)
    except InputError:
        return ""  # read_bench reports the file's problem
    return str(raw.get("model_id") or "") if isinstance(raw, dict) else ""


def _report(results: list[dict], note: str, cmd: str) -> str:
    """validate.predict's markdown report, the ITL readings and the near-saturation runs under it."""
    notes = saturation_notes(results)
    itl = itl_lines(results)
    block = ["", "```", *itl, "```", ""] if itl else []
    return v.markdown(results, note, cmd) + "\n".join(block) + "".join(f"- {line}\n" for line in notes)


def main(argv: list[str]) -> int:
    if "--spec" in argv:  # the speculative dataset (validate.spec_cli)
        from validate.spec_cli import validate_main

        return validate_main([a for a in argv if a != "--spec"])
    args = _parser().parse_args(argv)
    if not args.out:
        return _validate(args, argv)
    jobdir.refuse_other_job(args.out, "validate")  # never mixed with another command's results
    safeio.check_run_dir(args.out)  # never among a sweep's files
    with safeio.held(args.out):  # from the first check to the folder's swap: a second writer is refused
        return _validate(args, argv)


def _validate(args: argparse.Namespace, argv: list[str]) -> int:
    """`main` once --out is checked (and locked)."""
    given = [*args.runs, *(f for f in (args.workloads, args.knobs) if f)]
    with safeio.claimed_file(args.json_out, field="--json", inputs=given):  # held until written
        return _validate_held(args, argv)


def _validate_held(args: argparse.Namespace, argv: list[str]) -> int:
    runs, profiles = read_inputs(args)
    if all(run.error is not None for run in runs):  # refused before any work (and any progress line)
        raise InputError(f"no run could be modelled; the first stopped at {runs[0].error}")
    choose = knobs_chooser(args.knobs)
    bar = Progress(len(runs), label="validate", unit="runs", every=10.0)
    t0 = time.perf_counter()
    results = v.validate(runs, choose, profiles, seed=args.seed, progress=bar.update)
    bar.close()
    wall = time.perf_counter() - t0
    if not any("error_pct" in r for r in results):  # bad input, refused before anything is written
        run, why = next((run, r["error"]) for run, r in zip(runs, results, strict=True) if "error" in r)
        where = why if run.error is not None else f"{run.where}: {why}"
        raise InputError(f"no run could be modelled; the first stopped at {where}")
    if args.json_out != STDOUT:  # `--json -`: standard output holds the JSON only
        print(v.table(results))
        print(f"({sum('error_pct' in r for r in results)} of {len(results)} runs modelled in {wall:.1f} s)")
        print(*itl_lines(results), *saturation_notes(results), sep="\n")
    doc = v.as_json(results)
    text = dumps_json(doc, indent=1, sort_keys=False)
    if args.json_out:
        write_json(args.json_out, doc, indent=1, sort_keys=False)
    if args.out:
        note = f"--knobs {args.knobs}" if args.knobs else "the catalogue's shipped knobs per GPU"
        cmd = "specbed validate " + " ".join(shlex.quote(a) for a in argv)
        files: dict[str, str | bytes] = {"validate.json": text, "report.md": _report(results, note, cmd)}
        png = v.plot(results, Path(args.out) / "validate.png")
        if png is not None:
            files["validate.png"] = png
        write_results(args.out, files, config={"command": "validate", **vars(args)})
    return 0
