"""`specbed vllm curves|export|compare`: the vLLM bridge from the shell.

    specbed vllm curves FILE... --drafter NAME --domain DOMAIN [--out curves.json] [--into FILE]
        (--out defaults to the --into file, else curves.json, which must not exist yet)
    specbed vllm export RUN_DIR --format vllm-bench [--out FILE]
    specbed vllm compare SIM_RUN_DIR VLLM_RESULT  (--save-result JSON, console report or per-request JSON)

The old names (`specbed curves from-vllm`, `specbed export`, `specbed compare`) run the same code until
the next release. Registered for several subcommands, so `main` receives the subcommand name first. Files
are written under a temporary name and renamed, after every input was read and checked: bad input (one
line naming the file, line and field; exit 2 via specbed.cli) never leaves a half-written or lost file.

May import: numpy, the standard library, `specsched` (errors, contracts, safeio).
"""

from __future__ import annotations

from pathlib import Path

from specsched.io import safeio
from specsched.io.errors import ArgParser, InputError
from specsched.io.results import STDOUT, write_json


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"expected an integer >= 1, got {text!r}", field="--k") from None
    if not 1 <= value <= 64:
        raise InputError(f"expected an integer in [1, 64], got {value}", field="--k")
    return value


def _export(argv: list[str]) -> int:
    from bridge.bench import export_vllm_bench

    p = ArgParser(prog="specbed vllm export", description="A simulator run in another tool's result shape.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a `specbed run --out` directory")
    p.add_argument("--format", default="vllm-bench", choices=["vllm-bench"], help="result shape")
    p.add_argument("--out", metavar="FILE", help="write here (default: print to stdout)")
    args = p.parse_args(argv)
    # probed first (a full disk keeps the old file) and held until written: a second export is refused
    with safeio.claimed_file(args.out, inputs=[args.run_dir]):
        doc = export_vllm_bench(args.run_dir)
        write_json(STDOUT if args.out is None else args.out, doc, field="--out")
    if args.out is not None:
        print(f"wrote {args.out} (vllm bench serve result keys; latencies in ms)")
    return 0


def _compare(argv: list[str]) -> int:
    from bridge.bench import compare_rows, export_vllm_bench, format_compare, load_vllm_result, run_load
    from specsched.load import saturation_note

    p = ArgParser(
        prog="specbed vllm compare", description="A simulator run beside a vllm bench serve result."
    )
    p.add_argument("sim_run", metavar="SIM_RUN_DIR", help="a `specbed run --out` directory")
    p.add_argument(
        "vllm_result", metavar="VLLM_RESULT", help="--save-result JSON, console report or per-request JSON"
    )
    args = p.parse_args(argv)
    real = load_vllm_result(args.vllm_result)
    sim = export_vllm_bench(args.sim_run)
    rows = compare_rows(sim, real)
    print(format_compare(rows, Path(args.sim_run).name, Path(args.vllm_result).name))
    note = saturation_note(Path(args.sim_run).name, run_load(args.sim_run))
    if note:
        print(note)
    return 0


def _from_vllm(argv: list[str]) -> int:
    from bridge.acceptance import read_acceptance
    from bridge.curves_out import write_acceptance_curves

    p = ArgParser(prog="specbed vllm curves", description="A curves file from vLLM's acceptance counters.")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="Prometheus /metrics scrape(s) (one cumulative, or a before/after pair), vLLM logs, "
                   "or vllm bench serve --save-result JSON")  # fmt: skip
    p.add_argument("--drafter", required=True, metavar="NAME", help="drafter name to store the curve under")
    p.add_argument("--domain", required=True, metavar="DOMAIN", help="domain the traffic came from")
    p.add_argument(
        "--out", metavar="FILE", help="curves file to write (default: the --into file, else curves.json)"
    )
    p.add_argument("--into", metavar="FILE", help="merge into this existing curves file")
    p.add_argument("--tau-only", action="store_true",
                   help="accept a source with τ only (vLLM v0, SGLang): store a constant-acceptance curve "
                   "fitted to τ, marked as fitted")  # fmt: skip
    p.add_argument("--k", type=_positive_int, metavar="K",
                   help="draft length, for a τ-only source without it")  # fmt: skip
    args = p.parse_args(argv)
    if args.out is None and args.into is None:
        args.out = "curves.json"
        if Path(args.out).exists():  # never replace a file the user did not name
            raise InputError("exists: merge into it with --into, or name the file with --out", file=args.out,
                             field="--out")  # fmt: skip
    target = Path(args.out if args.out is not None else args.into)
    # never onto a scrape it reads, nor a result's own file. --into is a read-modify-write: concurrent
    # merges into one file wait for each other (folder lock); a second writer of one --out is refused
    if args.into:
        safeio.check_file(target, inputs=args.files)
        lock = safeio.held(target.parent, wait_s=60.0, field="--into")
    else:
        lock = safeio.claimed_file(target, inputs=args.files)
    with lock:
        acc = read_acceptance(args.files, tau_only=args.tau_only, k=args.k)
        out = write_acceptance_curves(acc, args.drafter, args.domain, out=args.out, into=args.into)
    rates = ", ".join(f"{x:.3f}" for x in acc.rates)
    cond = ", ".join(f"{x:.3f}" for x in acc.conditional())
    drafts = f"{acc.drafts:.0f} drafts" if acc.measured else "τ only"
    print(f"{acc.kind}: {drafts} over {len(acc.sources)} file(s), {acc.per_pos.size} positions")
    label = "per-position acceptance rate (vLLM):" if acc.measured else "per-position rate (FITTED to τ):"
    print(f"  {label:<37}{rates}")
    print(f"  conditional curve:                   {cond}")
    print(f"  acceptance length τ = 1 + Σ rates:   {acc.tau:.3f}")
    for note in acc.notes:
        print(f"  provenance: {note}")
    print(f"wrote {out} (drafter {args.drafter!r}, domain {args.domain!r})")
    return 0


def _curves(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: specbed vllm curves FILE... --drafter NAME --domain DOMAIN [--out F] [--into F]")
        return 0
    if argv[0] != "from-vllm":
        raise InputError(f"unknown curves command {argv[0]!r} (expected from-vllm)", field="COMMAND")
    return _from_vllm(argv[1:])


def main(argv: list[str]) -> int:
    name, rest = argv[0], argv[1:]
    try:
        return {"curves": _curves, "export": _export, "compare": _compare}[name](rest)
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
