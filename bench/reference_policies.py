"""FROZEN REFERENCE: `specsched/policies.py` as of main 8d90704, before the fast path (issue 15).

Kept verbatim (only this paragraph added) so `bench specsched` can time today's implementation side by
side with the fast one and tests/specsched/test_fast_path.py can check that both take identical
decisions. Not used by any package; do not edit.

Original docstring: Verify-length policies: the one scheduler that the simulator and the engine both call.

A policy is a pure function

    plan(conf, cost, *, stale=None, max_batch_tokens=None) -> lengths

- conf: float64[R, γ]; conf[r, k] = estimated probability that draft position k+1 of request r is
  accepted given that positions 1..k were. Survival a[r, j] = Π_{i≤j} conf[r, i].
- cost: `specsched.CostTable`; a step over R requests and B tokens takes
  cost.step_seconds(B, R) = draft_seconds + request_seconds·R + latency(B), and sps = 1 / that.
- stale: float64[R, γ], the same requests' confidences from `delay` steps earlier, for policies that
  size the batch from lagged data (`Policy.uses_stale`).
- max_batch_tokens: cap on B = Σ_r (1 + ℓ_r) (None = no cap).
- lengths: int64[R], 0 ≤ ℓ_r ≤ γ. Request r verifies its first ℓ_r drafts.

Losslessness (the paper's Appendix A): whether position j of request r is verified may depend on anything
known before x_j is drafted — conf[r, :j] (which depends on x_{<j}), other requests, lagged data — but not
on conf[r, j:] (which depends on x_j itself). `dspark` (early stop), `threshold`, `fixed`, `ar` and
`dspark_global`/`goodput` with stale confidences satisfy this; `lookahead` does not and exists only as a
negative control.

Every policy is vectorized over candidates: one stable sort of the R·γ survival values, then prefix sums.
Candidate order: survival descending; ties go to the lower position j, then the lower request r (so a
request's positions are always admitted in order, and the order never depends on anything but values).

May import: numpy, the standard library, specsched.cost, specsched.io.errors.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from specsched.cost import CostTable


class LosslessnessWarning(UserWarning):
    """A policy was called in a way that can change the target model's output distribution."""


# -- input checks ------------------------------------------------------------------------------------------


