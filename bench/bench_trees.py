"""Trees: µs per scheduling call and per verify call, tree beside chain, same run.

Columns (CPU time per call, fresh-enough arrays: a pool of 16 cycled):
- plan: `specsched.tree.plan_nodes` over an EAGLE-2 candidate tree (topk 4, depth 5: 68 nodes per request)
  beside `specsched.dspark.dspark` on a γ = 7 chain, R ∈ {1, 16, 128};
- verify: `engine.tree_verify.tree_verify` (torch, CPU) on a 21-node tree beside `engine.verify.
  rejection_sample` on a γ = 7 chain, V = 256, R ∈ {1, 16, 64}.
Figures only; read the ratios (the machine is shared).

    python -m bench.bench_trees

May import: numpy, torch, the standard library, specsched, engine, bench (not sim: only twin/ imports both).
"""

from __future__ import annotations

import numpy as np
import torch

import specsched
from bench.timing import per_call_us
from engine.proof.suite_engine import random_verify_inputs
from engine.proof.tree_cases import random_tree_batch, shape_parents
from engine.tree_verify import tree_verify
from engine.verify import rejection_sample
from specsched.dspark import dspark
from specsched.tree import node_depths, plan_nodes

POOL = 16


def eagle_parents(topk: int = 4, depth: int = 5) -> np.ndarray:
    """int64[M] parents of an EAGLE-2 candidate tree (the first topk nodes of each depth expanded, as
    sim.tree.build_tree orders them when scores fall with the index): M = topk + (depth − 1)·topk²."""
    parents = [-1] * topk
    start = 0
    for _ in range(depth - 1):
        parents += [start + j for j in range(topk) for _ in range(topk)]
        start = len(parents) - topk * topk
    return np.array(parents, dtype=np.int64)


def bench_plan() -> None:
    cost = specsched.builtin_cost("h200-dense8b")
    rng = np.random.default_rng(0)
    print(f"{'R':>5} {'plan_nodes µs (68 nodes/req)':>30} {'dspark µs (γ=7)':>17} {'ratio':>7}")
    for R in (1, 16, 128):
        rows = [rng.random((R, 7)) ** 0.3 for _ in range(POOL)]
        par = np.broadcast_to(eagle_parents(), (R, 68))
        depth = node_depths(par)
        confs = [rng.random((R, 68)) ** 0.5 for _ in range(POOL)]
        it = iter(range(10**9))

        def tree_call(confs=confs, it=it, par=par, depth=depth):
            return plan_nodes(confs[next(it) % POOL], par, cost, depth=depth, stop="best")

        def chain_call(rows=rows, it=it):
            return dspark(rows[next(it) % POOL], cost, None, None)

        a, b = per_call_us(tree_call), per_call_us(chain_call)
        print(f"{R:>5} {a:>30.1f} {b:>17.1f} {a / b:>7.1f}")


def bench_verify() -> None:
    gen = torch.Generator().manual_seed(0)
    parents = shape_parents([2, 3, 2])  # 2 + 6 + 12 = 20 drafts
    print(f"{'R':>5} {'tree_verify µs (20 drafts)':>28} {'rejection_sample µs (γ=7)':>27} {'ratio':>7}")
    for R in (1, 16, 64):
        tree = random_tree_batch(gen, parents, R, 256, modes=("sampled",))
        tree.pop("paths")
        chain = random_verify_inputs(gen, R, 7, 256)
        a = per_call_us(lambda tree=tree: tree_verify(**tree, check=False))
        b = per_call_us(lambda chain=chain: rejection_sample(**chain, check=False))
        print(f"{R:>5} {a:>28.1f} {b:>27.1f} {a / b:>7.1f}")


def main() -> int:
    torch.set_num_threads(1)
    bench_plan()
    print()
    bench_verify()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
