"""`specbed sweep | pareto | report`: run a sweep, plot its Pareto frontiers, write its report.

    specbed sweep SWEEP.toml --out DIR [--jobs N] [--backend local|ray] [--address ADDR]
                  [--resume | --force] [--quiet] [--model module:attr]
    specbed pareto DIR [--baseline SERIES] [--slo TOK_S ...] [--out pareto.png] [--x METRIC] [--y METRIC]
    specbed report DIR [--baseline SERIES] [--slo TOK_S ...] [--out summary.md]

`main(argv)` receives the subcommand as argv[0] (specbed/cli.py dispatches three commands here). Bad
input raises `InputError` (one line, exit 2, via specbed/cli.py); a sweep with failed cells exits 1.

May import: the standard library, `specsched.io.errors`, `specsched.io.safeio`, the `analysis` modules.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from specsched.io import safeio
from specsched.io.errors import ArgParser, InputError, bounded

MAX_JOBS = 4096  # processes one machine can usefully run (argparse refuses more, naming --jobs)


def _analysis_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="a sweep results folder")
    p.add_argument("--baseline", help="series to compare against (default: the sweep file's, else the first)")
    p.add_argument("--slo", type=float, action="append", help="per-user tok/s for iso-SLO gains (repeatable)")
    p.add_argument("--x", help="throughput metric (default throughput_tok_s_per_gpu)")
    p.add_argument("--y", help="per-user speed metric (default per_user_tok_s_mean)")


def _parser(command: str) -> argparse.ArgumentParser:
    p = ArgParser(prog=f"specbed {command}", field=command)
    if command == "sweep":
        p.add_argument("sweep", type=Path, help="sweep TOML file")
        p.add_argument("--out", type=Path, required=True, metavar="DIR", help="results folder")
        p.add_argument("--jobs", type=bounded(int, 1, MAX_JOBS), help="parallel cells (default: all CPUs)")
        p.add_argument("--backend", default="local", help="local (process pool) or ray")
        p.add_argument("--address", help="Ray cluster address (default: start a local Ray)")
        p.add_argument("--resume", action="store_true", help="finish a sweep already started in --out")
        p.add_argument("--force", action="store_true", help="start again in a folder holding a sweep")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        p.add_argument("--model", help="cell model module:attr (default: the simulator)")
    else:
        _analysis_flags(p)
        # a string, not a Path: "DIR/" must stay visibly a folder (refused), not become a file "DIR"
        p.add_argument("--out", metavar="FILE", help="output file (default DIR/pareto.png or DIR/summary.md)")
    return p


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("sweep", "pareto", "report"):
        raise InputError("expected sweep, pareto or report", field="command")
    command, rest = argv[0], argv[1:]
    args = _parser(command).parse_args(rest)
    return {"sweep": _sweep, "pareto": _pareto, "report": _report}[command](args)


def _sweep(args) -> int:
    from analysis.model import load_model
    from analysis.runner import run_sweep
    from analysis.sweepfile import load_sweep

    if args.resume and args.force:
        raise InputError("pass one of --resume and --force", field="--force")
    sweep = load_sweep(args.sweep)
    run = run_sweep(
        sweep,
        args.out,
        model=load_model(args.model),
        jobs=args.jobs,
        backend=args.backend,
        address=args.address,
        resume=args.resume,
        force=args.force,
        progress=not args.quiet,
    )
    print(
        f"{run.total} cells: {run.cached} reused, {run.ran} run, {len(run.failed)} failed "
        f"({run.seconds:.1f} s) -> {run.out / 'results.jsonl'}"
    )
    if run.failed:
        key, message = run.failed[0]
        print(
            f"specbed sweep: {len(run.failed)} cells failed (first {key}: {message}); tracebacks in "
            f"{run.out / 'errors'}; fix and re-run with --resume",
            file=sys.stderr,
        )
        return 1
    _print_gains(args.out)
    return 0


def _print_gains(out: Path) -> None:
    from analysis import store
    from analysis.report import analyze, gains_table

    manifest, rows = store.load_rows(out)
    try:
        result = analyze(manifest, rows)
    except InputError:
        return  # a sweep without throughput/speed metrics: nothing to compare
    if result.gains and len({s for _, s in result.points}) > 1:
        print(f"\nGains against {result.baseline} (*):")
        print(gains_table(result))


def _load(args):
    from analysis import store
    from analysis.report import analyze

    for slo in args.slo or ():
        if not (math.isfinite(slo) and slo > 0):
            raise InputError(f"must be a positive per-user speed (tok/s), got {slo:g}", field="--slo")
    manifest, rows = store.load_rows(args.dir)
    if not rows:
        raise InputError("holds no finished cells yet", field=str(args.dir))
    result = analyze(
        manifest, rows, baseline=args.baseline, slos=tuple(args.slo) if args.slo else None, x=args.x, y=args.y
    )
    return manifest, rows, result


def _checked_out(args, default: str) -> Path:
    """The output file, proven writable before any work (a bad --out is bad input, reported up front)."""
    from analysis import store

    if args.out is None and not (args.dir / store.MANIFEST).is_file():
        store.load_rows(args.dir)  # not a sweep folder: its usual one-line error, nothing created
    return safeio.check_file(args.out or args.dir / default)


def _pareto(args) -> int:
    out = _checked_out(args, "pareto.png")
    with safeio.claimed_file(out):  # held until written: a second writer of the figure is refused
        return _pareto_held(args, out)


def _pareto_held(args, out: Path) -> int:
    from analysis.plot import plot_pareto
    from analysis.report import gains_table

    manifest, _, result = _load(args)
    plot_pareto(
        result.points,
        result.fronts,
        out,
        baseline=result.baseline,
        slos=result.slos,
        order=result.order,
        title=manifest.get("name", ""),
    )
    print(gains_table(result))
    print(f"\nwrote {out}")
    return 0


def _report(args) -> int:
    out = _checked_out(args, "summary.md")
    figure = out.with_name("pareto.png")
    if figure == out:
        raise InputError(
            "would be overwritten by the report's figure pareto.png; name it otherwise", field="--out"
        )
    with safeio.claimed_file(out), safeio.claimed_file(figure):  # held until both are written
        return _report_held(args, out, figure)


def _report_held(args, out: Path, figure: Path) -> int:
    from analysis.plot import pareto_png
    from analysis.report import markdown

    manifest, rows, result = _load(args)
    png = pareto_png(
        result.points,
        result.fronts,
        baseline=result.baseline,
        slos=result.slos,
        order=result.order,
        title=manifest.get("name", ""),
    )
    failed = len(list((args.dir / "errors").glob("*.txt"))) if (args.dir / "errors").is_dir() else 0
    text = markdown(manifest, rows, result, figure=figure.name, failed=failed)
    # both files of the report written at once: never one report's figure beside another's summary
    safeio.write_files(Path(out).parent, {Path(out).name: text + "\n", figure.name: png})
    print(text)
    print(f"\nwrote {out} and {figure}")
    return 0
