"""What a search writes: the ranked table, the Pareto of cost vs per-user speed, every drop and why, and
the winner's `vllm serve` line and TOML.

Role: text and files only (numbers come from `analysis.search.halving`). Files in the output folder:

    ranked.csv        every candidate that met the SLO, best first (cost, goodput, margins, where time goes)
    dropped.csv       every other candidate: the stage that dropped it and why
    summary.md        the ranked table (top 20), the rungs, the Pareto front, the launch line
    pareto.png        cost per million output tokens vs per-user speed, the front marked
    winner.toml       the winner's config for `specbed run`
    vllm_serve.sh     its `vllm serve` command (plus draft_schedule.json for adaptive drafting)
    config.json       the search's settings: the space file's text and the command's flags

May import: the standard library, numpy, matplotlib (lazily), `specsched` (safeio, results), `analysis`
modules.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from analysis.pareto import pareto_indices
from analysis.report import md_table, text_table
from analysis.search import launch
from specsched.io import jobdir, safeio
from specsched.io.results import csv_text, dumps_json, job_hash, write_results

HEAD = [
    "#",
    "candidate",
    "GPUs",
    "$/h",
    "$/Mtok",
    "goodput/GPU",
    "margin",
    "binding",
    "busy",
    "draft",
    "queue p90",
]


LAUNCH_TOP = 3  # `vllm serve` lines written for this many top candidates (+ each series' best)


def _name(c) -> str:
    axes = ", ".join(
        f"{_short(k)}={v}" for k, v in c.cell.axes.items() if not k.startswith(("drafter.", "policy."))
    )
    return f"{c.cell.series} ({axes})" if axes else c.cell.series


def _short(key: str) -> str:
    """An axis key as a column: its last part (`pool.prefill.replicas`: `prefill.replicas`)."""
    return key.removeprefix("pool.") if key.startswith("pool.") else key.split(".")[-1]


def _pct(x) -> str:
    return f"{100 * x:.0f}%" if isinstance(x, (int, float)) and math.isfinite(x) else "n/a"


def row_cells(i: int, c, slo) -> list[str]:
    s = c.summary
    q = s.get("queue_s_p90")
    return [
        str(i), _name(c), str(s.get("gpus") or c.gpus), f"{c.usd_per_hour * (s.get('gpus') or c.gpus):.2f}",
        f"{c.cost:.3f}", f"{c.goodput_per_gpu:,.0f}", _pct(slo.margin(s)), slo.worst(s),
        _pct(s.get("busy_frac")), _pct(s.get("draft_time_frac")),
        f"{q * 1e3:.0f} ms" if isinstance(q, (int, float)) and math.isfinite(q) else "n/a",
    ]  # fmt: skip


def ranked_table(outcome, slo, top: int = 20, markdown: bool = False) -> str:
    rows = [row_cells(i + 1, c, slo) for i, c in enumerate(outcome.ranked[:top])]
    return (md_table if markdown else text_table)(HEAD, rows)


def best_by(outcome, slo) -> str:
    """The cheapest SLO-meeting candidate of each GPU kind × series (e.g. with and without speculation),
    and what each series saves against the space's first series on the same GPU kind."""
    best: dict[tuple[str, str], object] = {}
    for c in outcome.ranked:  # best first
        best.setdefault((c.gpu, c.cell.series), c)
    if not best:
        return ""
    order = list(dict.fromkeys(c.cell.series for c in outcome.candidates))
    rows = []
    for gpu in dict.fromkeys(c.gpu for c in outcome.candidates):
        ref = next((best[(gpu, s)] for s in order if (gpu, s) in best), None)
        for series in order:
            c = best.get((gpu, series))
            if c is None:
                group = [x for x in outcome.candidates if x.gpu == gpu and x.cell.series == series]
                halved = any("halved out" in x.reason for x in group)
                why = "halved out before full length" if halved else "none met the SLO"
                rows.append([gpu, series, why, "", "", ""])
                continue
            save = "" if ref is None or c is ref else f"{1 - c.cost / ref.cost:+.0%}"
            rows.append(
                [
                    gpu,
                    series,
                    _name(c).removeprefix(series).strip(" ()"),
                    f"{c.cost:.3f}",
                    _pct(slo.margin(c.summary)),
                    save,
                ]
            )
    head = ["gpu", "series", "cheapest deployment", "$/Mtok", "margin", f"saves vs {order[0]}"]
    return text_table(head, rows)


def pareto(outcome) -> list:
    """Ranked candidates on the front of (lower cost, higher per-user speed), cheapest first."""
    pts = [c for c in outcome.ranked if isinstance(c.summary.get("per_user_tok_s_mean"), (int, float))]
    if not pts:
        return []
    x = np.array([-c.cost for c in pts])
    y = np.array([c.summary["per_user_tok_s_mean"] for c in pts], dtype=np.float64)
    return [pts[i] for i in reversed(pareto_indices(x, y))]


