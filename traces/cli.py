"""`specbed trace stats | convert | synth`: inspect, normalize and extrapolate traces from the shell.

  specbed trace stats FILE [--format F] [--columns MAP]          JSON statistics on stdout
  specbed trace convert FILE --out OUT.csv|OUT.csv.gz|OUT.parquet normalized table, written atomically
  specbed trace synth FILE --n N [--rate R] [--cv C] [--seed S] --out OUT.csv
                                                                  synthetic traffic fitted to FILE
FILE is a path (plain or .gz) or a built-in trace name (azure2023-conv, azure2023-code).
Bad input raises `InputError`; `specbed.cli` turns it into one line on stderr and exit code 2.
Imports: numpy, the standard library, specsched.io.errors, traces.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from contextlib import contextmanager
from functools import partial

import numpy as np

from specsched.io import safeio
from specsched.io.errors import ArgParser, InputError, bounded
from specsched.io.results import dumps_json
from traces import export, synthetic, transform
from traces.formats import FORMATS
from traces.loader import BUILTIN_TRACES, FilterError, load
from traces.stats import describe
from traces.table import RequestTable


def _columns(text: str) -> dict[str, str]:
    """'arrival=ts,input=prompt,output=gen,time_unit=ms' → dict."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"expected KEY=NAME pairs separated by commas, got {part!r}")
        out[key.strip()] = value.strip()
    return out


