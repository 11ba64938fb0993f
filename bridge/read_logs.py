"""vLLM v1 `SpecDecoding metrics:` log lines (vLLM 0.8.x and later) → pooled per-position counts.

Role: read every `SpecDecoding metrics: ... Accepted: N tokens, Drafted: N tokens, Per-position acceptance
rate: x, y, ...` line of one or more logs (any logger prefix, timestamps, `(EngineCore_DP3 pid=..)`, ANSI
colours, CRLF; fields found by key: their order and set differ between versions — 0.8.x starts with
`Draft acceptance rate`, 0.9+ with `Mean acceptance length` and adds throughputs, `Avg Draft acceptance
rate` and, for trees, `Avg tree nodes per depth`). Each line is one interval (counts reset after every
line), so intervals are pooled weighted by their drafts; idle intervals (`Drafted: 0`) are skipped.

Drafts per interval: vLLM prints K rates (3 decimals) and the exact Accepted, with Accepted = Σ_i a_i
(each accepted token counted once, at its position), so D = Accepted / Σ rates up to the rounding.
Drafted tokens / K is exact when every draft had K tokens and is used when it lies within that rounding
band; otherwise (n-gram or suffix drafts shorter than K) D = Accepted / Σ rates. Only an interval with
nothing accepted falls back to drafted / K (marked estimated). Refused, naming file and line: a field
missing or not a number, rates that rise, a line with a different number of positions than the first,
drafted tokens above K × the drafts Accepted / Σ rates allows, and rates whose 1 + Σ disagrees with the
printed `Mean acceptance length` by more than its rounding (positions missing).

May import: numpy, the standard library, `specsched.io.errors`, `bridge.textutil`, `bridge.counts`.
"""

from __future__ import annotations

import re

import numpy as np

from bridge.counts import Acceptance, TauOnly, check_counts
from bridge.textutil import field_number, lines, number
from specsched.io.errors import InputError

LOG_MARK = "SpecDecoding metrics:"
LOG_RATES = "Per-position acceptance rate"
LOG_MAL = "Mean acceptance length"
#: allowed gap between 1 + Σ rates and the printed mean acceptance length beyond the rounding of both
MAL_SLACK = 0.02

_KEY = re.compile(r"(?:^|,)\s*([A-Za-z][A-Za-z \-]*?):\s*")


def is_log(text: str) -> bool:
    return LOG_MARK in text


def log_fields(text: str) -> dict[str, str]:
    """'Key: value, Key: v1, v2, ...' → {key: value text}: a key starts after a comma, values never do."""
    marks = list(_KEY.finditer(text))
    return {
        m.group(1).strip(): text[m.end() : marks[j + 1].start() if j + 1 < len(marks) else len(text)].strip()
        for j, m in enumerate(marks)
    }


def _rates(text: str, file: str, line: int) -> tuple[np.ndarray, float]:
    """The rates and half their printed resolution (0.0005 for vLLM's 3 decimals)."""
    parts = [p.strip() for p in text.rstrip(". ").split(",")]
    values = [number(p) for p in parts]
    if not parts or any(v is None for v in values):
        raise InputError(f"not a list of numbers: {text!r}", file=file, line=line, field=LOG_RATES)
    decimals = min(len(p.split(".")[1]) if "." in p else 0 for p in parts)
    return np.array(values, dtype=np.float64), 0.5 * 10.0**-decimals


def _drafts(fields: dict, rates: np.ndarray, h: float, drafted: float, file: str, line: int):
    """(D, how) for one interval (see the module docstring)."""
    k, sr = rates.size, float(rates.sum())
    dk = drafted / k
    if "Accepted" not in fields:
        return dk, "estimate"
    acc = field_number(fields["Accepted"], file, line, "Accepted")
    if acc <= 0 or sr <= 0:
        return dk, "estimate"
    lo = (acc - 1) / (sr + k * h)  # ± 1 token: counts read while the engine adds to them
    hi = (acc + 1) / (sr - k * h) if sr > k * h else float("inf")
    if dk > hi * (1 + 1e-9) + 1e-9:
        raise InputError(
            f"{drafted:g} drafted tokens need at least {dk:g} drafts of K = {k}, but Accepted {acc:g} / Σ "
            f"rates {sr:.3f} allows at most {hi:.1f}: K disagrees with the positions (some missing?)",
            file=file, line=line, field="Drafted",
        )  # fmt: skip
    if dk >= lo * (1 - 1e-9):
        return dk, "full"
    return min(acc / sr, drafted), "short"


def _check_mal(fields: dict, rates: np.ndarray, h: float, file: str, line: int) -> None:
    if LOG_MAL not in fields:
        return
    mal = field_number(fields[LOG_MAL], file, line, LOG_MAL)
    implied = 1.0 + float(rates.sum())
    if abs(implied - mal) > 0.005 + rates.size * h + MAL_SLACK:
        raise InputError(
            f"{mal:.2f} but 1 + Σ of the {rates.size} per-position rates is {implied:.3f}: positions missing "
            "or the line was cut",
            file=file, line=line, field=LOG_MAL,
        )  # fmt: skip


