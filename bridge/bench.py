"""A simulator run in the shape of a `vllm bench serve --save-result` JSON, and a comparison with a real one.

Role: `specbed export RUN_DIR --format vllm-bench` and `specbed compare SIM_RUN_DIR VLLM_RESULT`, where the
real run is a `--save-result` JSON, the console report or per-request JSON (docs/vllm-formats.md).

The export follows vLLM's definitions over the WHOLE run (every completed request; vLLM's benchmark has
no warm-up window), from the run's requests.csv and summary.json:
- completed, total_input_tokens, total_output_tokens (tokens); duration = last completion − first
  arrival (seconds); request_throughput (req/s), output_throughput and total_token_throughput (tok/s).
- {mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms (milliseconds; std is numpy's population std, p99
  numpy's linear percentile): ttft = first token − arrival, tpot = (e2e − ttft) / (output − 1) over
  requests with more than one output token, e2el = finish − arrival; itl from summary.json's itl_s_*
  (every gap between a request's consecutive token emissions; the median is its p50).
- spec_decode_acceptance_length (1 + accepted / drafts), spec_decode_acceptance_rate (accepted / drafted
  tokens, percent), spec_decode_num_drafts, spec_decode_draft_tokens, spec_decode_accepted_tokens,
  spec_decode_per_position_acceptance_rates (drafts with ≥ i + 1 accepted / drafts: vLLM's
  unconditional per-position rates), from summary.json's spec_* counters.
- backend "specbed-sim", plus the run's policy, drafter and seed.

May import: numpy, the standard library, `specsched.io` (errors, inputs, meaning).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.io.meaning import check_bench_result

#: requests.csv columns the export reads
_COLUMNS = ("arrival_s", "input_tokens", "output_tokens", "finish_s", "ttft_s", "tpot_s", "e2e_s")
#: summary.json keys the export reads (older runs without them cannot be exported)
_SUMMARY_KEYS = (
    "itl_s_mean", "itl_s_p50", "itl_s_p99", "itl_s_std", "spec_drafts", "spec_draft_tokens",
    "spec_accepted_tokens", "spec_accepted_per_pos",
)  # fmt: skip


def _read_summary(run_dir: Path) -> dict:
    path = run_dir / "summary.json"
    doc = inputs.load_json(path, what="run summary", nonfinite=True)  # regular, capped, bounded digits
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object", file=str(path))
    for key in _SUMMARY_KEYS:
        if key not in doc:
            raise InputError(
                "missing (a run from an older specbed: run it again to export it)", file=str(path), field=key
            )
    for key in ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens"):  # counts: whole and ≥ 0
        inputs.number(doc[key], file=str(path), field=key, integer=True, lo=0, text=False)
    per_pos = doc["spec_accepted_per_pos"]
    if not isinstance(per_pos, list):
        raise InputError("expected a list of counts", file=str(path), field="spec_accepted_per_pos")
    for i, value in enumerate(per_pos):
        where = f"spec_accepted_per_pos[{i}]"
        inputs.number(value, file=str(path), field=where, integer=True, lo=0, text=False)
    for key in _SUMMARY_KEYS[:4]:  # ITL statistics: a number, NaN or null
        value = doc[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"expected a number, got {value!r}"[:80], file=str(path), field=key)
        if isinstance(value, float) and math.isinf(value):  # NaN / null: no ITL measured; inf: nonsense
            raise InputError(f"not a finite number: {value!r}", file=str(path), field=key)
    return doc


def _read_requests(run_dir: Path) -> dict[str, np.ndarray]:
    """The `_COLUMNS` of run_dir/requests.csv as float64 arrays (NaN where the run wrote nan)."""
    path = run_dir / "requests.csv"
    raw = inputs.open_input(path, what="requests table", limit=inputs.LIMITS["table"])
    with io.TextIOWrapper(raw, encoding="utf-8", newline="") as handle, inputs.reading(path):
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise InputError("empty file", file=str(path))
        where = {}
        for name in _COLUMNS:
            if name not in header:
                raise InputError("missing column", file=str(path), line=1, field=name)
            where[name] = header.index(name)
        cols: dict[str, list[float]] = {name: [] for name in _COLUMNS}
        for lineno, row in enumerate(reader, start=2):
            for name, i in where.items():
                try:
                    cols[name].append(float(row[i]))
                except (ValueError, IndexError):
                    value = row[i] if i < len(row) else "<missing>"
                    raise InputError(
                        f"not a number: {value!r}", file=str(path), line=lineno, field=name
                    ) from None
    return {name: np.asarray(v, dtype=np.float64) for name, v in cols.items()}


def _ms_stats(name: str, seconds: np.ndarray, out: dict) -> None:
    v = seconds[~np.isnan(seconds)] * 1e3
    if v.size == 0:
        for k in ("mean", "median", "std", "p99"):
            out[f"{k}_{name}_ms"] = None
        return
    out[f"mean_{name}_ms"] = float(v.mean())
    out[f"median_{name}_ms"] = float(np.median(v))
    out[f"std_{name}_ms"] = float(v.std())
    out[f"p99_{name}_ms"] = float(np.percentile(v, 99))


def _finite_or_none(x) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def run_load(run_dir: str | Path) -> dict:
    """The load-factor keys of the run's summary.json (`sim.metrics.load_factor`; {} for older runs)."""
    summary = _read_summary(Path(run_dir))
    keys = ("load_factor", "offered_req_s", "sustainable_req_s", "batch_max")
    return {k: summary[k] for k in keys if k in summary}


