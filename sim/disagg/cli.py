"""`specbed disagg CONFIG [--set k=v ...] [--out DIR] [--json FILE]`: run one disaggregated config.

Role: the command line of `sim.disagg`: load a config with `[[pool]]` tables (sim.disagg.config), run it
(sim.disagg.run) and print the fleet's figures — prefill input tok/s per GPU (with prefix hits),
decode output tok/s per GPU, per-user tok/s, TTFT, hand-off bytes and exposed seconds — then each
pool's. `--out DIR` writes summary.json and the resolved config (config.json) there (proved writable
before the run; atomic, strict JSON: NaN as null); `--json FILE` the same summary to one file (`-`:
standard output). `--backend ray` shards each pool by replica (`sim.disagg.shard`; the same figures).

May import: the standard library, `sim.disagg`, `sim.config_io`, `specsched` (errors, safeio, results).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys

from specsched import safeio
from specsched.errors import InputError
from specsched.results import STDOUT, dumps_json, write_json, write_results


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="specbed disagg", description=__doc__.splitlines()[0])
    p.add_argument("config", help="TOML config with [[pool]] tables (docs/disaggregation.md)")
    example = "workload.rate=8, pool.decode.replicas=2, handoff.link=roce-400g"
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=f"override: {example}")
    p.add_argument("--out", metavar="DIR", help="folder for summary.json and config.json (resolved config)")
    p.add_argument("--json", metavar="FILE", help="also write the summary as JSON here ('-': stdout only)")
    p.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="ray: shard each pool's replicas over Ray tasks (state-free routers; sim.disagg.shard)",
    )
    p.add_argument("--address", help="Ray cluster address (default: a local 2-CPU instance)")
    return p


def _fmt(value) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def main(argv: list[str]) -> int:
    from sim.config_io import locate
    from sim.disagg import load_disagg, simulate_disagg

    args = _parser().parse_args(argv)
    if args.out is not None:
        safeio.check_run_dir(args.out)  # never among a sweep's files
    if args.json not in (None, STDOUT):
        safeio.check_file(args.json, field="--json", inputs=[args.config])
    try:
        cfg = load_disagg(args.config, args.set)
        if args.backend == "ray":
            from sim.disagg.shard import disagg_shard_reason, simulate_disagg_sharded

            reason = disagg_shard_reason(cfg)
            if reason is not None:
                raise InputError(f"cannot shard this run: {reason}", field="--backend")
            result = simulate_disagg_sharded(cfg, args.address)
        else:
            result = simulate_disagg(cfg)
    except InputError as err:
        raise locate(err, args.config, args.set) from None
    doc = {"fleet": result.summary, "prefill": result.prefill, "decode": result.decode}
    if args.out is not None:
        write_results(args.out, {"summary.json": dumps_json(doc, indent=1, sort_keys=False)},
                      config=dataclasses.asdict(cfg))  # fmt: skip
    if args.json is not None:
        write_json(args.json, doc, indent=1, sort_keys=False)
        if args.json == STDOUT:
            return 0
    for key, value in result.summary.items():
        print(f"{key:<34} {_fmt(value)}")
    print(f"(simulated in {result.timing['total_s']:.2f} s)", file=sys.stderr)
    return 0
