"""The population behind the parametric acceptance model: mean logits θ that reproduce a curve, and τ.

Role: the quadrature half of `sim.acceptance` (split out to keep that module small). For a request of
domain d at draft position k, c = σ(θ[d, k] + u + ε) with u ~ N(0, difficulty_sd²) per request and
ε ~ N(0, step_noise_sd²) per step; `solve_offsets` finds θ so that the population survival matches the
curve, `population_tau` integrates τ back (Gauss–Hermite over u and ε).

May import: numpy, the standard library.
"""

from __future__ import annotations

import numpy as np

CURVE_EPS = 1e-6  # curve values are clipped to [CURVE_EPS, 1 - CURVE_EPS] (finite logits)
GH_U = 24  # Gauss–Hermite nodes over the per-request latent
GH_E = 32  # ... and over the per-step noise
STEP_ROUNDS = 30  # at most this many fixed-point rounds of the "step" weighting (4 at the defaults)


def sigmoid(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z))


def gauss_nodes(n: int, sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (summing to 1) of N(0, sd²)."""
    if sd == 0:
        return np.zeros(1), np.ones(1)
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x * sd, w / w.sum()


def mean_accept(theta: np.ndarray, xu: np.ndarray, xe: np.ndarray, we: np.ndarray) -> np.ndarray:
    """E_ε σ(θ + u + ε) at latent nodes: `theta: [...]` -> `[..., U]`."""
    return sigmoid(theta[..., None, None] + (xu[:, None] + xe[None, :])) @ we


def latent_weights(theta: np.ndarray, xu: np.ndarray, wu: np.ndarray, xe, we, weighting: str) -> np.ndarray:
    """Population weights `[D, U]` of the latent nodes: N(0, sd²), or ∝ N(0, sd²)/τ_d(u) for "step"."""
    w = np.broadcast_to(wu, (theta.shape[0], wu.size))
    if weighting == "request" or theta.shape[1] == 0:
        return w
    w = w / (1.0 + np.cumprod(mean_accept(theta, xu, xe, we), axis=1).sum(axis=1))  # τ_d(u): [D, U]
    return w / w.sum(axis=1, keepdims=True)


def solve_offsets(
    curves: np.ndarray, difficulty_sd: float, step_noise_sd: float, weighting: str = "request"
) -> np.ndarray:
    """Mean logits θ `float64[D, γ]`: population survival E[Π_{i≤k} σ(θ_i + u + ε_i)] = Π_{i≤k} curves[:, i].

    weighting "request": u ~ N(0, sd²). "step": u weighted by 1/τ_d(u), the share of engine steps a request
    of latent u takes (fixed point, a few rounds).
    """
    c = np.clip(np.asarray(curves, dtype=np.float64), CURVE_EPS, 1.0 - CURVE_EPS)
    d, gamma = c.shape
    xu, wu = gauss_nodes(GH_U, difficulty_sd)
    xe, we = gauss_nodes(GH_E, step_noise_sd)
    target = np.cumprod(c, axis=1)
    theta = np.log(c / (1.0 - c))
    for _ in range(1 if weighting == "request" or difficulty_sd == 0 else STEP_ROUNDS):
        v = latent_weights(theta, xu, wu, xe, we, weighting) if weighting == "step" else wu[None, :]
        before = theta.copy()
        prev = np.ones((d, xu.size))  # Π_{i<k} g_i(u) per domain and latent node
        for k in range(gamma):
            lo, hi = np.full(d, -60.0), np.full(d, 60.0)
            x = theta[:, k].copy()
            for _ in range(40):  # Newton on a bracket, bisection when Newton leaves it
                s = sigmoid(x[:, None, None] + (xu[:, None] + xe[None, :]))  # [D, U, E]
                f = ((prev * (s @ we)) * v).sum(axis=1) - target[:, k]
                df = ((prev * ((s * (1.0 - s)) @ we)) * v).sum(axis=1)
                lo = np.where(f < 0, x, lo)
                hi = np.where(f < 0, hi, x)
                step = f / np.maximum(df, 1e-300)
                x_new = x - step
                x_new = np.where((x_new > lo) & (x_new < hi), x_new, 0.5 * (lo + hi))
                if np.all(np.abs(x_new - x) < 1e-10):
                    x = x_new
                    break
                x = x_new
            theta[:, k] = x
            prev = prev * mean_accept(x, xu, xe, we)
        if np.max(np.abs(theta - before), initial=0.0) < 1e-9:
            break
    return theta


def population_tau(
    theta: np.ndarray, difficulty_sd: float, step_noise_sd: float, weighting: str = "request"
) -> np.ndarray:
    """Model τ `float64[D]` with all γ verified, by quadrature: 1 + Σ_k E[Π_{i≤k} c_i] over the population."""
    xu, wu = gauss_nodes(GH_U, difficulty_sd)
    xe, we = gauss_nodes(GH_E, step_noise_sd)
    v = latent_weights(theta, xu, wu, xe, we, weighting)
    return 1.0 + (np.cumprod(mean_accept(theta, xu, xe, we), axis=1) * v[:, None, :]).sum(axis=(1, 2))
