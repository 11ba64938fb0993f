"""`specbed engine train | eval | profile | curves` (argv[0] is the sub-subcommand).

Role: the command line of the engine's measurements. Bad input (missing or corrupt checkpoints, bad
options) raises specsched.io.errors.InputError / ValueError, which specbed.cli turns into one line + exit 2.
- train:   python -m engine.lm.train (same options).
- eval:    τ table (Table 1 layout), per-position acceptance (Fig. 2 layout), depth ablation, ECE/AUC
           before/after STS; writes results.json, report.txt, config.json and reliability PNGs to --out DIR.
- profile: verify-step latency vs verify tokens on this device -> --out cost.csv (tokens,seconds).
- curves:  per-position acceptance curves + confidence stats -> --out curves.json (sim.curves format).
Long work prints progress to stderr.

May import: stdlib, torch, numpy, specsched, engine.* (lazily; never sim).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

from specsched.io.errors import InputError
from specsched.io.results import add_out_dir

USAGE = "usage: specbed engine {train|eval|profile|curves} [options]   (--help after each for options)"


def _progress(quiet: bool):
    start = time.perf_counter()

    def report(msg: str) -> None:
        if not quiet:
            print(f"  [{time.perf_counter() - start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    return report


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoints", default=None, help="checkpoint directory (default: engine/checkpoints)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--device", default="cpu", help="torch device: cpu (default), cuda or cuda:N")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _setup(args):
    import torch

    from engine.lm.checkpoint import corpus_for, load_bundle

    if args.threads < 1:
        raise ValueError(f"--threads: must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    from engine.measure.rollout import check_device

    check_device(args.device)
    names = getattr(args, "drafters", None)
    bundle = load_bundle(args.checkpoints, names.split(",") if names else None)
    return bundle, corpus_for(bundle)


def _eval_config(args):
    from engine.measure.evaluate import EvalConfig

    return EvalConfig(
        prompts=args.prompts,
        prompt_len=args.prompt_len,
        new_tokens=args.new_tokens,
        gamma=args.gamma,
        temperature=args.temperature,
        seed=args.seed,
        device=args.device,
        trees=getattr(args, "trees", 0),
    )


def _eval_args(parser: argparse.ArgumentParser, prompts: int) -> None:
    parser.add_argument("--prompts", type=int, default=prompts, help="prompts per domain")
    parser.add_argument("--prompt-len", type=int, default=48)
    parser.add_argument("--new-tokens", type=int, default=96)
    parser.add_argument("--gamma", type=int, default=7)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--drafters", default=None, help="comma-separated drafter names (default: all)")


def _at_least_zero(text: str) -> int:
    """An integer flag value ≥ 0 (rejected by argparse, before any folder is made)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _eval(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specbed engine eval", description="tau, acceptance, calibration")
    _common(parser)
    _eval_args(parser, 48)
    add_out_dir(parser, default="results/engine_eval", help="folder: results.json, report.txt, config.json")
    parser.add_argument(
        "--trees", type=_at_least_zero, default=0, help="prompts per domain for trees-vs-chains tau (0: off)"
    )
    args = parser.parse_args(argv)
    from pathlib import Path

    from engine.measure.evaluate import evaluate, format_report, write_outputs
    from specsched.io import jobdir

    # checked before loading anything, held until the folder's swap (a second writer is refused); a
    # folder made for a job refused at setup is removed again
    with jobdir.claim(args.out, "engine eval"):
        bundle, corpus = _setup(args)
        res = evaluate(bundle, corpus, _eval_config(args), progress=_progress(args.quiet))
        print(format_report(res))
        files = write_outputs(res, Path(args.out))
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


@contextlib.contextmanager
def _claim_profile_outputs(args):
    """--out and --steps-out proven writable (and distinct) before loading or measuring anything, and
    held until written (a second writer of either is refused)."""
    from specsched.io import safeio

    if args.steps_out and Path(args.steps_out).resolve() == Path(args.out).resolve():
        raise InputError("is the --out file too; name another", file=args.steps_out, field="--steps-out")
    with safeio.claimed_file(args.out), safeio.claimed_file(args.steps_out, field="--steps-out"):
        yield


def _profile(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specbed engine profile", description="verify latency vs tokens")
    _common(parser)
    parser.add_argument("--out", required=True, metavar="FILE", help="cost table CSV (tokens,seconds)")
    parser.add_argument(
        "--steps-out", default=None, help="also write specbed's measured-step CSV (for `specbed cost fit`)"
    )
    parser.add_argument("--requests", default="8", help="comma-separated batch sizes R (default 8)")
    parser.add_argument("--gamma", type=int, default=7)
    parser.add_argument("--drafter", default="dspark2")
    parser.add_argument("--prompt-len", type=int, default=48)
    parser.add_argument("--new-tokens", type=int, default=48)
    parser.add_argument(
        "--clock",
        choices=("process", "wall"),
        default=None,
        help="process CPU time (default on cpu) or wall time (default on cuda)",
    )
    parser.add_argument(
        "--statistic", choices=("median", "mean"), default="median", help="of the clean steps' seconds"
    )
    parser.add_argument(
        "--extra-requests",
        type=int,
        default=0,
        help="requests beyond R that join mid-run, to measure the per-join cost (in the CSV's comments)",
    )
    parser.add_argument(
        "--context",
        type=float,
        default=None,
        help="move every step to this longest context in tokens (the engine pads KV to the longest row; "
        "a staggered workload runs longer ones than the profile's lockstep requests): 0 = the intercept, "
        "for a twin with cost.padded_context_seconds; default: as measured",
    )
    args = parser.parse_args(argv)

    try:
        rs = tuple(int(x) for x in args.requests.split(","))
    except ValueError:
        raise ValueError(f"--requests: expected comma-separated integers, got {args.requests!r}") from None

    args.drafters = args.drafter
    with _claim_profile_outputs(args):
        return _profile_held(args, rs)


def _profile_held(args, rs: tuple[int, ...]) -> int:
    from engine.measure.profile import ProfileConfig, profile

    bundle, corpus = _setup(args)
    pcfg = ProfileConfig(
        requests=rs,
        gamma=args.gamma,
        drafter=args.drafter,
        prompt_len=args.prompt_len,
        new_tokens=args.new_tokens,
        device=args.device,
        statistic=args.statistic,
        extra_requests=args.extra_requests,
        context=args.context,
        clock=args.clock or ("process" if args.device == "cpu" else "wall"),
    )
    prof = profile(bundle, corpus, pcfg, progress=_progress(args.quiet))
    prof.write(args.out)
    print(prof.to_csv(), end="")
    print(f"wrote {args.out}")
    if args.steps_out:
        prof.write_steps(args.steps_out)
        print(f"wrote {args.steps_out}")
    return 0


def _curves(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specbed engine curves", description="acceptance curves for sim")
    _common(parser)
    _eval_args(parser, 24)
    parser.add_argument("--out", required=True, metavar="FILE", help="curves JSON to write")
    parser.add_argument(
        "--map",
        default=None,
        help="sim=engine drafter pairs (default eagle3=eagle1,dflash=dflash2,dspark=dspark2)",
    )
    args = parser.parse_args(argv)
    from engine.measure.curves import build_curves, parse_map
    from engine.measure.evaluate import evaluate
    from specsched.contracts.curves import save_curves
    from specsched.io import safeio

    mapping = parse_map(args.map)
    if args.drafters:  # measure only these (engine names), never silently all of them
        wanted = [n.strip() for n in args.drafters.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in mapping.values()]
        if unknown or not wanted:
            raise ValueError(
                f"--drafters: {unknown[0] if unknown else args.drafters!r} is not an engine drafter of "
                f"--map (choose from {', '.join(sorted(set(mapping.values())))})"
            )
        mapping = {sim: eng for sim, eng in mapping.items() if eng in wanted}
    args.drafters = ",".join(sorted(set(mapping.values())))
    with safeio.claimed_file(args.out):  # before loading or measuring; held until written
        bundle, corpus = _setup(args)
        res = evaluate(bundle, corpus, _eval_config(args), progress=_progress(args.quiet))
        curves = build_curves(
            res,
            mapping,
            f"measured by specbed engine curves (gamma {args.gamma}, temperature "
            f"{args.temperature}, {args.prompts} prompts/domain, {bundle.directory})",
        )
        save_curves(curves, args.out)
    for sim_name, per in curves.curves.items():
        print(
            f"{sim_name:<7}"
            + "  ".join(f"{dom} " + " ".join(f"{v:.3f}" for v in c) for dom, c in per.items())
        )
    print(f"wrote {args.out}")
    return 0


def _train(argv: list[str]) -> int:
    from engine.lm.train import main as train_main

    return train_main(argv)


COMMANDS = {"train": _train, "eval": _eval, "profile": _profile, "curves": _curves}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    if argv[0] not in COMMANDS:
        print(f"specbed engine: error: unknown subcommand {argv[0]!r} ({USAGE})", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])
