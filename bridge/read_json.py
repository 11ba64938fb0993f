"""JSON from vLLM: `vllm bench serve --save-result` files and per-request `metrics.speculative_decoding`.

Role: two JSON inputs of `specbed curves from-vllm` (and `specbed compare`), told apart by their keys:
- `vllm bench serve --save-result` (vLLM 0.9+ with speculative decoding): `spec_decode_num_drafts` and
  `spec_decode_per_position_acceptance_rates` (full float precision: exact), checked against
  `spec_decode_draft_tokens` (≤ K × drafts) and `spec_decode_accepted_tokens` (= Σ rates × drafts) where
  present. Several files are pooled weighted by their drafts.
- per-request acceptance (`--per-request-spec-decode-metrics summary|detailed`, vLLM 0.29+, experimental
  upstream): every object holding an `acceptance_histogram` — a response (`metrics.speculative_decoding`),
  a list of them, JSON lines, a stream's `data: {...}` lines, or the bare objects. The histogram h_j counts
  verification steps that accepted exactly j drafts (dense list of K + 1, or a sparse {"j": n} map), so
  drafts D = Σ h and a_i = Σ_{j>i} h_j exactly. Checked: `num_spec_steps` = Σ h,
  `num_accepted_draft_tokens` = Σ j h_j, a dense histogram of `num_spec_tokens` + 1 buckets, one K for
  all requests, drafted tokens ≤ K × steps. `null` entries (n > 1 requests) are skipped.
  `per_request_latency` gives the same files' TTFT / TPOT / ITL for `specbed compare`.

May import: numpy, the standard library, `specsched` (errors, inputs), `bridge.counts`.
"""

from __future__ import annotations

import math
import re

import numpy as np

from bridge.counts import Acceptance, check_counts
from specsched.io import inputs
from specsched.io.errors import InputError

BENCH_DRAFTS = "spec_decode_num_drafts"
BENCH_RATES = "spec_decode_per_position_acceptance_rates"
HIST = "acceptance_histogram"


def is_json(text: str) -> bool:
    head = text.lstrip("\ufeff \t\r\n")
    if re.match(r'\{\s*__name__\s*=', head):  # Grafana's `{__name__="vllm:..."} value`: a Prometheus paste
        return False
    return head[:1] == "{" or re.match(r"\[\s*[\[{\]]", head) is not None or (
        head.startswith("data:") and "{" in head[:200]
    )


def load_docs(file: str, text: str) -> list[tuple[object, int | None]]:
    """[(document, line or None)]: one JSON document, or JSON lines / `data: {...}` stream lines (each
    through the common input layer's depth, digit and finite-number limits)."""
    body = text.lstrip("\ufeff")
    try:
        return [(inputs.parse_json(body, file), None)]
    except InputError as whole:
        if not whole.message.startswith("not valid JSON"):
            raise
        docs = []
        for lineno, raw in enumerate(body.splitlines(), start=1):
            line = raw.strip()
            if line.startswith("data:"):
                line = line[5:].strip()
            if not line or line == "[DONE]":
                continue
            try:
                docs.append((inputs.parse_json(line, file), lineno))
            except InputError as err:
                if not docs:
                    raise whole from None
                raise InputError(f"JSON line: {err.message}", file=file, line=lineno) from None
        return docs


def _is_num(x, lo: float = 0.0) -> bool:
    return not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x) and x >= lo


def _bench_one(file: str, doc: dict) -> tuple[float, np.ndarray]:
    d = doc.get(BENCH_DRAFTS)
    if d is None:
        raise InputError("missing (was speculative decoding on?)", file=file, field=BENCH_DRAFTS)
    if not _is_num(d):
        raise InputError(f"expected a number >= 0, got {d!r}", file=file, field=BENCH_DRAFTS)
    rates = doc.get(BENCH_RATES)
    if not isinstance(rates, list) or not rates:
        raise InputError("missing or not a non-empty list", file=file, field=BENCH_RATES)
    for i, x in enumerate(rates):
        if not _is_num(x) or x > 1:
            what = "missing position" if x is None else f"expected a rate in [0, 1], got {x!r}"
            raise InputError(what, file=file, field=f"{BENCH_RATES}[{i}]")
    counts = np.asarray(rates, dtype=np.float64) * d
    check_counts(float(d), counts, file, None, BENCH_DRAFTS, lambda i: f"{BENCH_RATES}[{i}]")
    k, tokens, acc = len(rates), doc.get("spec_decode_draft_tokens"), doc.get("spec_decode_accepted_tokens")
    if _is_num(tokens) and tokens > k * d * (1 + 1e-6) + 0.5:
        raise InputError(f"{tokens:g} drafted tokens exceed K = {k} positions × {d:g} drafts: K disagrees "
                         "with the positions", file=file, field="spec_decode_draft_tokens")  # fmt: skip
    if _is_num(acc) and abs(acc - counts.sum()) > max(2.0, 1e-3 * acc):
        raise InputError(f"{acc:g} accepted tokens but the per-position rates × drafts sum to "
                         f"{counts.sum():.1f}: a position is missing", file=file,
                         field="spec_decode_accepted_tokens")  # fmt: skip
    return float(d), counts


