"""τ-only sources: vLLM v0 `Speculative metrics:` lines and SGLang `Decode batch. ... accept len:` lines.

Role: sources that give the mean acceptance length τ but no per-position counts, read into a `TauOnly`
(`bridge.acceptance.from_tau` refuses it, or with `--tau-only` fits a constant-acceptance curve):
- vLLM v0 (0.4 – 0.7, the V0 engine): `Speculative metrics: Draft acceptance rate: 0.62, System efficiency:
  0.48, Number of speculative tokens: 5, Number of accepted tokens: N, Number of draft tokens: N, Number of
  emitted tokens: N.` The counts are CUMULATIVE since start: the last line of each file is used (summing
  lines double counts) and a count lower than the line before is refused (a restart inside the log). v0
  drafts K tokens every step, so drafts D = draft tokens / K exactly and τ = emitted / D (NOT 1 + accepted
  / D: v0 counts accepted tokens after a rejection too). Lines without `Number of speculative tokens`
  (0.4.0) get K from `System efficiency` = emitted / ((K + 1) D). Checked: accepted ≤ draft tokens,
  D ≤ emitted ≤ (K + 1) D.
- SGLang (0.3+): `accept len: 2.35` per decode-log interval (tokens per verify step, bonus included), from
  0.4.7 also `accept rate: 0.45` = (accept len − 1) / drafts per step, giving K. No draft counts: the
  intervals are averaged weighted by `#running-req` (SGLang logs every `decode_log_interval` steps, each
  step verifying one draft per running request) — an estimate, marked so. Intervals with accept len < 1
  (speculation off) are skipped. `python -m sglang.bench_serving`'s `Accept length:` line is read alike.

May import: numpy, the standard library, `specsched.io.errors`, `bridge.textutil`, `bridge.counts`,
`bridge.read_logs` (its field parser).
"""

from __future__ import annotations

import re
import statistics

from bridge.counts import TauOnly
from bridge.read_logs import log_fields
from bridge.textutil import field_number, lines, number
from specsched.io.errors import InputError

V0_MARK = "Speculative metrics:"
V0_K = "Number of speculative tokens"
V0_ACC = "Number of accepted tokens"
V0_DRAFT = "Number of draft tokens"
V0_EMIT = "Number of emitted tokens"
V0_EFF = "System efficiency"
SGL_MARK = re.compile(r"accept len\s*:\s*([-+0-9.eE]+)")
SGL_RATE = re.compile(r"accept rate\s*:\s*([-+0-9.eE]+)")
SGL_BENCH = re.compile(r"^\W*Accept length\s*:\s*([-+0-9.eE]+)\s*$", re.M)  # sglang.bench_serving
SGL_RUNNING = re.compile(r"#running-req\s*:\s*(\d+(?:,\d{3})*)")


def is_v0(text: str) -> bool:
    return V0_MARK in text


def is_sglang(text: str) -> bool:
    return SGL_MARK.search(text) is not None or SGL_BENCH.search(text) is not None


def _v0_line(fields: dict, file: str, line: int) -> tuple[float, float, float, int]:
    """(accepted, draft tokens, emitted, K) of one v0 line after its checks."""
    acc, tokens, emitted = (field_number(fields.get(k), file, line, k) for k in (V0_ACC, V0_DRAFT, V0_EMIT))
    if V0_K in fields:
        k = field_number(fields[V0_K], file, line, V0_K, minimum=1)
    else:
        eff = field_number(fields.get(V0_EFF), file, line, V0_EFF)
        if eff <= 0:
            raise InputError(f"no {V0_K!r} and a zero efficiency: K unknown", file=file, line=line,
                             field=V0_EFF)  # fmt: skip
        drafts = emitted / eff - tokens
        k = round(tokens / drafts) if drafts > 0 else 0
        if k < 1:
            raise InputError(f"no {V0_K!r} and K cannot be had from the efficiency", file=file, line=line,
                             field=V0_EFF)  # fmt: skip
    if acc > tokens:
        raise InputError(f"{acc:g} accepted of {tokens:g} draft tokens", file=file, line=line, field=V0_ACC)
    d = tokens / k
    if tokens > 0 and not d * (1 - 1e-9) <= emitted <= (k + 1) * d * (1 + 1e-9):
        raise InputError(f"{emitted:g} emitted tokens is outside [{d:g}, {(k + 1) * d:g}] for {d:g} drafts "
                         f"of K = {k}: K disagrees with the counts", file=file, line=line,
                         field=V0_EMIT)  # fmt: skip
    return acc, tokens, emitted, int(k)


