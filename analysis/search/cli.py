"""`specbed search`: the cheapest deployment that meets an SLO on the user's traffic, and its vLLM launch.

    specbed search SPACE.toml --traffic TRACE|CONFIG --slo "ttft_p90<=2s,itl_p50<=25ms,itl_p99<=60ms"
                   --out DIR [--speedup K] [--prices PRICES.toml] [--budget-s N] [--jobs N]
                   [--backend local|ray] [--address ADDR] [--resume | --force] [--quiet]

SPACE.toml: `analysis.search.space`; SLO grammar: `analysis.search.slo`; prices:
`analysis.search.prices` (default: the shipped analysis/data/gpu_prices.toml); what runs:
`analysis.search.halving`; what is written: `analysis.search.output`. Bad input is one line naming the
file and field, exit 2; no candidate meeting the SLO exits 1.

May import: the standard library, `specsched`, the `analysis` modules.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.cli import MAX_JOBS
from specsched.io.errors import ArgParser, InputError, bounded


def _parser() -> argparse.ArgumentParser:
    p = ArgParser(prog="specbed search", field="search", description=__doc__.split("\n\n")[0])
    p.add_argument("space", type=Path, help="search space TOML (a sweep file with an optional [search])")
    p.add_argument("--traffic", required=True, help="a trace (file or built-in name) or a config .toml")
    p.add_argument("--slo", required=True, help='e.g. "ttft_p90<=2s,itl_p50<=25ms,itl_p99<=60ms"')
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="results folder (and run cache)")
    p.add_argument(
        "--speedup", type=bounded(float, 0, 1e6), help="replay the traffic K× faster (workload.speedup)"
    )
    p.add_argument("--prices", type=Path, help="GPU-hour price table (default: the shipped, dated one)")
    p.add_argument(
        "--budget-s", type=bounded(float, 0, 1e7), help="stop running new candidates after this many seconds"
    )
    p.add_argument("--jobs", type=bounded(int, 1, MAX_JOBS), help="parallel runs (default: all CPUs)")
    p.add_argument("--backend", default="local", help="local (process pool) or ray")
    p.add_argument("--address", help="Ray cluster address (default: a local Ray)")
    p.add_argument("--resume", action="store_true", help="reuse the finished runs already in --out")
    p.add_argument("--force", action="store_true", help="start again in a folder holding another search")
    p.add_argument("--quiet", action="store_true", help="no progress")
    return p


def main(argv: list[str]) -> int:
    from analysis.search import output
    from analysis.search.halving import run_search
    from analysis.search.prices import load_prices
    from analysis.search.slo import parse_slo
    from analysis.search.space import load_space, traffic_overrides

    args = _parser().parse_args(argv)
    if args.resume and args.force:
        raise InputError("pass one of --resume and --force", field="--force")
    if args.address is not None and args.backend != "ray":
        raise InputError("--address needs --backend ray", field="--address")
    slo = parse_slo(args.slo)
    prices = load_prices(args.prices)
    space = load_space(args.space)
    traffic = traffic_overrides(args.traffic, args.speedup)
    if args.resume:  # a finished search of another space or SLO is refused, never rewritten
        output.check_resume(args.out, space, slo)
    outcome = run_search(
        space, traffic, slo, prices, args.out, jobs=args.jobs, backend=args.backend, address=args.address,
        budget_s=args.budget_s, resume=args.resume, force=args.force, progress=not args.quiet,
    )  # fmt: skip
    files = output.write_all(args.out, outcome, slo, space, vars(args))
    _print(outcome, slo, files, args.out)
    return 0 if outcome.ranked else 1


def _print(outcome, slo, files: dict[str, str], out: Path) -> None:
    from analysis.search import output

    t = outcome.traffic
    print(
        f"traffic: {t.requests} requests, {t.rate:.2f} req/s, mean {t.input_tokens:.0f} in / "
        f"{t.output_tokens:.0f} out tokens; SLO {slo.text()}"
    )
    print(output.rungs_table(outcome))
    if outcome.budget_hit:
        print("--budget-s ran out: ranked on the last fidelity each candidate reached")
    if not outcome.ranked:
        print("no candidate met the SLO (dropped.csv says why for each)", file=sys.stderr)
        return
    print("\n" + output.ranked_table(outcome, slo, top=10))
    print("\ncheapest by GPU and series:\n" + output.best_by(outcome, slo))
    commands = [line for line in files["vllm_serve.sh"].splitlines() if not line.startswith("#")]
    print("\nwinner: " + "\n        ".join(commands))
    done = f"{len(outcome.candidates)} candidates in {outcome.seconds:.1f} s"
    print(f"\n{done} -> {out}/summary.md, ranked.csv, dropped.csv, pareto.png, winner.toml, vllm_serve.sh")
