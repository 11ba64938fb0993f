"""DSpark's Algorithm 1 at its numpy floor: the kernels behind `make_policy("dspark")`.

Definition (specsched.policies): candidates (r, j) with survival a[r, j] = Π_{i≤j} conf[r, i] > 0, ordered
by survival descending, ties by position j then request r; admitted in that order while Θ(B) = τ · sps(B)
can still rise (τ summed left to right from R):

- **The greedy stop (the paper's).** Candidate k (1-based rank) is admitted if Θ(k) > max Θ(0..k−1).
- **The bucket rule (where the greedy stop loses).** Otherwise it is still admitted if B = R + k lies on a
  plateau of the step cost (sps(B) equals sps(B − 1) or sps(B + 1): a CUDA-graph bucket, a measured step
  table's flat run) and some prefix m ∈ (k, k + LOOKAHEAD), m ≤ the slots in room, priced OPTIMISTICALLY
  from what is known at rank k — every candidate k..m at survival a_k, an upper bound since survival only
  falls down the order — beats the best so far:
      (τ(k−1) + (m − k + 1) · a_k) · sps(R + m) > max Θ(0..k−1) · (1 + 1e-9).
  The first candidate passing neither test ends admission. On vLLM's padded staircase (`specsched.graphs`)
  the first token past a bucket edge pays for the whole next bucket, so Θ dips and rises again as the
  bucket fills (and a roofline knee can add a one-off jump that several buckets repay): the greedy stop
  verified nothing from ~64 requests up (issue 32: 0.65× the best fixed K on Llama-3.1-70B TP 4), the
  bucket rule crosses the edge when the buckets past it pay.
- **Where it departs from the greedy stop.** Only on plateaus (a B that costs exactly what its neighbour
  costs). On tables where every token costs something — smooth, convex or concave, the built-in tables,
  the Appendix A example — both stops admit the same prefix, bit for bit (tests/specsched/
  test_dspark_stop.py against the frozen greedy reference; every table against the independent plain
  loop bench/reference_lookpast.py). Looking further on smooth concave tables would verify more (a
  falling marginal cost rewards it) but is the paper's Algorithm 1 changed where it does not lose; the
  eager region past vLLM's largest captured size has no plateaus and keeps the greedy stop. The 1e-9
  margin keeps float rounding of a tie from departing.
- **Why it stays lossless.** Whether rank k is admitted reads a_1..a_k (the candidates at or above it in
  survival order) and the cost table, never a candidate below it: exactly what the greedy stop reads. For
  request r's candidate (r, j) the candidates above it from r itself are (r, <j), functions of
  conf[r, :j+1], which depend on drafts x_{<j} only (conf[r, i] is computed from the draft prefix before
  x_i): admitting draft x_j never reads x_j (the Appendix A firewall). The look-ahead is cut at the slots
  in room (R·γ under the budget), never at the count of positive survivals, which reads the drafts.
  The alternative "admit the prefix maximizing Θ over all prefixes" would read (r, j+1), i.e. x_j itself,
  and is not lossless. Across requests it reads what the greedy stop reads (other requests' survivals above
  the cut); engine/proof/batch.py enumerates random batches of two exactly (`specbed verify`): no gap in
  1000 such batches (10 seeds × 100), while the same cases catch `lookahead` and a policy that peeks at
  its partner's drafts in every seed tried.

These kernels take exactly those decisions, faster:
- survival values are sorted as floats (no argsort); the (j, r) tie-break is settled only where a tie
  straddles the cut (`_cut`): every row of survival is non-increasing, so "above the cut" is a prefix;
- below R·γ = `_SMALL` a pure-Python loop (the same IEEE operations in the same order);
- `dspark_many` decides K independent steps (same R, same table) in one vectorized pass;
- 1 / step seconds comes from `inv(R, n)`, cached per (table, R) by the Policy;
- past a non-rise the failing rank alone is tested first (a table without plateaus stops there); only where
  it admits are the later ranks tested, in chunks, the look-ahead only at ranks where Θ did not rise.

May import: numpy, the standard library, specsched.cost.
"""

from __future__ import annotations

import functools

import numpy as np

from specsched.cost import CostTable