def read_v0(paths: list[str], texts: list[str]) -> TauOnly:
    """The last (cumulative) v0 line of each file; files are pooled as separate servers."""
    tokens_sum, emitted_sum, k_seen, first = 0.0, 0.0, None, None
    for file, text in zip(paths, texts):
        last = None
        for lineno, raw in lines(text):
            at = raw.find(V0_MARK)
            if at < 0:
                continue
            got = _v0_line(log_fields(raw[at + len(V0_MARK) :].strip()), file, lineno)
            first = first or (file, lineno)
            if last is not None:
                for i, name in ((0, V0_ACC), (1, V0_DRAFT), (2, V0_EMIT)):
                    if got[i] < last[0][i]:
                        raise InputError(
                            f"fell from {last[0][i]:g} (line {last[1]}) to {got[i]:g}: v0 counts are "
                            "cumulative since start, a restart inside the log (one file per run)",
                            file=file, line=lineno, field=name,
                        )  # fmt: skip
            if k_seen is not None and got[3] != k_seen:
                raise InputError(f"K = {got[3]} but an earlier line has {k_seen}", file=file, line=lineno,
                                 field=V0_K)  # fmt: skip
            k_seen, last = got[3], (got, lineno)
        if last is not None:
            tokens_sum += last[0][1]
            emitted_sum += last[0][2]
    if first is None:
        raise InputError(f"no '{V0_MARK}' line", file=paths[0], field="FILE")
    drafts = tokens_sum / k_seen
    if drafts <= 0:
        raise InputError("zero draft tokens: no speculation was measured", file=first[0], field=V0_DRAFT)
    notes = (f"vLLM v0: τ = emitted / (draft tokens / K) = {emitted_sum:g} / {drafts:g}, exact (cumulative "
             "counts: the last line of each file)",)  # fmt: skip
    return TauOnly(emitted_sum / drafts, k_seen, drafts, *first, "a vLLM v0 log", notes, tuple(paths))


def read_sglang(paths: list[str], texts: list[str]) -> TauOnly:
    """Average SGLang's per-interval accept len weighted by #running-req; K from accept rate."""
    weighted, weight, ks, first, skipped = 0.0, 0.0, [], None, 0
    for file, text in zip(paths, texts):
        for lineno, line in lines(text):
            m = SGL_MARK.search(line) or SGL_BENCH.search(line)
            if m is None:
                continue
            tau = number(m.group(1))
            if tau is None:
                raise InputError(f"not a number: {m.group(1)!r}", file=file, line=lineno, field="accept len")
            if tau < 1:
                skipped += 1
                continue
            running = SGL_RUNNING.search(line)
            w = number(running.group(1)) if running else 1.0
            if not w:  # no request running: an idle interval carries no acceptance to weigh
                skipped += 1
                continue
            weighted, weight = weighted + w * tau, weight + w
            first = first or (file, lineno)
            rate = SGL_RATE.search(line)
            r = number(rate.group(1)) if rate else None
            if r and r > 0 and tau > 1.05:
                ks.append((tau - 1) / r)
    if first is None:
        raise InputError(f"no 'accept len' of at least 1 with a running request ({skipped} intervals "
                         "without: speculation off?)",
                         file=paths[0], field="accept len")  # fmt: skip
    k = round(statistics.median(ks)) if ks else None
    notes = (
        "SGLang: τ = mean of the intervals' accept len weighted by #running-req (ESTIMATE: SGLang logs no "
        "draft counts)",
        f"K = {k} from accept len / accept rate" if k else "K not in the log",
    )
    return TauOnly(weighted / weight, k if k and k >= 1 else None, None, *first, "an SGLang log", notes,
                   tuple(paths))  # fmt: skip
