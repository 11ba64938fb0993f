"""EAGLE-style tree drafting: the trained EAGLE head (engine.lm.eagle) expands top-k children per node.

Role: the EAGLE drafter as a tree drafter for engine.tree_decode (`EagleTree.draft_tree(ctx, spec)`, the
same (parents, tokens) contract as tree_decode.draft_tree), so `engine eval --trees` can put EAGLE trees
beside EAGLE chains. As EAGLE-2 drafts: the head first runs over the context's real pairs (f_t, x_{t+1}) at
positions t + 1 (causal; f = the target's last block output) and predicts f̂_{L−1}, whose logits give the
root's children. A node n of depth d with token x_n then gets the pair (f̂ of its parent, x_n) at position
L − 1 + d, and the head runs over it with a TREE mask: n's query sees every real pair, the pairs of its own
ancestors in the tree and itself, never a sibling's or a cousin's; its output f̂_n gives n's children. Per
depth only the `topk` best frontier nodes by path score (product of the head's softmax probabilities
along the path, a function of the context only) are expanded, and the `nodes` best nodes are kept
(tree_decode's rule, shared through `select_tree`). With topk = 1 the tree is exactly the chain that
engine.lm.drafters.EagleHeadDrafter drafts at temperature 0 (tests/engine/test_tree_eagle.py).

Children are deterministic (top-k), so the verifier's draft rows are one-hot (engine.tree_verify).
The target's features are recomputed each step without a cache (the models are tiny); the incremental,
cached path of a serving engine is EagleHeadDrafter's.

May import: torch, stdlib, engine.model, engine.lm.eagle, engine.tree_decode.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.lm.eagle import EagleDrafter
from engine.model import KVCache, TinyLM
from engine.tree_decode import TreeSpec, select_tree


class EagleTree:
    """A tree drafter of an EAGLE head `net` on its `target` (see the module docstring)."""

    def __init__(self, net: EagleDrafter, target: TinyLM) -> None:
        self.device = target.w["tok"].device
        self.net, self.target = net.to(self.device).eval(), target

    def _context(self, ctx: Sequence[int]):
        """(keys, values) [1, H, P, Dh] of the context's pairs and f̂_{L−1} [1, 1, d] (L = len(ctx))."""
        net, n = self.net, len(ctx)
        toks = torch.tensor([list(ctx)], dtype=torch.int64)
        if n > 1:  # real pairs t = 0 .. L−2: (f_t, x_{t+1}) at position t + 1
            cache = KVCache(self.target.config, 1, n, device=self.device)
            fwd = self.target.run(toks, torch.tensor([n]), torch.tensor([0]), cache, hidden=True)
            feat = fwd.hidden[None, : n - 1, net.feature_layer].float()
            nxt, pos = toks[:, 1:], torch.arange(1, n)[None]
        else:  # a one-token context: one pair with a zero feature (as EagleHeadDrafter's first step)
            feat = torch.zeros(1, 1, self.target.config.d_model)
            nxt, pos = toks, torch.zeros(1, 1, dtype=torch.int64)
        u = net.pair_input(feat, nxt, pos)
        m = pos.shape[1]
        causal = torch.ones(m, m, dtype=torch.bool).tril()[None, None]
        empty = u.new_zeros(1, net.layer.heads, 0, net.layer.dh)
        out = net.attend(u, empty, empty, causal, pos)
        k, v = net.keys(u, pos)
        return k, v, out[:, -1:]

    @torch.no_grad()
    def draft_tree(self, ctx: Sequence[int], spec: TreeSpec) -> tuple[list[int], list[int]]:
        """(parents, tokens) of one request's tree, nodes in BFS order (parents[i] < i, −1 = the root)."""
        with torch.device(self.device):
            return self._draft(ctx, spec)

    def _draft(self, ctx: Sequence[int], spec: TreeSpec):
        net, anchor = self.net, len(ctx) - 1
        base_k, base_v, root_out = self._context(ctx)
        nodes: list[tuple[float, int, int, int]] = []  # (score, depth, parent index, token)
        run_k, run_v = [], []  # keys/values [1, H, 1, Dh] of the expanded nodes, in expansion order
        anc: dict[int, list[int]] = {-1: []}  # node index -> key columns of its expanded ancestors
        frontier = [(1.0, -1)]  # (score, node index), each with its head output in outs
        outs = root_out  # [1, F, d]: f̂ of each frontier node (the root: f̂_{L−1})
        for d in range(1, spec.depth + 1):
            probs = torch.softmax(net.frozen.logits(outs[0]).double(), -1)
            top = torch.topk(probs, min(spec.topk, probs.shape[-1]), dim=-1)
            children = []
            rows = zip(frontier, top.values.tolist(), top.indices.tolist())
            for j, ((score, idx), vals, toks) in enumerate(rows):
                for v, t in zip(vals, toks):
                    nodes.append((score * v, d, idx, t))
                    children.append((score * v, len(nodes) - 1, j))
            if d == spec.depth:
                break
            chosen = sorted(children, key=lambda c: (-c[0], c[1]))[: spec.topk]
            feats = outs[:, [c[2] for c in chosen]]
            toks_t = torch.tensor([[nodes[c[1]][3] for c in chosen]])
            pos = torch.full_like(toks_t, anchor + d)
            u = net.pair_input(feats, toks_t, pos)
            q, seen = len(chosen), len(run_k)
            mask = torch.zeros(1, 1, q, base_k.shape[2] + seen + q, dtype=torch.bool)
            mask[..., : base_k.shape[2]] = True
            for i, c in enumerate(chosen):
                cols = anc[nodes[c[1]][2]]
                mask[0, 0, i, [base_k.shape[2] + col for col in cols]] = True
                mask[0, 0, i, base_k.shape[2] + seen + i] = True
                anc[c[1]] = cols + [seen + i]
            ck = torch.cat([base_k, *run_k], dim=2)
            cv = torch.cat([base_v, *run_v], dim=2)
            outs = net.attend(u, ck, cv, mask, pos)
            k, v = net.keys(u, pos)
            run_k += list(k.split(1, dim=2))
            run_v += list(v.split(1, dim=2))
            frontier = [(c[0], c[1]) for c in chosen]
        return select_tree([(s, d, p) for s, d, p, _ in nodes], [t for *_, t in nodes], spec.nodes)
