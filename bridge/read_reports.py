"""Console reports: `vllm bench serve`'s printed result and `examples/offline_inference/spec_decode.py`'s.

Role: two `Key: value` printouts users paste (any indentation, ANSI colours, CRLF, thousands separators;
several reports in one file are pooled weighted by their drafts — a key seen again starts a new report):
- the `vllm bench serve` console report (vLLM 0.10+; per-position lines 0.11+): its `Speculative
  Decoding` section `Acceptance rate (%)`, `Acceptance length`, `Drafts`, `Draft tokens`, `Accepted
  tokens`, `Per-position acceptance (%)` / `Position i: 74.34`. Drafts and accepted tokens are exact; the
  rates (percent, 2 decimals) are moved within their rounding to sum to accepted / drafts. `console_result`
  gives the report's throughputs and TTFT / TPOT / ITL / E2EL rows for `specbed compare`.
- `spec_decode.py`'s printout (vLLM 0.9+): `num_drafts:`, `num_draft_tokens:`, `num_accepted_tokens:`,
  `mean acceptance length:`, `acceptance at token i: 0.78` (2 decimals; also 4). Drafts and accepted are
  exact; the rates are moved within their rounding (±0.005) to sum to accepted / drafts, so τ is exact.
  Variants printing only `Number of drafts:` / `Accepted tokens:` / `Mean acceptance length:` are τ-only.
Refused, naming file and line: a count missing or not a number, rates that rise, positions not 0..K−1,
drafted tokens above K × drafts, rates that cannot sum to accepted / drafts within their rounding (and a
small slack): a position missing or the figures from different runs.

May import: numpy, the standard library, `specsched.io.errors`, `bridge.textutil`, `bridge.counts`.
"""

from __future__ import annotations

import re

import numpy as np

from bridge.counts import Acceptance, TauOnly, check_counts
from bridge.textutil import lines, number, reconcile
from specsched.io.errors import InputError

_PAIR = re.compile(r"([A-Za-z][\w ()%/.\-]*?)\s*:\s*([-+]?\d[\d.,\u202f]*(?:[eE][-+]?\d+)?)\s*%?\s*\|?\s*$")
_POSITION = re.compile(r"^(?:position|acceptance at token)\s+(\d+)$")
#: slack beyond the rates' rounding for Σ rates vs accepted / drafts
SUM_SLACK = 0.002

CONSOLE = {"drafts": "drafts", "tokens": "draft tokens", "accepted": "accepted tokens",
           "mal": "acceptance length"}  # fmt: skip
OFFLINE = {"drafts": "num_drafts", "tokens": "num_draft_tokens", "accepted": "num_accepted_tokens",
           "mal": "mean acceptance length"}  # fmt: skip
OFFLINE_ALT = {"drafts": "number of drafts", "tokens": "draft tokens generated",
               "accepted": "accepted tokens", "mal": "mean acceptance length"}  # fmt: skip


def is_console(text: str) -> bool:
    return re.search(r"-{3,}\s*Speculative Decoding\s*-{3,}", text) is not None or (
        re.search(r"^\W*Acceptance length\s*:", text, re.M) is not None
        and re.search(r"^\W*Position 0\s*:", text, re.M) is not None
    )


def is_offline(text: str) -> bool:
    return re.search(r"acceptance at token \d+\s*:", text) is not None or (
        re.search(r"num_drafts\s*:", text) is not None
        or re.search(r"Number of drafts\s*:", text) is not None
    ) and re.search(r"mean acceptance length\s*:", text, re.I) is not None


def records(text: str) -> list[dict[str, tuple[str, int]]]:
    """[{normalised key: (value text, line)}]: one dict per report (a repeated key starts the next)."""
    out: list[dict] = [{}]
    for lineno, line in lines(text):
        m = _PAIR.search(line)
        if m is None:
            continue
        key = " ".join(m.group(1).lower().split())
        if key in out[-1]:
            out.append({})
        out[-1][key] = (m.group(2), lineno)
    return [r for r in out if r]


def _count(rec: dict, key: str, file: str) -> float | None:
    if key not in rec:
        return None
    text, line = rec[key]
    value = number(text)
    if value is None or value < 0:
        raise InputError(f"not a count: {text!r}", file=file, line=line, field=key)
    return value


def _rates(rec: dict, file: str, percent: bool) -> tuple[np.ndarray, float, int] | None:
    """(rates, half their printed resolution, first line) of the `Position i` / `acceptance at token i`
    rows, or None when there are none."""
    pos = {}
    for key, (text, line) in rec.items():
        m = _POSITION.match(key)
        if m:
            pos[int(m.group(1))] = (text, line)
    if not pos:
        return None
    k = max(pos) + 1
    for i in range(k):
        if i not in pos:
            raise InputError(f"missing position {i} (positions 0..{k - 1} expected)", file=file,
                             line=pos[max(pos)][1], field=f"position {i}")  # fmt: skip
    scale = 100.0 if percent else 1.0
    rates = np.array([number(pos[i][0]) / scale for i in range(k)], dtype=np.float64)
    decimals = min(len(pos[i][0].split(".")[1]) if "." in pos[i][0] else 0 for i in range(k))
    return rates, 0.5 * 10.0**-decimals / scale, pos[0][1]


