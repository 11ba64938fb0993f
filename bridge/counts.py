"""The counts every vLLM acceptance reader returns: `Acceptance`, `TauOnly` and their one consistency check.

Role: the floor under `bridge.acceptance` and its readers (`bridge.read_*`), so the readers need not
import the dispatcher that calls them (no import circle).

May import: numpy, the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsched.io.errors import InputError


@dataclass(frozen=True)
class Acceptance:
    """Pooled acceptance counts: `drafts` D (float: some sources only give it to a rounding) and
    `per_pos: float64[K]`, a_i = drafts with at least i + 1 tokens accepted. `sources`: the files read;
    `kind`: the format; `notes`: provenance (what is exact, what is estimated); `measured`: False when the
    per-position counts are a curve fitted to τ alone (a τ-only source)."""

    drafts: float
    per_pos: np.ndarray
    sources: tuple[str, ...] = ()
    kind: str = ""
    notes: tuple[str, ...] = ()
    measured: bool = True

    @property
    def rates(self) -> np.ndarray:
        """float64[K]: vLLM's (unconditional) per-position acceptance rates a_i / D."""
        return self.per_pos / self.drafts

    @property
    def tau(self) -> float:
        """Mean acceptance length with every position verified: 1 + Σ a_i / D."""
        return float(1.0 + self.rates.sum())

    def conditional(self) -> np.ndarray:
        """float64[K]: c_1 = a_0 / D, c_i = a_{i−1} / a_{i−2} (0 where nothing reached position i − 1)."""
        prev = np.concatenate([[self.drafts], self.per_pos[:-1]])
        with np.errstate(invalid="ignore", divide="ignore"):
            c = np.where(prev > 0, self.per_pos / np.where(prev > 0, prev, 1.0), 0.0)
        return np.clip(c, 0.0, 1.0)


@dataclass(frozen=True)
class TauOnly:
    """A source with τ (mean acceptance length, bonus token included) but no per-position counts.
    `k`: draft length when the source gives it; `drafts`: the number of drafts when known."""

    tau: float
    k: int | None
    drafts: float | None
    file: str
    line: int | None
    kind: str
    notes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


def check_counts(
    drafts: float, per_pos: np.ndarray, file: str, line: int | None, drafts_field: str, pos_field
) -> None:
    """Zero drafts, a count above the previous position's (or above D): InputError naming the field."""
    if not drafts > 0:
        raise InputError(
            f"zero drafts ({drafts:g}): no speculation was measured", file=file, line=line, field=drafts_field
        )
    prev = drafts
    for i, a in enumerate(per_pos):
        if a < 0 or a > prev * (1 + 1e-9) + 1e-9:
            what = "the number of drafts" if i == 0 else f"position {i - 1}'s"
            raise InputError(
                f"rate {a / drafts:.4g} is above {what} ({prev / drafts:.4g}): vLLM's per-position "
                "rates never increase",
                file=file,
                line=line,
                field=pos_field(i),
            )
        prev = a
