"""What the server records while it runs: per-request scalars, exact queue integrals, bounded time bins.

Role: the server's write-only sink. Memory is O(N) per-request scalars plus, per replica, a fixed number
of time bins and histogram buckets; nothing is kept per token or per step. Sums over time are kept per
replica and added in replica order at the end, so they are the same whether the replicas ran in one
process or in shards (`sim.shard`). `sim.metrics` turns a finished `Recorder`
into the summary.

May import: numpy, the standard library, `sim.timebins`, `specsched.stepcost` (PARTS).
"""

from __future__ import annotations

import math
from operator import add

import numpy as np

from sim.timebins import (  # noqa: F401  (BIN_* and the bins are read from here too)
    BIN_BUSY,
    BIN_COLUMNS,
    BIN_DECODE,
    BIN_QUEUE_AREA,
    BIN_STEPS,
    BIN_SYSTEM_AREA,
    BIN_TOKENS,
    BIN_VERIFY,
    LogHistogram,
    TimeBins,
    bin_steps,
)
from specsched.stepcost import PARTS


class Tally:
    """One replica's sums over time: steps, draft/verify seconds, preemptions, ITL, speculation counters,
    exact ∫ queue length dt and ∫ requests in system dt, and its `bins`.

    Kept per replica so that a run's totals do not depend on the order in which replicas' events
    interleave: a replica simulated alone (a shard of `sim.shard`) fills exactly the Tally it fills in
    the single-process run, and `Recorder.close` adds the Tallies in replica order.
    """

    def __init__(self, max_bins: int, gamma: int) -> None:
        self.bins = TimeBins(max_bins)
        self.itl = LogHistogram()
        self.drafts = 0
        self.accepted_hist = np.zeros(gamma + 1, dtype=np.int64)
        self.steps = 0
        self.draft_s = 0.0
        self.verify_s = 0.0
        self.bill_s = [0.0] * len(PARTS)  # Σ seconds by `specsched.stepcost.PARTS` over steps with a bill
        self.total_preemptions = 0
        self.queue_len = 0
        self.system_len = 0
        self.queue_area = 0.0
        self.system_area = 0.0
        self._last_t = 0.0

    def advance(self, now: float) -> None:
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


#: Tally fields added up by `Recorder.close` (ints exactly, floats left to right in replica order)
_SUMMED = ("drafts", "steps", "draft_s", "verify_s", "total_preemptions", "queue_area", "system_area")


#: Recorder's per-request arrays (what a shard sends back for its requests)
PER_REQUEST = (
    "arrival_s",
    "admit_s",
    "first_token_s",
    "finish_s",
    "generated",
    "decode_steps",
    "accepted",
    "verify_tokens",
    "preemptions",
    "replica",
)


