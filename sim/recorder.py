"""What the server records while it runs: per-request scalars, exact queue integrals, bounded time bins.

Role: the server's write-only sink. Memory is O(N) per-request scalars plus a fixed number of time bins;
nothing is kept per token or per step. `sim.metrics` turns a finished `Recorder` into the summary.

May import: numpy and the standard library.
"""

from __future__ import annotations

import numpy as np

#: columns of TimeBins.data
BIN_STEPS, BIN_TOKENS, BIN_DECODE, BIN_VERIFY, BIN_QUEUE_AREA, BIN_SYSTEM_AREA, BIN_BUSY = range(7)
BIN_COLUMNS = ("steps", "tokens", "decode_requests", "verify_tokens", "queue_area", "system_area", "busy_s")


class TimeBins:
    """Sums over simulated time in at most `max_bins` equal bins; the width doubles when time outgrows them.

    data: float64[max_bins, len(BIN_COLUMNS)]; bin i covers [i·width, (i+1)·width) seconds.
    """

    def __init__(self, max_bins: int, width: float = 1e-3) -> None:
        self.max_bins = max_bins
        self.width = width
        self.data = np.zeros((max_bins, len(BIN_COLUMNS)))
        self.used = 0  # bins up to the last one touched

    def index(self, t: float) -> int:
        """Bin of time t (seconds), widening (pairwise merging) until it fits."""
        i = int(t / self.width)
        while i >= self.max_bins:
            half = self.max_bins // 2
            merged = self.data[0::2] + self.data[1::2]
            self.data[:half] = merged
            self.data[half:] = 0.0
            self.width *= 2.0
            i = int(t / self.width)
        if i >= self.used:
            self.used = i + 1
        return i

    def window_sum(self, column: int, t0: float, t1: float) -> float:
        """Σ of `column` over [t0, t1], partial bins counted pro rata (uniform within a bin)."""
        if t1 <= t0:
            return 0.0
        edges = np.arange(self.used + 1) * self.width
        lo = np.clip(edges[:-1], t0, t1)
        hi = np.clip(edges[1:], t0, t1)
        frac = (hi - lo) / self.width
        return float(np.dot(self.data[: self.used, column], frac))


class Recorder:
    """Everything measured during one run.

    Per request (arrays of length N, indexed by request id; NaN/0 until set):
      arrival_s, admit_s (first admission), first_token_s, finish_s: seconds.
      generated: tokens emitted so far. decode_steps: speculative (decode) steps taken.
      accepted: accepted drafts summed over its decode steps. verify_tokens: Σ (1 + ℓ) over its decode steps.
      preemptions: times it was preempted. replica: where it ran (−1 before routing).
    Totals: steps, draft_s, verify_s, preemptions. Exact integrals ∫ queue length dt and ∫ requests in
    system dt (updated at every change, for Little's law) and `bins` for the time series.
    """

    def __init__(self, n: int, max_bins: int) -> None:
        self.n = n
        self.arrival_s = np.full(n, np.nan)
        self.admit_s = np.full(n, np.nan)
        self.first_token_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self.generated = np.zeros(n, dtype=np.int64)
        self.decode_steps = np.zeros(n, dtype=np.int64)
        self.accepted = np.zeros(n, dtype=np.int64)
        self.verify_tokens = np.zeros(n, dtype=np.int64)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.replica = np.full(n, -1, dtype=np.int64)
        self.bins = TimeBins(max_bins)
        self.steps = 0
        self.draft_s = 0.0
        self.verify_s = 0.0
        self.total_preemptions = 0
        self.completed = 0
        self.queue_len = 0
        self.system_len = 0
        self.queue_area = 0.0
        self.system_area = 0.0
        self._last_t = 0.0

    def _advance(self, now: float) -> None:
        """Add queue/system length × elapsed time since the last change (split over the bins it spans)."""
        last = self._last_t
        dt = now - last
        if dt <= 0.0:
            return
        q, s = self.queue_len, self.system_len
        self.queue_area += q * dt
        self.system_area += s * dt
        self._last_t = now
        if q == 0 and s == 0:
            return
        bins = self.bins
        hi = bins.index(now)  # first: it may widen the bins
        lo = int(last / bins.width)
        data = bins.data
        if lo == hi:
            data[hi, BIN_QUEUE_AREA] += q * dt
            data[hi, BIN_SYSTEM_AREA] += s * dt
            return
        for i in range(lo, hi + 1):
            overlap = min(now, (i + 1) * bins.width) - max(last, i * bins.width)
            data[i, BIN_QUEUE_AREA] += q * overlap
            data[i, BIN_SYSTEM_AREA] += s * overlap

    def arrived(self, rid: int, now: float, replica: int) -> None:
        self._advance(now)
        self.arrival_s[rid] = now
        self.replica[rid] = replica
        self.queue_len += 1
        self.system_len += 1

    def admitted(self, rid: int, now: float) -> None:
        self._advance(now)
        if self.admit_s[rid] != self.admit_s[rid]:  # NaN: first admission
            self.admit_s[rid] = now
        self.queue_len -= 1

    def preempted(self, rid: int, now: float) -> None:
        self._advance(now)
        self.preemptions[rid] += 1
        self.total_preemptions += 1
        self.queue_len += 1

    def finished(self, rids: np.ndarray, now: float) -> None:
        self._advance(now)
        self.finish_s[rids] = now
        self.completed += rids.size
        self.system_len -= rids.size

    def step(
        self, start: float, seconds: float, draft_s: float, decode: int, verify: int, tokens: int
    ) -> None:
        """One engine step of one replica: [start, start + seconds), `tokens` emitted at its end."""
        self.steps += 1
        self.draft_s += draft_s
        self.verify_s += seconds - draft_s
        data, bins = self.bins.data, self.bins
        row = data[bins.index(start)]
        row[BIN_STEPS] += 1.0
        row[BIN_DECODE] += decode
        row[BIN_VERIFY] += verify
        row[BIN_BUSY] += seconds
        data[bins.index(start + seconds), BIN_TOKENS] += tokens

    def close(self, now: float) -> None:
        self._advance(now)
