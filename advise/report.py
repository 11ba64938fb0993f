"""`specbed advise`'s outputs: report.md, advise.json's body and the two plots.

Role: render what `advise.sweep` computed — the measured run's fit, each option's gain at each load with its
validated error band, where speculation stops paying, the recommended `--speculative-config` and the
batch-size → K schedule — as markdown, and draw gain-vs-concurrency and throughput-vs-per-user-speed plots
whose every point is labelled with its concurrency.

May import: numpy, the standard library, matplotlib (plots only, lazily).
"""

from __future__ import annotations

import io
import json


def _pct(x) -> str:
    return "—" if x is None else f"{x:.1f} %"


def cell(g: dict) -> str:
    """A gain with its band: "+83 % (+69…+97)"."""
    if g.get("gain_lo_pct") is None:
        return f"{g['gain_pct']:+.0f} %"
    return f"{g['gain_pct']:+.0f} % ({g['gain_lo_pct']:+.0f}…{g['gain_hi_pct']:+.0f})"


def fit_lines(fit: dict | None) -> list[str]:
    if not fit:
        return ["No measured run given: the baseline's band is the GPU's validated one (below)."]
    out = [
        f"Measured run `{fit['run']}` ({fit['requests']} requests replayed, {fit['wall_s']:.1f} s):",
        "",
        "| metric | measured ms | predicted ms (shipped knobs) | error | after calibrating on this run |",
        "|---|---|---|---|---|",
    ]
    for m, actual in fit["actual"].items():
        cal = fit.get("calibrated_error_pct", {}).get(m)
        out.append(
            f"| {m} | {actual:.1f} | {fit['predicted'][m]:.1f} | {_pct(fit['error_pct'][m])} | {_pct(cal)} |"
        )
    out += [
        "",
        "The sweep prices with the GPU's shipped knobs (the `[cost]` deployment path `specbed run` uses); "
        "calibrating on one run fits 8 knobs to one run (in sample only), so its error is no test — "
        "the shipped knobs' error above is the fit to report.",
    ]
    return out


