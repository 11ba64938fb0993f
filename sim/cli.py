"""`specbed run [CONFIG.toml] [--set section.key=value ...] [--out DIR]`: one simulator run from the shell.

Role: parse flags, run `sim.simulate` (or, with --backend ray, `sim.shard.simulate_sharded`: the same
results computed by replica on Ray), print a summary table, and write the results. A config with
`[[pool]]` tables is a fleet (`sim.disagg.config.load_pools`): one `both` pool runs exactly as the
colocated config it stands for; a prefill and a decode pool run `sim.disagg.simulate_disagg` (its
summary.json holds the fleet's, the prefill pool's and the decode pool's figures). A colocated run writes:
DIR/summary.json (the summary dict; NaN written as null), DIR/requests.csv (one row per request),
DIR/series.csv (time series), DIR/confidence.json (the acceptance model's ECE/AUC report) and
DIR/config.toml (the resolved config, which `specbed run DIR/config.toml` replays); with --timeline also
DIR/timeline.json (every engine step, Chrome Trace Event format: `sim.timeline`).

DIR is checked writable (created, probe file) before the run starts; nothing else is written until the
config, every input file and the run itself have succeeded; then all files are written to temporary names
in DIR and renamed over the old ones (`specsched.io.safeio.write_files`), so bad input leaves DIR untouched
and
a crash or a full disk never leaves a half-written file. Bad input raises `InputError` (one line, exit 2
via specbed.cli).

May import: numpy, the standard library, `sim` modules (`sim.shard` lazily: it may import Ray),
`specsched.io.errors`, `specsched.io.safeio`, `specsched.io.results`.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from pathlib import Path
from typing import TextIO

import numpy as np

from sim.config import SimConfig
from sim.config_io import config_to_toml, load_config, locate
from sim.curves import DOMAINS
from specsched.io import inputs, jobdir, safeio
from specsched.io.errors import ArgParser, InputError
from specsched.io.results import STDOUT, dumps_json, write_csv, write_json, write_results

#: rows of the printed table: (summary key, label, format)
_TABLE = (
    ("requests_completed", "requests completed", "{:d}"),
    ("requests_measured", "requests measured (window)", "{:d}"),
    ("output_tokens", "output tokens", "{:d}"),
    ("steps", "engine steps", "{:d}"),
    ("throughput_tok_s", "throughput (tok/s)", "{:.1f}"),
    ("throughput_tok_s_per_gpu", "throughput per GPU (tok/s)", "{:.1f}"),
    ("per_user_tok_s_mean", "per-user speed (tok/s)", "{:.1f}"),
    ("ttft_s_p50", "TTFT p50 (s)", "{:.4f}"),
    ("ttft_s_p99", "TTFT p99 (s)", "{:.4f}"),
    ("tpot_s_mean", "TPOT mean (s)", "{:.5f}"),
    ("tpot_s_p99", "TPOT p99 (s)", "{:.5f}"),
    ("tau_mean", "tau (tokens/request/step)", "{:.3f}"),
    ("mean_verify_tokens_per_request_step", "verify tokens/request/step", "{:.3f}"),
    ("mean_batch_size", "mean decode batch", "{:.1f}"),
    ("preemptions", "preemptions", "{:d}"),
    ("slo_attainment", "SLO attainment", "{:.3f}"),
    ("ece_raw", "ECE raw", "{:.4f}"),
    ("ece_calibrated", "ECE calibrated", "{:.4f}"),
)


def _parser() -> argparse.ArgumentParser:
    p = ArgParser(prog="specbed run", description="Run the serving simulator on one config.")
    p.add_argument("config", nargs="?", help="TOML config (default: built-in defaults, configs/default.toml)")
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one config key (repeatable), e.g. --set workload.rate=8",
    )
    p.add_argument(
        "--out", metavar="DIR", help="write summary.json, requests.csv, series.csv, config.toml here"
    )
    p.add_argument(
        "--json",
        metavar="FILE",
        help="also write the summary as strict JSON here ('-': standard output, instead of the table)",
    )
    p.add_argument("--quiet", action="store_true", help="print no table and no progress")
    p.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local: one process (default); ray: shard the replicas over Ray tasks (open loop, a "
        "state-free router), same results",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="with --backend ray: the Ray cluster (HOST:PORT, ray://HOST:PORT or auto); default: start a "
        "local instance with 2 CPUs",
    )
    p.add_argument(
        "--timeline",
        action="store_true",
        help="also write DIR/timeline.json: every engine step in Chrome Trace Event format (Perfetto)",
    )
    return p


def write_requests_csv(handle: TextIO, requests: dict[str, np.ndarray]) -> None:
    """One row per request (`SimResult.requests`), the domain written by name."""
    cols = dict(requests)
    cols["domain"] = np.asarray(DOMAINS, dtype=object)[np.asarray(requests["domain"])]
    write_csv(handle, cols, {"domain": "%s"})


def format_table(summary: dict) -> str:
    lines = [
        f"{summary.get('policy')} / {summary.get('drafter')} (γ={summary.get('gamma')}) on "
        f"{summary.get('cost')}, seed {summary.get('seed')}"
    ]
    for key, label, fmt in _TABLE:
        value = summary.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            text = "n/a"
        elif value is None:
            continue
        else:
            text = fmt.format(int(value) if "d}" in fmt else value)
        lines.append(f"  {label:<30} {text:>14}")
    taus = summary.get("tau_by_domain", {})
    if taus:
        parts = ", ".join(
            f"{d} {v:.2f}" for d, v in taus.items() if isinstance(v, float) and math.isfinite(v)
        )
        lines.append(f"  {'tau by domain':<30} {parts:>14}")
    return "\n".join(lines)


def _timeline_error(err: OSError, out: Path) -> InputError:
    return InputError(
        f"could not write timeline.json ({safeio.os_reason(err)}); the previous timeline is intact",
        file=str(out),
        field="--timeline",
    )


def _sharded(args: argparse.Namespace, cfg) -> bool:
    """Whether this run goes to Ray; prints one line to stderr when --backend ray has to stay local."""
    if args.address is not None and args.backend != "ray":
        raise InputError("needs --backend ray", field="--address")
    if args.backend != "ray":
        return False
    from sim.raysession import import_ray, probe
    from sim.shard import shard_reason

    import_ray()  # a missing Ray fails before the run, whether it shards or not
    if args.address is not None:
        probe(args.address)  # a bad address fails even when the run stays local
    reason = "--timeline records every step in one process" if args.timeline else shard_reason(cfg)
    if reason is not None:
        print(f"specbed run: --backend ray runs in one process: {reason}", file=sys.stderr)
        return False
    return True


def _load(path: str | None, sets: list[str]):
    """The SimConfig of `path` (a fleet of one `both` pool included), or the `DisaggConfig` of a fleet of
    a prefill and a decode pool (`[[pool]]` tables: `sim.disagg.config.load_pools`)."""
    if path is not None:
        from sim.disagg.config import is_disaggregated, load_pools

        if is_disaggregated(path):
            return load_pools(path, sets)
    return load_config(path, sets)


def main(argv: list[str]) -> int:
    """`specbed run` (and its alias `specbed disagg`)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
    out = Path(args.out) if args.out else None
    print_json = args.json == STDOUT
    # --json FILE checked before the work and held until written (a second writer of it is refused)
    claim = safeio.claimed_file(args.json, field="--json", inputs=[args.config] if args.config else [])
    with claim, inputs.collect_warnings("specbed run") as notes:  # one line each, recorded in summary.json
        cfg = _load(args.config, args.sets)
        if args.timeline and out is None:
            raise InputError("needs --out DIR (timeline.json is written there)", field="--timeline")
        fresh = out is not None and not os.path.lexists(out)
        run = _run if isinstance(cfg, SimConfig) else _run_fleet
        if out is None:
            return run(args, cfg, None, fresh, notes, print_json)
        jobdir.refuse_other_job(out, "run")  # a folder of another command's results is not mixed
        safeio.check_run_dir(out)  # before simulating: a bad --out (or a sweep's folder) is refused
        with safeio.held(out):  # one run or one sweep per folder: a sweep cannot start here meanwhile
            return run(args, cfg, out, fresh, notes, print_json)


