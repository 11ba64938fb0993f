"""The acceptance model's interface: what the server calls on it, as `typing.Protocol`s, and the shared chain.

Role: the seam between the serving model (`sim.server`, `sim.steps`) and the models of acceptance
(`sim.acceptance.AcceptanceModel`, the parametric one; `sim.empirical.EmpiricalModel`, measured rows; any
new one). Every model is an `AcceptanceSource`; one that can draw K steps at once in one pass (the
multi-step decode path) is also a `VectorModel` and says so with `vector_draws = True`. The server reads
`vector_draws` and `by_position` (declared attributes, never probed with hasattr).
Shapes: R running requests, γ draft positions, K steps.

May import: numpy, the standard library.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class AcceptanceSource(Protocol):
    """What every acceptance model offers the server.

    curves: float64[D, γ] population curves by domain (a young request's stated stale prior); report: the
    confidence report (ECE/AUC, summary.json); vector_draws: whether it is a `VectorModel`; by_position:
    whether `step` takes each request's `position` (tokens emitted so far).
    """

    curves: np.ndarray
    vector_draws: bool
    by_position: bool

    @property
    def report(self) -> dict: ...

    def request_latent(self, n: int, rng: np.random.Generator, domain_idx=None) -> np.ndarray:
        """float64[n]: each request's latent, drawn once at arrival."""
        ...

    def step(self, domain_idx: np.ndarray, latent: np.ndarray, rng_truth, rng_conf, **kw):
        """(truth, confidences) float64[R, γ] of one step (kw: `position` when `by_position`)."""
        ...

    def sample_accepted(self, true: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """int64[R] accepted drafts (0..ℓ_r) drawn from the truth only."""
        ...


@runtime_checkable
class VectorModel(AcceptanceSource, Protocol):
    """A model the simulator draws K pure-decode steps of at once (`sim.steps.plan_decode_run`), with
    exactly the numbers K single steps would draw."""

    def offsets(self, domain_idx: np.ndarray, latent: np.ndarray) -> np.ndarray:
        """float64[R, γ]: the fixed part of each request's draws, kept per slot by the server."""
        ...

    def draw_steps(self, domain_idx, latent, k: int, rng_truth, rng_conf, offsets=None):
        """(w, conf) float64[k, R, γ]: the truth as negative logits and the scheduler's confidences."""
        ...

    def accept_steps(self, w: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """int64[k, R] accepted drafts from `draw_steps`'s w and the verify lengths."""
        ...

    def unget_steps(self, keep: int, rng_truth, rng_conf) -> None:
        """Give back the last draw past its first `keep` steps."""
        ...


def sample_chain(
    true: np.ndarray, lengths: np.ndarray, rng: np.random.Generator, positions: np.ndarray | None = None
) -> np.ndarray:
    """Accepted drafts `int64[...]`: the first k with u_k >= true[..., k] (u uniform), capped at `lengths`.

    `true: float64[..., γ]` (R requests, or K steps × R requests: uniforms are drawn in that order, so K
    steps at once draw exactly what K one-step calls would); `lengths: int64[...]`.
    `positions`: np.arange(γ), passed by hot-path callers to save an allocation.
    """
    gamma = true.shape[-1]
    if gamma == 0:
        return np.zeros(true.shape[:-1], dtype=np.int64)
    if positions is None:
        positions = np.arange(gamma)
    stop = np.empty((*true.shape[:-1], gamma + 1), dtype=bool)
    head = stop[..., :gamma]
    np.greater_equal(rng.random(true.shape), true, out=head)
    head |= positions >= np.asarray(lengths)[..., None]
    stop[..., gamma] = True
    return np.argmax(stop, axis=-1).astype(np.int64, copy=False)
