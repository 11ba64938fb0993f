"""`specbed demo` (what `make demo` runs): a policy sweep on built-in defaults, its frontiers and gains.

Seven ways to serve a V4-Flash-like MoE on one H200 — no speculation, MTP-1, DFlash and EAGLE-3 verifying
all 7 drafts, and the paper's production drafter DSpark-5 (γ = 5, 3 draft layers) scheduled by Algorithm 1,
with two-step-stale confidences (`dspark_global`, delay 2), and with draft depths planned too
(`policy.draft = "adaptive"`) — each over eight closed-loop loads with
chat/math/code traffic (the sweep is `DEMO_SWEEP`, also shipped as sweeps/demo.toml). Prints the gains
table against MTP-1 and writes OUT/pareto.png, OUT/summary.md and the sweep's rows (OUT/results.jsonl). A
second run reuses the finished cells (`--fresh` recomputes them).

    specbed demo [--out results/demo] [--jobs N] [--fresh] [--quiet]

May import: the standard library, `analysis`, `specsched.io.errors`.
"""

from __future__ import annotations

import time
from pathlib import Path

from specsched.io import safeio
from specsched.io.errors import ArgParser

DEMO_SWEEP = """\
# The `make demo` sweep. `specbed demo` runs the copy embedded in specbed/demo.py (a test keeps the two
# equal); run this one yourself with
#     specbed sweep sweeps/demo.toml --out results/my-demo && specbed report results/my-demo
# Seven ways to serve a V4-Flash-like MoE on one H200 decode GPU (per-GPU cost table, data-parallel
# attention), each over eight closed-loop concurrencies; chat/math/code traffic in equal shares; short
# prompts, as on the decode side of a prefill/decode-disaggregated deployment. DSpark runs the paper's
# production drafter, DSpark-5: γ = 5 drafts from 3 draft layers; "adaptive" also plans each request's
# draft depth from the previous step's confidences (policy.draft, issue 14).
name = "demo"

[base]
seed = 0

[base.workload]
kind = "closed"
domain = "mix"
input_tokens = 64
output_tokens = 384

[base.cost]
table = "h200-v4flash"

[base.server]
max_num_seqs = 1024

[[zip]]
label = ["no spec", "MTP-1", "DFlash k=7", "EAGLE-3 k=7", "DSpark-5", "DSpark-5 stale-2", "DSpark-5 adaptive"]
"drafter.name" = ["none", "mtp", "dflash", "eagle3", "dspark", "dspark", "dspark"]
"drafter.gamma" = [0, 1, 7, 7, 5, 5, 5]
"drafter.layers" = ["none", "none", "none", "none", 3, 3, 3]
"policy.name" = ["ar", "fixed", "fixed", "fixed", "dspark", "dspark_global", "dspark"]
"policy.k" = ["none", 1, 7, 7, "none", "none", "none"]
"policy.delay" = ["none", "none", "none", "none", "none", 2, "none"]
"policy.draft" = ["full", "full", "full", "full", "full", "full", "adaptive"]

[[zip]]  # the load: closed-loop users (≥ 3 generations of requests each, for a steady state)
"workload.concurrency" = [8, 16, 32, 64, 128, 192, 256, 384]
"workload.num_requests" = [320, 320, 320, 384, 640, 960, 1280, 1920]

[analysis]
baseline = "MTP-1"
slo = [80, 120, 200, 250]  # per-user tok/s; the paper's V4-Flash SLAs are 80 and 120; MTP-1 tops out ≈ 143
"""


def main(argv: list[str]) -> int:
    from analysis import store
    from analysis.model import SimModel
    from analysis.plot import pareto_png
    from analysis.report import analyze, gains_table, markdown
    from analysis.runner import manifest_of, run_sweep
    from analysis.sweepfile import expand, parse_sweep

    p = ArgParser(prog="specbed demo", field="demo", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("results") / "demo", metavar="DIR", help="results folder")
    p.add_argument("--jobs", type=int, default=None, help="parallel cells (default: all CPUs)")
    p.add_argument("--fresh", action="store_true", help="recompute every cell")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)

    start = time.perf_counter()
    sweep = parse_sweep(DEMO_SWEEP, None)
    model = SimModel()
    print("specbed demo — which way of speculating serves a V4-Flash-like MoE best on one H200?")
    print("  7 policies × 8 closed-loop loads, chat/math/code mix; gains read along each Pareto frontier\n")
    old = store.read_manifest(args.out)
    same = (
        old is not None
        and old.get("fingerprint") == manifest_of(sweep, expand(sweep, model), model)["fingerprint"]
    )
    # The demo owns its folder: an older demo sweep there is replaced, an identical one reused.
    replace = old is not None and (args.fresh or (not same and old.get("name") == "demo"))
    run = run_sweep(
        sweep,
        args.out,
        model=model,
        jobs=args.jobs,
        resume=same and not args.fresh,
        force=replace,
        progress=not args.quiet,
    )
    manifest, rows = store.load_rows(args.out)
    result = analyze(manifest, rows)
    print(f"{run.total} cells: {run.cached} reused, {run.ran} simulated, {len(run.failed)} failed\n")
    print(f"Gains against {result.baseline} (*) at per-user speed SLOs (tok/s/user):")
    print(gains_table(result))
    figure = args.out / "pareto.png"
    png = pareto_png(
        result.points,
        result.fronts,
        baseline=result.baseline,
        slos=result.slos,
        order=result.order,
        title="specbed demo: V4-Flash-like MoE, H200",
    )
    text = markdown(manifest, rows, result, figure=figure.name, failed=len(run.failed))
    # the figure and the summary at once (never one demo's figure beside another's summary)
    safeio.write_files(args.out, {"pareto.png": png, "summary.md": text + "\n"})
    print("\nReading the table: iso-SLO gain = more tok/s per GPU at the same per-user speed; iso-throughput")
    print("speedup = faster per user at the baseline's throughput. ≥: lower bound; —: SLO never reached.")
    print(f"\nwrote {figure} and {args.out / 'summary.md'} ({time.perf_counter() - start:.0f} s)")
    print("next: `specbed plan` shows each policy's per-step decisions; `specbed sweep FILE --out DIR` runs")
    print("your own sweep (sweeps/*.toml are examples); `specbed report DIR` summarizes it.")
    return 1 if run.failed else 0