def _run_fleet(args, cfg, out: Path | None, fresh: bool, notes: list[str], print_json: bool) -> int:
    """A fleet of a prefill and a decode pool (`sim.disagg.simulate_disagg`, or `sim.shard` on Ray): prints
    the fleet's figures (or, with `print_json`, the whole summary); writes summary.json (fleet, prefill,
    decode), requests.csv (per-request fleet columns) and config.toml (the resolved fleet) to `out`."""
    from sim.disagg.config import fleet_to_toml
    from sim.disagg.run import simulate_disagg

    if args.timeline:
        raise InputError("records one pool's steps: not for a fleet of two pools", field="--timeline")
    try:
        if _sharded(args, cfg):
            from sim.shard import simulate_disagg_sharded

            result = simulate_disagg_sharded(cfg, args.address)
        else:
            result = simulate_disagg(cfg)
    except BaseException as err:
        if fresh:  # the folder we made for a run that failed: leave no trace (only if still empty)
            with contextlib.suppress(OSError):
                out.rmdir()
        if isinstance(err, InputError):
            raise locate(err, args.config, args.sets) from None
        raise
    doc = {"fleet": result.summary, "prefill": result.prefill, "decode": result.decode}
    if notes:
        doc["warnings"] = list(notes)
    if out is not None:
        files = {"summary.json": dumps_json(doc), "requests.csv": lambda h: write_csv(h, result.requests)}
        # one job's folder, swapped in whole: no earlier run's file (series.csv, timeline.json) stays
        write_results(out, files, config=fleet_to_toml(cfg), command="run", adopt=())
    _write_json(args, doc)
    if print_json:
        print(dumps_json(doc), end="")
    elif not args.quiet:
        from sim.disagg.run import POOL_FIGURES

        print(format_table(result.summary))
        for key in POOL_FIGURES:
            value = result.summary[key]
            print(f"  {key:<30} {value:>14.6g}")
        print(f"(simulated in {result.timing['total_s']:.2f} s)", file=sys.stderr)
    return 0


