"""Tree budgets across the batch: DSpark's Algorithm 1 over draft-tree NODES, and its baselines.

Role: the scheduler half of token trees. A step's candidate nodes (per request r, M nodes in drafting
order, parents[r, i] < i or −1 for the root's children) carry estimated conditional acceptances
conf[r, i]; a node's path survival is the product of conf along its path (so a child's survival never
exceeds its parent's). Every policy returns node COUNTS int64[R]: request r verifies its first counts[r]
nodes in `node_order` (survival descending, then depth, then index), which is parent-closed (a child
never comes before its parent: its survival is ≤ its parent's and ties go to the shallower node).

- `plan_nodes` (Algorithm 1 over nodes): every (r, node) with survival > 0, in the order (survival desc,
  depth, r, index), admitted greedily while Θ(n) = (R + Σ admitted survival) / step(R + n) rises, one
  hardware-aware stop over the whole batch's nodes (TETRIS picks by the same cumulative acceptance but
  without the stop; CaDDTree's unimodality makes the greedy stop the optimum under a convex verify cost).
  The stale production variant passes `stale` (the confidences of `delay` steps earlier for the same
  slots): order and stop then read only the stale rows (the firewall: a node's admission never reads
  the token it admits or anything drawn after it).
- `fixed_nodes`: SGLang's fixed shape (the first `cap` nodes of each request, `drafter.tree_nodes`).
- On a chain (every parent the previous node) `plan_nodes` takes exactly `specsched.dspark`'s decisions.

Step price (the stop's denominator): fixed + latency(R + n), fixed = draft_s + request_seconds·R + extra_s
(the tree's kernel penalty and the KV reads, which do not depend on n), latency from the CostTable.

Entry point: `make_tree_policy(name, **kw)` → a `TreePolicy` (names in `TREE_POLICIES`).

May import: numpy, the standard library, specsched.cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsched.cost import CostTable

TREE_POLICIES = ("fixed_tree", "dspark_tree", "dspark_tree_global")


def node_depths(parents: np.ndarray) -> np.ndarray:
    """int64[R, M]: each node's depth (1 for the root's children) from parents int64[R, M]."""
    r, m = parents.shape
    depth = np.zeros((r, m), dtype=np.int64)
    rows = np.arange(r)
    for i in range(m):
        par = parents[:, i]
        depth[:, i] = np.where(par < 0, 1, depth[rows, np.maximum(par, 0)] + 1)
    return depth


def node_survival(conf: np.ndarray, parents: np.ndarray, depth: np.ndarray | None = None) -> np.ndarray:
    """float64[R, M]: path survival Π conf over each node's path (left to right, root side first).
    `depth` (node_depths, when the caller has it): one vectorized pass per depth instead of per node."""
    r, m = conf.shape
    if depth is not None and m:
        surv = conf.astype(np.float64, copy=True)
        up = np.maximum(parents, 0)
        for d in range(2, int(depth.max()) + 1):
            at = depth == d
            surv[at] = (np.take_along_axis(surv, up, axis=1) * conf)[at]
        return surv
    surv = np.empty((r, m), dtype=np.float64)
    rows = np.arange(r)
    for i in range(m):
        par = parents[:, i]
        surv[:, i] = np.where(par < 0, conf[:, i], surv[rows, np.maximum(par, 0)] * conf[:, i])
    return surv


def node_order(surv: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """int64[R, M]: each request's nodes in admission order (survival desc, depth asc, index asc)."""
    r, m = surv.shape
    idx = np.broadcast_to(np.arange(m), (r, m))
    return np.lexsort((idx, depth, -surv), axis=1)


def _inv(cost: CostTable, R: int, n: int, fixed: float) -> np.ndarray:
    """1 / step seconds for B = R..R+n (float64[n+1])."""
    return 1.0 / (fixed + cost.latency_range(R, R + n))


