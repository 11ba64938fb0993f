"""What every paper figure script shares: flags, sweeps run in-process, acceptance Monte Carlo, summaries.

Each script `python -m paper_figs.<name> [--tiny] [--out DIR] [--jobs N]` writes DIR/<name>.png and
DIR/summary.json (floats rounded to 6 significant digits so goldens diff cleanly). `--tiny` shrinks every
sweep and sample count so the figure takes seconds (the tests compare tiny summaries with paper_figs/golden).

May import: numpy, the standard library, `analysis`, `sim` (curves, acceptance), `specsched`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from specsched.io.errors import ArgParser
from specsched.io.results import dumps_json, plain, write_results

RESULTS = Path("results") / "paper_figs"
#: display names of the built-in drafters, shared by the acceptance figures
TITLES = {"dflash": "DFlash", "eagle3": "EAGLE-3", "dspark": "DSpark"}


def parse_args(name: str, argv: list[str] | None, about: str) -> argparse.Namespace:
    p = ArgParser(prog=f"paper_figs.{name}", field=f"paper_figs.{name}", description=about)
    p.add_argument("--tiny", action="store_true", help="seconds-long version (tests, smoke runs)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"output folder (default {RESULTS}/{name})")
    p.add_argument("--jobs", type=int, default=None, help="parallel sweep cells (default: all CPUs)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    args.out = args.out or RESULTS / name
    args.figure = name
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def rounded(value):
    """JSON-ready copy of `value` with floats rounded to 6 significant digits (NaN -> None)."""
    return plain(value, digits=6)


def write_summary(args: argparse.Namespace, summary: dict, files: dict | None = None) -> Path:
    """OUT/summary.json (floats to 6 digits, strict JSON), `files` (name -> text) and OUT/config.json (the
    figure's resolved flags), all or none (`specsched.io.results.write_results`)."""
    body = {"summary.json": dumps_json(rounded(summary), indent=1), **(files or {})}
    write_results(args.out, body, config={"figure": args.figure, **vars(args)}, command="paper-figure")
    return Path(args.out) / "summary.json"


def png(fig, **savefig) -> bytes:
    """Figure `fig` as PNG bytes (closed): handed to `write_summary` so it is swapped in with the folder,
    never a half-written figure beside another run's summary."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", **savefig)
    plt.close(fig)
    return buf.getvalue()


def run_sweep_text(text: str, out: Path, args: argparse.Namespace):
    """Run the sweep in TOML `text` into OUT/sweep (replacing an earlier run); (rows, manifest)."""
    from analysis import store
    from analysis.runner import run_sweep
    from analysis.sweepfile import parse_sweep

    sweep = parse_sweep(text, None)
    folder = Path(out) / "sweep"
    run = run_sweep(sweep, folder, jobs=args.jobs, force=True, progress=not args.quiet)
    if run.failed:
        key, message = run.failed[0]
        raise RuntimeError(f"{len(run.failed)} cells failed (first {key}: {message}); see {folder}/errors")
    manifest, rows = store.load_rows(folder)
    return rows, manifest


def acceptance_runs(drafters, tiny: bool, seed: int) -> tuple[int, int, dict[str, dict]]:
    """(requests per domain, output tokens, {drafter: acceptance_mc(...)}) of the acceptance figures: drafter
    i of `drafters` runs with seed `seed + i`; --tiny takes seconds."""
    requests, tokens = (300, 128) if tiny else (20000, 256)
    runs = {d: acceptance_mc(d, requests, tokens, seed=seed + i) for i, d in enumerate(drafters)}
    return requests, tokens, runs


def figure_main(name: str, doc: str, argv, build, plot, report) -> int:
    """`main` of a figure that builds a summary and plots it: flags, build(tiny) -> summary, plot(summary,
    OUT/NAME.png), OUT/summary.json, then the lines of report(summary) and what was written."""
    args = parse_args(name, argv, doc.splitlines()[0])
    summary = build(args.tiny)
    plot(summary, args.out / f"{name}.png")
    write_summary(args, summary)
    for line in report(summary):
        print(line)
    print(f"wrote {args.out / (name + '.png')} and {args.out / 'summary.json'}")
    return 0


def acceptance_mc(drafter: str, requests: int, output_tokens: int, seed: int) -> dict[str, dict]:
    """Per domain: pooled per-position conditional acceptance and τ with all γ verified, simulated.

    Each of `requests` requests per domain decodes `output_tokens` tokens through the simulator's
    acceptance model (`sim.acceptance`, default config: latent difficulty, step noise) verifying every
    draft; statistics are pooled over engine steps, as the paper's accept_len is.
    Returns {domain: {"conditional": float64[γ], "tau": float, "steps": int}}.
    """
    from sim.acceptance import AcceptanceConfig, AcceptanceModel
    from sim.curves import DOMAINS, curve_matrix

    curves = curve_matrix(None, drafter, len(_gamma_curve(drafter)))
    gamma = curves.shape[1]
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
    model = AcceptanceModel(curves, AcceptanceConfig(), streams[0])
    out = {}
    for d, domain in enumerate(DOMAINS):
        latent = model.request_latent(requests, streams[1])
        left = np.full(requests, output_tokens, dtype=np.int64)
        reached = np.zeros(gamma + 1)  # reached[k]: steps whose accepted prefix is ≥ k
        emitted = steps = 0
        while True:
            live = np.flatnonzero(left > 0)
            if live.size == 0:
                break
            true = model.true_probs(np.full(live.size, d), latent[live], streams[2])
            acc = model.sample_accepted(true, np.full(live.size, gamma, dtype=np.int64), streams[2])
            reached += np.bincount(acc, minlength=gamma + 1)[::-1].cumsum()[::-1]
            emitted += int((acc + 1).sum())
            steps += live.size
            left[live] -= acc + 1
        cond = reached[1:] / np.maximum(reached[:-1], 1)
        out[domain] = {"conditional": cond, "tau": emitted / steps, "steps": steps}
    return out


def _gamma_curve(drafter: str) -> np.ndarray:
    from sim.curves import builtin_curve

    return builtin_curve(drafter, "math")


def compare(actual, golden, *, rel: float, abs_: float, path: str = "") -> list[str]:
    """Differences between two summaries: numbers within rel/abs tolerance, everything else equal."""
    problems: list[str] = []
    if isinstance(golden, dict) and isinstance(actual, dict):
        for key in sorted(set(golden) | set(actual)):
            if key not in actual or key not in golden:
                problems.append(f"{path}/{key}: only in {'golden' if key in golden else 'actual'}")
            else:
                problems += compare(actual[key], golden[key], rel=rel, abs_=abs_, path=f"{path}/{key}")
    elif isinstance(golden, list) and isinstance(actual, list):
        if len(golden) != len(actual):
            problems.append(f"{path}: length {len(actual)} != golden {len(golden)}")
        else:
            for i, (a, g) in enumerate(zip(actual, golden)):
                problems += compare(a, g, rel=rel, abs_=abs_, path=f"{path}[{i}]")
    elif (
        isinstance(golden, (int, float)) and isinstance(actual, (int, float)) and not isinstance(golden, bool)
    ):
        if not math.isclose(actual, golden, rel_tol=rel, abs_tol=abs_):
            problems.append(f"{path}: {actual} != golden {golden} (rel {rel}, abs {abs_})")
    elif actual != golden:
        problems.append(f"{path}: {actual!r} != golden {golden!r}")
    return problems


def production_base(
    tiny: bool, *, max_num_seqs: int = 1024, max_num_batched_tokens: int | None = None
) -> str:
    """[base] of the serving figures: a decode instance of a prefill/decode-disaggregated deployment.

    DeepSeek serves V4 with prefill and decode on separate GPUs, so the paper's per-GPU numbers are decode
    GPUs'. The simulator has no disaggregation; 16-token prompts make prefill negligible instead (the V4-like
    cost tables already charge every running request a fixed 4096-token KV read per step,
    `CostTable.request_seconds`). Closed loop, no think time, chat/math/code in equal shares, 512-token
    answers (128 in tiny mode), room for `max_num_seqs` running requests and (when given)
    `max_num_batched_tokens` verify tokens per step (else the simulator's default, 8192).
    """
    budget = "" if max_num_batched_tokens is None else f"max_num_batched_tokens = {max_num_batched_tokens}\n"
    return f"""
[base]
seed = 0
[base.workload]
kind = "closed"
domain = "mix"
input_tokens = 16
output_tokens = {128 if tiny else 512}
[base.server]
max_num_seqs = {max_num_seqs}
{budget}"""
