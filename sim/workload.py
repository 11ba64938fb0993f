"""Traffic generation: which requests arrive, when, how long they are, and which domain they belong to.

Role: turn a `WorkloadConfig` (and, for replay, a `traces.RequestTable`) into per-request numpy arrays,
drawn up front from explicit generators so the server never touches the arrival or length streams.
Request ids are row indices: for open-loop kinds they are in arrival order; for the closed loop they are
in issue order (a user issues request i after one of its earlier requests finishes, plus think time).

May import: numpy, the standard library, `sim.config`, `sim.curves`, `traces` (its synthetic generators
and transformations; arrivals start at t = 0 as `traces.synthetic` defines them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.config import WorkloadConfig
from sim.curves import DOMAINS
from traces import synthetic, transform


@dataclass(frozen=True)
class Workload:
    """N requests, indexed by request id.

    arrival_s: float64[N] (seconds, non-decreasing) for open-loop kinds; None for "closed" (arrivals are
        decided while the simulation runs), or there the earliest send times of a paced client
        (`sim.routing.ClosedLoop` not_before).
    input_tokens, output_tokens: int64[N], ≥ 1 (clipped to the configured maxima).
    domain: int64[N], an index into `sim.curves.DOMAINS`.
    think_s: float64[N] for "closed": the think time a user spends before issuing request i (unused for
        a user's first request, issued at t = 0); None otherwise.
    clipped: how many requests had a length clipped (0 → 1, or above the maximum).
    """

    arrival_s: np.ndarray | None
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    domain: np.ndarray
    think_s: np.ndarray | None
    clipped: int
    #: int64[N] session id of each request (trace replay with a session column; −1 = unknown), else None
    session: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.input_tokens.shape[0])


def _lengths(
    dist: str, mean: int, cv: float, n: int, rng: np.random.Generator, from_trace: np.ndarray | None
) -> np.ndarray:
    """int64[n] token counts (not yet clipped) from one of sim.config.LENGTH_DISTS."""
    if dist == "fixed":
        return synthetic.fixed_lengths(n, mean)
    if dist == "uniform":
        return synthetic.uniform_lengths(n, 1, 2 * mean - 1, rng)
    if dist == "exponential":
        return np.rint(rng.exponential(float(mean), size=n)).astype(np.int64)
    if dist == "lognormal":
        return synthetic.lognormal_lengths(n, mean, cv, rng, low=0)
    if from_trace is None:
        raise ValueError("length distribution 'trace' needs workload.trace")
    return from_trace.astype(np.int64)


def _domains(cfg: WorkloadConfig, n: int, rng: np.random.Generator, labels: np.ndarray | None) -> np.ndarray:
    """int64[n] domain indices: one fixed domain, the trace's labels (if all are known), or the mix."""
    if cfg.domain != "mix":
        return np.full(n, DOMAINS.index(cfg.domain), dtype=np.int64)
    if labels is not None and set(labels.tolist()) <= set(DOMAINS):
        lookup = {d: i for i, d in enumerate(DOMAINS)}
        return np.fromiter((lookup[v] for v in labels.tolist()), dtype=np.int64, count=n)
    shares = np.asarray(cfg.mix, dtype=np.float64)
    return rng.choice(len(DOMAINS), size=n, p=shares / shares.sum()).astype(np.int64)


def build_workload(cfg: WorkloadConfig, rngs: dict[str, np.random.Generator], table=None) -> Workload:
    """The requests of one run.

    rngs: generators "arrivals", "lengths", "domains", "think" (each used only here).
    table: the loaded `traces.RequestTable` when cfg.kind == "trace" or a length distribution is "trace".
    """
    if cfg.kind == "trace":
        if cfg.num_requests:
            table = transform.head(table, cfg.num_requests)
        table = transform.scale_rate(table, cfg.speedup)
        n = len(table)
        arrival = np.asarray(table.arrival_s, dtype=np.float64)
        inputs = np.asarray(table.input_tokens, dtype=np.int64)
        outputs = np.asarray(table.output_tokens, dtype=np.int64)
        labels = table.domain
        session = None if table.session_id is None else np.asarray(table.session_id, dtype=np.int64)
    else:
        n = cfg.num_requests
        if cfg.kind == "poisson":
            arrival = synthetic.poisson_arrivals(n, cfg.rate, rngs["arrivals"])
        elif cfg.kind == "gamma":
            arrival = synthetic.gamma_arrivals(n, cfg.rate, cfg.cv, rngs["arrivals"])
        else:
            arrival = None
        rng = rngs["lengths"]
        pick = None
        if "trace" in (cfg.input_dist, cfg.output_dist):
            pick = rng.integers(0, len(table), size=n)  # joint resampling keeps the trace's correlation
        inputs = _lengths(
            cfg.input_dist,
            cfg.input_tokens,
            cfg.input_cv,
            n,
            rng,
            None if pick is None else np.asarray(table.input_tokens)[pick],
        )
        outputs = _lengths(
            cfg.output_dist,
            cfg.output_tokens,
            cfg.output_cv,
            n,
            rng,
            None if pick is None else np.asarray(table.output_tokens)[pick],
        )
        labels = session = None
    clipped_in = (inputs < 1) | (inputs > cfg.max_input_tokens)
    clipped_out = (outputs < 1) | (outputs > cfg.max_output_tokens)
    inputs = np.clip(inputs, 1, cfg.max_input_tokens)
    outputs = np.clip(outputs, 1, cfg.max_output_tokens)
    domain = _domains(cfg, n, rngs["domains"], labels)
    think = None
    if cfg.kind == "closed":
        if cfg.think_s == 0:
            think = np.zeros(n)
        elif cfg.think_dist == "fixed":
            think = np.full(n, cfg.think_s)
        else:
            think = rngs["think"].exponential(cfg.think_s, size=n)
    return Workload(
        arrival_s=arrival,
        input_tokens=inputs,
        output_tokens=outputs,
        domain=domain,
        think_s=think,
        clipped=int(np.count_nonzero(clipped_in | clipped_out)),
        session=session,
    )
