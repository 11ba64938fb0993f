"""Tree speculative decoding in the small engine: a TinyLM drafter (or the EAGLE head, engine.tree_eagle)
expands top-k children per node, the target verifies every request's tree in one tree-masked pass,
`engine.tree_verify` accepts losslessly.

Role: τ for trees beside chains on the small models (`tree_tau`, used by `engine eval --trees`), and an
end-to-end check of the tree path (mask, verifier, KV commit): at temperature 0 it emits exactly the
target's greedy continuation. Drafting (EAGLE-2 style, per request): the root's topk most likely draft
tokens, then at every depth the `topk` best frontier nodes by path score (product of the drafter's
softmax probabilities along the path: a function of the context only, so ranking by it is lawful —
engine/proof/tree_controls.own_prob_keep) each get their topk most likely tokens; the `nodes` best nodes
by path score are kept (0 = all; a child never scores above its parent, so the kept set is parent-closed).
Children are deterministic, so each node's draft row is one-hot (engine.tree_verify). topk = 1 is a
chain. The drafter recomputes each frontier's context without a cache (the models are tiny); the
target keeps a slot KV cache: every step feeds the last committed token (the root) and the tree, commits
the accepted path (`commit_path`) and leaves the emitted residual/bonus token as the next root.

May import: torch, stdlib, engine.model, engine.sampling, engine.tree_verify.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from engine.model import KVCache, TinyLM
from engine.sampling import SamplingParams, probs_from_logits
from engine.tree_verify import commit_path, tree_verify


@dataclass(frozen=True)
class TreeSpec:
    """topk children per expanded node, depth, node cap per request (0 = every drafted node)."""

    topk: int = 2
    depth: int = 4
    nodes: int = 0

    def __post_init__(self) -> None:
        if self.topk < 1 or self.depth < 1 or self.nodes < 0:
            raise ValueError(f"TreeSpec: topk, depth must be ≥ 1 and nodes ≥ 0; got {self}")


def draft_tree(drafter: TinyLM, ctx: Sequence[int], spec: TreeSpec) -> tuple[list[int], list[int]]:
    """(parents, tokens) of one request's tree, nodes in BFS order (parents[i] < i, −1 = the root)."""
    nodes: list[tuple[float, int, int, tuple[int, ...]]] = []  # (score, depth, parent index, path)
    frontier = [(1.0, -1, ())]  # (score, node index, path)
    device = drafter.w["tok"].device
    for d in range(1, spec.depth + 1):
        seqs = torch.tensor([list(ctx) + list(p) for _, _, p in frontier], dtype=torch.int64, device=device)
        probs = torch.softmax(drafter.logits_full(seqs)[:, -1].double(), -1)
        top = torch.topk(probs, min(spec.topk, probs.shape[-1]), dim=-1)
        children = []
        for (score, idx, path), vals, toks in zip(frontier, top.values.tolist(), top.indices.tolist()):
            for v, t in zip(vals, toks):
                nodes.append((score * v, d, idx, path + (t,)))
                children.append((score * v, len(nodes) - 1, path + (t,)))
        frontier = sorted(children, key=lambda c: (-c[0], c[1]))[: spec.topk]
    return select_tree([n[:3] for n in nodes], [n[3][-1] for n in nodes], spec.nodes)


def select_tree(nodes: Sequence[tuple[float, int, int]], tokens: Sequence[int], cap: int):
    """(parents, tokens) of the `cap` best drafted nodes by path score (0 = all), in BFS order.
    nodes[i] = (path score, depth, parent index or −1) in drafting order; a child never scores above its
    parent and ties go to the shallower, earlier node, so the kept set is parent-closed."""
    order = sorted(range(len(nodes)), key=lambda i: (-nodes[i][0], nodes[i][1], i))
    keep = sorted(order[:cap] if cap else order, key=lambda i: (nodes[i][1], i))
    where = {old: new for new, old in enumerate(keep)}
    parents = [-1 if nodes[i][2] < 0 else where[nodes[i][2]] for i in keep]
    return parents, [tokens[i] for i in keep]


