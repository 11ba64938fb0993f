"""Bounded sums over simulated time (`TimeBins`) and a log-bucket histogram with exact moments.

Role: the fixed-size containers `sim.recorder` fills during a run; `bin_steps` adds a run of steps to the
bins exactly as the steps one by one would.

May import: numpy and the standard library.
"""

from __future__ import annotations

import math

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
            self._widen()
            i = int(t / self.width)
        if i >= self.used:
            self.used = i + 1
        return i

    def fits(self, t: float) -> bool:
        """Whether time t (seconds) falls in the bins without widening them."""
        return int(t / self.width) < self.max_bins

    def _widen(self) -> None:
        """Double the width: bin pairs merged into the first half."""
        half = self.max_bins // 2
        merged = self.data[0::2] + self.data[1::2]
        self.data[:half] = merged
        self.data[half:] = 0.0
        self.width *= 2.0

    @classmethod
    def merged(cls, parts: list[TimeBins]) -> TimeBins:
        """The sum of `parts` (same max_bins), each first widened to the widest one, added in list order
        (a fixed order, so the sum is the same whichever process filled each part)."""
        out = cls(parts[0].max_bins, max(p.width for p in parts))
        for p in parts:
            q = cls(p.max_bins, p.width)
            q.data[:], q.used = p.data, p.used
            while q.width < out.width:
                q._widen()
                q.used = (q.used + 1) // 2
            out.data += q.data
            out.used = max(out.used, q.used)
        return out

    def window_sum(self, column: int, t0: float, t1: float) -> float:
        """Σ of `column` over [t0, t1], partial bins counted pro rata (uniform within a bin)."""
        if t1 <= t0:
            return 0.0
        edges = np.arange(self.used + 1) * self.width
        lo = np.clip(edges[:-1], t0, t1)
        hi = np.clip(edges[1:], t0, t1)
        frac = (hi - lo) / self.width
        return float(np.dot(self.data[: self.used, column], frac))


class LogHistogram:
    """Weighted histogram of positive values (seconds) in log-spaced buckets, plus exact moments.

    Buckets: `per_decade` per factor of 10 over [lo, lo·10^decades); values outside are clamped to the
    end buckets (the exact moments still see them). With 400 per decade a bucket spans 0.58 %, so a
    quantile read off it (log-interpolated inside the bucket) is within ~0.6 % of the exact one.
    """

    def __init__(self, lo: float = 1e-7, decades: int = 12, per_decade: int = 400) -> None:
        self.lo = lo
        self.per_decade = per_decade
        self.counts = np.zeros(decades * per_decade, dtype=np.float64)
        self._scale = per_decade / math.log(10.0)
        self._log_lo = math.log(lo)
        self.weight = 0.0  # Σ w
        self.total = 0.0  # Σ w·x
        self.total_sq = 0.0  # Σ w·x²

    def add(self, value: float, weight: float = 1.0) -> None:
        """Count `value` (> 0) `weight` times."""
        i = int((math.log(value) - self._log_lo) * self._scale) if value > 0.0 else 0
        self.counts[min(max(i, 0), self.counts.size - 1)] += weight
        self.weight += weight
        self.total += weight * value
        self.total_sq += weight * value * value

    @classmethod
    def merged(cls, parts: list[LogHistogram]) -> LogHistogram:
        """The sum of `parts` (same buckets), added in list order."""
        out = cls()
        for p in parts:
            out.counts += p.counts
            out.weight += p.weight
            out.total += p.total
            out.total_sq += p.total_sq
        return out

    def mean(self) -> float:
        return self.total / self.weight if self.weight else math.nan

    def std(self) -> float:
        """Population standard deviation (numpy's default, as `vllm bench serve` reports it)."""
        if not self.weight:
            return math.nan
        m = self.mean()
        return math.sqrt(max(self.total_sq / self.weight - m * m, 0.0))

    def quantile(self, q: float) -> float:
        """The q-quantile (q in [0, 1]), log-interpolated inside its bucket; NaN when empty."""
        if not self.weight:
            return math.nan
        cum = np.cumsum(self.counts)
        target = q * cum[-1]
        i = int(np.searchsorted(cum, target, side="left"))
        i = min(i, self.counts.size - 1)
        below = cum[i] - self.counts[i]
        frac = (target - below) / self.counts[i] if self.counts[i] else 0.0
        return math.exp(self._log_lo + (i + min(max(frac, 0.0), 1.0)) / self._scale)


def bin_steps(bins: TimeBins, times, seconds, decode, verify, tokens) -> None:
    """The time-bin part of `Recorder.steps_run`: each bin's busy seconds added step by step (float sums in
    step order), the integer-valued columns at once."""
    data, width = bins.data, bins.width
    first, last = int(times[0] / width), int(times[-1] / width)
    if first == last:  # the usual case: the whole run inside one bin
        row = data[first]
        busy = float(row[BIN_BUSY])
        for s in seconds:
            busy += s
        row[BIN_BUSY] = busy
        row[BIN_STEPS] += len(seconds)
        row[BIN_DECODE] += decode * len(seconds)
        row[BIN_VERIFY] += sum(verify)
        row[BIN_TOKENS] += sum(tokens)
    else:
        starts = [int(t / width) for t in times[:-1]]
        for i, s in zip(starts, seconds):
            data[i, BIN_BUSY] += s
        # integer-valued columns: sums in any order are exact
        np.add.at(data[:, BIN_STEPS], starts, 1.0)
        np.add.at(data[:, BIN_DECODE], starts, float(decode))
        np.add.at(data[:, BIN_VERIFY], starts, verify)
        np.add.at(data[:, BIN_TOKENS], [int(t / width) for t in times[1:]], tokens)
    bins.used = max(bins.used, last + 1)