def _window(text: str) -> tuple[float, float | None]:
    start, sep, end = text.partition(":")
    try:
        return float(start or 0), (float(end) if end else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END in seconds, got {text!r}") from None


def _label(text: str) -> str:
    """A --model / --log-type value: a non-empty label (an empty one would match nothing, silently)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a label, got an empty string")
    return text


#: the simulator's bounds (sim.bounds' seed, cost.max_model_len; traces may not import sim)
MAX_SEED, MAX_CONTEXT = 2**63 - 1, 10**8


def _parser() -> ArgParser:
    hinted = partial(ArgParser, hint=True)  # usage errors point at the command's --help
    parser = hinted(prog="specbed trace", description="Inspect, normalize and extrapolate request traces.")
    metavar = "{stats,convert,synth}"
    sub = parser.add_subparsers(dest="command", required=True, metavar=metavar, parser_class=hinted)
    source = ArgParser(add_help=False)
    source.add_argument(
        "file", metavar="FILE", help=f"trace file (.gz ok) or built-in: {', '.join(BUILTIN_TRACES)}"
    )
    source.add_argument(
        "--format", choices=FORMATS, help="force the format (default: detect from the header)"
    )
    source.add_argument(
        "--columns",
        type=_columns,
        metavar="MAP",
        help="column mapping, e.g. arrival=ts,input=prompt,output=gen,time_unit=ms "
        "(time_unit: s|ms|us|ns|datetime)",
    )
    source.add_argument(
        "--model", action="append", type=_label, help="keep only this BurstGPT model (repeatable)"
    )
    source.add_argument(
        "--log-type", action="append", type=_label, help="keep only this BurstGPT log type (repeatable)"
    )
    source.add_argument("--keep-failed", action="store_true", help="keep requests with 0 output tokens")
    shaping = ArgParser(add_help=False)
    shaping.add_argument(
        "--window", type=_window, metavar="START:END", help="keep arrivals in [START, END) s"
    )
    shaping.add_argument(
        "--scale", type=bounded(float, 1e-6, 1e6), metavar="K", help="replay K× faster (K < 1: slower)"
    )
    shaping.add_argument(
        "--max-context",
        type=bounded(int, 2, MAX_CONTEXT),
        metavar="N",
        help="clip prompt + output to N tokens",
    )
    shaping.add_argument("--hash-block-tokens", type=int, default=512, metavar="N",
                         help="tokens per hash_ids block (Mooncake: 512): --max-context keeps the blocks a "
                         "shortened prompt still holds")  # fmt: skip

    sub.add_parser("stats", parents=[source, shaping], help="print statistics as JSON")
    convert = sub.add_parser("convert", parents=[source, shaping], help="write the normalized table")
    convert.add_argument("--out", required=True, metavar="FILE", help="FILE.csv, FILE.csv.gz or FILE.parquet")
    synth = sub.add_parser("synth", parents=[source], help="synthetic traffic fitted to the trace")
    synth.add_argument("--n", type=int, required=True, help="number of requests to generate")
    synth.add_argument("--rate", type=float, help="arrival rate, req/s (default: the trace's)")
    synth.add_argument("--cv", type=float, help="inter-arrival CV (default: the trace's)")
    synth.add_argument(
        "--seed", type=bounded(int, 0, MAX_SEED), default=0, help="seed of the SeedSequence (default 0)"
    )
    synth.add_argument("--out", required=True, metavar="FILE", help="FILE.csv, FILE.csv.gz or FILE.parquet")
    return parser


@contextmanager
def _filter_flags():
    """A model / log_type filter that cannot apply is the flag's fault: name --model / --log-type."""
    try:
        yield
    except FilterError as err:
        flag = "--" + err.param.replace("_", "-")
        raise InputError(f"{err.message} (column {err.field!r})", file=err.file, field=flag) from None


def _load(args: argparse.Namespace) -> RequestTable:
    with warnings.catch_warnings(record=True) as caught, _filter_flags():
        warnings.simplefilter("always")
        table = load(
            args.file,
            format=args.format,
            columns=args.columns,
            drop_failed=not args.keep_failed,
            model=args.model,
            log_type=args.log_type,
            progress=True,
        )
    for w in caught:
        print(f"specbed trace: warning: {' '.join(str(w.message).split())}", file=sys.stderr)
    if getattr(args, "window", None) is not None:
        table = transform.window(table, *args.window)
    if getattr(args, "scale", None) is not None:
        table = transform.scale_rate(table, args.scale)
    if getattr(args, "max_context", None) is not None:
        try:
            table = transform.clip(table, args.max_context, hash_block_tokens=args.hash_block_tokens)
        except ValueError as err:
            raise InputError(str(err), field="--max-context") from None
    return table


#: most requests `trace synth` generates (the simulator's own bound on workload.num_requests)
MAX_SYNTH = 10_000_000
#: `--rate` / `--cv` bounds: the simulator's on workload.rate / workload.cv (traces may not import sim)
MAX_RATE, MAX_CV = 1e6, 100.0


def _emit(text: str) -> None:
    """Print to stdout; a reader that closed the pipe early (`| head`) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit


def main(argv: list[str] | None = None) -> int:
    """Entry point for `specbed trace ...` (argv excludes 'trace'); returns the exit code."""
    try:
        args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as done:  # --help
        return int(done.code or 0)
    if args.command == "synth" and args.n <= 0:
        raise InputError(f"must be > 0, got {args.n}", field="--n")
    if args.command == "synth" and args.n > MAX_SYNTH:
        raise InputError(f"must be ≤ {MAX_SYNTH:,} (its upper bound), got {args.n}", field="--n")
    if args.command == "synth":  # the simulator's bounds on workload.rate / workload.cv (sim.bounds)
        for flag, value, bound in (("--rate", args.rate, MAX_RATE), ("--cv", args.cv, MAX_CV)):
            if value is not None and value > bound:
                raise InputError(f"must be ≤ {bound:g} (its upper bound in run), got {value:g}", field=flag)
    block = getattr(args, "hash_block_tokens", 512)
    if not 1 <= block <= 1_048_576:  # sim.bounds' workload.hash_block_tokens; checked before any work
        raise InputError(f"must be in [1, 1048576], got {block}", field="--hash-block-tokens")
    if args.command in ("convert", "synth"):  # before reading the trace: a bad --out is reported first
        safeio.check_names(args.out, field="--out")
        export.check_out(args.out)
        safeio.refuse_clobber(args.out, inputs=[args.file], field="--out")  # never onto the trace read
        with safeio.claimed_file(args.out, inputs=[args.file]):  # held until written: a 2nd writer refused
            return _run(args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    table = _load(args)
    if args.command == "stats":
        _emit(dumps_json(describe(table), sort_keys=False).rstrip("\n"))
        return 0
    if args.command == "convert":
        path = export.save(table, args.out)
        _emit(f"wrote {len(table)} requests ({table.meta.get('format')}) to {path}")
        return 0
    try:
        model = synthetic.fit(table)
    except ValueError as err:  # too few requests left, or a degenerate fit: the trace's fault
        raise InputError(f"cannot fit synthetic traffic: {err}", file=args.file) from None
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(args.seed)))
    out = model.generate(args.n, rng, rate=args.rate, cv=args.cv)
    path = export.save(out, args.out)
    summary = {"out": str(path), "requests": len(out), "seed": args.seed, "fit": model.summary()}
    _emit(dumps_json(summary | {"generated": describe(out)}, sort_keys=False).rstrip("\n"))
    return 0
