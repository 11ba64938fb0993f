"""Draft trees inside the serving simulator's step: what `specbed run` does with drafter.topk > 1.

Role: the tree half of `sim.server.Replica._decide`. With topk = 1 the replica takes today's chain code
(this module is not called: a chain run is bit-identical to one before trees existed). With topk > 1,
each step of the r decoding requests:

1. draws the chain rows (truth c, estimate ĉ, float64[r, γ]) from the acceptance model, one
   `model.step` a step (the per-step path; the multi-step run path is off for trees);
2. builds each request's candidate tree as EAGLE-2/3 do (`sim.tree.build_tree`: topk children per
   expanded node, the topk best frontier nodes per depth, γ = depth);
3. plans the verified nodes with the configured tree policy (`specsched.contrib.dspark_tree`: fixed_tree;
   dspark_tree = Algorithm 1 over nodes with one hardware-aware stop over the batch; dspark_tree_global =
   the batch's node total planned on the chain rows of `delay` steps earlier (the replica planner's stale
   buffer; a young request states its domain's curve), then the current tree's best nodes up to it),
   priced on the policy's table with the tree's draft pass, the KV reads and the tree kernel's penalty as
   fixed terms; capped per request at drafter.tree_nodes and by the step's token budget;
4. draws the accepted path with the tree acceptance model (`sim.tree.walk`: one uniform per depth from
   the replica's verify stream; siblings exclude each other, drafter.rank_hit).

The step's verify tokens are the verified nodes (the lengths the recorder keeps are node counts), the
draft part is `sim.tree.tree_draft_seconds` (one pass per depth over the frontier), and the bill's
`tree` part is drafter.tree_penalty × the KV-read seconds × the KV held (`sim.stepcost.step_cost`).
Not modelled yet: adaptive depths, a draft-shape menu (sim.tree_run's), a measured drafter.cost for tree
passes (the layer pricing is used), and KV reserved per node (a request still reserves γ + 1).

May import: numpy, the standard library, `sim.tree`, `specsched` (planner, registry, tree,
contrib.dspark_tree).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.tree import TreeShape, build_tree, tree_draft_seconds, walk
from specsched.contrib.dspark_tree import tree_policy
from specsched.planner import StepDecision
from specsched.registry import get
from specsched.tree import TreePolicy, admitted_mask, plan_nodes


@dataclass(frozen=True)
class TreeStep:
    """What a deployment's tree steps share: the shape, the node-budget policy, draft layers (in target
    layers: drafter.layers × layer_cost)."""

    shape: TreeShape
    policy: TreePolicy
    layers: float


def tree_step(cfg) -> TreeStep | None:
    """The `TreeStep` of a `sim.config.SimConfig` (None for a chain: drafter.topk = 1)."""
    d = cfg.drafter
    if d.topk == 1:
        return None
    shape = TreeShape(d.topk, d.effective_gamma, d.tree_nodes, d.rank_hit)
    params = get(cfg.policy.name).resolve(cfg.policy.params())
    return TreeStep(shape, tree_policy(cfg.policy.name, params), float(d.layer_cost * d.effective_layers))


def decide_tree(rep, di, r: int) -> tuple[StepDecision, np.ndarray, float]:
    """(decision with node counts int64[r] as lengths, accepted int64[r], draft seconds) of a tree step
    of the replica `rep`'s r decoding slots `di` (module doc)."""
    eng, model, ts = rep.eng, rep.eng.model, rep.eng.tree
    shape = ts.shape
    pos = {"position": rep.gen[di]} if model.by_position else {}
    true, conf = model.step(rep.dom[di], rep.lat[di], rep.rng_truth, rep.rng_conf, **pos)
    tree = build_tree(true, conf, shape)
    draft_s = tree_draft_seconds(eng.step.cost, ts.layers, r, shape)
    plan = eng.planned
    extra = (plan.kv_s + plan.tree_kv_s) * rep.kv_used  # independent of the nodes verified
    kw = {"budget": eng.max_batch_tokens, "draft_s": draft_s, "extra_s": extra}
    if ts.policy.uses_stale:  # the batch's node total from the rows of `delay` steps earlier
        slots = np.arange(di.start, di.stop) if isinstance(di, slice) else di
        stale = rep.planner.rows.exchange(slots, rep.dsteps[slots], conf, model.curves[rep.dom[slots]])
        old = build_tree(true, stale, shape)
        total = plan_nodes(old.est, old.parents, plan.cost, stop=ts.policy.stop, depth=old.depth, **kw).sum()
        counts = plan_nodes(tree.est, tree.parents, plan.cost, depth=tree.depth, total=int(total), **kw)
    else:
        counts = ts.policy.plan(tree.est, tree.parents, plan.cost, depth=tree.depth, **kw)
    if ts.policy.name == "fixed_tree":  # no budget of its own: each request within the step's tokens
        counts = np.minimum(counts, max(0, (eng.max_batch_tokens - r) // r))
    if shape.tree_nodes:
        counts = np.minimum(counts, shape.tree_nodes)
    verified = admitted_mask(counts, tree.est, tree.parents, tree.depth)
    accepted = walk(tree, verified, rep.rng_verify.random((r, shape.gamma)))
    return StepDecision(None, counts.astype(np.int64)), accepted, draft_s
