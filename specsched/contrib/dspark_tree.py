"""The tree budget policies in the one registry: `dspark_tree`, `fixed_tree`, `dspark_tree_global`.

Role: declare `specsched.tree`'s node-budget policies (docs/trees.md) once, with their parameters, so
`specbed verify`, `plan`, sweeps and run configs see them. Called through the registry they plan a CHAIN
(conf float64[R, γ], node i's parent node i − 1: a chain is the topk = 1 tree) and return verify lengths
int64[R]; `specbed run` with drafter.topk > 1 calls the same policy over each step's tree nodes
(`tree_policy`, `sim.tree_step`). On a chain `dspark_tree` takes `specsched.dspark`'s decisions exactly
(specsched.tree's module doc).

- fixed_tree (nodes): SGLang's fixed shape, the first `nodes` nodes of every request (0 = all).
- dspark_tree: Algorithm 1 over nodes with the hardware-aware stop over the whole batch, the first
  non-rise of Θ as published. (The argmax of Θ on the CURRENT rows is not offered: whether a node is
  verified would then read the confidences of nodes after it, which the batch firewall refuses.)
- dspark_tree_global (delay, first_stop): the stale production variant, order and stop on the rows of
  `delay` steps earlier (lossless for delay ≥ 1, the firewall over nodes); first_stop 0 (default) = the
  argmax of Θ (not stopped by a CUDA-graph capture-size jump; the same under a convex verify cost),
  1 = the first non-rise.

May import: numpy, specsched.registry, specsched.tree.
"""

from __future__ import annotations

import numpy as np

from specsched.registry import Param, policy
from specsched.tree import TreePolicy

_FIRST = Param("first_stop", 0, 0, 1, doc="1: Algorithm 1's first non-rise stop; 0: the argmax of Θ")
_NODES = Param("nodes", 0, 0, 1 << 16, doc="tree nodes verified per request (0 = all)")
_TREE_DELAY = Param("delay", 1, 0, 64, doc="steps of staleness of the sizing confidences")


def _chain(conf: np.ndarray) -> np.ndarray:
    """int64[R, γ]: the chain's parents (node i's parent is i − 1; −1 the root)."""
    R, g = conf.shape
    return np.broadcast_to(np.arange(g, dtype=np.int64) - 1, (R, g))


def tree_policy(name: str, params) -> TreePolicy:
    """The `specsched.tree.TreePolicy` a registered tree policy `name` with `params` stands for."""
    stop = "first" if int(params.get("first_stop", 1)) else "best"
    return TreePolicy(name, cap=int(params.get("nodes", 0)), delay=int(params.get("delay", 0)), stop=stop)


@policy("fixed_tree", params=[_NODES], doc="SGLang's fixed tree: the first `nodes` nodes of every request")
def fixed_tree(conf: np.ndarray, cost, stale, budget, *, nodes: int) -> np.ndarray:
    out = tree_policy("fixed_tree", {"nodes": nodes}).plan(conf, _chain(conf), cost)
    return _fit(out, budget, conf.shape[0])


@policy("dspark_tree", adaptive_verification=True,
        doc="Algorithm 1 over tree nodes: survival order, one hardware-aware stop for the batch")  # fmt: skip
def dspark_tree(conf: np.ndarray, cost, stale, budget) -> np.ndarray:
    plan = tree_policy("dspark_tree", {})
    return plan.plan(conf, _chain(conf), cost, budget=budget)


@policy("dspark_tree_global", params=[_TREE_DELAY, _FIRST], uses_stale=True, adaptive_verification=True,
        doc="Algorithm 1 over tree nodes planned on the stale rows (the production variant)")  # fmt: skip
def dspark_tree_global(conf: np.ndarray, cost, stale, budget, *, delay: int, first_stop: int) -> np.ndarray:
    plan = tree_policy("dspark_tree_global", {"delay": max(delay, 1), "first_stop": first_stop})
    return plan.plan(conf, _chain(conf), cost, stale=conf if stale is None else stale, budget=budget)


def _fit(lengths: np.ndarray, budget: int | None, R: int) -> np.ndarray:
    """Cut lengths to a verify budget of `budget` tokens (R anchors included), deepest first, evenly."""
    if budget is None or R + int(lengths.sum()) <= budget:
        return lengths
    room = max(0, budget - R)
    cap = room // R if R else 0
    return np.minimum(lengths, cap)
