"""`specbed validate`: measured vLLM runs replayed through the simulator, predicted beside measured.

Role: for each `validate.runs.MeasuredRun`, regenerate its traffic (the inference-perf profile,
`sim.inference_perf`, or the bench file's own requests), build the deployment from the run's knobs
(`specsched.price.vllm`: catalogue step cost, vLLM's KV sizing, prefix caching, CUDA-graph padding, async
scheduling), simulate it with plain autoregressive serving and compute what inference-perf reports over
the whole run: end-to-end latency and TTFT (mean, p90, p99) and the inter-token latency (the per-token
time; beside a measured run, per streamed chunk at the chunk fraction it implies: `itl_readings`), in
ms, the API server's `frontend_s` added to each request's TTFT and end-to-end.
`report` turns the runs into the JSON the issue fixes, a text table and a markdown report.

May import: numpy, the standard library, `sim`, `specsched`, `validate.runs`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from sim.deploy.prepare import prepare
from sim.inference_perf import Profile, generate
from sim.metrics import load_factor, request_table
from sim.wiring import run_pool
from specsched.io.errors import InputError
from specsched.price.knobs import Knobs
from validate.runs import METRICS, MeasuredRun, itl_readings, latency_metrics

#: a run is "saturated" when requests queue this long on average: the queue grows through the run
SATURATED_QUEUE_S = 5.0


def scaled(profile: Profile, scale: float) -> Profile:
    """The profile with every stage `scale`× as long (same rates): a shorter run of the same traffic."""
    if scale == 1.0:
        return profile
    return replace(profile, stages=tuple((r, max(d * scale, 1.0 / r)) for r, d in profile.stages))


def simulate_run(
    run: MeasuredRun, knobs: Knobs, profiles: dict, *, seed: int = 0, scale: float = 1.0, observer=None
) -> dict:
    """{"predicted": METRICS in ms, "hit_rate", "saturated", "kv_tokens", "requests"} of one run."""
    if run.workload is not None:
        wl, keys = run.workload, None
    else:
        wl, keys = generate(scaled(profiles[run.profile], scale), seed=seed)
    prep = prepare(run.spec, knobs, wl, keys, seed=seed, concurrency=run.concurrency)
    rec = run_pool(prep, observer=observer)
    req = request_table(rec, wl)
    ttft = req["ttft_s"] * 1e3 + knobs.frontend_s * 1e3
    e2e = req["e2e_s"] * 1e3 + knobs.frontend_s * 1e3
    # the per-token time, pooled over tokens; chunks per token is measured, not assumed (itl_readings)
    gaps = np.maximum(wl.output_tokens - 1, 0)
    itl = float((req["e2e_s"] - req["ttft_s"]).sum() * 1e3 / max(float(gaps.sum()), 1.0))
    pred = latency_metrics(e2e, ttft, itl)
    stats = rec.prefix_cache_stats
    srv = prep.config.server
    peak = max(r for r, _ in profiles[run.profile].stages) if run.workload is None else None
    load = load_factor(prep.cost, prep.workload, max_num_seqs=srv.max_num_seqs, kv_tokens=srv.kv_tokens,
                       replicas=srv.replicas, offered_req_s=peak,
                       hit_rate=0.0 if stats is None else stats["hit_rate"])  # fmt: skip
    return {
        "predicted": pred,
        "hit_rate": None if stats is None else stats["hit_rate"],
        "saturated": bool(np.mean(req["queue_s"]) > SATURATED_QUEUE_S),
        "kv_tokens": prep.config.server.kv_tokens,
        "requests": len(wl),
        "load": load,
        "output_mean": float(np.mean(wl.output_tokens)),
    }


def error_pct(pred: dict, actual: dict) -> dict:
    """|predicted − measured| / measured, percent, per metric; None where the measurement is 0 (a run of
    1-token outputs has no inter-token gap): no table prints inf %."""
    return {m: abs(pred[m] - actual[m]) / actual[m] * 100.0 if actual[m] > 0 else None for m in METRICS}


def _pct(err: float | None, fmt: str) -> str:
    return "—" if err is None else format(err, fmt)


def validate(
    runs: list[MeasuredRun], knobs_for, profiles: dict, *, seed: int = 0, scale: float = 1.0, progress=None
) -> list[dict]:
    """One result per run: the JSON run entry plus "hit_rate", "saturated", "kv_tokens" for the reports.
    knobs_for(run) -> Knobs (the GPU's). A run that cannot be modelled carries "error"."""
    out = []
    for i, run in enumerate(runs):
        entry = {"exp_id": run.exp_id, "folder": run.folder, "model": run.model, "hardware": run.hardware}
        if run.error is not None:
            out.append({**entry, "actual": run.actual, "error": run.error})
        else:
            try:
                sim = simulate_run(run, knobs_for(run), profiles, seed=seed, scale=scale)
            except (InputError, RuntimeError) as err:
                out.append({**entry, "actual": run.actual, "error": " ".join(str(err).split())})
            else:
                itl = itl_readings(run.actual, sim["predicted"]["itl_mean"], sim["output_mean"])
                pred = {**sim["predicted"], "itl_mean": itl["predicted_per_chunk_ms"]}
                errs = error_pct(pred, run.actual)
                out.append(
                    {
                        **entry,
                        "predicted": pred,
                        "itl": itl,
                        "actual": run.actual,
                        "error_pct": errs,
                        "hit_rate": sim["hit_rate"],
                        "saturated": sim["saturated"],
                        "kv_tokens": sim["kv_tokens"],
                        "profile": run.profile,
                        "load": sim["load"],
                    }
                )
        if progress is not None:
            progress(i + 1)
    return out


def medians(results: list[dict]) -> dict:
    """Median |error| per metric over the modelled runs (NaN-free; empty dict when none was modelled)."""
    done = [r["error_pct"] for r in results if "error_pct" in r]
    if not done:
        return {}
    known = {m: [e[m] for e in done if e[m] is not None] for m in METRICS}
    return {m: float(np.median(v)) if v else None for m, v in known.items()}


def as_json(results: list[dict]) -> dict:
    """Exactly the issue's JSON: runs (predicted/actual/error_pct, or error) and median_error_pct."""
    keep = ("exp_id", "folder", "model", "hardware", "predicted", "actual", "error_pct", "error")
    keep += ("load", "itl")  # issue 33: the load factor, both ITL readings
    return {
        "runs": [{k: r[k] for k in keep if k in r} for r in results],
        "median_error_pct": medians(results),
    }


_SHORT = {
    "e2e_mean": "e2e",
    "e2e_p90": "e2e90",
    "e2e_p99": "e2e99",
    "ttft_mean": "ttft",
    "ttft_p90": "ttft90",
    "ttft_p99": "ttft99",
    "itl_mean": "itl",
}


def table(results: list[dict]) -> str:
    """A text table: per run, measured → predicted (ms) and |error| % per metric; then the medians."""
    lines = [f"{'run':<34} " + " ".join(f"{_SHORT[m] + ' meas→pred |err|':>22}" for m in METRICS) + "  hit%"]
    for r in results:
        name = (r["folder"] or r["exp_id"])[:34]
        if "error" in r:
            lines.append(f"{name:<34} cannot model: {r['error']}")
            continue
        cells = [
            f"{r['actual'][m]:.1f}→{r['predicted'][m]:.1f} {_pct(r['error_pct'][m], '.0f')}%".rjust(22)
            for m in METRICS
        ]
        hit = "" if r["hit_rate"] is None else f"{100 * r['hit_rate']:5.1f}"
        sat = "  SATURATED" if r["saturated"] else ""
        lines.append(f"{name:<34} " + " ".join(cells) + f" {hit}{sat}")
    med = medians(results)
    if med:
        lines.append(f"{'median |error| %':<34} " + " ".join(f"{_pct(med[m], '.1f'):>21}%" for m in METRICS))
    return "\n".join(lines)


def markdown(results: list[dict], knobs_note: str, command: str) -> str:
    """The markdown report: how it was made, the per-run table, the medians."""
    head = "| run | model | " + " | ".join(f"{_SHORT[m]} meas → pred (err)" for m in METRICS) + " | hit % |"
    rows = [head, "|" + "---|" * (len(METRICS) + 3)]
    for r in results:
        if "error" in r:
            rows.append(f"| {r['folder'] or r['exp_id']} | {r['model']} | cannot model: {r['error']} |")
            continue
        cells = " | ".join(
            f"{r['actual'][m]:.1f} → {r['predicted'][m]:.1f} ({_pct(r['error_pct'][m], '.1f')} %)"
            for m in METRICS
        )
        hit = "—" if r["hit_rate"] is None else f"{100 * r['hit_rate']:.1f}"
        sat = " **saturated**" if r["saturated"] else ""
        rows.append(f"| {r['folder'] or r['exp_id']}{sat} | {r['model']} | {cells} | {hit} |")
    med = medians(results)
    summary = ", ".join(f"{m} {_pct(v, '.1f')} %" for m, v in med.items()) if med else "no run was modelled"
    return "\n".join(
        [
            "# specbed validate",
            "",
            f"Command: `{command}`",
            "",
            f"Knobs: {knobs_note}",
            "",
            "Latencies in milliseconds, measured → predicted, |error| in parentheses.",
            "",
            *rows,
            "",
            f"Median |error| over {sum('error_pct' in r for r in results)} modelled runs: {summary}.",
            "",
        ]
    )


def plot(results: list[dict], path) -> bytes | None:
    """PNG bytes: predicted vs measured, one point per run and metric, log axes (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import io

    fig, ax = plt.subplots(figsize=(6.4, 6.0))
    done = [r for r in results if "predicted" in r]
    lo, hi = math.inf, 0.0
    for m in METRICS:
        xs = [r["actual"][m] for r in done]
        ys = [r["predicted"][m] for r in done]
        if xs:
            ax.scatter(xs, ys, s=18, label=m)
            lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
    if done:
        ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.8)
    ax.set_xscale("log"), ax.set_yscale("log")
    ax.set_xlabel("measured (ms)"), ax.set_ylabel("predicted (ms)")
    ax.set_title("specbed validate: predicted vs measured vLLM runs")
    ax.legend(fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()