def read_bench(paths: list[str], docs: list) -> Acceptance:
    """Pool `vllm bench serve --save-result` files weighted by their drafts."""
    drafts, per_pos, k = 0.0, None, None
    for file, doc in zip(paths, docs):
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object", file=file)
        d, counts = _bench_one(file, doc)
        if k is not None and counts.size != k[0]:
            raise InputError(f"has {counts.size} positions but {k[1]} has {k[0]}", file=file,
                             field=BENCH_RATES)  # fmt: skip
        k = k or (counts.size, file)
        drafts += d
        per_pos = counts if per_pos is None else per_pos + counts
    return Acceptance(drafts, per_pos, tuple(paths), "vllm bench", ("drafts and per-position rates exact",))


# -- per-request ------------------------------------------------------------------------------------------


def spec_objects(doc, path: str = "") -> list[tuple[dict | None, str]]:
    """Every object with an `acceptance_histogram` (and every null `speculative_decoding`), with its path."""
    out = []
    if isinstance(doc, dict):
        if HIST in doc:
            return [(doc, path)]
        for key, value in doc.items():
            if key == "speculative_decoding" and value is None:
                out.append((None, f"{path}.{key}".lstrip(".")))
            else:
                out += spec_objects(value, f"{path}.{key}".lstrip("."))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += spec_objects(value, f"{path}[{i}]")
    return out


def _histogram(obj: dict, file: str, line, where: str) -> np.ndarray:
    h, field = obj[HIST], f"{where}.{HIST}".lstrip(".")
    if isinstance(h, dict):
        pairs = []
        for key, n in h.items():
            if not str(key).isdigit() or not _is_num(n) or n != int(n):
                raise InputError(f"bucket {key!r}: {n!r} is not a count", file=file, line=line, field=field)
            pairs.append((int(key), int(n)))
        dense = np.zeros(max((j for j, _ in pairs), default=0) + 1)
        for j, n in pairs:
            dense[j] += n
        return dense
    if not isinstance(h, list) or not h or not all(_is_num(n) and n == int(n) for n in h):
        raise InputError("expected a non-empty list of counts >= 0", file=file, line=line, field=field)
    return np.asarray(h, dtype=np.float64)


def _request(obj: dict, file: str, line, where: str) -> tuple[np.ndarray, int | None]:
    """(dense histogram, K or None) of one request after its own checks."""
    h = _histogram(obj, file, line, where)
    at = f"{where}.".lstrip(".")
    k = obj.get("num_spec_tokens")
    if k is not None:
        if not _is_num(k, 1) or k != int(k):
            raise InputError(f"expected an integer >= 1, got {k!r}", file=file, line=line,
                             field=f"{at}num_spec_tokens")  # fmt: skip
        k = int(k)
        dense = isinstance(obj[HIST], list)
        if (dense and h.size != k + 1) or h.size > k + 1:
            raise InputError(f"has {h.size} buckets but num_spec_tokens = {k} needs {k + 1}: K disagrees "
                             "with the positions", file=file, line=line, field=f"{at}{HIST}")  # fmt: skip
    j = np.arange(h.size)
    for key, want in (("num_spec_steps", h.sum()), ("num_accepted_draft_tokens", float((j * h).sum()))):
        got = obj.get(key)
        if got is not None and (not _is_num(got) or abs(got - want) > 0.5):
            raise InputError(f"{got!r} but the histogram gives {want:g}", file=file, line=line,
                             field=f"{at}{key}")  # fmt: skip
    tokens, kk = obj.get("num_draft_tokens"), k if k is not None else h.size - 1
    if tokens is not None and (not _is_num(tokens) or tokens > kk * h.sum() + 0.5
                               or tokens < float((j * h).sum()) - 0.5):  # fmt: skip
        raise InputError(f"{tokens!r} is not between the accepted drafts and K × steps", file=file,
                         line=line, field=f"{at}num_draft_tokens")  # fmt: skip
    return h, k


