"""Synthetic traffic: arrival processes, length distributions, and a traffic model fitted to a trace.

Role: the generators the simulator's poisson / gamma workloads use, and `fit(table)` →
`TrafficModel`, which reproduces a trace's arrival rate and burstiness (inter-arrival CV) and its
joint (input, output) length distribution at any rate — how a load sweep goes beyond the trace's own
rate. Every random draw comes from an explicit `numpy.random.Generator` passed in by the caller.
Imports: numpy, the standard library, traces.table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from traces.table import RequestTable

__all__ = [
    "TrafficModel",
    "fit",
    "fixed_lengths",
    "gamma_arrivals",
    "lognormal_lengths",
    "poisson_arrivals",
    "sample_lengths",
    "synthetic_table",
    "uniform_lengths",
]


def _count(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise ValueError(f"n must be a whole number ≥ 0, got {n!r}")
    return int(n)


def _rate(rate: float) -> float:
    r = float(rate)
    if not np.isfinite(r) or r <= 0:
        raise ValueError(f"rate must be a finite number > 0 (requests per second), got {rate!r}")
    return r


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (spawned from the run's SeedSequence)")
    return rng


def _from_gaps(gaps: np.ndarray) -> np.ndarray:
    """float64[n] arrival times, the first request at 0 s, from n − 1 gaps."""
    out = np.zeros(gaps.shape[0] + 1, dtype=np.float64)
    np.cumsum(gaps, out=out[1:])
    return out


def poisson_arrivals(n: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """float64[n] seconds: a Poisson process at `rate` req/s (exponential gaps), first arrival at 0."""
    n, r, rng = _count(n), _rate(rate), _check_rng(rng)
    return _from_gaps(rng.exponential(1.0 / r, size=n - 1)) if n else np.zeros(0)


def gamma_arrivals(n: int, rate: float, cv: float, rng: np.random.Generator) -> np.ndarray:
    """float64[n] seconds: a renewal process with Gamma gaps of mean 1/rate and coefficient of
    variation `cv` (cv = 1: Poisson; cv > 1: bursty; cv = 0: evenly spaced), first arrival at 0."""
    n, r, c = _count(n), _rate(rate), float(cv)
    if not np.isfinite(c) or c < 0:
        raise ValueError(f"cv must be a finite number ≥ 0, got {cv!r}")
    _check_rng(rng)
    if n == 0:
        return np.zeros(0)
    if c == 0:
        return np.arange(n, dtype=np.float64) / r
    shape = 1.0 / (c * c)
    return _from_gaps(rng.gamma(shape, 1.0 / (r * shape), size=n - 1))


def fixed_lengths(n: int, tokens: int) -> np.ndarray:
    """int64[n], every request `tokens` long."""
    if int(tokens) != tokens or tokens < 0:
        raise ValueError(f"tokens must be a whole number ≥ 0, got {tokens!r}")
    return np.full(_count(n), int(tokens), dtype=np.int64)


def uniform_lengths(n: int, low: int, high: int, rng: np.random.Generator) -> np.ndarray:
    """int64[n] uniform on the integers low..high inclusive."""
    if int(low) != low or int(high) != high or not 0 <= low <= high:
        raise ValueError(f"need whole numbers 0 ≤ low ≤ high, got low={low!r}, high={high!r}")
    return _check_rng(rng).integers(int(low), int(high), size=_count(n), endpoint=True, dtype=np.int64)


def lognormal_lengths(
    n: int, mean: float, cv: float, rng: np.random.Generator, *, low: int = 1, high: int | None = None
) -> np.ndarray:
    """int64[n] log-normal lengths with the given mean and CV (before rounding and clipping to
    [low, high]) — the usual shape of prompt and output lengths in chat traces."""
    m, c = float(mean), float(cv)
    if not (np.isfinite(m) and m > 0 and np.isfinite(c) and c >= 0):
        raise ValueError(f"need mean > 0 and cv ≥ 0, got mean={mean!r}, cv={cv!r}")
    sigma2 = np.log1p(c * c)
    x = _check_rng(rng).lognormal(np.log(m) - sigma2 / 2, np.sqrt(sigma2), size=_count(n))
    return np.clip(np.rint(x), low, np.inf if high is None else high).astype(np.int64)


def sample_lengths(n: int, values: Any, rng: np.random.Generator, *, probs: Any = None) -> np.ndarray:
    """int64[n] drawn from a discrete distribution: `values` (int[K]) with `probs` (float[K], summing to
    1; None = each value equally likely, i.e. the empirical distribution of a sample)."""
    v = np.asarray(values)
    if v.ndim != 1 or v.size == 0 or (v.dtype.kind == "f" and not np.all(v == np.floor(v))) or np.any(v < 0):
        raise ValueError("values must be a non-empty 1-D array of whole numbers ≥ 0")
    p = None
    if probs is not None:
        p = np.asarray(probs, dtype=np.float64)
        if p.shape != v.shape or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
            raise ValueError("probs must be ≥ 0, sum to 1 and match values in shape")
    return v.astype(np.int64)[_check_rng(rng).choice(v.size, size=_count(n), p=p)]


def synthetic_table(
    arrival_s: Any,
    input_tokens: Any,
    output_tokens: Any,
    *,
    domain: Any = None,
    hash_ids: Any = None,
    **meta: Any,
) -> RequestTable:
    """A RequestTable from generated columns (format "synthetic")."""
    return RequestTable(arrival_s, input_tokens, output_tokens, domain=domain, hash_ids=hash_ids,
                        meta={"format": "synthetic", **meta})  # fmt: skip


@dataclass(frozen=True, eq=False)
class TrafficModel:
    """Arrival process + joint length distribution fitted to a trace.

    rate_per_s: mean arrival rate; interarrival_cv: CV of the gaps (the Gamma renewal process with this
    mean and CV is the fitted arrival model). input_tokens / output_tokens: int64[M], the trace's
    (input, output) pairs, resampled jointly so their correlation is kept; domain: object[M] or None;
    hash_ids: M int64 arrays or None, resampled with their prompt (the trace's prefix sharing kept).
    """

    rate_per_s: float
    interarrival_cv: float
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    domain: np.ndarray | None = None
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    hash_ids: tuple[np.ndarray, ...] | None = None

    def __post_init__(self) -> None:
        _rate(self.rate_per_s)
        if not np.isfinite(self.interarrival_cv) or self.interarrival_cv < 0:
            raise ValueError(f"interarrival_cv must be finite and ≥ 0, got {self.interarrival_cv!r}")
        inp, out = np.asarray(self.input_tokens, np.int64), np.asarray(self.output_tokens, np.int64)
        if inp.ndim != 1 or inp.shape != out.shape or inp.size == 0:
            raise ValueError("input_tokens and output_tokens must be equal-length, non-empty 1-D arrays")
        object.__setattr__(self, "input_tokens", inp)
        object.__setattr__(self, "output_tokens", out)
        if self.domain is not None and np.shape(self.domain) != inp.shape:
            raise ValueError("domain must match input_tokens in shape")
        if self.hash_ids is not None and len(self.hash_ids) != inp.size:
            raise ValueError("hash_ids must hold one array per (input, output) pair")

    @property
    def gamma_shape(self) -> float:
        """Shape k of the fitted Gamma gaps (k = 1 / CV²; scale = 1 / (rate · k)); inf when CV = 0."""
        return 1.0 / self.interarrival_cv**2 if self.interarrival_cv > 0 else float("inf")

    def generate(
        self, n: int, rng: np.random.Generator, *, rate: float | None = None, cv: float | None = None
    ) -> RequestTable:
        """n requests: Gamma arrivals at `rate` (default: the trace's) with the fitted CV (or `cv`), and
        (input, output) pairs drawn jointly from the trace. Arrivals and lengths use separate streams
        spawned from `rng`, so changing the rate leaves the lengths unchanged."""
        n = _count(n)
        arrival_rng, length_rng = _check_rng(rng).spawn(2)
        r = self.rate_per_s if rate is None else _rate(rate)
        c = self.interarrival_cv if cv is None else float(cv)
        arrivals = gamma_arrivals(n, r, c, arrival_rng)
        idx = length_rng.integers(0, self.input_tokens.size, size=n)
        domain = None if self.domain is None else np.asarray(self.domain, dtype=object)[idx]
        hashes = None if self.hash_ids is None else tuple(self.hash_ids[i] for i in idx.tolist())
        return synthetic_table(
            arrivals,
            self.input_tokens[idx],
            self.output_tokens[idx],
            domain=domain,
            hash_ids=hashes,
            source=f"fit:{self.source}",
            rate_per_s=r,
            interarrival_cv=c,
        )

    def summary(self) -> dict[str, Any]:
        """JSON-ready description of the fitted model."""
        return {
            "source": self.source,
            "rate_per_s": self.rate_per_s,
            "interarrival_cv": self.interarrival_cv,
            "gamma_shape": self.gamma_shape,
            "pairs": int(self.input_tokens.size),
            "input_tokens_mean": float(self.input_tokens.mean()),
            "output_tokens_mean": float(self.output_tokens.mean()),
        }


def fit(table: RequestTable) -> TrafficModel:
    """Fit a `TrafficModel` to a trace (needs ≥ 3 requests spread over a positive duration).

    The arrival process is fitted by moments: rate = 1 / mean gap, CV = std / mean of the gaps. Moments
    rather than maximum likelihood because queueing delay depends on exactly these two (Kingman:
    wait ∝ (CV_a² + CV_s²) / 2), and a likelihood fit of a bursty trace would misstate its CV.
    """
    if len(table) < 3 or not table.duration_s > 0:
        raise ValueError(
            f"fit needs at least 3 requests over a positive duration, got {len(table)} requests "
            f"over {table.duration_s} s"
        )
    gaps = table.interarrival_s
    mean = float(gaps.mean())
    cv = float(gaps.std() / mean)
    return TrafficModel(
        1.0 / mean,
        cv,
        table.input_tokens.copy(),
        table.output_tokens.copy(),
        domain=None if table.domain is None else table.domain.copy(),
        source=str(table.meta.get("source", "")),
        meta={"requests": len(table)},
        hash_ids=table.hash_ids,
    )
