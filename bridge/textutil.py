"""Text that users paste: cleaning, numbers as people print them, rounded rates reconciled with exact totals.

Role: the small shared layer under every `bridge` reader:
- `read_texts`: the ONE place the bridge reads its input files (UTF-8, undecodable bytes replaced), so a
  common input layer can replace it;
- `clean_line`: drops ANSI colour codes, a byte-order mark, NULs and trailing CR; `number`: '12,345',
  '1.2e5', '62.3%' → float (thousands separators only in groups of three);
- `reconcile`: rates printed to a few decimals, moved within their rounding interval (never further) so
  that their sum equals an exact total (accepted tokens / drafts) the source also printed.

May import: numpy, the standard library, `specsched` (errors, inputs).
"""

from __future__ import annotations

import math
import re

import numpy as np

from specsched.io import inputs
from specsched.io.errors import InputError

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:[,\u202f\u00a0_']\d{3})+(?:\.\d+)?$")


def read_texts(paths: list[str]) -> list[str]:
    """The text of every file (UTF-8; undecodable bytes replaced) through the common input layer: regular
    files only, capped (a FIFO or /dev/zero is refused before a byte is read)."""
    return [
        inputs.read_text(f, what="vLLM input", limit=inputs.LIMITS["log"], errors="replace") for f in paths
    ]


def clean_line(raw: str) -> str:
    """A pasted line without colour codes, BOM, NULs, trailing CR / whitespace."""
    line = _ANSI.sub("", raw).replace("\ufeff", "").replace("\x00", "")
    return line.rstrip()


def lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, cleaned line) for every line of `text` (LF, CRLF or CR endings)."""
    return [(i, clean_line(raw)) for i, raw in enumerate(text.splitlines(), start=1)]


def number(text: str) -> float | None:
    """'12,345' / '12 345' (narrow no-break space) / '1.5e3' / '62.3%' / '4.10' → float; None if not one."""
    t = text.strip().rstrip("%").strip()
    if _THOUSANDS.match(t):
        t = re.sub(r"[,\u202f\u00a0_']", "", t)
    try:
        value = float(t)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def field_number(text: str | None, file: str, line: int | None, field: str, *, minimum: float = 0.0) -> float:
    """The first token of a field's value as a finite number >= minimum, else an InputError naming it."""
    if text is None:
        raise InputError("missing field", file=file, line=line, field=field)
    token = text.split()[0] if text.split() else ""
    value = number(token)
    if value is None:
        raise InputError(f"not a number: {text.strip()!r}", file=file, line=line, field=field)
    if value < minimum:
        raise InputError(f"{value:g} is below {minimum:g}", file=file, line=line, field=field)
    return value


def reconcile(rates: np.ndarray, half_width: float, target_sum: float) -> np.ndarray | None:
    """`rates` (each printed rounded to ± half_width) moved within [r − h, r + h] ∩ [0, 1] to sum to
    `target_sum`, keeping their order (one shared fraction t of each rate's room: non-increasing rates stay
    non-increasing). None when no such rates exist (the source's figures contradict each other)."""
    rates = np.asarray(rates, dtype=np.float64)
    gap = target_sum - float(rates.sum())
    room = np.minimum(half_width, 1.0 - rates) if gap > 0 else np.minimum(half_width, rates)
    total = float(room.sum())
    if abs(gap) <= 1e-12:
        return rates.copy()
    if total <= 0 or abs(gap) > total * (1 + 1e-9) + 1e-12:
        return None
    return rates + np.sign(gap) * room * min(1.0, abs(gap) / total)