def _step_inputs(trees, roots, vocab, device):
    """Packed verify inputs: tokens/parents int64 [R, N] (node 0 = root), active bool, one-hot q [R, N, V]."""
    n = 1 + max(len(t[0]) for t in trees)
    r = len(trees)
    tokens = torch.zeros((r, n), dtype=torch.int64)
    parents = torch.zeros((r, n), dtype=torch.int64)
    active = torch.zeros((r, n), dtype=torch.bool)
    for i, ((par, toks), root) in enumerate(zip(trees, roots)):
        m = len(par)
        tokens[i, 0], tokens[i, 1 : m + 1] = root, torch.tensor(toks, dtype=torch.int64)
        parents[i, 1 : m + 1] = torch.tensor(par, dtype=torch.int64) + 1
        active[i, : m + 1] = True
    q = torch.nn.functional.one_hot(tokens, vocab).to(torch.float32)
    return tokens.to(device), parents.to(device), active.to(device), q.to(device)


def tree_generate(
    target: TinyLM,
    drafter,
    prompts: Sequence[Sequence[int]],
    max_new: int,
    spec: TreeSpec,
    params: SamplingParams,
    *,
    seed: int = 0,
) -> tuple[list[list[int]], int, int]:
    """Decode `prompts` (each ≥ 1 token) for max_new tokens with `drafter` (a TinyLM, or a tree drafter
    with `draft_tree(ctx, spec)` such as engine.tree_eagle.EagleTree); returns (outputs, verify steps
    summed over requests, tokens emitted). Noise from one torch.Generator seeded with `seed`."""
    device = target.w["tok"].device
    draft = getattr(drafter, "draft_tree", None) or (lambda ctx, sp: draft_tree(drafter, ctx, sp))
    r, vocab = len(prompts), target.config.vocab_size
    width = 2 + spec.depth * spec.topk**2
    longest = max(len(p) for p in prompts) + max_new + width
    cache = KVCache(target.config, r, longest, device=device)
    slots = torch.arange(r, device=device)
    gen = torch.Generator(device=device).manual_seed(seed)
    seqs = [list(p) for p in prompts]
    heads = [p[:-1] for p in seqs]
    if max(len(h) for h in heads):
        toks = torch.tensor([h + [0] * (max(map(len, heads)) - len(h)) for h in heads], device=device)
        target.forward(toks, torch.tensor([len(h) for h in heads], device=device), slots, cache)
    cache.lengths[:] = torch.tensor([len(h) for h in heads], device=device)
    out: list[list[int]] = [[] for _ in prompts]
    steps = emitted = 0
    live = list(range(r))
    while live:
        trees = [draft(seqs[i], spec) for i in live]
        tokens, parents, active, q = _step_inputs(trees, [seqs[i][-1] for i in live], vocab, device)
        sl = slots[live]
        logits = target.run(tokens, active.sum(1), sl, cache, parents=parents).logits
        p = probs_from_logits(logits.float(), params)
        p = torch.where(active[..., None], p, q)  # padding rows: any valid row (never read)
        em, num, path = tree_verify(parents, tokens, q, p, active=active, generator=gen)
        commit_path(cache, sl, path, num)
        for j, i in enumerate(live):
            new = em[j, : int(num[j])].tolist()[: max_new - len(out[i])]
            out[i] += new
            seqs[i] += new
        steps += len(live)
        emitted += int(num.sum())
        live = [i for i in live if len(out[i]) < max_new]
    return out, steps, emitted


def tree_tau(target: TinyLM, drafter: TinyLM, prompts, max_new: int, spec: TreeSpec, params, seed=0) -> float:
    """Mean tokens emitted per request-step (τ, bonus included) of tree decoding with `spec`."""
    _, steps, emitted = tree_generate(target, drafter, prompts, max_new, spec, params, seed=seed)
    return emitted / steps
