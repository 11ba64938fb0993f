"""Batched lossless verification of draft TREES: multi-step speculative sampling (SpecInfer) over a tree.

Role: `tree_verify` is the tree counterpart of `engine.verify.rejection_sample` (torch reference here, Triton
kernel in engine.tree_triton, the same decisions under the same noise). A request's tree has N nodes;
node 0 is the root (the last committed token: its target row predicts the first draft), nodes 1..N-1 are
draft tokens with `parents[r, i] < i` (so a child is never before its parent and index order visits a
node's children after the node). Per node i ≥ 1: `tokens[r, i]` and `draft_probs[r, i]`, the distribution
token i was drawn from GIVEN everything drafted before it (a sampled child: its parent's draft row; the
j-th of top-k deterministic children: one-hot; sampling without replacement: the row with earlier
siblings removed). `target_probs[r, i]` is the target's distribution after the path root..i.

The walk (per request): cur = root, residual r = p_root (unnormalized weights w and a scale s, r = s·w).
Nodes i = 1..N-1 are visited in index order; node i is TRIED iff it is active and parents[i] == cur:
    accept iff u[i] < min(1, r(x_i) / q_i(x_i))   (engine.verify.accept_prob, float64)
    accepted: emit x_i, cur = i, r = p_i (w = p_i, s = 1)
    rejected: w = max(r − q_i, 0), s = 1 / Σ w     (SpecInfer's residual: a rejected child's mass removed)
After the last node the walk has stopped at cur with every child of cur rejected (or none): one more token
is drawn from r by the exponential race with the request's Exp(1) vector (the bonus when no child of cur
was tried). So per request at most one race and one uniform per tried node (uniforms[r, i] for node i).
Lossless: for any q_i from which x_i was drawn, "accept x_i, else continue on the residual" leaves the law
of the next emitted token equal to r (by induction over the siblings), so every emitted token follows the
target (engine/proof/tree_exact.py enumerates it exactly). At temperature 0 (one-hot p and q) this is
exactly greedy. A chain (parents[i] = i − 1) takes the chain verifier's decisions bit for bit: the first
trial at a node uses s = 1 exactly, and the race runs over the unnormalized max(p − q, 0) as there.
If a residual has no positive mass (float rounding only) the walk keeps r (the chain's race over p).

May import: torch, stdlib, engine.verify, engine.sampling, engine.tree_triton (lazily).
"""

from __future__ import annotations

import torch

from engine.sampling import check_prob_rows
from engine.verify import accept_prob

BACKENDS = ("torch", "triton")


def _check_inputs(parents, tokens, draft_probs, target_probs, active) -> tuple[int, int, int]:
    if parents.dtype != torch.int64 or parents.ndim != 2:
        raise ValueError(f"parents: need int64 [R, N], got {parents.dtype} {tuple(parents.shape)}")
    r, n = parents.shape
    if n < 1:
        raise ValueError("parents: a tree needs its root (N >= 1)")
    if tokens.dtype != torch.int64 or tokens.shape != (r, n):
        raise ValueError(f"tokens: need int64 [R={r}, N={n}], got {tokens.dtype} {tuple(tokens.shape)}")
    if target_probs.ndim != 3 or target_probs.shape[:2] != (r, n) or target_probs.shape[2] < 1:
        raise ValueError(f"target_probs: need [R={r}, N={n}, V], got {tuple(target_probs.shape)}")
    vocab = target_probs.shape[2]
    if draft_probs.shape != (r, n, vocab):
        raise ValueError(f"draft_probs: need [R={r}, N={n}, V={vocab}], got {tuple(draft_probs.shape)}")
    if not (draft_probs.is_floating_point() and target_probs.is_floating_point()):
        raise ValueError("draft_probs/target_probs: need float tensors")
    if active.dtype != torch.bool or active.shape != (r, n):
        raise ValueError(f"active: need bool [R={r}, N={n}], got {active.dtype} {tuple(active.shape)}")
    devices = {t.device for t in (parents, tokens, draft_probs, target_probs, active)}
    if len(devices) != 1:
        raise ValueError(f"tree_verify: all tensors must be on one device, got {sorted(map(str, devices))}")
    return r, n, vocab