def _csv(rows: list[list]) -> str:
    return csv_text(None, rows)


def ranked_csv(outcome, slo) -> str:
    terms = [t.name for t in slo.terms]
    head = ["rank", "key", "series", *outcome.candidates[0].cell.axes, "gpu", "gpus", "usd_per_hour",
            "usd_per_mtok", "goodput_tok_s_per_gpu", "slo_margin", *terms, "rung", "throughput_tok_s",
            "per_user_tok_s_mean", "busy_frac", "draft_time_frac", "queue_s_p90"]  # fmt: skip
    rows = [head]
    for i, c in enumerate(outcome.ranked):
        s = c.summary
        rows.append([i + 1, c.cell.key, c.cell.series, *c.cell.axes.values(), c.gpu, s.get("gpus") or c.gpus,
                     c.usd_per_hour, round(c.cost, 6), round(c.goodput_per_gpu, 3), round(slo.margin(s), 4),
                     *(s.get(t.key) for t in slo.terms), c.rung + 1, s.get("throughput_tok_s"),
                     s.get("per_user_tok_s_mean"), s.get("busy_frac"), s.get("draft_time_frac"),
                     s.get("queue_s_p90")])  # fmt: skip
    return _csv(rows)


def dropped_csv(outcome) -> str:
    ranked = {id(c) for c in outcome.ranked}
    rows = [["key", "series", *outcome.candidates[0].cell.axes, "last_rung", "why"]]
    for c in outcome.candidates:
        if id(c) not in ranked:
            why = c.reason or ("SLO not met" if c.alive else "dropped")
            rows.append(
                [c.cell.key, c.cell.series, *c.cell.axes.values(), c.rung + 1 if c.rung >= 0 else "", why]
            )
    return _csv(rows)


