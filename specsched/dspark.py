"""DSpark's Algorithm 1 at its numpy floor: the kernels behind `make_policy("dspark")`.

Definition (specsched.policies): candidates (r, j) with survival a[r, j] = Π_{i≤j} conf[r, i] > 0, ordered
by survival descending, ties by position j then request r; admitted greedily while Θ(B) = τ · sps(B)
rises (τ summed left to right from R). These kernels take exactly those decisions, faster:
- survival values are sorted as floats (no argsort); the (j, r) tie-break is settled only where a tie
  straddles the cut (`_cut`): every row of survival is non-increasing, so "above the cut" is a prefix;
- below R·γ = `_SMALL` a pure-Python loop (the same IEEE operations in the same order);
- `dspark_many` decides K independent steps (same R, same table) in one vectorized pass;
- 1 / step seconds comes from `inv(R, n)`, cached per (table, R) by the Policy.
tests/specsched/test_fast_path.py checks identical decisions against the frozen pre-fast-path copy in
bench/reference_policies.py.

May import: numpy, the standard library, specsched.cost.
"""

from __future__ import annotations

import functools

import numpy as np

from specsched.cost import CostTable

#: `dspark` runs its pure-Python loop at R·γ up to this: below it numpy's fixed per-call overhead (~8 µs a
#: call on the 2-core dev machine) costs more than the loop; measured crossover R·γ ≈ 35 at γ = 7.
_SMALL = 32


def dspark(conf, cost, stale, budget, *, inv=None):
    """Algorithm 1: greedy admission by survival, stopping at the first admission that does not raise Θ.

    `inv(R, n)`: 1 / step seconds for B = R..R+n (float64[≥ n+1], and a list of the same floats), cached
    per (table, R) by the caller; None computes it. Small R·γ runs a pure-Python loop (numpy's per-call
    overhead dominates there); both paths take exactly the decisions of the stable-sort definition.
    """
    R, gamma = conf.shape
    if inv is None:
        inv = functools.partial(inv_step, cost)
    if R * gamma <= _SMALL:
        return _small(conf, R, budget, inv)
    surv = np.multiply.accumulate(conf, axis=1)  # [R, γ], rows non-increasing (conf ≤ 1)
    a = np.sort(surv, axis=None)[::-1]  # survival descending; the tie-break is settled below
    n = _room(R, int(np.count_nonzero(a)), budget)
    if n == 0:
        return np.zeros(R, dtype=np.int64)
    tau = np.empty(n + 1)
    tau[0] = R
    tau[1:] = a[:n]
    np.cumsum(tau, out=tau)  # left to right, as Algorithm 1 accumulates it
    tau *= inv(R, n)[0][: n + 1]
    rises = tau[1:] > tau[:-1]
    first = int(rises.argmin())  # the first admission that does not raise Θ (0 if all do)
    admitted = first if not rises[first] else n
    if admitted == 0:
        return np.zeros(R, dtype=np.int64)
    return _cut(surv, a[admitted - 1], admitted)


def _cut(surv: np.ndarray, v: float, admitted: int) -> np.ndarray:
    """int64[R]: the first `admitted` candidates of the (survival desc, j, r) order, whose last has survival
    v > 0: every candidate above v, and the candidates equal to v in (j, r) order until the count is met."""
    ge = surv >= v  # a prefix of every row: rows are non-increasing
    lengths = np.add.reduce(ge, axis=1, dtype=np.int64)
    excess = int(lengths.sum()) - admitted
    if excess:  # a tie straddles the cut: drop the last `excess` equal ones in position-major order
        R = surv.shape[0]
        tied = np.flatnonzero((surv == v).T)  # index j·R + r, ascending = (j, r) order
        np.subtract.at(lengths, tied[-excess:] % R, 1)
    return lengths