def check_conf(conf, name: str = "conf") -> np.ndarray:
    """float64[R, γ] view of `conf`, or ValueError naming `name` and the offending value."""
    arr = np.asarray(conf, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array [R, γ], got ndim={arr.ndim} shape={arr.shape}")
    # min/max propagate NaN, so one pair of reductions screens every bad value on the hot path.
    if arr.size and not (arr.min() >= 0.0 and arr.max() <= 1.0):
        bad = np.isnan(arr)
        if bad.any():
            r, k = np.argwhere(bad)[0]
            raise ValueError(f"{name}: NaN at [{r}, {k}]")
        r, k = np.argwhere((arr < 0.0) | (arr > 1.0))[0]
        raise ValueError(f"{name}: value {float(arr[r, k])!r} at [{r}, {k}] is outside [0, 1]")
    return arr


def _check_budget(max_batch_tokens) -> int | None:
    if max_batch_tokens is None:
        return None
    if type(max_batch_tokens) is int and max_batch_tokens >= 1:
        return max_batch_tokens
    if isinstance(max_batch_tokens, bool) or not float(max_batch_tokens).is_integer() or max_batch_tokens < 1:
        raise ValueError(f"max_batch_tokens: must be a positive integer or None, got {max_batch_tokens!r}")
    return int(max_batch_tokens)


# -- shared building blocks ----------------------------------------------------------------------------------


def _ranked(conf: np.ndarray, *, keep_zero: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Candidates best first: (request index int64[n], survival float64[n]).

    Zero-survival candidates are dropped unless `keep_zero` (the global search keeps them: on a jagged
    profile a bigger batch can be faster, and the search is defined over every allocation).
    """
    R, gamma = conf.shape
    # Position-major layout (index = j·R + r), so a stable sort breaks ties by j, then r. `+= 0.0` turns
    # −0.0 into 0.0, after which the IEEE bit patterns of these non-negative floats order exactly like
    # their values: a stable integer sort on −bits is the fastest exact descending sort.
    surv = conf.T.copy()  # always a copy (the accumulate below is in place), C-ordered [γ, R]
    np.multiply.accumulate(surv, axis=0, out=surv)
    surv += 0.0
    flat = surv.ravel()
    order = np.argsort(-flat.view(np.int64), kind="stable")
    a = flat[order]
    n = a.size if keep_zero else int(np.count_nonzero(a))
    return order[:n] % R, a[:n]


def _room(R: int, n: int, budget: int | None) -> int:
    """How many of n candidates fit under the token budget (R anchor tokens are always verified)."""
    return n if budget is None else max(0, min(n, budget - R))


def _theta(R: int, a: np.ndarray, cost: CostTable) -> np.ndarray:
    """float64[n+1]: Θ = τ · sps(B) after admitting the first 0..n candidates.

    Summed left to right from R and multiplied by sps, exactly as Algorithm 1 accumulates it, so that
    the vectorized policy takes the same decisions as the one-at-a-time loop down to the last ulp.
    """
    tau = np.empty(a.size + 1)
    tau[0] = R
    tau[1:] = a
    np.cumsum(tau, out=tau)
    fixed = cost.draft_seconds + cost.request_seconds * R
    return tau * (1.0 / (fixed + cost.latency_range(R, R + a.size)))


def _lengths(req: np.ndarray, n: int, R: int) -> np.ndarray:
    return np.bincount(req[:n], minlength=R).astype(np.int64)


def _trim(lengths: np.ndarray, budget: int | None) -> np.ndarray:
    """Cut lengths to the budget, deepest positions first, evenly across requests (value-blind)."""
    R = lengths.size
    if budget is None or R + int(lengths.sum()) <= budget:
        return lengths
    room = max(0, budget - R)
    gamma = int(lengths.max())
    wanted = np.arange(gamma)[:, None] < lengths[None, :]  # [γ, R], position-major
    keep = wanted & (np.cumsum(wanted.ravel()).reshape(wanted.shape) <= room)
    return keep.sum(axis=0).astype(np.int64)


# -- the policies ------------------------------------------------------------------------------------------


def _ar(conf, cost, stale, budget):
    return np.zeros(conf.shape[0], dtype=np.int64)


def _fixed(conf, cost, stale, budget, *, k):
    R, gamma = conf.shape
    return _trim(np.full(R, min(k, gamma), dtype=np.int64), budget)


def _threshold(conf, cost, stale, budget, *, threshold):
    R, gamma = conf.shape
    passed = np.concatenate([conf >= threshold, np.zeros((R, 1), dtype=bool)], axis=1)
    return _trim(np.argmin(passed, axis=1).astype(np.int64), budget)


def _dspark(conf, cost, stale, budget):
    """Algorithm 1: greedy admission by survival, stopping at the first admission that does not raise Θ."""
    R = conf.shape[0]
    req, a = _ranked(conf)
    n = _room(R, a.size, budget)
    theta = _theta(R, a[:n], cost)
    rises = theta[1:] > theta[:-1]
    admitted = n if rises.all() else int(np.argmin(rises))
    return _lengths(req, admitted, R)


def _global(conf, cost, sizing, budget):
    """Capacity T by a full search over every B on `sizing`; then the top-T current candidates."""
    R = conf.shape[0]
    _, a_sizing = _ranked(sizing, keep_zero=True)
    n = _room(R, a_sizing.size, budget)
    capacity = int(np.argmax(_theta(R, a_sizing[:n], cost)))  # first maximum: the smaller batch on ties
    req, a = _ranked(conf, keep_zero=True)
    return _lengths(req, min(capacity, a.size), R)


def _warn_current(name: str) -> None:
    warnings.warn(
        f"policy '{name}' called with stale=None sizes the batch from current confidences: "
        "NOT lossless (pass the confidences from `delay` steps earlier as stale=)",
        LosslessnessWarning,
        stacklevel=4,
    )


def _dspark_global(conf, cost, stale, budget, *, delay):
    if stale is None:
        _warn_current("dspark_global")
        stale = conf
    return _global(conf, cost, stale, budget)


def _lookahead(conf, cost, stale, budget):
    return _global(conf, cost, conf, budget)


def _goodput(conf, cost, stale, budget, *, delay):
    """One draft length k for the whole batch maximizing Σ_r E[tokens_r(k)] · sps(R·(1+k))."""
    R, gamma = conf.shape
    if stale is None:
        _warn_current("goodput")
        stale = conf
    if R == 0 or gamma == 0:
        return np.zeros(R, dtype=np.int64)
    alpha = stale.mean(axis=1)
    kmax = gamma if budget is None else max(0, min(gamma, budget // R - 1))
    # E_r(k) = 1 + α + … + α^k under i.i.d. acceptance at the request's mean rate.
    expected = np.cumsum(alpha[:, None] ** np.arange(kmax + 1)[None, :], axis=1).sum(axis=0)
    sizes = R * (1 + np.arange(kmax + 1))
    theta = expected / cost.step_seconds(sizes, R)
    return np.full(R, int(np.argmax(theta)), dtype=np.int64)


# -- registry ----------------------------------------------------------------------------------------------


def _int_param(policy: str, key: str, value, lo: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer, float))
        or not float(value).is_integer()
    ):
        raise ValueError(f"policy '{policy}': parameter {key} must be an integer, got {value!r}")
    if value < lo:
        raise ValueError(f"policy '{policy}': parameter {key} must be ≥ {lo}, got {value!r}")
    return int(value)


def _prob_param(policy: str, key: str, value, lo: int = 0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"policy '{policy}': parameter {key} must be a number, got {value!r}")
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"policy '{policy}': parameter {key} must be in [0, 1], got {value!r}")
    return float(value)


# name -> (function, {param: (default, validator)}, uses_stale)
_REGISTRY: dict[str, tuple[Callable, dict[str, tuple[object, Callable]], bool]] = {
    "ar": (_ar, {}, False),
    "fixed": (_fixed, {"k": (1, lambda p, k, v: _int_param(p, k, v, 0))}, False),
    "threshold": (_threshold, {"threshold": (0.5, _prob_param)}, False),
    "dspark": (_dspark, {}, False),
    "dspark_global": (_dspark_global, {"delay": (2, lambda p, k, v: _int_param(p, k, v, 0))}, True),
    "goodput": (_goodput, {"delay": (2, lambda p, k, v: _int_param(p, k, v, 0))}, True),
    "lookahead": (_lookahead, {}, False),
}

POLICIES: tuple[str, ...] = tuple(_REGISTRY)


def policy_params(name: str) -> tuple[str, ...]:
    """The parameter names policy `name` accepts (so callers can pass only those)."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
    return tuple(_REGISTRY[name][1])


@dataclass(frozen=True, eq=False)
class Policy:
    """A configured policy: call it as `policy(conf, cost, *, stale=None, max_batch_tokens=None)`.

    Attributes: name, params (read-only mapping), uses_stale (the caller should pass the confidences from
    `delay` steps earlier as `stale`), delay (0 when unused), lossless (whether, called as intended, the
    policy leaves the target's output distribution unchanged).
    """

    name: str
    params: Mapping[str, object]
    uses_stale: bool
    delay: int
    lossless: bool
    _fn: Callable

    def __call__(self, conf, cost: CostTable, *, stale=None, max_batch_tokens=None) -> np.ndarray:
        conf = check_conf(conf, "conf")
        if stale is not None:
            stale = check_conf(stale, "stale")
            if stale.shape != conf.shape:
                raise ValueError(
                    f"stale: shape {stale.shape} does not match conf {conf.shape} "
                    "(one row per request, γ columns)"
                )
        budget = _check_budget(max_batch_tokens)
        if not isinstance(cost, CostTable):
            raise ValueError(f"cost: expected a specsched.CostTable, got {type(cost).__name__}")
        if conf.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        return self._fn(conf, cost, stale, budget, **self.params)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"Policy({self.name}{', ' if args else ''}{args})"


def make_policy(name: str, **params) -> Policy:
    """A configured policy by name (see POLICIES). Unknown names or parameters raise ValueError."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
    fn, spec, uses_stale = _REGISTRY[name]
    unknown = sorted(set(params) - set(spec))
    if unknown:
        accepted = ", ".join(spec) or "none"
        raise ValueError(f"policy '{name}': unknown parameter {unknown[0]!r} (accepted: {accepted})")
    resolved = {key: check(name, key, params.get(key, default)) for key, (default, check) in spec.items()}
    delay = int(resolved.get("delay", 0))
    lossless = name != "lookahead" and (not uses_stale or delay >= 1)
    return Policy(name, MappingProxyType(resolved), uses_stale, delay, lossless, fn)