def check_tree(parents: torch.Tensor, active: torch.Tensor) -> None:
    """ValueError unless every active node i >= 1 has an active parent with index < i and the root is
    active (a node kept without its parent could never be reached: the set must be parent-closed)."""
    r, n = parents.shape
    if r and not bool(active[:, 0].all()):
        raise ValueError("active: the root (node 0) must be active in every request")
    idx = torch.arange(n, device=parents.device)
    bad = active[:, 1:] & ((parents[:, 1:] < 0) | (parents[:, 1:] >= idx[None, 1:]))
    if bool(bad.any()):
        i, j = (int(x) for x in torch.nonzero(bad)[0])
        raise ValueError(
            f"parents: node {j + 1} of request {i} has parent {int(parents[i, j + 1])}, need [0, {j + 1})"
        )
    par_active = active.gather(1, parents.clamp(min=0))
    bad = active & ~par_active
    bad[:, 0] = False
    if bool(bad.any()):
        i, j = (int(x) for x in torch.nonzero(bad)[0])
        raise ValueError(f"active: node {j} of request {i} is active but its parent is not")


def _check_rows(parents, tokens, draft_probs, target_probs, active) -> None:
    check_tree(parents, active)
    check_prob_rows(target_probs, "target_probs", active)
    live = active.clone()
    live[:, 0] = False
    check_prob_rows(draft_probs, "draft_probs", live)
    vocab = target_probs.shape[2]
    bad = live & ((tokens < 0) | (tokens >= vocab))
    if bool(bad.any()):
        i, j = (int(x) for x in torch.nonzero(bad)[0])
        raise ValueError(f"tokens: id {int(tokens[i, j])} at ({i}, {j}) is outside [0, {vocab})")
    qd = draft_probs.gather(2, torch.where(live, tokens, 0).unsqueeze(-1)).squeeze(-1)
    bad = live & (qd <= 0)
    if bool(bad.any()):
        i, j = (int(x) for x in torch.nonzero(bad)[0])
        raise ValueError(
            f"draft_probs: node {j} of request {i} has probability 0 for its own token {int(tokens[i, j])}; "
            "draft_probs must be the distribution the token was drawn from"
        )


def _check_noise(uniforms, exponentials, r, n, vocab, device) -> None:
    if uniforms.dtype != torch.float64 or uniforms.shape != (r, n) or uniforms.device != device:
        raise ValueError(f"uniforms: need float64 [R={r}, N={n}] on {device}, got {tuple(uniforms.shape)}")
    e_ok = exponentials.dtype == torch.float64 and exponentials.shape == (r, vocab)
    if not e_ok or exponentials.device != device:
        raise ValueError(
            f"exponentials: need float64 [R={r}, V={vocab}] on {device}, got {tuple(exponentials.shape)}"
        )
    if uniforms.numel() and not bool(((uniforms >= 0) & (uniforms < 1)).all()):
        raise ValueError("uniforms: acceptance uniforms must lie in [0, 1)")
    if exponentials.numel() and not bool((exponentials >= 0).all()):
        raise ValueError("exponentials: Exp(1) noise must be >= 0 and not NaN")