def _write_json(args: argparse.Namespace, doc: dict) -> None:
    """`--json FILE`: the summary as strict JSON, atomically (`-`: the caller prints it instead)."""
    if args.json is not None and args.json != STDOUT:
        write_json(args.json, doc, field="--json")


def _run(
    args: argparse.Namespace, cfg, out: Path | None, fresh: bool, notes: list[str], print_json: bool
) -> int:
    """One colocated pool (`sim.run.simulate`, or `sim.shard` on Ray); print_json: the summary as JSON."""
    from sim.run import simulate

    timeline = None
    if args.timeline:
        from sim.timeline import TimelineWriter

        meta = {"policy": cfg.policy.name, "drafter": cfg.drafter.name, "seed": cfg.seed}
        timeline = TimelineWriter(out / "timeline.json", gamma=cfg.drafter.effective_gamma, meta=meta)
    sharded = _sharded(args, cfg)
    start = time.perf_counter()
    try:
        if sharded:
            from sim.shard import simulate_sharded

            result = simulate_sharded(cfg, args.address, progress=not args.quiet)
        else:
            result = simulate(cfg, progress=not args.quiet, observer=timeline)
    except BaseException as err:
        if timeline is not None:
            timeline.abort()
        if fresh:  # the folder we made for a run that failed: leave no trace (only if still empty)
            with contextlib.suppress(OSError):
                out.rmdir()
        if isinstance(err, InputError):  # e.g. a cost table that does not exist: name the config line
            raise locate(err, args.config, args.sets) from None
        if isinstance(err, OSError) and timeline is not None:  # the streamed timeline hit a full disk
            raise _timeline_error(err, out) from None
        raise
    wall = time.perf_counter() - start
    if notes:  # legal but surprising input, said on stderr: kept beside the results too
        result.summary["warnings"] = list(notes)
    _write_json(args, result.summary)
    if print_json:
        print(dumps_json(result.summary), end="")
    elif not args.quiet:
        print(format_table(result.summary))
        print(f"  {'wall time (s)':<30} {wall:>14.2f}")
    if out is not None:
        try:
            if timeline is not None:
                timeline.close()  # in place before the swap, which keeps it (adopt)
            write_results(
                out,
                {
                    "summary.json": dumps_json(result.summary),
                    "confidence.json": dumps_json(result.confidence),
                    "requests.csv": lambda h: write_requests_csv(h, result.requests),
                    "series.csv": lambda h: write_csv(h, result.series),
                },
                config=config_to_toml(cfg),
                adopt=("timeline.json",) if timeline is not None else (),  # nothing else of an old run
            )
        except OSError as err:  # timeline.close(): its last flush or rename
            raise _timeline_error(err, out) from None
        finally:
            if timeline is not None:
                timeline.abort()  # no partial timeline left behind (nothing to do after close)
        if not args.quiet and not print_json:
            extra = ", timeline.json" if timeline is not None else ""
            print(f"wrote {out}/summary.json, requests.csv, series.csv, confidence.json, config.toml{extra}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
