"""Running one candidate at one fidelity, stopped early once its SLO is provably lost.

Role: the early stop (`Watch`) of `specbed search`'s cell model (`analysis.search.cellmodel.SearchModel`,
run by `analysis.runner.execute` on any backend). A job is a plain dict: {"sim": resolved config, "stop":
{"slo", "tol"} or None}; its summary is the simulator's (`analysis.model.scalar_summary`) plus `stopped`
(None, or why).

Early stop, every 1,024 engine steps (`sim.wiring.run_pool(watch=...)`), for open-loop traffic: the
run's measured requests are those arriving in its steady window [t0, t1] (`sim.metrics`); t1 is known
up front, t0 once ⌈warmup·N⌉ requests have finished. For each quantile term of the SLO over a per-request
latency (ttft, tpot, e2e, queue at p50/p90/p99) the watch counts the measured requests already certain to
exceed the bound·(1 + tol): a finished value over it, or a request still waiting whose wait so far is
(no first token after bound seconds: its TTFT is over; TPOT ≥ time since its first token / (output − 1)).
When those alone put the run's quantile over the bound (np.percentile's order statistic, counted against
the most requests the window can hold), no later step can bring it back: the run stops and says so. A
queue that diverges is stopped this way, by the requests it leaves waiting. tol is 0 at full length.
An ITL quantile term (every inter-token gap of the run, `sim.metrics`) is lost once the gaps already
counted above bound·(1 + tol) outnumber (1 − q) × the most gaps the run can still reach (those counted
plus one per output token still to come); watched only where no preemption can happen (its KV fits
max_num_seqs of the longest requests), since a preemption adds a gap.
Every colocated run also reports `peak_running` (`peak_running`: the most requests a replica held at
once, up to where it stopped), which tells the search when `server.max_num_seqs` never bound
(`analysis.search.siblings`).
A disaggregated run (`analysis.search.cellmodel`, `sim.disagg.run.simulate_disagg`) is watched over the
fleet: during its prefill stage on TTFT and E2E only, when metrics.warmup = 0 (the window then opens at
the first arrival; with a warm-up it opens at a fleet completion, which only the decode stage tells): a
request's first token after the hand-off comes no earlier than its prefill's, so the prefill pool's waits
are lower bounds of both; once more when the prefill stage ends, so a lost TTFT skips the decode stage;
and during its decode stage on every latency, over the fleet as it stands (`sim.disagg.run.FleetView`).

May import: numpy, the standard library, `sim.metrics` (lazily: the window's ranks).
"""

from __future__ import annotations

import math

import numpy as np

WATCHED = ("ttft", "tpot", "e2e", "queue", "itl")
QUANTILE = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


class StopRun(Exception):
    """Raised by the watch inside the event loop: the run's SLO is already lost (`reason`)."""

    def __init__(self, reason: str, now: float) -> None:
        super().__init__(reason, now)  # simpy re-raises a process's exception as type(e)(*e.args)
        self.reason, self.now = reason, now