def export_vllm_bench(run_dir: str | Path) -> dict:
    """The `vllm bench serve` result dict of the run in `run_dir` (see the module docstring)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("not a run directory", file=str(run_dir), field="RUN_DIR")
    summary = _read_summary(run_dir)
    req = _read_requests(run_dir)
    done = ~np.isnan(req["finish_s"])
    inp, outp = req["input_tokens"][done], req["output_tokens"][done]
    duration = float(req["finish_s"][done].max() - np.nanmin(req["arrival_s"])) if done.any() else 0.0
    n, tin, tout = int(done.sum()), int(inp.sum()), int(outp.sum())
    res: dict = {
        "backend": "specbed-sim",
        "policy": summary.get("policy"),
        "drafter": summary.get("drafter"),
        "seed": summary.get("seed"),
        "completed": n,
        "total_input_tokens": tin,
        "total_output_tokens": tout,
        "duration": duration,
        "request_throughput": n / duration if duration > 0 else None,
        "output_throughput": tout / duration if duration > 0 else None,
        "total_token_throughput": (tin + tout) / duration if duration > 0 else None,
    }
    # the run's own per-request latencies (sim.metrics.request_table; tpot NaN for one-token outputs)
    ttft, tpot, e2e = req["ttft_s"][done], req["tpot_s"][done], req["e2e_s"][done]
    _ms_stats("ttft", ttft, res)
    _ms_stats("tpot", tpot, res)
    for key, src in (
        ("mean", "itl_s_mean"),
        ("median", "itl_s_p50"),
        ("std", "itl_s_std"),
        ("p99", "itl_s_p99"),
    ):
        value = _finite_or_none(summary[src])
        res[f"{key}_itl_ms"] = None if value is None else value * 1e3
    _ms_stats("e2el", e2e, res)
    drafts, drafted, accepted = (
        int(summary[k]) for k in ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")
    )
    per_pos = [int(x) for x in summary["spec_accepted_per_pos"]]
    res["spec_decode_acceptance_length"] = 1.0 + accepted / drafts if drafts else None
    res["spec_decode_acceptance_rate"] = 100.0 * accepted / drafted if drafted else None
    res["spec_decode_num_drafts"] = drafts
    res["spec_decode_draft_tokens"] = drafted
    res["spec_decode_accepted_tokens"] = accepted
    res["spec_decode_per_position_acceptance_rates"] = [a / drafts for a in per_pos] if drafts else []
    return res


# -- compare -----------------------------------------------------------------------------------------------

#: rows of `specbed compare`: (key, label)
COMPARE_ROWS = (
    ("request_throughput", "request throughput (req/s)"),
    ("output_throughput", "output throughput (tok/s)"),
    ("total_token_throughput", "total throughput (tok/s)"),
    *(
        (f"{stat}_{metric}_ms", f"{metric.upper()} {stat} (ms)")
        for metric in ("ttft", "tpot", "itl", "e2el")
        for stat in ("mean", "median", "p99")
    ),
    ("spec_decode_acceptance_length", "acceptance length"),
    ("spec_decode_acceptance_rate", "draft acceptance rate (%)"),
)


def _check_result(doc: dict, file: str) -> dict:
    for key, _ in COMPARE_ROWS:
        value = doc.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"expected a number, got {value!r}", file=file, field=key)
    if not any(doc.get(key) is not None for key, _ in COMPARE_ROWS):
        raise InputError(
            "has none of the compared keys (request_throughput, mean_ttft_ms, ...): "
            "not a vllm bench serve result",
            file=file,
        )
    for key, lo, hi in (("spec_decode_acceptance_length", 1.0, math.inf),
                        ("spec_decode_acceptance_rate", 0.0, 100.0)):  # fmt: skip
        value = doc.get(key)
        if isinstance(value, int | float) and math.isfinite(value) and not lo <= value <= hi:
            raise InputError(f"must be in [{lo:g}, {hi:g}], got {value:g}", file=file, field=key)
    check_bench_result(doc, file=file)  # units, orderings, counts against rates (specsched.io.meaning)
    return doc


def load_vllm_result(path: str | Path) -> dict:
    """A real run as `--save-result` keys: that JSON itself, the `vllm bench serve` console report, or
    per-request JSON (`bridge.read_json.per_request_result`); compared keys, where present, are numbers."""
    from bridge.read_json import is_json, load_docs, per_request_result
    from bridge.read_reports import console_result

    file = str(path)
    text = inputs.read_text(path, what="vllm bench result", limit=inputs.LIMITS["json"])  # regular, capped
    if not is_json(text) and not text.lstrip().startswith(("[", "{")):
        with inputs.reading(file):
            return _check_result(console_result(file, text), file)
    docs = load_docs(file, text)
    one = docs[0][0] if len(docs) == 1 else None
    if isinstance(one, dict) and "metrics" not in one:
        return _check_result(one, file)
    if len(docs) == 1 and not (isinstance(one, list) and all(isinstance(d, dict) for d in one)):
        raise InputError("expected a JSON object (a vllm bench serve --save-result file)", file=file)
    with inputs.reading(file):
        return _check_result(per_request_result(file, docs), file)


def compare_rows(sim: dict, real: dict) -> list[tuple[str, float | None, float | None, float | None]]:
    """(label, simulated, real, relative error (sim − real) / real) per row; None where either is absent."""
    rows = []
    for key, label in COMPARE_ROWS:
        a, b = _finite_or_none(sim.get(key)), _finite_or_none(real.get(key))
        rel = (a - b) / b if a is not None and b is not None and b != 0 else None
        rows.append((label, a, b, rel))
    return rows


def _num(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def format_compare(rows, sim_name: str, real_name: str) -> str:
    """The comparison table: one row per metric, relative error in percent."""
    lines = [f"{'':<28} {'sim: ' + sim_name[-14:]:>20} {'vLLM: ' + real_name[-14:]:>20} {'rel. error':>11}"]
    for label, a, b, rel in rows:
        err = "n/a" if rel is None else f"{100 * rel:+.1f}%"
        lines.append(f"{label:<28} {_num(a):>20} {_num(b):>20} {err:>11}")
    return "\n".join(lines)