def plan_nodes(
    conf: np.ndarray,
    parents: np.ndarray,
    cost: CostTable,
    *,
    stale: np.ndarray | None = None,
    budget: int | None = None,
    draft_s: float | None = None,
    extra_s: float = 0.0,
    stop: str = "first",
    depth: np.ndarray | None = None,
    with_theta: bool = False,
    total: int | None = None,
):
    """Algorithm 1 over nodes (module doc): node counts int64[R].

    conf float64[R, M] conditional acceptance estimates; parents int64[R, M]; stale: float64[R, M] read
    instead of conf (the production variant); budget: max tokens a step (R anchors included);
    draft_s: the draft pass (None: cost.draft_seconds); extra_s: step seconds independent of n;
    stop: "first" (Algorithm 1: the first admission that does not raise Θ ends it) or "best" (the n
    maximizing Θ over the whole sorted prefix: the same for a convex verify cost, where Θ is unimodal, and
    not fooled by a step table padded to CUDA-graph sizes, whose flat stretches start with a jump);
    with_theta: return (counts, Θ of the plan in tokens per second) instead; total: admit this many nodes
    (the batch's node budget, decided earlier, e.g. from stale rows) in this order, with no stop."""
    rows = conf if stale is None else stale
    R, M = rows.shape
    fixed = (cost.draft_seconds if draft_s is None else draft_s) + cost.request_seconds * R + extra_s
    if R == 0 or M == 0:
        none = np.zeros(R, dtype=np.int64)
        return (none, R * float(_inv(cost, R, 0, fixed)[0]) if R else 0.0) if with_theta else none
    depth = node_depths(parents) if depth is None else depth
    surv = node_survival(rows, parents, depth)
    rr = np.broadcast_to(np.arange(R)[:, None], (R, M))
    ii = np.broadcast_to(np.arange(M), (R, M))
    order = np.lexsort((ii.ravel(), rr.ravel(), depth.ravel(), -surv.ravel()))
    a = surv.ravel()[order]
    n = int(np.count_nonzero(a > 0))
    if budget is not None:
        n = max(0, min(n, budget - R))
    if n == 0:
        none = np.zeros(R, dtype=np.int64)
        return (none, R * float(_inv(cost, R, 0, fixed)[0])) if with_theta else none
    tau = np.empty(n + 1)
    tau[0] = R
    tau[1:] = a[:n]
    np.cumsum(tau, out=tau)
    theta = tau * _inv(cost, R, n, fixed)
    admitted = min(int(total), n) if total is not None else _stop(theta, n, stop)
    counts = np.bincount(rr.ravel()[order[:admitted]], minlength=R).astype(np.int64)
    return (counts, float(theta[admitted])) if with_theta else counts


def _stop(theta: np.ndarray, n: int, stop: str) -> int:
    """How many of n sorted candidates to admit given Θ after 0..n of them (float64[n + 1])."""
    if stop == "best":
        return int(theta.argmax())
    if stop == "first":
        rises = theta[1:] > theta[:-1]
        first = int(rises.argmin())
        return first if not rises[first] else n
    raise ValueError(f"stop: 'first' or 'best', got {stop!r}")


def fixed_nodes(conf: np.ndarray, parents: np.ndarray, cap: int) -> np.ndarray:
    """SGLang's fixed shape: int64[R] = min(cap, nodes with survival > 0) (cap 0: every such node)."""
    live = np.count_nonzero(node_survival(conf, parents) > 0, axis=1).astype(np.int64)
    return live if cap <= 0 else np.minimum(live, cap)


def admitted_mask(counts: np.ndarray, conf: np.ndarray, parents: np.ndarray, depth=None) -> np.ndarray:
    """bool[R, M]: the nodes `counts` admits, each request's first counts[r] in `node_order` of conf (the
    rows the counts were planned from: the stale ones for the stale variant)."""
    depth = node_depths(parents) if depth is None else depth
    order = node_order(node_survival(conf, parents, depth), depth)
    R, M = conf.shape
    mask = np.zeros((R, M), dtype=bool)
    rank = np.arange(M)[None, :] < counts[:, None]
    np.put_along_axis(mask, order, rank, axis=1)
    return mask


@dataclass(frozen=True)
class TreePolicy:
    """A node-budget policy: `plan(conf, parents, cost, stale=None, **kw) -> counts int64[R]`.

    name: one of TREE_POLICIES; cap: nodes per request for fixed_tree (0 = all); delay: steps of
    staleness dspark_tree_global plans from (the caller passes those rows as `stale`); stop: see
    `plan_nodes`."""

    name: str
    cap: int = 0
    delay: int = 0
    stop: str = "best"

    def __post_init__(self) -> None:
        if self.name not in TREE_POLICIES:
            raise ValueError(f"tree policy: one of {', '.join(TREE_POLICIES)}; got {self.name!r}")
        if self.cap < 0 or self.delay < 0:
            raise ValueError("tree policy: cap and delay must be ≥ 0")
        if self.name == "dspark_tree_global" and self.delay < 1:
            raise ValueError("tree policy: dspark_tree_global needs delay ≥ 1")

    @property
    def uses_stale(self) -> bool:
        return self.name == "dspark_tree_global"

    def plan(self, conf, parents, cost, *, stale=None, **kw) -> np.ndarray:
        if self.name == "fixed_tree":
            return fixed_nodes(conf, parents, self.cap)  # budget knobs (kw) do not apply
        if self.uses_stale:
            if stale is None:
                raise ValueError("dspark_tree_global: needs the stale rows (stale=...)")
            return plan_nodes(conf, parents, cost, stale=stale, stop=self.stop, **kw)
        return plan_nodes(conf, parents, cost, stop=self.stop, **kw)

    def bound(self, parents: np.ndarray, depth: np.ndarray | None = None, **kw):
        """The house's policy signature for one tree shape: `plan(conf, cost, *, stale=None) -> counts`
        (conf float64[R, M] over these `parents`), so a registry can hold a tree policy beside the chain
        ones; `kw` (budget, draft_s, extra_s) is passed through."""
        depth = node_depths(parents) if depth is None else depth

        def plan(conf, cost, *, stale=None):
            return self.plan(conf, parents, cost, stale=stale, depth=depth, **kw)

        return plan


def make_tree_policy(name: str, **kw) -> TreePolicy:
    """The tree policy `name` (TREE_POLICIES) with its knobs (cap, delay)."""
    return TreePolicy(name, **kw)
