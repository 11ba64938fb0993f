"""The table `specbed verify` prints: one row per checked property (engine.proof.suite and suite_engine).

May import: the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    prop: str
    cases: int
    ok: bool
    detail: str = ""


def format_table(rows: list[Row], seconds: float) -> str:
    width = max(len(r.prop) for r in rows)
    lines = [f"{'property':<{width}}  {'cases':>5}  result", "-" * (width + 30)]
    for r in rows:
        lines.append(f"{r.prop:<{width}}  {r.cases:>5}  {'PASS' if r.ok else 'FAIL'}  {r.detail}")
    failed = sum(not r.ok for r in rows)
    lines.append(f"{len(rows) - failed}/{len(rows)} properties hold ({seconds:.1f} s)")
    return "\n".join(lines)
