"""vLLM's production DSpark measurement: the configuration cliff and adaptive verification (blog Fig. 3).

vLLM's blog "Adaptive Verification in vLLM" (2026-08-14, PR #47808) serves DeepSeek-V4-Pro at TP 8 + EP on
8×B300 with `max_num_seqs` 256, `max_num_batched_tokens` 16384 and `max_cudagraph_capture_size` 1024, 512
output tokens at temperature 1.0, concurrency 1–256, and compares no speculation, DSpark with a fixed
k = 5, 6, 7 and adaptive verification (γ = 7, the budget sized from one-step-old confidences and handed
out by current ones: `dspark_global` with delay 1). This runs the same sweep in the simulator on the
built-in `b300x8-v4pro` setup (expert locality, CUDA-graph staircase, eager cliff growing past the capture
limit) with its draft pass priced by request count (`drafter.cost` = paper_figs/data/b300x8-v4pro-draft.csv),
an assumed V4-Pro-like acceptance curve (`paper_figs/data/vllm_v4pro_curves.json`) and 16-token prompts
(prefill negligible). What is fitted and what is predicted: paper_figs/REPRODUCTION.md.

Writes DIR/results.json ({"concurrency", "throughput_tok_s", "tpot_ms", "accepted_length"}, one list per
arm), DIR/vllm_adaptive.png (aggregate tok/s vs per-user tok/s, like the blog's Fig. 3), DIR/table.md
(every ratio the blog states beside ours) and DIR/summary.json (all of it, for the golden). Throughput is
the simulator's steady-state window; the blog's is the whole benchmark's output_throughput.

    python -m paper_figs.vllm_adaptive [--tiny] [--out DIR] [--jobs N]

May import: matplotlib, the standard library, `paper_figs.common`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from paper_figs.common import parse_args, png, production_base, rounded, run_sweep_text, write_summary
from specsched.io import safeio
from specsched.io.results import dumps_json

NAME = "vllm_adaptive"
CURVES = Path(__file__).parent / "data" / "vllm_v4pro_curves.json"
DRAFT = Path(__file__).parent / "data" / "b300x8-v4pro-draft.csv"  # drafter.cost: seconds by requests
ARMS = ("no_spec", "fixed5", "fixed6", "fixed7", "adaptive")
LOADS = {  # closed-loop concurrency and requests per cell (the blog: 880, 240 at concurrency 1)
    False: ([1, 16, 32, 64, 128, 256], [48, 96, 128, 256, 512, 880]),
    True: ([1, 64, 256], [3, 128, 512]),
}
#: every figure the blog states (Results section), as fractions
BLOG = {
    "fixed7_shed_from_peak": 0.38,
    "fixed5_below_no_spec_256": 0.26,
    "fixed6_below_no_spec_256": 0.26,
    "fixed7_below_no_spec_256": 0.53,
    "adaptive_over_fixed7_16_64": [0.05, 0.10],
    "adaptive_over_fixed7_128": 0.30,
    "adaptive_over_best_fixed_256": 0.90,
    "adaptive_over_no_spec_256": 0.41,
}
BLOG_ABS = {
    "adaptive_tok_s_1": 264,
    "fixed7_tok_s_1": 264,
    "no_spec_tok_s_256": 6267,
    "adaptive_tok_s_256": 8855,
    "adaptive_tpot_ms_1": 3.7,
    "adaptive_tpot_ms_256": 26.0,
    "no_spec_tpot_ms_256": 33.8,
    "adaptive_accepted_length_1": 3.44,
    "adaptive_accepted_length_256": 2.65,
    "fixed_accepted_length": 3.4,
}


def sweep_text(tiny: bool) -> str:
    conc, reqs = LOADS[tiny]
    base = production_base(tiny, max_num_seqs=256, max_num_batched_tokens=16384)
    return f"""name = "{NAME}"
set = ["cost.table=b300x8-v4pro"]
{base}[base.drafter]
curves = {json.dumps(str(CURVES))}
cost = {json.dumps(str(DRAFT))}

[[zip]]
label = {json.dumps(list(ARMS))}
"drafter.name" = ["none", "dspark", "dspark", "dspark", "dspark"]
"drafter.gamma" = [0, 5, 6, 7, 7]
"policy.name" = ["ar", "fixed", "fixed", "fixed", "dspark_global"]
"policy.k" = ["none", 5, 6, 7, "none"]
"policy.delay" = ["none", "none", "none", "none", 1]

[[zip]]
"workload.concurrency" = {conc}
"workload.num_requests" = {reqs}
"""


def collect(rows: list[dict]) -> dict:
    """results.json's layout: {"concurrency": [...], metric: {arm: [one value per concurrency]}}."""
    loads = sorted({int(r["config"]["workload"]["concurrency"]) for r in rows})
    cell = {(r["series"], int(r["config"]["workload"]["concurrency"])): r["summary"] for r in rows}
    out: dict = {"concurrency": loads, "throughput_tok_s": {}, "tpot_ms": {}, "accepted_length": {}}
    for arm in ARMS:
        s = [cell[(arm, c)] for c in loads]
        out["throughput_tok_s"][arm] = [x["throughput_tok_s"] for x in s]
        out["tpot_ms"][arm] = [1e3 * x["tpot_s_mean"] for x in s]
        out["accepted_length"][arm] = [x["tau_mean"] for x in s]
    return out