#: `dspark` runs its pure-Python loop at R·γ up to this: below it numpy's fixed per-call overhead (~8 µs a
#: call on the 2-core dev machine) costs more than the loop; measured crossover R·γ ≈ 35 at γ = 7.
_SMALL = 32
#: how far (tokens) the bucket rule looks past a rank on a plateau for Θ to rise again: vLLM's buckets are 8
#: and 16 tokens wide, and a roofline knee adds a one-off jump several buckets must repay (Llama-3.1-8B on
#: H100 at B = 129: 6× a bucket's step)
LOOKAHEAD = 64
#: the optimistic prefix must beat the best Θ by this relative margin, so float rounding of a tie never
#: departs from the greedy stop
_MARGIN = 1.0 + 1e-9
_J = np.arange(2, LOOKAHEAD + 1)  # prefixes k+1 .. k+LOOKAHEAD−1 past rank k: j candidates from rank k on
_JF = _J.astype(np.float64)
_CHUNK = 64  # ranks per vectorized chunk of the bucket rule's look-ahead


def dspark(conf, cost, stale, budget, *, inv=None):
    """Algorithm 1: admission by survival while Θ can still rise (module doc: the greedy stop, and the
    bucket rule where a candidate opens a plateau of the step cost).

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
    theta = tau * inv(R, n)[0][: n + 1]
    rises = theta[1:] > theta[:-1]
    first = int(rises.argmin())  # the first admission that does not raise Θ (0 if all do)
    if rises[first]:
        admitted = n
    else:  # the look-ahead is cut at the slots, not the positive survivals: their count reads drafts
        top = _room(R, R * gamma, budget)
        full, k = inv(R, top)[0], first + 1
        on_plateau = full[k] == full[k - 1] or (k < top and full[k + 1] == full[k])
        admitted = past_stop(tau, theta, a, full[: top + 1], first) if on_plateau else first
    if admitted == 0:
        return np.zeros(R, dtype=np.int64)
    return _cut(surv, a[admitted - 1], admitted)


def past_stop(tau: np.ndarray, theta: np.ndarray, a: np.ndarray, inv: np.ndarray, first: int) -> int:
    """Admitted count when the greedy stop fails at rank first + 1 (module doc, the bucket rule).

    tau, theta: float64[n+1] (τ and Θ after 0..n admissions, n = the candidates with positive survival in
    room); inv: float64[top+1], 1 / step seconds for B = R..R+top, top ≥ n = the slots in room (R·γ under
    the budget): the look-ahead is cut at `top`, never at n — how many survivals are positive reads the
    drafts. a: survival descending (≥ n values); first < n: Θ rose on ranks 1..first, not on first + 1.
    Reads a[k−1] at rank k only, and the table. The failing rank alone first (a table without plateaus
    stops there), then the later ranks where Θ did not rise, in chunks (the first that fails ends it)."""
    n = tau.size - 1
    pad = np.zeros(inv.size + LOOKAHEAD)  # 1 / seconds past the slots: 0, no prefix there
    pad[: inv.size] = inv
    flat = np.zeros(inv.size + 1, dtype=bool)  # flat[k]: B = R + k lies on a plateau (≥ 2 equal costs)
    same = inv[1:] == inv[:-1]
    flat[1 : inv.size] |= same
    flat[: inv.size - 1] |= same
    best = np.maximum.accumulate(theta)  # best[k] = max Θ(0..k)
    if not _rise_later(tau, a, pad, best, np.array([first + 1]), flat)[0]:
        return first
    ks = np.arange(first + 2, n + 1)
    need = ks[theta[ks] <= best[ks - 1]]  # the ranks where Θ did not rise: only they need the look-ahead
    for lo in range(0, need.size, _CHUNK):
        part = need[lo : lo + _CHUNK]
        ok = _rise_later(tau, a, pad, best, part, flat)
        if not ok.all():
            return int(part[int(ok.argmin())]) - 1
    return n


def _rise_later(tau, a, pad: np.ndarray, best, ks: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """bool[len(ks)]: whether rank k (on a plateau) has a prefix k+1 .. k+LOOKAHEAD−1 beating best[k−1]
    with every candidate from rank k on priced at a_k (`past_stop`'s arrays; pad: 1 / seconds, zero past
    the slots in room)."""
    prev = ks - 1
    grid = (tau[prev, None] + _JF * a[prev, None]) * pad[prev[:, None] + _J]
    return flat[ks] & (grid.max(axis=1) > best[prev] * _MARGIN)


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
    top = _room(R, R * conf.shape[1], budget)  # the look-ahead's reach: slots, not positive survivals
    lengths = [0] * R
    if n:
        inv_list = inv(R, top)[1]
        tau = float(R)
        best = tau * inv_list[0]
        for k in range(n):
            neg_a, j, r = cands[k]
            prev = tau
            tau -= neg_a
            theta = tau * inv_list[k + 1]
            if theta > best:
                best = theta
            elif not _rises_later(prev, -neg_a, inv_list, k, top, best * _MARGIN):
                break
            lengths[r] = j + 1
    return np.array(lengths, dtype=np.int64)


def _rises_later(tau: float, a: float, inv_list: list, k: int, top: int, bar: float) -> bool:
    """The bucket rule at rank k + 1 (B = R + k + 1, on a plateau): whether some prefix k+2 .. k+LOOKAHEAD
    (≤ top, the slots in room) beats `bar`, every candidate from rank k + 1 on priced at survival a (the
    same float operations as `past_stop`)."""
    price = inv_list[k + 1]
    if not (inv_list[k] == price or (k + 1 < top and inv_list[k + 2] == price)):
        return False
    for j in range(2, min(LOOKAHEAD, top - k) + 1):
        if (tau + j * a) * inv_list[k + j] > bar:
            return True
    return False


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
    room = top = N if budget is None else max(0, min(N, budget - R))
    n = None  # None: every row has `room` candidates (no zero survival, the usual case: no per-row mask)
    if not np.logical_and.reduce(a[:, -1]):
        n = np.minimum(np.count_nonzero(a, axis=1), room)
        room = int(n.max())
    m = room
    if m == 0:
        return np.zeros((K, R), dtype=np.int64)
    # Θ after admitting 0..m candidates, then −inf past each row's own n (and in a last column for all),
    # so the first non-rise of a row is its greedy admission count.
    theta = np.empty((K, m + 2))
    theta[:, 0] = R
    theta[:, 1 : m + 1] = a[:, :m]
    head = theta[:, : m + 1]
    np.cumsum(head, axis=1, out=head)  # each row left to right, as the single-step kernel
    tau = head.copy()
    inv_m = inv(R, m)[0][: m + 1]
    head *= inv_m
    if n is None:
        theta[:, m + 1] = -np.inf
    else:
        theta[np.arange(m + 2) > n[:, None]] = -np.inf
    admitted = (theta[:, 1:] > theta[:, :-1]).argmin(axis=1)
    if not (admitted == (m if n is None else n)).all():  # some row stopped before its candidates ran out
        _look_past(admitted, tau, theta, a, inv(R, top)[0][: top + 1], m if n is None else n)
    v = a[np.arange(K), admitted - 1]  # the last admitted survival (rows admitting none: masked below)
    v[admitted == 0] = np.inf
    lengths = np.add.reduce(surv >= v[:, None, None], axis=2, dtype=np.int64)
    # A row counts at least its admitted candidates (all have survival ≥ v): equal totals mean every row
    # is exact; otherwise a tie straddles the cut in some row (rare).
    if int(np.add.reduce(lengths, axis=None)) != int(np.add.reduce(admitted)):
        for k in np.flatnonzero(lengths.sum(axis=1) != admitted):
            lengths[k] = _cut(surv[k], float(v[k]), int(admitted[k]))
    return lengths


def _look_past(admitted: np.ndarray, tau, theta, a, inv: np.ndarray, n) -> None:
    """`dspark_many`'s bucket rule, in place on admitted int64[K] (the greedy counts): every row that stopped
    before its n (int or int64[K], its positive survivals in room) tests its failing rank at once; only
    rows where it admits run `past_stop`. tau, theta: float64[K, ≥ max n + 1]; inv: float64[top + 1],
    1 / step seconds up to the slots in room."""
    K = admitted.size
    n = np.broadcast_to(n, (K,))
    stopped = np.flatnonzero(admitted < n)
    at = admitted[stopped]  # rank at + 1 failed; B = R + at + 1
    top = inv.size - 1
    nxt = np.minimum(at + 2, top)
    flat = (inv[at] == inv[at + 1]) | ((at + 1 < top) & (inv[nxt] == inv[at + 1]))
    if not flat.any():
        return
    stopped, at = stopped[flat], at[flat]
    step = at[:, None] + _J  # prefixes at+2 .. at+LOOKAHEAD
    price = np.where(step <= top, inv[np.minimum(step, top)], 0.0)
    grid = (tau[stopped, at][:, None] + _JF * a[stopped, at][:, None]) * price
    later = grid.max(axis=1) > theta[stopped, at] * _MARGIN
    for k, first in zip(stopped[later].tolist(), at[later].tolist()):
        end = int(n[k]) + 1
        admitted[k] = past_stop(tau[k, :end], theta[k, :end], a[k], inv, first)


def _room(R: int, n: int, budget: int | None) -> int:
    """How many of n candidates fit under the token budget (R anchor tokens are always verified)."""
    return n if budget is None else max(0, min(n, budget - R))
