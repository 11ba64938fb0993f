"""Draft trees in the simulator: EAGLE-2/3 dynamic expansion, the tree acceptance model, tree pricing.

Role: turn one step's chain rows (truth c and estimate ĉ, float64[R, γ], from any `sim.model`
AcceptanceSource) into a draft tree per request and draw its verification outcome.

Shape (SGLang's knobs): `topk` children per expanded node, `gamma` = depth, `tree_nodes` = the node cap
per request. Dynamic expansion as EAGLE-2/3 and SGLang build it: the root's topk children; at every
further depth the topk best frontier nodes (by estimated path score) each get topk children; all
generated nodes (topk + (γ−1)·topk²) are candidates; the verified ones are chosen by a node budget
(`specsched.tree`: fixed cap, or Algorithm 1 over nodes). topk = 1 is today's chain, node i at depth i.

Acceptance model (per node: an estimated and a true conditional acceptance). The target's token at an
accepted node is ONE token, so its children exclude each other: the rank-j child (rank among siblings,
0 = the draft's best) is the target's token with probability
    t_d(0) = c_d,   t_d(j) = (1 − c_d) · h · (1 − h)^(j−1)   (j ≥ 1, Σ_j t_d(j) ≤ 1),
c_d the chain's conditional acceptance at depth d (the request's row), h = `rank_hit`: the chance the
next-ranked draft holds the target's token when the better ones missed it. The estimate uses ĉ_d and
the same h. One uniform per depth decides which child (if any) is the target's token — a categorical draw
over the rank intervals [Σ_{i<j} t, Σ_{i≤j} t) — and the walk continues only if that child was
verified. With topk = 1 this is the chain's Bernoulli draw u < c_d on the same uniforms; `sample_tree`
then calls `sim.model.sample_chain` itself (the chain's code path, bit for bit).

Draft cost per depth (EAGLE-style autoregressive drafter): depth 1 runs one pass over R tokens, every
further depth one pass over its frontier, R·topk tokens (a static tree: R · the nodes of the depth
above): layers · Σ_d layer_seconds(tokens_d); topk = 1 is `specsched.DraftCost("autoregressive")`'s
chain price.

May import: numpy, the standard library, specsched, sim.model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.model import sample_chain
from specsched import CostTable, DraftCost
from specsched.tree import node_survival


@dataclass(frozen=True)
class TreeShape:
    """topk: children per expanded node (1 = chain); gamma: depth; tree_nodes: node cap per request
    (0 = every candidate); rank_hit: h of the acceptance model (module doc), in [0, 1]; widths: a static
    full tree instead (children per node at each depth, `static_tree`; topk and gamma then follow it)."""

    topk: int = 1
    gamma: int = 3
    tree_nodes: int = 0
    rank_hit: float = 0.3
    widths: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name, lo in (("topk", 1), ("gamma", 1), ("tree_nodes", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < lo:
                raise ValueError(f"tree shape: {name} must be an integer ≥ {lo}; got {v!r}")
        if not 0.0 <= self.rank_hit <= 1.0:
            raise ValueError(f"tree shape: rank_hit must lie in [0, 1]; got {self.rank_hit!r}")
        if self.widths:
            if min(self.widths) < 1:
                raise ValueError(f"tree shape: widths must be ≥ 1; got {self.widths!r}")
            object.__setattr__(self, "gamma", len(self.widths))
            object.__setattr__(self, "topk", max(self.widths))

    def frontier(self, d: int) -> int:
        """Nodes each request expands at depth d ≥ 1 (the draft pass of depth d runs over R·frontier)."""
        if self.widths:
            return int(np.prod(self.widths[: d - 1])) if d > 1 else 1
        return 1 if d == 1 else self.topk

    @classmethod
    def from_drafter(cls, cfg, rank_hit: float | None = None) -> TreeShape:
        """The shape a `sim.config.DrafterConfig` names: topk, gamma (depth), tree_nodes, rank_hit (the
        config's unless given)."""
        h = getattr(cfg, "rank_hit", 0.3) if rank_hit is None else rank_hit
        return cls(cfg.topk, cfg.gamma, cfg.tree_nodes, h)

    @property
    def candidates(self) -> int:
        """Nodes generated per request: topk + (γ − 1)·topk² (a static tree: Σ_d Π widths[:d+1])."""
        if self.widths:
            return int(sum(np.prod(self.widths[: d + 1]) for d in range(len(self.widths))))
        return self.topk + (self.gamma - 1) * self.topk**2


def rank_probs(c: np.ndarray, topk: int, h: float) -> np.ndarray:
    """float64[..., topk]: t(j) for ranks j = 0..topk−1 from conditional acceptances c float64[...]."""
    out = np.empty((*c.shape, topk))
    out[..., 0] = c
    for j in range(1, topk):
        out[..., j] = (1.0 - c) * h * (1.0 - h) ** (j - 1)
    return out


@dataclass
class Tree:
    """One step's candidate trees, nodes in drafting order (depth by depth): parents int64[R, M] (−1 =
    child of the root), depth int64[R, M] (1-based), est / true float64[R, M] (conditional acceptance),
    lo float64[R, M] (Σ of the true rank probabilities of the node's better-ranked siblings)."""

    parents: np.ndarray
    depth: np.ndarray
    est: np.ndarray
    true: np.ndarray
    lo: np.ndarray


def build_tree(true: np.ndarray, est: np.ndarray, shape: TreeShape) -> Tree:
    """EAGLE-2-style dynamic expansion (module doc) from chain rows float64[R, γ] (γ ≥ shape.gamma)."""
    R, k, h = true.shape[0], shape.topk, shape.rank_hit
    rows = np.arange(R)
    par_l, dep_l, est_l, true_l, lo_l = [], [], [], [], []
    frontier = None  # int64[R, f]: node indices to expand; None = the root
    score = None  # float64[R, f]: their estimated path scores
    base = 0
    for d in range(shape.gamma):
        t_rank = rank_probs(true[:, d], k, h)  # [R, k]
        e_rank = rank_probs(est[:, d], k, h)
        lo_rank = np.concatenate([np.zeros((R, 1)), np.cumsum(t_rank, axis=1)[:, :-1]], axis=1)
        f = 1 if frontier is None else frontier.shape[1]
        parents = np.full((R, f * k), -1, dtype=np.int64)
        if frontier is not None:
            parents = np.repeat(frontier, k, axis=1)
        par_l.append(parents)
        dep_l.append(np.full((R, f * k), d + 1, dtype=np.int64))
        est_l.append(np.tile(e_rank, (1, f)))
        true_l.append(np.tile(t_rank, (1, f)))
        lo_l.append(np.tile(lo_rank, (1, f)))
        child_score = (np.ones((R, 1)) if score is None else score)[:, :, None] * e_rank[:, None, :]
        child_score = child_score.reshape(R, f * k)
        best = np.argsort(-child_score, axis=1, kind="stable")[:, :k]  # the next frontier: best k
        frontier = base + best
        score = child_score[rows[:, None], best]
        base += f * k
    return Tree(*(np.concatenate(x, axis=1) for x in (par_l, dep_l, est_l, true_l, lo_l)))


def static_tree(true: np.ndarray, est: np.ndarray, widths: tuple[int, ...], h: float) -> Tree:
    """A fixed full tree (vLLM's `speculative_token_tree`, e.g. [(0,), (1,), (0, 0), (0, 1), (0, 2), (1, 0),
    (1, 1), (1, 2)] = widths (2, 3)): every depth-d node has widths[d] children of ranks 0..widths[d]−1."""
    R = true.shape[0]
    par_l, dep_l, est_l, true_l, lo_l = [], [], [], [], []
    f, prev, start = 1, -1, 0  # nodes at the previous depth, their first index (−1: the root), next index
    for d, w in enumerate(widths):
        t_rank, e_rank = rank_probs(true[:, d], w, h), rank_probs(est[:, d], w, h)
        lo_rank = np.concatenate([np.zeros((R, 1)), np.cumsum(t_rank, axis=1)[:, :-1]], axis=1)
        par = np.full(f * w, -1, dtype=np.int64) if prev < 0 else np.repeat(prev + np.arange(f), w)
        par_l.append(np.broadcast_to(par, (R, f * w)))
        dep_l.append(np.full((R, f * w), d + 1, dtype=np.int64))
        for arr, src in ((est_l, e_rank), (true_l, t_rank), (lo_l, lo_rank)):
            arr.append(np.tile(src, (1, f)))
        prev, start, f = start, start + f * w, f * w
    return Tree(*(np.concatenate(x, axis=1) for x in (par_l, dep_l, est_l, true_l, lo_l)))


def sample_tree(
    tree: Tree, verified: np.ndarray, true_rows: np.ndarray, rng: np.random.Generator, topk: int
) -> np.ndarray:
    """int64[R]: accepted nodes per request (the accepted path's length) given the verified nodes
    (bool[R, M]); one uniform per depth and request (module doc). topk = 1: `sample_chain` on the chain
    rows `true_rows` with lengths = verified counts, the chain's own path."""
    if topk == 1:
        return sample_chain(true_rows, verified.sum(axis=1), rng)
    R, M = tree.parents.shape
    gamma = int(tree.depth.max()) if M else 0
    return walk(tree, verified, rng.random((R, gamma)))


def walk(tree: Tree, verified: np.ndarray, u: np.ndarray) -> np.ndarray:
    """int64[R]: the accepted path's length given one uniform per depth u float64[R, depth] (the tree
    acceptance model's draw, `sample_tree`; on a chain it is the chain's u < c_d test)."""
    R, M = tree.parents.shape
    cur = np.full(R, -1, dtype=np.int64)
    alive = np.ones(R, dtype=bool)
    acc = np.zeros(R, dtype=np.int64)
    idx = np.arange(M)
    for d in range(1, u.shape[1] + 1):
        ud = u[:, d - 1 : d]
        cand = (tree.depth == d) & (tree.parents == cur[:, None]) & verified & alive[:, None]
        hit = cand & (tree.lo <= ud) & (ud < tree.lo + tree.true)
        found = hit.any(axis=1)
        cur = np.where(found, np.where(hit, idx, M).min(axis=1), cur)
        alive &= found
        acc += found
    return acc


def tree_draft_seconds(cost: CostTable, layers: float, R: int, shape: TreeShape) -> float:
    """Draft seconds of a step of R requests drafting `shape` (module doc); topk = 1 prices through
    `DraftCost("autoregressive", layers)` (the chain's pricing, to the ulp)."""
    if R == 0:
        return 0.0
    if shape.topk == 1:
        return DraftCost("autoregressive", layers).seconds(np.full(R, shape.gamma), cost)
    lat = cost.latency_range
    passes = sum(
        float(lat(R * shape.frontier(d), R * shape.frontier(d))[0]) for d in range(1, shape.gamma + 1)
    )
    return layers * (passes / cost.layers)


def expected_length(tree: Tree, verified: np.ndarray | None = None) -> np.ndarray:
    """float64[R]: expected tokens a step emits (1 + Σ over verified nodes of their path's true
    acceptance product): the acceptance length of the tree under the model."""
    surv = node_survival(tree.true, tree.parents, tree.depth)
    if verified is not None:
        surv = np.where(verified, surv, 0.0)
    return 1.0 + surv.sum(axis=1)