def _small(conf: np.ndarray, R: int, budget: int | None, inv) -> np.ndarray:
    """`dspark` for small R·γ in plain Python floats (the same IEEE operations in the same order)."""
    cands = []
    for r, row in enumerate(conf.tolist()):
        a = 1.0
        for j, c in enumerate(row):
            a = c if j == 0 else a * c
            if not a > 0.0:
                break  # survival only falls: the rest of the row is zero as well
            cands.append((-a, j, r))
    cands.sort()
    n = _room(R, len(cands), budget)
    lengths = [0] * R
    if n:
        inv_list = inv(R, n)[1]
        tau = float(R)
        best = tau * inv_list[0]
        for k in range(n):
            neg_a, j, r = cands[k]
            tau -= neg_a
            theta = tau * inv_list[k + 1]
            if not theta > best:
                break
            best = theta
            lengths[r] = j + 1
    return np.array(lengths, dtype=np.int64)


def inv_step(
    cost: CostTable, R: int, n: int, *, draft_s: float | None = None, listed: bool = True
) -> tuple[np.ndarray, list[float] | None]:
    """(float64[n+1], the same as a list, or None unless `listed`): 1 / step seconds for B = R..R+n, as the
    reference `_theta` computes it; draft_s replaces the table's draft_seconds (as `cost.with_draft`)."""
    fixed = (cost.draft_seconds if draft_s is None else draft_s) + cost.request_seconds * R
    inv = 1.0 / (fixed + cost.latency_range(R, R + n))
    return inv, (inv.tolist() if listed else None)


def dspark_many(conf: np.ndarray, budget: int | None, inv) -> np.ndarray:
    """int64[K, R]: `dspark` on each conf[k] of float64[K, R, γ] (R ≥ 1), all K in one vectorized pass."""
    K, R, gamma = conf.shape
    surv = np.multiply.accumulate(conf, axis=2)
    a = np.sort(surv.reshape(K, R * gamma), axis=1)[:, ::-1]  # survival descending
    N = R * gamma
    room = N if budget is None else max(0, min(N, budget - R))
    n = None  # None: every row has `room` candidates (no zero survival, the usual case: no per-row mask)
    if not np.logical_and.reduce(a[:, -1]):
        n = np.minimum(np.count_nonzero(a, axis=1), room)
        room = int(n.max())
    m = room
    if m == 0:
        return np.zeros((K, R), dtype=np.int64)
    # Θ after admitting 0..m candidates, then −inf past each row's own n (and in a last column for all),
    # so the first non-rise of a row is its admission count.
    theta = np.empty((K, m + 2))
    theta[:, 0] = R
    theta[:, 1 : m + 1] = a[:, :m]
    head = theta[:, : m + 1]
    np.cumsum(head, axis=1, out=head)  # each row left to right, as the single-step kernel
    head *= inv(R, m)[0][: m + 1]
    if n is None:
        theta[:, m + 1] = -np.inf
    else:
        theta[np.arange(m + 2) > n[:, None]] = -np.inf
    admitted = (theta[:, 1:] > theta[:, :-1]).argmin(axis=1)
    v = a[np.arange(K), admitted - 1]  # the last admitted survival (rows admitting none: masked below)
    v[admitted == 0] = np.inf
    lengths = np.add.reduce(surv >= v[:, None, None], axis=2, dtype=np.int64)
    # A row counts at least its admitted candidates (all have survival ≥ v): equal totals mean every row
    # is exact; otherwise a tie straddles the cut in some row (rare).
    if int(np.add.reduce(lengths, axis=None)) != int(np.add.reduce(admitted)):
        for k in np.flatnonzero(lengths.sum(axis=1) != admitted):
            lengths[k] = _cut(surv[k], float(v[k]), int(admitted[k]))
    return lengths


def _room(R: int, n: int, budget: int | None) -> int:
    """How many of n candidates fit under the token budget (R anchor tokens are always verified)."""
    return n if budget is None else max(0, min(n, budget - R))
