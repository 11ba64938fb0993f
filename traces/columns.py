"""The types a trace reader fills: which columns hold what (`Spec`), the columns as read (`Raw`), time units.

Role: shared by `traces.formats` (CSV and JSON lines) and `traces._parquet` (Parquet), so neither imports
the other's module for them.

May import: numpy, the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: units of the arrival column per second (times are divided by it, which is exact for 1 ms = 1e-3 s
#: where multiplying by 1e-3 is not); "datetime" = ISO-like wall-clock text.
TIME_UNITS: dict[str, float | None] = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9, "datetime": None}


@dataclass(frozen=True)
class Spec:
    """Which column (CSV header name or JSON key, matched case-insensitively) holds what."""

    name: str
    arrival: str
    input: str
    output: str
    time_unit: str = "s"
    domain: str | None = None
    model: str | None = None
    session: str | None = None
    session_numeric: bool = False  # False: text ids (UUIDs) numbered in order of first appearance
    hash_ids: str | None = None
    json: bool = False  # JSON lines rather than CSV
    named: frozenset[str] = frozenset()  # optional roles the user's mapping names: their column must exist

    @property
    def required(self) -> tuple[str, str, str]:
        return (self.arrival, self.input, self.output)


@dataclass
class Raw:
    """Columns as read, in file order. `t` is int64 ns since the epoch if `t_is_ns`, else float64 s."""

    spec: Spec
    t: np.ndarray
    t_is_ns: bool
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    domain: np.ndarray | None = None
    model: np.ndarray | None = None
    session_id: np.ndarray | None = None
    hash_ids: list[np.ndarray] | None = None