class Watch:
    """watch(recorder, now): raise StopRun once a watched SLO term is provably lost (module docstring)."""

    def __init__(self, prep, slo, tol: float, heads: tuple[str, ...] = WATCHED) -> None:
        """`heads`: the latencies watched."""
        from sim.metrics import window_ranks  # the one steady window's ranks

        cfg, wl = prep.config, prep.workload
        n = len(wl)
        self.arrival = np.asarray(wl.arrival_s, dtype=np.float64)
        order = np.sort(self.arrival)
        self.k0, k1 = window_ranks(n, cfg.metrics.warmup, cfg.metrics.drain)
        self.t1 = float(order[min(k1, n) - 1])
        self.out = np.asarray(wl.output_tokens, dtype=np.float64)
        self.terms, self.gaps = [], []
        for term in slo.terms:
            head, _, stat = term.name.rpartition("_")
            if head in heads and stat in QUANTILE:
                bound = term.bound * (1.0 + tol)
                (self.gaps if head == "itl" else self.terms).append((term.name, head, QUANTILE[stat], bound))
        if self.gaps and not _never_preempts(prep):
            self.gaps = []  # a preemption adds a gap the bound below does not count
        self.prev = 0.0
        self.peak = -1  # peak_running when it stopped the run
        self.window = None  # (upper-bound mask of measured requests, mask of certainly measured ones)

    def __call__(self, rec, now: float) -> None:
        for name, _, q, bound in self.gaps:
            self._check_gaps(rec, now, name, q, bound)
        if not self.terms:
            return
        if self.window is None:
            if self.k0 > 0 and rec.completed < self.k0:
                self.prev = now
                return
            lo = self.prev if self.k0 > 0 else -math.inf  # t0 lies in (prev, now]
            hi = now if self.k0 > 0 else -math.inf
            if self.t1 <= hi:
                self.terms = []  # the window falls back to the whole run: nothing to prove early
                return
            a = self.arrival
            self.window = ((a >= lo) & (a <= self.t1), (a >= hi) & (a <= self.t1))
        for name, head, q, bound in self.terms:
            self._check(rec, now, name, head, q, bound)

    def _check(self, rec, now: float, name: str, head: str, q: float, bound: float) -> None:
        upper, sure = self.window
        low = self._lower(rec, now, head)
        if head == "tpot":
            upper, sure = upper & (self.out > 1), sure & (self.out > 1)
        m = int(upper.sum())
        if m == 0:
            return
        over = int(np.count_nonzero(sure & (low > bound)))
        need = m - math.floor(q * (m - 1))  # values over the bound that put the q-quantile over it
        if over >= need:
            self.peak = peak_running(rec, now)
            waiting = int(np.count_nonzero(sure & np.isnan(rec.first_token_s) & (low > bound)))
            why = f"; {waiting} still without a first token (queue diverging)" if waiting else ""
            raise StopRun(
                f"{name} lost: {over} of at most {m} measured requests already over {bound * 1e3:.0f} ms "
                f"at t = {now:.0f} s{why}",
                now,
            )

    def _check_gaps(self, rec, now: float, name: str, q: float, bound: float) -> None:
        """An ITL quantile (`sim.timebins.LogHistogram.quantile` over every gap of the run) is lost once
        the gaps already in buckets wholly above the bound outnumber (1 − q) × the most gaps the run can
        have: those counted plus one per token still to come (a decode step emits ≥ 1 token a request)."""
        parts = [part.itl for part in rec.parts]
        first = math.floor((math.log(bound) - parts[0]._log_lo) * parts[0]._scale) + 1
        over = sum(float(h.counts[first:].sum()) for h in parts)
        left = float(np.maximum(self.out - np.maximum(rec.generated, 1), 0).sum())
        most = sum(h.weight for h in parts) + left
        if over > (1.0 - q) * most:
            self.peak = peak_running(rec, now)
            raise StopRun(
                f"{name} lost: {over:.0f} of at most {most:.0f} inter-token gaps already over "
                f"{bound * 1e3:.0f} ms at t = {now:.0f} s",
                now,
            )

    def _lower(self, rec, now: float, head: str) -> np.ndarray:
        """Per request: a lower bound on its final `head` latency (seconds; −inf if not arrived yet)."""
        arr = self.arrival
        started = arr <= now
        with np.errstate(invalid="ignore", divide="ignore"):
            if head == "tpot":
                ft = rec.first_token_s
                end = np.where(np.isnan(rec.finish_s), now, rec.finish_s)
                low = np.where(np.isnan(ft), 0.0, (end - ft) / np.maximum(self.out - 1.0, 1.0))
            else:
                mark = {"ttft": rec.first_token_s, "e2e": rec.finish_s, "queue": rec.admit_s}[head]
                low = np.where(np.isnan(mark), now, mark) - arr
        return np.where(started, low, -np.inf)


def _never_preempts(prep) -> bool:
    """True when no replica can ever run out of KV: max_num_seqs requests of the longest prompt and
    output, each with its γ + 1 decode reservation, fit in server.kv_tokens (`sim.server` preempts only
    when the KV held plus the reservations would not)."""
    cfg, wl = prep.config, prep.workload
    longest = int(np.max(wl.input_tokens)) + int(np.max(wl.output_tokens)) + cfg.drafter.effective_gamma + 1
    return cfg.server.max_num_seqs * longest <= cfg.server.kv_tokens


def peak_running(rec, now: float = math.inf) -> int:
    """The most requests one replica held at once (admitted, not finished) up to `now` — a request
    admitted at the instant another finishes counts as overlapping it, so this is never below the
    engine's own count — or −1 when a preemption makes it unknown (a preempted request leaves and
    re-enters; only its first admission is recorded)."""
    if rec.preemptions.any():
        return -1
    peak = 0
    admit, finish = rec.admit_s, np.where(np.isnan(rec.finish_s), math.inf, rec.finish_s)
    for r in np.unique(rec.replica[rec.replica >= 0]).tolist():
        mine = (rec.replica == r) & ~np.isnan(admit) & (admit <= now)
        times = np.concatenate([admit[mine], finish[mine]])
        steps = np.concatenate([np.ones(int(mine.sum())), -np.ones(int(mine.sum()))])
        order = np.lexsort((-steps, times))  # at equal times, admissions first: an upper bound
        peak = max(peak, int(np.cumsum(steps[order]).max(initial=0)))
    return peak
