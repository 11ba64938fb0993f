"""SLO strings: "ttft_p90<=2s,itl_p50<=25ms,itl_p99<=60ms" parsed into terms checked against a summary.

Role: the one definition of what "meets the SLO" and "SLO margin" mean in `specbed search`. A term is
`METRIC OP VALUE[UNIT]`:

- latency metrics `{ttft,tpot,itl,e2e,queue}_{mean,p50,p90,p99}` (the simulator's `*_s_*` summary keys),
  with `<=` (or `<`) and a time: `2s`, `250ms`, `800us`; a bare number is seconds;
- speeds `speed_mean`, `speed_p50` (per-user tokens/s, `per_user_tok_s_*`) with `>=` (or `>`), `50tok/s`
  or a bare number;
- `attainment` (`slo_attainment`, the fraction of requests meeting metrics.slo_ttft_s/slo_tpot_s) with
  `>=` and a fraction in (0, 1].

A term's margin is its relative slack: (bound − value) / bound for `<=`, (value − bound) / bound for `>=`;
a summary meets the SLO when every margin is ≥ 0, and its SLO margin is the smallest. A missing or NaN
metric fails the term (margin −inf).

May import: the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from specsched.io.errors import InputError

LATENCY = ("ttft", "tpot", "itl", "e2e", "queue")
STATS = ("mean", "p50", "p90", "p99")
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}
_TERM = re.compile(r"^\s*([a-z0-9_]+)\s*(<=|>=|<|>)\s*([0-9.eE+-]+)\s*([a-zµ/]*)\s*$")


@dataclass(frozen=True)
class Term:
    """One SLO term: `key` (summary key) `op` ("<=" or ">=") `bound` (seconds, tok/s or a fraction)."""

    name: str
    key: str
    op: str
    bound: float

    def margin(self, summary: dict) -> float:
        value = summary.get(self.key)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            return -math.inf
        if self.op == "<=":
            return (self.bound - value) / self.bound
        return (value - self.bound) / self.bound

    def text(self) -> str:
        if self.key.startswith(LATENCY):
            return f"{self.name}{self.op}{_seconds_text(self.bound)}"
        return f"{self.name}{self.op}{self.bound:g}"


@dataclass(frozen=True)
class SLO:
    terms: tuple[Term, ...]

    def margins(self, summary: dict) -> dict[str, float]:
        return {t.name: t.margin(summary) for t in self.terms}

    def margin(self, summary: dict) -> float:
        """The smallest term margin (≥ 0: the SLO is met)."""
        return min(self.margins(summary).values())

    def met(self, summary: dict) -> bool:
        return self.margin(summary) >= 0

    def worst(self, summary: dict) -> str:
        """The binding term and its value, e.g. "itl_p99 = 74.1 ms > 60 ms"."""
        term = min(self.terms, key=lambda t: t.margin(summary))
        value = summary.get(term.key)
        shown = _value_text(term, value)
        met = term.margin(summary) >= 0
        rel = ("≤" if met else ">") if term.op == "<=" else ("≥" if met else "<")
        return f"{term.name} = {shown} {rel} {_value_text(term, term.bound)}"

    def text(self) -> str:
        return ",".join(t.text() for t in self.terms)


def _seconds_text(v: float) -> str:
    return f"{v * 1e3:g}ms" if v < 1 else f"{v:g}s"


def _value_text(term: Term, value) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    if term.key.startswith(LATENCY):
        return f"{value * 1e3:.1f} ms"
    return f"{value:.3g}"


def _metric(name: str) -> tuple[str, str]:
    """(summary key, kind) of a metric name; InputError-free: returns ("", "") when unknown."""
    head, _, stat = name.rpartition("_")
    if head in LATENCY and stat in STATS:
        return f"{head}_s_{stat}", "time"
    if head == "speed" and stat in ("mean", "p50"):
        return f"per_user_tok_s_{stat}", "speed"
    if name == "attainment":
        return "slo_attainment", "fraction"
    return "", ""


def parse_slo(text: str, field: str = "--slo") -> SLO:
    """An `SLO` from its string; InputError naming the flag and the bad term."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("expected terms like 'ttft_p90<=2s,itl_p99<=60ms'", field=field)
    terms: list[Term] = []
    for raw in text.split(","):
        terms.append(_parse_term(raw, field))
    names = [t.name for t in terms]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise InputError(f"metric {dup!r} is bounded twice", field=field)
    return SLO(tuple(terms))


def _parse_term(raw: str, field: str) -> Term:
    m = _TERM.match(raw.strip().lower())
    if m is None:
        raise InputError(f"cannot read SLO term {raw.strip()!r} (expected METRIC<=VALUE[unit])", field=field)
    name, op, number, unit = m.groups()
    key, kind = _metric(name)
    if not key:
        known = [f"{m}_{{{','.join(STATS)}}}" for m in LATENCY] + ["speed_{mean,p50}", "attainment"]
        raise InputError(f"unknown SLO metric {name!r} (known: {', '.join(known)})", field=field)
    try:
        value = float(number)
    except ValueError:
        raise InputError(f"{name}: {number!r} is not a number", field=field) from None
    want = "<=" if kind == "time" else ">="
    op = {"<": "<=", ">": ">="}.get(op, op)
    if op != want:
        raise InputError(f"{name} takes an upper bound ({want}), not {op}", field=field)
    value *= _unit_scale(name, kind, unit, field)
    if not (math.isfinite(value) and value > 0) or (kind == "fraction" and value > 1):
        what = "a fraction in (0, 1]" if kind == "fraction" else "a positive finite value"
        raise InputError(f"{name}: expected {what}, got {number}{unit}", field=field)
    return Term(name, key, op, value)


def _unit_scale(name: str, kind: str, unit: str, field: str) -> float:
    if kind == "time":
        if unit == "":
            return 1.0
        if unit in TIME_UNITS:
            return TIME_UNITS[unit]
        raise InputError(f"{name}: unknown time unit {unit!r} (s, ms, us)", field=field)
    if kind == "speed" and unit in ("", "tok/s"):
        return 1.0
    if kind == "fraction" and unit == "":
        return 1.0
    raise InputError(f"{name}: unexpected unit {unit!r}", field=field)