def _one(rec: dict, keys: dict, file: str, percent: bool, kind: str) -> Acceptance | TauOnly:
    """One report's counts after its checks."""
    drafts, accepted = _count(rec, keys["drafts"], file), _count(rec, keys["accepted"], file)
    tokens = _count(rec, keys["tokens"], file)
    line = min(v[1] for v in rec.values())
    if drafts is None or accepted is None:
        missing = keys["drafts"] if drafts is None else keys["accepted"]
        raise InputError("missing (no speculative-decoding counts in this report)", file=file, line=line,
                         field=missing)  # fmt: skip
    if drafts <= 0:
        raise InputError("zero drafts: no speculation was measured", file=file, line=rec[keys["drafts"]][1],
                         field=keys["drafts"])  # fmt: skip
    got = _rates(rec, file, percent)
    if got is None:
        per = tokens / drafts if tokens else 0.0
        k = round(per) if per >= 1 and abs(per - round(per)) < 1e-9 else None
        return TauOnly(1.0 + accepted / drafts, k, drafts, file, line, kind,
                       ("τ = 1 + accepted / drafts exact; no per-position lines",))  # fmt: skip
    rates, h, pos_line = got
    k = rates.size
    if tokens is not None and tokens > k * drafts + 0.5:
        raise InputError(f"{tokens:g} drafted tokens exceed K = {k} positions × {drafts:g} drafts: K "
                         "disagrees with the positions", file=file, line=rec[keys["tokens"]][1],
                         field=keys["tokens"])  # fmt: skip
    fixed = reconcile(rates, h, accepted / drafts)
    if fixed is None:
        if abs(accepted / drafts - rates.sum()) > k * h + SUM_SLACK:
            raise InputError(
                f"per-position rates sum to {rates.sum():.4f} but accepted / drafts = {accepted / drafts:.4f}"
                ": a position missing, or figures from different runs",
                file=file, line=pos_line, field="position 0",
            )  # fmt: skip
        fixed = rates
    counts = fixed * drafts
    check_counts(drafts, counts, file, pos_line, keys["drafts"], lambda i: f"position {i}")
    return Acceptance(drafts, counts, (file,), kind)


def _read(paths, texts, keys_of, percent: bool, kind: str, exact: str) -> Acceptance | TauOnly:
    drafts, per_pos, tau_only = 0.0, None, []
    for file, text in zip(paths, texts):
        for rec in records(text):
            keys = keys_of(rec)
            if keys is None:
                continue
            got = _one(rec, keys, file, percent, kind)
            if isinstance(got, TauOnly):
                tau_only.append(got)
                continue
            if per_pos is not None and got.per_pos.size != per_pos.size:
                raise InputError(f"has {got.per_pos.size} positions but an earlier report has "
                                 f"{per_pos.size}", file=file, field="position")  # fmt: skip
            drafts += got.drafts
            per_pos = got.per_pos if per_pos is None else per_pos + got.per_pos
    if per_pos is None and len(tau_only) == 1:
        return TauOnly(**{**tau_only[0].__dict__, "sources": tuple(paths)})
    if per_pos is None or tau_only:
        what = "mixes reports with and without per-position lines" if tau_only else "has no report"
        raise InputError(f"{what}: nothing to pool", file=paths[0], field="FILE")
    return Acceptance(drafts, per_pos, tuple(paths), kind, (exact,))


def read_console(paths: list[str], texts: list[str]) -> Acceptance | TauOnly:
    """Pool the `Speculative Decoding` sections of `vllm bench serve` console reports."""
    return _read(paths, texts, lambda rec: CONSOLE if "acceptance length" in rec else None, True,
                 "vllm bench console", "drafts and accepted exact; rates (2-decimal percent) reconciled "
                 "with accepted / drafts within their rounding")  # fmt: skip


def read_offline(paths: list[str], texts: list[str]) -> Acceptance | TauOnly:
    """Pool `examples/offline_inference/spec_decode.py` printouts."""

    def keys_of(rec):
        if "num_drafts" in rec:
            return OFFLINE
        return OFFLINE_ALT if "number of drafts" in rec else None

    return _read(paths, texts, keys_of, False, "spec_decode.py printout", "drafts and accepted exact; "
                 "rates (2 decimals) reconciled with accepted / drafts within their rounding")  # fmt: skip


#: console keys → `vllm bench serve --save-result` keys (for `specbed compare`)
_RESULT_KEYS = {
    "request throughput (req/s)": "request_throughput",
    "output token throughput (tok/s)": "output_throughput",
    "total token throughput (tok/s)": "total_token_throughput",
    "acceptance length": "spec_decode_acceptance_length",
    "acceptance rate (%)": "spec_decode_acceptance_rate",
    "drafts": "spec_decode_num_drafts",
}


def console_result(file: str, text: str) -> dict:
    """A console report as `--save-result` keys (mean/median/p99 TTFT, TPOT, ITL, E2EL in ms, ...)."""
    recs = records(text)
    if not recs:
        raise InputError("no 'Key: value' lines: not a vllm bench serve report", file=file)
    if len(recs) > 1:
        line = min(v[1] for v in recs[1].values())
        raise InputError("a second report starts here: give one report per file", file=file, line=line)
    out = {}
    for key, (value, _line) in recs[0].items():
        m = re.match(r"^(mean|median|p\d+)\s+(ttft|tpot|itl|e2el)\s*\(ms\)$", key)
        name = f"{m.group(1)}_{m.group(2)}_ms" if m else _RESULT_KEYS.get(key)
        if name is not None:
            out[name] = number(value)
    return out