def tree_verify(
    parents: torch.Tensor,
    tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    *,
    active: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    uniforms: torch.Tensor | None = None,
    exponentials: torch.Tensor | None = None,
    backend: str = "torch",
    check: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Verify each request's tree; returns (emitted int64 [R, N] padded with -1, num_emitted int64 [R] =
    accepted + 1, path int64 [R, N]: the accepted nodes' indices in order, padded with -1).

    parents int64 [R, N] (entry 0 ignored); tokens int64 [R, N] (entry 0 ignored); draft_probs float
    [R, N, V] (row 0 ignored); target_probs float [R, N, V]; active bool [R, N] (the nodes this step
    verifies, parent-closed; None = all). Noise: uniforms float64 [R, N] on [0, 1) (column 0 unused) and
    exponentials float64 [R, V]; whichever is not given is drawn from `generator` (uniforms first).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: must be one of {BACKENDS}, got {backend!r}")
    if active is None:
        active = torch.ones(parents.shape, dtype=torch.bool, device=parents.device)
    r, n, vocab = _check_inputs(parents, tokens, draft_probs, target_probs, active)
    device = target_probs.device
    if uniforms is None:
        uniforms = torch.rand((r, n), dtype=torch.float64, device=device, generator=generator)
    if exponentials is None:
        exponentials = torch.empty((r, vocab), dtype=torch.float64, device=device).exponential_(
            generator=generator
        )
    _check_noise(uniforms, exponentials, r, n, vocab, device)
    if check:
        _check_rows(parents, tokens, draft_probs, target_probs, active)
    if backend == "triton":
        from engine.tree_triton import tree_verify_triton

        return tree_verify_triton(parents, tokens, draft_probs, target_probs, active, uniforms, exponentials)
    return _reference(parents, tokens, draft_probs, target_probs, active, uniforms, exponentials)


def _reference(parents, tokens, q, p, active, u, e):
    """The torch reference (the Triton kernel mirrors it operation by operation)."""
    r, n = parents.shape
    ar = torch.arange(r, device=p.device)
    cur = torch.zeros(r, dtype=torch.int64, device=p.device)
    w = p[:, 0].to(torch.float64)  # residual weights; r = scale · w
    scale = torch.ones(r, dtype=torch.float64, device=p.device)
    emitted = torch.full((r, n), -1, dtype=torch.int64, device=p.device)
    path = torch.full((r, n), -1, dtype=torch.int64, device=p.device)
    n_acc = torch.zeros(r, dtype=torch.int64, device=p.device)
    for i in range(1, n):
        tried = active[:, i] & (parents[:, i] == cur)
        if not bool(tried.any()):
            continue
        x = torch.where(tried, tokens[:, i], 0)
        qi = q[:, i].to(torch.float64)
        rx = w[ar, x] * scale
        acc = tried & (u[:, i] < accept_prob(rx, qi[ar, x]))
        rej = tried & ~acc
        resid = torch.clamp(w * scale[:, None] - qi, min=0.0)
        mass = resid.sum(-1)
        keep = mass > 0  # else (rounding only) keep the normalized residual as it was
        new_w = torch.where(keep[:, None], resid, w * scale[:, None])
        new_s = torch.where(keep, 1.0 / torch.where(keep, mass, 1.0), 1.0)
        w = torch.where(acc[:, None], p[:, i].to(torch.float64), torch.where(rej[:, None], new_w, w))
        scale = torch.where(acc, 1.0, torch.where(rej, new_s, scale))
        emitted[ar[acc], n_acc[acc]] = x[acc]
        path[ar[acc], n_acc[acc]] = i
        n_acc = n_acc + acc.to(torch.int64)
        cur = torch.where(acc, i, cur)
    scores = torch.where(w > 0, w / e, 0.0)
    best, token = scores.max(dim=-1)
    emitted[ar, n_acc] = token
    return emitted, n_acc + 1, path


def chain_tree(r: int, gamma: int, device="cpu") -> torch.Tensor:
    """parents int64 [R, γ+1] of a chain (node i's parent is i − 1): the chain as a width-1 tree."""
    return (torch.arange(gamma + 1, device=device) - 1).clamp(min=0).expand(r, gamma + 1).contiguous()


def node_depths(parents: torch.Tensor) -> torch.Tensor:
    """int64 [R, N]: each node's depth (root 0) from the parent array (parents[i] < i)."""
    r, n = parents.shape
    depth = torch.zeros((r, n), dtype=torch.int64, device=parents.device)
    for i in range(1, n):
        depth[:, i] = depth.gather(1, parents[:, i : i + 1].clamp(min=0, max=i - 1)).squeeze(1) + 1
    return depth


def ancestors(parents: torch.Tensor) -> torch.Tensor:
    """bool [R, N, N]: anc[r, i, j] iff node j is node i or an ancestor of it (the tree attention mask of the
    drafted nodes among themselves)."""
    r, n = parents.shape
    anc = torch.eye(n, dtype=torch.bool, device=parents.device).expand(r, n, n).clone()
    for i in range(1, n):
        par = parents[:, i].clamp(min=0, max=i - 1)
        anc[:, i] |= anc[torch.arange(r, device=parents.device), par]
    return anc


def commit_path(cache, slots: torch.Tensor, path: torch.Tensor, num_emitted: torch.Tensor) -> None:
    """Move the accepted nodes' keys/values to their chain positions and advance the length pointers.

    After a tree-masked forward (`TinyLM.run(..., parents=...)`) node j of slot s sits at cache position
    start + j; the accepted path's k-th node (path[r, k], k < num_emitted − 1) belongs at start + 1 + k
    (the root, node 0, is already at start). The pointer then advances past root + accepted nodes; the
    bonus/residual token is fed by the next step, as in the chain loop."""
    start = cache.lengths[slots]
    n_acc = num_emitted - 1
    for k in range(int(n_acc.max()) if n_acc.numel() else 0):
        rows = torch.nonzero(n_acc > k).squeeze(1)
        src = start[rows] + path[rows, k]
        dst = start[rows] + 1 + k
        sl = slots[rows]
        cache.k[:, sl, :, dst] = cache.k[:, sl, :, src]
        cache.v[:, sl, :, dst] = cache.v[:, sl, :, src]
    cache.lengths[slots] = start + 1 + n_acc