def plot(outcome, front: list, path: Path | None = None) -> bytes:
    """The Pareto plot as PNG bytes (also written to `path` when given)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    pts = [c for c in outcome.ranked if math.isfinite(c.cost)]
    ax.scatter([c.cost for c in pts], [c.summary.get("per_user_tok_s_mean", math.nan) for c in pts], s=14,
               color="0.6", label="met the SLO")  # fmt: skip
    ax.plot([c.cost for c in front], [c.summary["per_user_tok_s_mean"] for c in front], "o-", color="C0",
            label="Pareto front")  # fmt: skip
    if outcome.ranked:
        w = outcome.ranked[0]
        ax.scatter(
            [w.cost], [w.summary.get("per_user_tok_s_mean")], s=80, color="C3", zorder=3, label="winner"
        )
    ax.set_xlabel("cost per million output tokens ($)")
    ax.set_ylabel("per-user speed (tok/s, mean)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    if path is not None:
        safeio.write_bytes(path, buf.getvalue())
    return buf.getvalue()


def launch_files(outcome, options) -> dict[str, str]:
    """{file name: text} of the winner (empty without one)."""
    if not outcome.ranked:
        return {}
    w = outcome.ranked[0]
    if "pool" in w.cell.config:
        from analysis.search.pools import launch_files as pooled_files

        return pooled_files(w, _name(w), options)
    schedule = launch.draft_schedule(w.cell.config)
    cmd = launch.vllm_command(w.cell.config, options.model, options.draft_models, schedule)
    files = {"vllm_serve.sh": "#!/bin/sh\n# specbed search winner: " + _name(w) + "\n" + cmd + "\n"}
    files["winner.toml"] = launch.winner_toml(
        w.cell.config, f"specbed search winner: {_name(w)}\nrun it: specbed run winner.toml --out DIR"
    )
    if schedule:
        files["draft_schedule.json"] = dumps_json({"schedule": schedule}, indent=1, sort_keys=False)
    files["vllm_serve_all.sh"] = launch_lines(outcome, options, w, cmd)
    return files


def launch_lines(outcome, options, winner, winner_cmd: str, top: int = LAUNCH_TOP) -> str:
    """The `vllm serve` lines of the top `top` candidates and of the cheapest of every series (each
    speculative arm) not among them, one commented block each, so one search answers both questions."""
    picks = list(outcome.ranked[:top])
    for c in outcome.ranked:  # best first: the first of each series is its cheapest
        if c.cell.series not in {p.cell.series for p in picks}:
            picks.append(c)
    blocks = ["#!/bin/sh", "# specbed search: the top candidates and the best of each series (pick one)"]
    for c in picks:
        rank = outcome.ranked.index(c) + 1
        if c is winner:
            cmd = winner_cmd
        else:
            schedule = launch.draft_schedule(c.cell.config)
            cmd = launch.vllm_command(c.cell.config, options.model, options.draft_models, schedule)
        blocks += ["", f"# rank {rank}: {_name(c)}  ({c.cost:.3f} $/Mtok)", f"# {cmd}"]
    return "\n".join(blocks) + "\n"


def rungs_table(outcome) -> str:
    head = ["stage", "requests", "candidates", "ran", "cached", "dropped"]
    rows = [[str(r["rung"]), str(r["requests"]), str(r["candidates"]), str(r["ran"]), str(r["cached"]),
             str(r["dropped"])] for r in outcome.rungs]  # fmt: skip
    if any(r.get("shared") for r in outcome.rungs):  # runs taken from a sibling (analysis.search.siblings)
        head.insert(5, "shared")
        for row, r in zip(rows, outcome.rungs):
            row.insert(5, str(r.get("shared", 0)))
    if any("note" in r for r in outcome.rungs):  # e.g. disaggregated candidates the screen cannot bound
        head.append("note")
        for row, r in zip(rows, outcome.rungs):
            row.append(r.get("note", ""))
    return text_table(head, rows)


def summary_md(outcome, slo, space, files: dict[str, str], front: list) -> str:
    head = f"SLO: `{slo.text()}`; objective: {space.options.objective}; "
    lines = [f"# specbed search: {space.sweep.name}", "", head + f"{len(outcome.candidates)} candidates, "
             f"{outcome.seconds:.0f} s.", ""]  # fmt: skip
    if outcome.budget_hit:
        lines += ["**--budget-s ran out**: ranked on the last fidelity each candidate reached.", ""]
    lines += ["## Stages", "", "```", rungs_table(outcome), "```", "", "## Ranked (met the SLO)", ""]
    lines += [
        ranked_table(outcome, slo, markdown=True) if outcome.ranked else "No candidate met the SLO.",
        "",
    ]
    if outcome.ranked:
        lines += ["## Cheapest by GPU and series", "", "```", best_by(outcome, slo), "```", ""]
    if front:
        lines += ["## Pareto: cost vs per-user speed", ""]
        lines += [md_table(["candidate", "$/Mtok", "tok/s/user"], [[_name(c), f"{c.cost:.3f}",
                  f"{c.summary['per_user_tok_s_mean']:.1f}"] for c in front]), ""]  # fmt: skip
    if "vllm_serve.sh" in files:
        lines += ["## Launch the winner", "", "```sh", files["vllm_serve.sh"].splitlines()[-1], "```", ""]
    if "vllm_serve_all.sh" in files:
        lines += ["## Launch lines: the top candidates and the best of each series", "", "```sh",
                  files["vllm_serve_all.sh"].split("\n", 2)[2].rstrip(), "```", ""]  # fmt: skip
    lines += accuracy_lines(outcome)
    return "\n".join(lines)


def accuracy_lines(outcome) -> list[str]:
    """The validated error bands the ranked figures carry (`sim.deploy.draft.accuracy`, the summary's
    `accuracy_*` keys): the winner's and each series' best; a built-in cost table has none."""
    best: dict[tuple[str, str], object] = {}
    for c in outcome.ranked:  # the band is the GPU's (its calibrated knobs) and the arm's
        best.setdefault((c.gpu, c.cell.series), c)
    rows = []
    for (gpu, series), c in best.items():
        acc = {k: v for k, v in c.summary.items() if k.startswith("accuracy_")}
        if not acc:
            rows.append([gpu, series, "none: priced by a built-in cost table (not validated; use cost.model "
                         "+ cost.gpu for the calibrated deployment path)"])  # fmt: skip
            continue
        text = "; ".join(f"{k.removeprefix('accuracy_')} = {_num(v)}" for k, v in acc.items())
        rows.append([gpu, series, text])
    if not rows:
        return []
    head = ["gpu", "series", "validated error band (abs. error %; the runs' accuracy_* keys)"]
    return ["## Accuracy of these figures", "", md_table(head, rows), ""]


def _num(v) -> str:
    return f"{v:.1f}" if isinstance(v, float) else str(v)


def write_all(out: Path, outcome, slo, space, flags: dict | None = None) -> dict[str, str]:
    """The search folder's files, with config.json (the space file's text and the command's flags)."""
    files = launch_files(outcome, space.options)
    front = pareto(outcome)
    files["ranked.csv"] = ranked_csv(outcome, slo)
    files["dropped.csv"] = dropped_csv(outcome)
    files["summary.md"] = summary_md(outcome, slo, space, files, front)
    body: dict = dict(files)
    if outcome.ranked:
        body["pareto.png"] = plot(outcome, front)
    with safeio.held(out):  # a search that took the folder since ours finished refuses this one whole
        write_results(out, body, config={"command": "search", "space": space.text, **(flags or {})},
                      inputs_hash=search_key(space, slo))  # fmt: skip
    return files


def search_key(space, slo) -> str:
    """A search's space file: `--resume` needs the same one (another SLO may reuse the runs)."""
    return job_hash({"space": space.text})


def check_resume(out, space, slo) -> None:
    """`--resume` into a folder whose finished search had another space: refused, not rewritten."""
    jobdir.check_inputs(out, "search", search_key(space, slo), field="--resume")