def ratios(res: dict) -> dict:
    """Ours, in the blog's terms (fractions; None where the sweep lacks the load)."""
    loads, tput = res["concurrency"], res["throughput_tok_s"]

    def at(arm: str, c: int):
        return tput[arm][loads.index(c)] if c in loads else None

    def gain(a, b):
        return None if a is None or b is None else a / b - 1.0

    top = loads[-1]
    best_fixed = max(at(a, top) for a in ("fixed5", "fixed6", "fixed7"))
    mid = [gain(at("adaptive", c), at("fixed7", c)) for c in (16, 32, 64) if c in loads]
    return {
        "fixed7_peak_concurrency": loads[max(range(len(loads)), key=lambda i: tput["fixed7"][i])],
        "fixed7_shed_from_peak": 1.0 - at("fixed7", top) / max(tput["fixed7"]),
        "fixed5_below_no_spec_256": -gain(at("fixed5", top), at("no_spec", top)),
        "fixed6_below_no_spec_256": -gain(at("fixed6", top), at("no_spec", top)),
        "fixed7_below_no_spec_256": -gain(at("fixed7", top), at("no_spec", top)),
        "adaptive_over_fixed7_16_64": [min(mid), max(mid)] if mid else None,
        "adaptive_over_fixed7_128": gain(at("adaptive", 128), at("fixed7", 128)),
        "adaptive_over_best_fixed_256": gain(at("adaptive", top), best_fixed),
        "adaptive_over_no_spec_256": gain(at("adaptive", top), at("no_spec", top)),
        "adaptive_worst_vs_best_arm": min(
            tput["adaptive"][i] / max(tput[a][i] for a in ARMS) for i in range(len(loads))
        ),
    }


def _within_third(ours, blog) -> bool | None:
    if ours is None:
        return None
    if isinstance(blog, list):  # a stated range: ours must lie in [lo − lo/3, hi + hi/3]
        return blog[0] * 2 / 3 <= ours[0] and ours[1] <= blog[1] * 4 / 3
    return abs(ours - blog) <= abs(blog) / 3


def table_md(ours: dict, res: dict) -> str:
    lines = ["| figure (blog) | blog | specbed | within a third |", "|---|---|---|---|"]
    for key, blog in BLOG.items():
        o = ours[key]

        def pct(v):
            return "—" if v is None else (f"{v[0]:+.0%} … {v[1]:+.0%}" if isinstance(v, list) else f"{v:.0%}")

        ok = _within_third(o, blog)
        lines.append(f"| {key} | {pct(blog)} | {pct(o)} | {'—' if ok is None else ('yes' if ok else 'no')} |")
    loads = res["concurrency"]
    lines += ["", "| absolute (blog) | blog | specbed |", "|---|---|---|"]
    for key, blog in BLOG_ABS.items():
        arm, metric, c = _abs_key(key)
        if c is not None and c not in loads:
            continue
        vals = res[metric][arm] if c is None else [res[metric][arm][loads.index(c)]]
        lines.append(f"| {key} | {blog:g} | {', '.join(f'{v:.3g}' for v in vals)} |")
    return "\n".join(lines) + "\n"


def _abs_key(key: str) -> tuple[str, str, int | None]:
    """'adaptive_tpot_ms_256' -> ("adaptive", "tpot_ms", 256); fixed_accepted_length -> fixed7, all loads."""
    if key == "fixed_accepted_length":
        return "fixed7", "accepted_length", None
    for metric in ("tok_s", "tpot_ms", "accepted_length"):
        head, sep, tail = key.partition(f"_{metric}_")
        if sep:
            return head, "throughput_tok_s" if metric == "tok_s" else metric, int(tail)
    raise KeyError(key)


def plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for arm in ARMS:
        speed = [1e3 / t for t in res["tpot_ms"][arm]]
        ax.plot(speed, res["throughput_tok_s"][arm], "o-", ms=4, label=arm)
        if arm == "adaptive":
            for c, x, y in zip(res["concurrency"], speed, res["throughput_tok_s"][arm]):
                ax.annotate(str(c), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("per-user tok/s (1 / TPOT)")
    ax.set_ylabel("aggregate output tok/s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("V4-Pro-like, TP8+EP on 8×B300 (sim): fixed k vs adaptive")
    fig.tight_layout()
    safeio.write_bytes(path, png(fig, dpi=120))  # atomic: never a half-written figure


def main(argv: list[str] | None = None) -> int:
    args = parse_args(NAME, argv, __doc__.splitlines()[0])
    rows, _ = run_sweep_text(sweep_text(args.tiny), args.out, args)
    res = collect(rows)
    ours = ratios(res)
    table = table_md(ours, res)
    plot(res, args.out / f"{NAME}.png")
    files = {"results.json": dumps_json(rounded(res), indent=1, sort_keys=False), "table.md": table}
    write_summary(args, {"results": res, "ratios": ours, "blog": BLOG, "blog_absolute": BLOG_ABS}, files)
    head = " ".join(f"{a:>9}" for a in ARMS)
    print(f"{'concurrency':>11} {head}   (tok/s; tpot ms; accepted length)")
    for i, c in enumerate(res["concurrency"]):
        for metric, fmt in (("throughput_tok_s", ",.0f"), ("tpot_ms", ".1f"), ("accepted_length", ".2f")):
            head = f"{c:>11}" if metric == "throughput_tok_s" else " " * 11
            print(head + " " + " ".join(f"{res[metric][a][i]:>9{fmt}}" for a in ARMS))
    print(table, end="")
    print(f"wrote {args.out / 'results.json'}, {args.out / (NAME + '.png')}, table.md and summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