def markdown(doc: dict) -> str:
    dep, rec = doc["deployment"], doc["recommendation"]
    lines = [
        "# specbed advise",
        "",
        f"`{doc['command']}`",
        "",
        f"Deployment: {dep['model']} on {dep['tp']}× {dep['gpu']}, max_num_seqs {dep['max_num_seqs']}, "
        f"max_num_batched_tokens {dep['max_num_batched_tokens']}; vLLM engine priced: {doc['engine']}. "
        f"Traffic: {doc['traffic']['source']} (input {doc['traffic']['input_mean']:.0f} / output "
        f"{doc['traffic']['output_mean']:.0f} tokens mean). Load = C concurrent requests (closed loop).",
        "",
        "## 1. How well the baseline fits your run",
        "",
        *fit_lines(doc.get("fit")),
        "",
        f"Baseline band (GPU knobs, e2e mean, median |error| on measured vLLM runs): in sample "
        f"{_pct(doc['baseline_band'].get('accuracy_baseline_e2e_mean_median_pct'))}, leave-one-model-out "
        f"{_pct(doc['baseline_band'].get('accuracy_baseline_e2e_mean_lomo_median_pct'))}.",
        "",
        "## 2. Predicted gain at each load (throughput vs no speculation; in brackets the validated band)",
        "",
        "| option | " + " | ".join(f"C={c}" for c in doc["loads"]) + " |",
        "|---|" + "---|" * len(doc["loads"]),
    ]
    for key, label in doc["options"].items():
        if key == "none":
            continue
        cells = {g["users"]: g for g in doc["gains"] if g["option"] == key}
        row = [cell(cells[c]) if c in cells else "—" for c in doc["loads"]]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    band = next((g for g in doc["gains"]), {})
    lines += [
        "",
        f"Band: the speculative arm's leave-one-source-out median |error| of the speed-up "
        f"({_pct(band.get('band_median_pct'))}; worst {_pct(band.get('band_worst_pct'))}), "
        "applied to the speed-up; "
        f"the band's cases ran this engine version: {band.get('engine_validated')}.",
        "",
        "## 3. Where speculation stops paying",
        "",
    ]
    for key, stop in doc["stops_paying"].items():
        label = doc["options"][key]
        where = (
            f"from C={stop['users']}"
            if stop["users"]
            else f"pays at every load swept (up to C={doc['loads'][-1]})"
        )
        band_at = f"; inside its error band from C={stop['within_band']}" if stop["within_band"] else ""
        lines.append(f"- {label}: {where}{band_at}.")
    lines += [
        "",
        "## 4. What to give vLLM",
        "",
        f"Operating load: C≈{rec['users']} ({rec['why']}). Best option there: {rec['label']}.",
        "",
    ]
    if rec["speculative_config"] is not None:
        lines += [
            "```sh",
            f"--speculative-config '{json.dumps(rec['speculative_config'], separators=(',', ':'))}'",
            "```",
            "",
        ]
    if rec.get("fixed_k_config") and rec["fixed_k_config"] != rec["speculative_config"]:
        lines += [
            f"`enable_adaptive_verification` and `draft_sample_method` are DSpark's keys (vLLM PR #47808); "
            f"whether vLLM {doc['engine']} carries them is not checked here. On a build without them, the "
            f"best fixed-K option ({rec['fixed_k_label']}) is:",
            "",
            "```sh",
            f"--speculative-config '{json.dumps(rec['fixed_k_config'], separators=(',', ':'))}'",
            "```",
            "",
        ]
    lines += [
        "Batch size → K (num_speculative_tokens), DSpark adaptive on this deployment "
        "(`analysis.draft_schedule.deployment_schedule`, the steps `specbed run` prices):",
        "",
        "| batch size | " + " | ".join(str(r["batch_size"]) for r in doc["k_schedule"]) + " |",
        "|---|" + "---|" * len(doc["k_schedule"]),
        "| K | " + " | ".join(str(r["k"]) for r in doc["k_schedule"]) + " |",
        "",
        *[f"- {n}" for n in doc["notes"]],
        "",
        "Plots: gain.png (gain vs concurrency), pareto.png "
        "(throughput vs per-user speed; each point labelled C=concurrency).",
    ]
    return "\n".join(lines) + "\n"


def plots(doc: dict) -> dict[str, bytes]:
    """{"gain.png", "pareto.png"}: PNG bytes ({} without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    out = {}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for key, label in doc["options"].items():
        pts = sorted((g for g in doc["gains"] if g["option"] == key), key=lambda g: g["users"])
        if not pts:
            continue
        x, y = [g["users"] for g in pts], [g["gain_pct"] for g in pts]
        ax.plot(x, y, marker="o", label=label)
        if all(g["gain_lo_pct"] is not None for g in pts):
            ax.fill_between(x, [g["gain_lo_pct"] for g in pts], [g["gain_hi_pct"] for g in pts], alpha=0.15)
        for xi, yi in zip(x, y):
            ax.annotate(f"C={xi}", (xi, yi), fontsize=6, textcoords="offset points", xytext=(2, 3))
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set(
        xscale="log",
        xlabel="concurrency C (requests in flight)",
        ylabel="throughput gain vs no speculation (%)",
    )
    ax.legend(fontsize=7)
    out["gain.png"] = _png(fig, plt)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for key, label in doc["options"].items():
        pts = sorted((r for r in doc["runs"] if r["option"] == key), key=lambda r: r["users"])
        x, y = [r["per_user_tok_s"] for r in pts], [r["throughput_tok_s"] for r in pts]
        ax.plot(x, y, marker="o", label=label)
        for r in pts:
            ax.annotate(
                f"C={r['users']}",
                (r["per_user_tok_s"], r["throughput_tok_s"]),
                fontsize=6,
                textcoords="offset points",
                xytext=(2, 3),
            )
    ax.set(xlabel="per-user speed (tok/s)", ylabel="throughput per replica (tok/s)")
    ax.legend(fontsize=7)
    out["pareto.png"] = _png(fig, plt)
    return out


def _png(fig, plt) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return buf.getvalue()
