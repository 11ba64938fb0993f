"""Verify-length policies: the one scheduler that the simulator and the engine both call.

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
`dspark`, the hot one, takes exactly those decisions faster (`specsched.dspark`); 1 / step seconds is
cached per (table, R) on the Policy. `Policy.trusted` (and `trusted_many`, K steps' confidences at once)
skip the input checks for the simulator and the engine; the public call keeps them.

May import: numpy, the standard library, specsched.cost, specsched.dspark, specsched.io.errors.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from specsched.cost import CostTable
from specsched.dspark import _SMALL, _room, dspark, dspark_many, inv_step
from specsched.registry import Param, PolicySpec, get, load_contrib, names, register


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


def check_call(conf, cost, stale, max_batch_tokens) -> tuple[np.ndarray, np.ndarray | None, int | None]:
    """(conf, stale, budget) of a public policy call, checked (ValueError naming the argument)."""
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
    return conf, stale, budget


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
# Each built-in declared once (specsched.registry); contrib files add theirs when this module is imported.

_DELAY = Param("delay", 2, 0, doc="steps of staleness of the sizing confidences")
_K = Param("k", 1, 0, doc="drafts verified per request")
_THRESHOLD = Param("threshold", 0.5, 0, 1, integer=False, doc="confidence a draft must reach")
register(PolicySpec("ar", _ar, (), plans_depths=False, doc="no speculation: verify nothing"))
register(PolicySpec("fixed", _fixed, (_K,), doc="verify the first k drafts of every request"))
register(PolicySpec("threshold", _threshold, (_THRESHOLD,), doc="verify up to the first draft below a level"))
register(
    PolicySpec("dspark", dspark, (), adaptive_verification=True,
               doc="DSpark's Algorithm 1: admit by survival while Θ can still rise (specsched.dspark)")
)  # fmt: skip
register(
    PolicySpec("dspark_global", _dspark_global, (_DELAY,), uses_stale=True, adaptive_verification=True,
               doc="full search for the batch size on stale confidences, then the top current candidates")
)  # fmt: skip
register(
    PolicySpec("goodput", _goodput, (_DELAY,), uses_stale=True, adaptive_verification=True,
               doc="one draft length for the batch, maximizing expected goodput on stale means")
)  # fmt: skip
register(
    PolicySpec("lookahead", _lookahead, (), control=True, plans_depths=False,
               doc="NEGATIVE CONTROL: dspark_global sized from the current confidences (biased)")
)  # fmt: skip
load_contrib()

POLICIES: tuple[str, ...] = names()


def policy_params(name: str) -> tuple[str, ...]:
    """The parameter names policy `name` accepts (so callers can pass only those)."""
    return tuple(p.name for p in get(name).params)


def _int_param(policy: str, key: str, value, lo: int) -> int:
    """`value` as an integer ≥ lo, or ValueError naming the policy and parameter (one line)."""
    return int(Param(key, lo, lo).check(policy, value))


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
    # 1 / step seconds per (cost table, R), filled on first use: {table: {R: (float64[m], list)}}.
    _inv: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary, repr=False)

    def __call__(self, conf, cost: CostTable, *, stale=None, max_batch_tokens=None) -> np.ndarray:
        conf, stale, budget = check_call(conf, cost, stale, max_batch_tokens)
        return self.trusted(conf, cost, stale, budget)

    def trusted(
        self, conf: np.ndarray, cost: CostTable, stale: np.ndarray | None = None, budget: int | None = None
    ) -> np.ndarray:
        """The same decisions as calling the policy, without input checks: for the simulator and engine,
        whose conf is float64[R, γ] in [0, 1] by construction (stale likewise; budget a positive int or
        None). Wrong input here gives wrong answers, not errors: user input goes through `__call__`."""
        if conf.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        if self._fn is dspark:
            return dspark(conf, cost, stale, budget, inv=functools.partial(self._inv_step, cost))
        return self._fn(conf, cost, stale, budget, **self.params)

    def trusted_priced(
        self, conf: np.ndarray, cost: CostTable, draft_s: float, stale=None, budget: int | None = None
    ) -> np.ndarray:
        """`trusted(conf, cost.with_draft(draft_s), stale, budget)` for a draft price that changes every step
        (the adaptive simulator's, priced from the planned depths): `dspark` computes only the 1 / step
        seconds it reads and caches nothing (a cache per throw-away table only fills and misses)."""
        R, gamma = conf.shape
        if R == 0:
            return np.zeros(0, dtype=np.int64)
        if self._fn is dspark:
            inv = functools.partial(inv_step, cost, draft_s=draft_s, listed=R * gamma <= _SMALL)
            return dspark(conf, cost, stale, budget, inv=inv)
        return self._fn(conf, cost.with_draft(draft_s), stale, budget, **self.params)

    def trusted_many(self, conf: np.ndarray, cost: CostTable, budget: int | None = None) -> np.ndarray:
        """int64[K, R]: `trusted` on each of K steps' confidences conf[k] (float64[K, R, γ]), for policies
        that read no stale confidences (`uses_stale` false); `dspark` decides all K in one vectorized pass."""
        K, R = conf.shape[:2]
        if self._fn is dspark and R:
            return dspark_many(conf, budget, functools.partial(self._inv_step, cost))
        out = np.zeros((K, R), dtype=np.int64)
        for k in range(K):
            out[k] = self.trusted(conf[k], cost, None, budget)
        return out

    def _inv_step(self, cost: CostTable, R: int, n: int) -> tuple[np.ndarray, list[float]]:
        """`inv_step(cost, R, n)` cached per (table, R); regrown (to R·8 at least) when n outgrows it."""
        by_r = self._inv.get(cost)
        if by_r is None:
            by_r = self._inv[cost] = {}
        hit = by_r.get(R)
        if hit is None or hit[0].size <= n:
            hit = by_r[R] = inv_step(cost, R, max(n, 8 * R))
        return hit

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"Policy({self.name}{', ' if args else ''}{args})"


def make_base_policy(name: str, **params) -> Policy:
    """A configured verify-length policy by name (see POLICIES), with full drafting. Unknown names or
    parameters raise ValueError. `specsched.make_policy` (in `specsched.depth`) adds the draft mode."""
    spec = get(name)
    resolved = spec.resolve(params)
    delay = int(resolved.get("delay", 0))
    return Policy(name, MappingProxyType(resolved), spec.uses_stale, delay, spec.lossless(resolved), spec.fn)