class Recorder:
    """Everything measured during one run.

    Per request (arrays of length N, indexed by request id; NaN/0 until set):
      arrival_s, admit_s (first admission), first_token_s, finish_s: seconds.
      generated: tokens emitted so far. decode_steps: speculative (decode) steps taken.
      accepted: accepted drafts summed over its decode steps. verify_tokens: Σ (1 + ℓ) over its decode steps.
      preemptions: times it was preempted. replica: where it ran (−1 before routing).
    Per replica (`parts`, one `Tally` each, filled during the run): the sums over time. `close` adds them
    up in replica order into the run's totals, read afterwards: steps, draft_s, verify_s,
    total_preemptions, queue_area, system_area, bins, itl, drafts, accepted_hist.
    Inter-token latency (`itl`, a `LogHistogram` of seconds): every gap between two consecutive token
    emissions of one request, over the whole run. Steps of a replica run back to back, so a decoding
    request's gap is exactly the duration of the step it decodes in (weight: the step's decoding requests);
    a request preempted after its first token adds one gap, from its preemption (when it last emitted) to
    the end of its re-prefill.
    Speculation totals (whole run, vLLM's counters): drafts (request-steps verifying ≥ 1 draft) and
    `accepted_hist: int64[γ + 1]` (request-steps by accepted drafts; "accepted ≥ i + 1" is vLLM's
    per-position count of position i). Exact integrals ∫ queue length dt and ∫ requests in
    system dt (updated at every change, for Little's law) and `bins` for the time series.
    """

    def __init__(self, n: int, max_bins: int, gamma: int = 0, replicas: int = 1) -> None:
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
        self._resume_from = np.full(n, np.nan)  # last emission of a preempted request (for its ITL gap)
        self.completed = 0
        self.parts = [Tally(max_bins, gamma) for _ in range(replicas)]
        self.prefix_cache_stats: dict | None = None  # `sim.prefix_cache.PrefixCache.stats()` of the run

    def arrived(self, rid: int, now: float, replica: int) -> None:
        part = self.parts[replica]
        part.advance(now)
        self.arrival_s[rid] = now
        self.replica[rid] = replica
        part.queue_len += 1
        part.system_len += 1

    def admitted(self, rid: int, now: float, replica: int) -> None:
        part = self.parts[replica]
        part.advance(now)
        if self.admit_s[rid] != self.admit_s[rid]:  # NaN: first admission
            self.admit_s[rid] = now
        part.queue_len -= 1

    def preempted(self, rid: int, now: float, replica: int) -> None:
        part = self.parts[replica]
        part.advance(now)
        # A request that has emitted and is not already re-prefilling last emitted now (steps run back to
        # back, and it was in the step that just ended): its next token closes one inter-token gap.
        if not math.isnan(self.first_token_s[rid]) and math.isnan(self._resume_from[rid]):
            self._resume_from[rid] = now
        self.preemptions[rid] += 1
        part.total_preemptions += 1
        part.queue_len += 1

    def prefilled(self, rids: np.ndarray, now: float, replica: int) -> None:
        """Requests `rids` finished a prefill at `now` and emitted a token: their first (TTFT) or, after a
        preemption, the one closing the gap since they last emitted."""
        first = np.isnan(self.first_token_s[rids])
        self.first_token_s[rids[first]] = now
        again = rids[~first]
        for rid in again.tolist():  # rare: only requests preempted after their first token
            gap = now - self._resume_from[rid]
            if gap == gap:
                self.parts[replica].itl.add(gap)
            self._resume_from[rid] = np.nan

    def finished(self, rids: np.ndarray, now: float, replica: int) -> None:
        part = self.parts[replica]
        part.advance(now)
        self.finish_s[rids] = now
        self.completed += rids.size
        part.system_len -= rids.size

    def step(
        self,
        replica: int,
        start: float,
        seconds: float,
        draft_s: float,
        decode: int,
        verify: int,
        tokens: int,
        lengths: np.ndarray | None = None,
        accepted: np.ndarray | None = None,
        bill=None,
    ) -> None:
        """One engine step of replica `replica`: [start, start + seconds), `tokens` emitted at its end.

        lengths / accepted: int64[decode], the decoding requests' verified and accepted drafts (None: no
        speculation counters for this step); bill: its `specsched.stepcost.StepBill` (summed by part).
        """
        part = self.parts[replica]
        part.steps += 1
        if decode:
            part.itl.add(seconds, decode)
            if accepted is not None and part.accepted_hist.size > 1:
                part.drafts += int(np.count_nonzero(lengths))
                part.accepted_hist += np.bincount(accepted, minlength=part.accepted_hist.size)
        part.draft_s += draft_s
        part.verify_s += seconds - draft_s
        if bill is not None:  # part by part, in step order (map stops at the parts: bill ends with its sum)
            part.bill_s = list(map(add, part.bill_s, bill))
        data, bins = part.bins.data, part.bins
        row = data[bins.index(start)]
        row[BIN_STEPS] += 1.0
        row[BIN_DECODE] += decode
        row[BIN_VERIFY] += verify
        row[BIN_BUSY] += seconds
        data[bins.index(start + seconds), BIN_TOKENS] += tokens

    def steps_run(
        self,
        replica: int,
        times: list[float],
        seconds: list[float],
        draft_s: float,
        decode: int,
        verify: list[int],
        tokens: list[int],
        lengths: np.ndarray,
        accepted: np.ndarray,
        bills=None,
    ) -> None:
        """K back-to-back steps of replica `replica` at once, bit for bit as K calls of `step`: step k is
        [times[k], times[k + 1]) (K + 1 times, as simpy summed them) lasting seconds[k], decode > 0.

        verify, tokens: K ints; lengths, accepted: int64[K, decode]; bills: their
        `specsched.stepcost.RunBills` (summed by part, step by step). The caller checks `bins.fits(times[-1])`
        (no widening) and that no other step is recorded in between. Float sums keep step order (Python
        floats, the same IEEE operations); integer-valued ones (counts, bin columns but busy) are summed
        at once, which is exact.
        """
        part = self.parts[replica]
        k = len(seconds)
        part.steps += k
        itl = part.itl
        log, log_lo, scale, top = math.log, itl._log_lo, itl._scale, itl.counts.size - 1
        total, total_sq, draft_sum, verify_sum = itl.total, itl.total_sq, part.draft_s, part.verify_s
        buckets = []
        for s in seconds:
            buckets.append(min(max(int((log(s) - log_lo) * scale), 0), top) if s > 0.0 else 0)
            total += decode * s
            total_sq += decode * s * s
            draft_sum += draft_s
            verify_sum += s - draft_s
        itl.total, itl.total_sq, part.draft_s, part.verify_s = total, total_sq, draft_sum, verify_sum
        itl.weight += decode * k
        counts = itl.counts
        for b in buckets:
            counts[b] += decode
        if part.accepted_hist.size > 1:
            part.drafts += int(np.count_nonzero(lengths))
            part.accepted_hist += np.bincount(accepted.ravel(), minlength=part.accepted_hist.size)
        if bills is not None:
            _sum_bills(part.bill_s, bills.columns(), k)
        bin_steps(part.bins, times, seconds, decode, verify, tokens)

    def close(self, now: float) -> None:
        """End of the run at `now`: bring every replica's integrals up to it, then add the replicas up."""
        for part in self.parts:
            part.advance(now)
        self.merge()

    @classmethod
    def fleet(cls, prefill: Recorder, decode: Recorder, ready: np.ndarray) -> Recorder:
        """One Recorder of a fleet whose requests pass through the pool `prefill` and then, those with more
        to emit, the pool `decode`: the pools' tallies side by side (prefill replicas first) and summed;
        a request's arrival and first admission are its prefill pool's, its first token is when the decode
        side holds its KV (`ready`: float64[N] seconds), its finish, tokens and speculation counters are
        its decode pool's (its prefill pool's for one-token outputs), its preemptions both pools'."""
        rec = cls(prefill.n, 1, 0, 0)
        sent = ~np.isnan(decode.arrival_s)
        rec.parts = prefill.parts + decode.parts
        rec.arrival_s, rec.admit_s, rec.first_token_s = prefill.arrival_s, prefill.admit_s, ready
        rec.finish_s = np.where(sent, decode.finish_s, ready)
        rec.generated = np.where(sent, decode.generated, prefill.generated)
        rec.replica = np.where(sent, decode.replica + len(prefill.parts), prefill.replica)
        for name in ("decode_steps", "accepted", "verify_tokens", "preemptions"):
            setattr(rec, name, getattr(prefill, name) + getattr(decode, name))
        rec.completed = int(np.count_nonzero(~np.isnan(rec.finish_s)))
        rec.merge()
        return rec

    def merge(self) -> None:
        """The run's totals from `parts`, added in replica order (the module's order-independence)."""
        parts = self.parts
        for name in _SUMMED:
            total = type(getattr(parts[0], name))()
            for part in parts:
                total += getattr(part, name)
            setattr(self, name, total)
        self.bill_s = [0.0] * len(PARTS)
        for part in parts:
            self.bill_s = [a + b for a, b in zip(self.bill_s, part.bill_s)]
        self.accepted_hist = np.sum([p.accepted_hist for p in parts], axis=0)
        self.bins = TimeBins.merged([p.bins for p in parts])
        self.itl = LogHistogram.merged([p.itl for p in parts])


def _sum_bills(sums: list[float], columns, k: int) -> None:
    """Add K steps' parts to `sums` in step order, as K `Recorder.step` calls would (a column is one
    float repeated, a list of K floats, or None: zero)."""
    for i, col in enumerate(columns):
        if col is None:
            continue
        acc = sums[i]
        for v in [col] * k if isinstance(col, float) else col:
            acc += v
        sums[i] = acc