def _at_most_drafted(fields: dict, drafted: float, file: str, line: int) -> float:
    """The interval's Accepted count; refused above its Drafted (a draft token is accepted at most once)."""
    acc = field_number(fields["Accepted"], file, line, "Accepted") if "Accepted" in fields else 0.0
    if acc > drafted:
        raise InputError(f"{acc:g} above Drafted ({drafted:g}): a draft token is accepted at most once",
                         file=file, line=line, field="Accepted")  # fmt: skip
    return acc


class _Pool:
    """Running sums over the intervals of every log."""

    def __init__(self) -> None:
        self.drafts, self.per_pos, self.first = 0.0, None, None
        self.how = {"full": 0, "short": 0, "estimate": 0}
        self.tau_only: list[tuple[float, float, str, int]] = []  # (accepted, MAL) of lines without rates

    def add(self, fields: dict, file: str, line: int) -> None:
        drafted = field_number(fields.get("Drafted"), file, line, "Drafted")
        if drafted <= 0:
            return  # an idle interval: nothing drafted, rates are nan
        if LOG_RATES not in fields:
            if LOG_MAL in fields and "Accepted" in fields:
                acc = _at_most_drafted(fields, drafted, file, line)
                self.tau_only.append((acc, field_number(fields[LOG_MAL], file, line, LOG_MAL), file, line))
                return
            raise InputError("missing field (vLLM before 0.9 does not log it)", file=file, line=line,
                             field=LOG_RATES)  # fmt: skip
        rates, h = _rates(fields[LOG_RATES], file, line)
        self._same_k(rates.size, file, line)
        d, how = _drafts(fields, rates, h, drafted, file, line)
        _check_mal(fields, rates, h, file, line)
        _at_most_drafted(fields, drafted, file, line)
        check_counts(d, rates * d, file, line, "Drafted", lambda i: f"{LOG_RATES}[{i}]")
        self.how[how] += 1
        self.drafts += d
        self.per_pos = rates * d if self.per_pos is None else self.per_pos + rates * d

    def _same_k(self, k: int, file: str, line: int) -> None:
        if self.first is None:
            self.first = (k, file, line)
        elif k != self.first[0]:
            i = min(k, self.first[0])
            raise InputError(
                f"has {k} positions but {self.first[1]}:{self.first[2]} has {self.first[0]}: "
                f"missing position {i}",
                file=file, line=line, field=f"{LOG_RATES}[{i}]",
            )  # fmt: skip

    def notes(self) -> tuple[str, ...]:
        text = {
            "full": "drafts = drafted tokens / K (every draft K long: consistent with Accepted / Σ rates)",
            "short": "drafts = Accepted / Σ rates (drafts shorter than K; exact up to the rates' 3 decimals)",
            "estimate": "drafts ESTIMATED as drafted tokens / K (nothing accepted, or no Accepted field)",
        }
        return tuple(f"{n} interval(s): {text[h]}" for h, n in self.how.items() if n)


def _tau_only(pool: _Pool, paths: list[str]) -> TauOnly:
    acc = sum(a for a, *_ in pool.tau_only)
    drafts = sum(a / (m - 1) for a, m, *_ in pool.tau_only if m > 1)
    _, _, file, line = pool.tau_only[0]
    tau = 1.0 + acc / drafts if drafts > 0 else 1.0
    note = f"{len(pool.tau_only)} interval(s) of Mean acceptance length (vLLM 0.8 logs no per-position rates)"
    return TauOnly(tau, None, drafts or None, file, line, "a vLLM 0.8 log", (note,), tuple(paths))


def read_logs(paths: list[str], texts: list[str]) -> Acceptance | TauOnly:
    """Pool every `SpecDecoding metrics` line of the logs, each interval weighted by its drafts."""
    pool = _Pool()
    for file, text in zip(paths, texts):
        for lineno, raw in lines(text):
            at = raw.find(LOG_MARK)
            if at >= 0:
                pool.add(log_fields(raw[at + len(LOG_MARK) :].strip()), file, lineno)
    if pool.per_pos is not None and pool.tau_only:
        _, _, file, line = pool.tau_only[0]
        raise InputError("has no per-position rates but other lines have: one vLLM version per read",
                         file=file, line=line, field=LOG_RATES)  # fmt: skip
    if pool.per_pos is None:
        if pool.tau_only:
            return _tau_only(pool, paths)
        raise InputError(f"no '{LOG_MARK}' line with drafted tokens: zero drafts", file=paths[0],
                         field="Drafted")  # fmt: skip
    return Acceptance(pool.drafts, pool.per_pos, tuple(paths), "log", pool.notes())
