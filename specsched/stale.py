"""Stale confidences: the ONE rule for what a scheduler may know of a request from earlier steps.

Role: the simulator and the engine both keep, per running request (by slot), its confidence rows of the
last `delay` decode steps, and hand a policy the row from exactly `delay` steps earlier. A request younger
than that has no such row: it gets a stated prior row instead (`prior`, float64[γ] per request, chosen by
the caller before any token of the request is drafted — the simulator passes its domain's population
curve, the engine its measured population curve or a constant). Both sides call this module, so "young"
means the same everywhere.

Why this keeps decoding lossless (the paper's Appendix A): verifying draft position j of request r is
exact as long as the decision to verify it is a function of information fixed before x_j was drafted. A
row from `delay ≥ 1` steps earlier was computed from tokens already emitted, and a prior is a constant;
neither depends on the current step's drafts. So a batch size, a draft depth or a verify budget chosen from
`lagged(...)` can never bias which tokens are accepted. `delay = 0` returns the current row: that is the
lookahead bias and is allowed only for negative controls (the caller must record first).

Layout: `rows[slot, age mod (delay + 1), :]` — a ring of delay + 1 rows per slot, where `age` is the
request's count of decode steps since admission (its current step). Recording at `age` never overwrites
the row from `age − delay` when delay ≥ 1.

May import: numpy, the standard library.
"""

from __future__ import annotations

import numpy as np


class StaleBuffer:
    """Per-slot ring of past confidence rows.

    slots: capacity (running-request slots); gamma: row width γ; delay: steps of staleness (≥ 0).
    Slot arguments are int64 index arrays (or slices) of the requests in the batch, `age` their decode
    steps since admission (int64[n], the step being planned), `prior` float64[n, γ] or float64[γ] or a
    scalar. Memory: slots · (delay + 1) · γ float64.
    """

    def __init__(self, slots: int, gamma: int, delay: int) -> None:
        if int(delay) != delay or delay < 0:
            raise ValueError(f"StaleBuffer: delay must be an integer ≥ 0, got {delay!r}")
        if int(slots) != slots or slots < 0 or int(gamma) != gamma or gamma < 0:
            raise ValueError(f"StaleBuffer: slots and gamma must be integers ≥ 0, got {slots!r}, {gamma!r}")
        self.delay = int(delay)
        self.gamma = int(gamma)
        self.rows = np.zeros((int(slots), self.delay + 1, self.gamma))

    def lagged(self, slots, age, prior) -> np.ndarray:
        """float64[n, γ]: each slot's row recorded at age − delay, or `prior` where age < delay.

        Call before recording this step's row; with delay = 0 call after (it is then the current row).
        Returns a fresh array (safe to modify).
        """
        age = np.asarray(age, dtype=np.int64)
        d = self.delay
        out = self.rows[slots, (age - d) % (d + 1)]
        young = age < d
        if young.any():
            p = np.asarray(prior, dtype=np.float64)
            out[young] = p[young] if p.ndim == 2 else p
        return out

    def record(self, slots, age, conf, *, depths=None, prior=None) -> None:
        """Keep `conf` float64[n, γ] as the rows of `slots` at decode step `age`.

        With `depths` (int64[n], draft-aware scheduling) only the drafted positions j < depth_r are known:
        the others hold `prior` (as in `lagged`), never a value nobody drafted — a real drafter has none, and
        a zero there would stop the request from ever drafting deeper again.
        """
        age = np.asarray(age, dtype=np.int64)
        if depths is not None and np.asarray(depths).min(initial=self.gamma) < self.gamma:
            drafted = np.arange(self.gamma) < np.asarray(depths)[:, None]
            p = np.broadcast_to(np.asarray(prior, dtype=np.float64), drafted.shape)
            conf = np.where(drafted, conf, p)
        self.rows[slots, age % (self.delay + 1)] = conf

    def exchange(self, slots, age, conf, prior) -> np.ndarray:
        """Record this step's rows, then return the lagged ones (what a verify-time policy is given)."""
        self.record(slots, age, conf)
        return self.lagged(slots, age, prior)

    def compact(self, keep: np.ndarray, n: int) -> None:
        """Slots 0..n−1 where `keep` (bool[n]) move down to 0..m−1, in order (requests left the batch)."""
        m = int(np.count_nonzero(keep))
        self.rows[:m] = self.rows[:n][keep]