def read_per_request(paths: list[str], docs: list[list[tuple[object, int | None]]]) -> Acceptance:
    """Sum the requests' acceptance histograms into exact per-position counts."""
    total, k_seen, n, skipped = np.zeros(0), None, 0, 0
    for file, file_docs in zip(paths, docs):
        for doc, line in file_docs:
            for obj, where in spec_objects(doc):
                if obj is None:
                    skipped += 1
                    continue
                h, k = _request(obj, file, line, where)
                if k is not None and k_seen is not None and k != k_seen[0]:
                    raise InputError(f"num_spec_tokens = {k} but {k_seen[1]} has {k_seen[0]}: one K per read",
                                     file=file, line=line, field=f"{where}.num_spec_tokens")  # fmt: skip
                k_seen = k_seen or ((k, f"{file}:{line}" if line else file) if k is not None else None)
                size = max(total.size, h.size, (k + 1) if k else 0)
                total = np.pad(total, (0, size - total.size)) + np.pad(h, (0, size - h.size))
                n += 1
    if n == 0:
        raise InputError(f"no per-request acceptance ({skipped} null: n > 1 requests report none)",
                         file=paths[0], field=HIST)  # fmt: skip
    per_pos = np.array([total[i + 1 :].sum() for i in range(total.size - 1)], dtype=np.float64)
    if per_pos.size == 0:
        raise InputError("histograms have one bucket only: K = 0", file=paths[0], field=HIST)
    check_counts(float(total.sum()), per_pos, paths[0], None, HIST, lambda i: f"{HIST}[{i + 1}]")
    notes = (f"{n} request(s) summed, drafts and per-position counts exact"
             + (f"; {skipped} null (n > 1) skipped" if skipped else ""),)  # fmt: skip
    return Acceptance(float(total.sum()), per_pos, tuple(paths), "per-request json", notes)


def read_json(paths: list[str], texts: list[str]) -> Acceptance:
    """Bench result files or per-request files (one kind per read)."""
    loaded = [load_docs(f, t) for f, t in zip(paths, texts)]
    per_request = [any(spec_objects(d) for d, _ in docs) for docs in loaded]
    if all(per_request):
        return read_per_request(paths, loaded)
    if any(per_request):
        i = per_request.index(False)
        raise InputError(f"is not per-request JSON but {paths[per_request.index(True)]} is: give files of "
                         "one kind", file=paths[i], field="FILE")  # fmt: skip
    docs = []
    for f, file_docs in zip(paths, loaded):
        if len(file_docs) != 1:
            raise InputError("expected one JSON object (a vllm bench serve --save-result file)", file=f)
        docs.append(file_docs[0][0])
    return read_bench(paths, docs)


# -- per-request latencies (for `specbed compare`) ---------------------------------------------------------


def _stats(name: str, values: list[float], out: dict) -> None:
    if values:
        v = np.asarray(values, dtype=np.float64)
        out[f"mean_{name}_ms"] = float(v.mean())
        out[f"median_{name}_ms"] = float(np.median(v))
        out[f"p99_{name}_ms"] = float(np.percentile(v, 99))


def _responses(doc) -> list[dict]:
    """Every object with a `metrics` dict holding timing fields (a response), depth first."""
    if isinstance(doc, dict):
        m = doc.get("metrics")
        if isinstance(m, dict) and "time_to_first_token_ms" in m:
            return [doc]
        return [r for v in doc.values() for r in _responses(v)]
    if isinstance(doc, list):
        return [r for v in doc for r in _responses(v)]
    return []


def per_request_result(file: str, docs: list[tuple[object, int | None]]) -> dict:
    """Per-request responses as `--save-result` keys: TTFT (queue + scheduled-to-first-token), TPOT =
    generation time / (completion tokens − 1), ITL mean weighted by each request's gaps (ms); mean, median
    and p99 across requests; acceptance length and rate from the summed histograms."""
    ttft, tpot, itl_sum, gaps, n = [], [], 0.0, 0.0, 0
    for doc, _line in docs:
        for r in _responses(doc):
            m, usage = r["metrics"], r.get("usage") if isinstance(r.get("usage"), dict) else {}
            out_tokens = usage.get("completion_tokens", usage.get("output_tokens"))
            n += 1
            if _is_num(m.get("time_to_first_token_ms")):
                queue = m.get("queue_time_ms") if _is_num(m.get("queue_time_ms")) else 0.0
                ttft.append(queue + m["time_to_first_token_ms"])
            if _is_num(m.get("generation_time_ms")) and _is_num(out_tokens) and out_tokens > 1:
                tpot.append(m["generation_time_ms"] / (out_tokens - 1))
            if _is_num(m.get("mean_itl_ms")):
                w = out_tokens - 1 if _is_num(out_tokens) and out_tokens > 1 else 1.0
                itl_sum, gaps = itl_sum + w * m["mean_itl_ms"], gaps + w
    if n == 0:
        raise InputError("no response with metrics.time_to_first_token_ms (start vLLM with "
                         "--enable-per-request-metrics)", file=file, field="metrics")  # fmt: skip
    res: dict = {"completed": n}
    _stats("ttft", ttft, res)
    _stats("tpot", tpot, res)
    if gaps:
        res["mean_itl_ms"] = itl_sum / gaps
    if any(spec_objects(d) for d, _ in docs):
        acc = read_per_request([file], [docs])
        res["spec_decode_acceptance_length"] = acc.tau
    return res
