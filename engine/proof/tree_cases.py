"""Random draft trees for the tree verifier's tests: shapes, path-dependent toy tables, drafted children.

Role: build valid `engine.tree_verify.tree_verify` inputs the way an engine drafts: the target's and the
draft's rows are functions of the path's tokens (a hash of the path picks a row from a bank, so two
children with the same token see the same rows), and each node's children are drafted from the draft row
at that node by one of three rules (`CHILD_MODES`): "sampled" (i.i.d. from q, as SpecInfer), "topk"
(deterministic: the j-th child is the j-th most likely token, one-hot draft rows, as EAGLE-2/SGLang) and
"norepl" (sampled without replacement: earlier siblings' tokens removed from q and renormalized).

May import: torch, stdlib.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

CHILD_MODES = ("sampled", "topk", "norepl")


def shape_parents(widths: list[int], node_cap: int | None = None) -> list[int]:
    """Parent array (BFS order) of a full tree whose depth-d nodes each have widths[d] children, cut at
    `node_cap` nodes (root included). widths [1]*γ is a chain of γ drafts."""
    parents = [-1]
    frontier = [0]
    for w in widths:
        nxt = []
        for node in frontier:
            for _ in range(w):
                parents.append(node)
                nxt.append(len(parents) - 1)
        frontier = nxt
    return parents[:node_cap] if node_cap else parents


def _path_key(path: tuple[int, ...], salt: int) -> int:
    h = 0x2545F491 + salt * 0x9E3779B1
    for t in path:
        h = (h * 1_000_003 + t + 1) % (1 << 61)
    return (h * 0x5851F42D + len(path)) % (1 << 61) >> 9


@dataclass
class RowBank:
    """Rows float64 [K, V] picked per path by hash: `row(path)`."""

    rows: torch.Tensor
    salt: int

    def row(self, path: tuple[int, ...]) -> torch.Tensor:
        return self.rows[_path_key(path, self.salt) % self.rows.shape[0]]


def random_bank(gen: torch.Generator, k: int, vocab: int, *, sparsity=0.3, scale=2.0, salt=0) -> RowBank:
    logits = torch.randn(k, vocab, generator=gen, dtype=torch.float64) * scale
    mask = torch.rand(k, vocab, generator=gen, dtype=torch.float64) < sparsity
    mask[:, 0] = False
    return RowBank(torch.softmax(logits.masked_fill(mask, float("-inf")), -1), salt)


def _draft_children(q: torch.Tensor, n: int, mode: str, gen: torch.Generator):
    """n (token, draft row) pairs drafted from the draft row q at one node."""
    out = []
    if mode == "topk":
        order = torch.argsort(q, descending=True, stable=True)
        for j in range(n):
            t = int(order[j % q.numel()])
            out.append((t, torch.nn.functional.one_hot(torch.tensor(t), q.numel()).to(torch.float64)))
        return out
    row = q.clone()
    for _ in range(n):
        if row.sum() <= 0:  # every token drawn already: repeat from q (still a valid draft law)
            row = q.clone()
        row = row / row.sum()
        t = int(torch.multinomial(row, 1, generator=gen))
        out.append((t, row.clone()))
        if mode == "norepl":
            row = row.clone()
            row[t] = 0.0
    return out


def draft_tree(parents: list[int], target: RowBank, draft: RowBank, mode: str, gen: torch.Generator):
    """One request's tree drafted from `draft`: (tokens [N], draft rows [N, V], target rows [N, V]) as
    float64/int64 tensors (node 0's token and draft row are placeholders)."""
    n, vocab = len(parents), target.rows.shape[1]
    tokens = torch.zeros(n, dtype=torch.int64)
    q = torch.zeros(n, vocab, dtype=torch.float64)
    q[0, 0] = 1.0
    paths: list[tuple[int, ...]] = [()] * n
    kids: dict[int, list[int]] = {}
    for i in range(1, n):
        kids.setdefault(parents[i], []).append(i)
    for node in range(n):
        children = kids.get(node, [])
        if not children:
            continue
        drawn = _draft_children(draft.row(paths[node]), len(children), mode, gen)
        for i, (t, row) in zip(children, drawn):
            tokens[i], q[i], paths[i] = t, row, paths[node] + (t,)
    p = torch.stack([target.row(path) for path in paths])
    return tokens, q, p, paths


def random_tree_batch(
    gen: torch.Generator,
    parents: list[int],
    r: int,
    vocab: int,
    *,
    modes=CHILD_MODES,
    banks: int = 5,
    dtype=torch.float32,
) -> dict:
    """A batch of r requests sharing one tree shape, each with its own banks and child mode (cycled), plus
    injected noise: the kwargs of `tree_verify` (active: all nodes) and `paths` (each node's token path)."""
    n = len(parents)
    toks, qs, ps, paths = [], [], [], []
    for i in range(r):
        target = random_bank(gen, banks, vocab, salt=2 * i)
        draft = random_bank(gen, banks, vocab, salt=2 * i + 1, scale=1.5)
        t, q, p, pa = draft_tree(parents, target, draft, modes[i % len(modes)], gen)
        toks.append(t), qs.append(q), ps.append(p), paths.append(pa)
    par = torch.tensor([0] + parents[1:], dtype=torch.int64).expand(r, n).contiguous()
    return {
        "parents": par,
        "tokens": torch.stack(toks) if r else torch.zeros((0, n), dtype=torch.int64),
        "draft_probs": (torch.stack(qs) if r else torch.zeros((0, n, vocab), dtype=torch.float64)).to(dtype),
        "target_probs": (torch.stack(ps) if r else torch.zeros((0, n, vocab), dtype=torch.float64)).to(dtype),
        "uniforms": torch.rand(r, n, generator=gen, dtype=torch.float64),
        "exponentials": torch.empty(r, vocab, dtype=torch.float64).exponential_(generator=gen),
        "paths": paths,
    }
