"""Triton kernel for `engine.tree_verify.tree_verify(..., backend="triton")`: one program per request.

Role: the tree walk of engine.tree_verify._reference, operation by operation in float64: node i is tried
when active and its parent is the current node; accept iff u < min(1, s·w(x)/q(x)); an accepted node
reloads w from its target row (s = 1), a rejected one writes w = max(s·w − q, 0) and s = 1/Σw (kept when
Σw = 0); a final exponential race over w. The residual lives in a float64 scratch row per request. The
residual's mass Σw is a reduction whose order differs from torch's, so s can differ from the reference in
its last bit after a rejection: a decision can then differ only when a uniform falls within ~1e-16 of its
threshold (never seen in the tests); every decision with s = 1 (first trial at a node, every chain) and
every race is bit-identical. Triton is imported through engine.verify_triton's loader (interpreter on
CPU when TRITON_INTERPRET=1 can still be set, native on CUDA).

May import: torch, triton (lazily), stdlib, engine.verify_triton.
"""

from __future__ import annotations

import torch

from engine.verify_triton import MAX_BLOCK_V, _import_triton

_KERNEL: dict[str, object] = {}


def _kernel(device: torch.device):
    key = "interpret" if device.type != "cuda" else "cuda"
    if key in _KERNEL:
        return _KERNEL[key]
    triton = _import_triton(device)
    tl = triton.language

    @triton.jit
    def tree_kernel(
        par_ptr, tok_ptr, q_ptr, p_ptr, act_ptr, u_ptr, e_ptr, w_ptr, out_ptr, path_ptr, nemit_ptr,
        V, N,
        sa0, sa1, sq0, sq1, sq2, sp0, sp1, sp2, su0, su1, se0, se1, so0, so1,
        BLOCK_V: tl.constexpr,
    ):  # fmt: skip
        r = tl.program_id(0).to(tl.int64)
        wrow = w_ptr + r * V
        for v0 in range(0, V, BLOCK_V):  # w = p_root
            offs = v0 + tl.arange(0, BLOCK_V)
            m = offs < V
            pv = tl.load(p_ptr + r * sp0 + offs * sp2, mask=m, other=0.0).to(tl.float64)
            tl.store(wrow + offs, pv, mask=m)
        cur = tl.full((), 0, tl.int64)
        scale = tl.full((), 1.0, tl.float64)
        n_acc = tl.full((), 0, tl.int64)
        for i in range(1, N):
            act = tl.load(act_ptr + r * sa0 + i * sa1) != 0
            par = tl.load(par_ptr + r * sa0 + i * sa1)
            if act & (par == cur):
                x = tl.load(tok_ptr + r * sa0 + i * sa1)
                qx = tl.load(q_ptr + r * sq0 + i * sq1 + x * sq2).to(tl.float64)
                rx = tl.load(wrow + x) * scale
                pos = qx > 0
                a = tl.where(pos, tl.minimum(rx / tl.where(pos, qx, 1.0), 1.0), 0.0)
                u = tl.load(u_ptr + r * su0 + i * su1)
                if u < a:
                    for v0 in range(0, V, BLOCK_V):
                        offs = v0 + tl.arange(0, BLOCK_V)
                        m = offs < V
                        pv = tl.load(p_ptr + r * sp0 + i * sp1 + offs * sp2, mask=m, other=0.0)
                        tl.store(wrow + offs, pv.to(tl.float64), mask=m)
                    tl.store(out_ptr + r * so0 + n_acc * so1, x)
                    tl.store(path_ptr + r * so0 + n_acc * so1, i)
                    n_acc += 1
                    cur = tl.full((), 0, tl.int64) + i
                    scale = tl.full((), 1.0, tl.float64)
                else:
                    mass = tl.full((), 0.0, tl.float64)
                    for v0 in range(0, V, BLOCK_V):
                        offs = v0 + tl.arange(0, BLOCK_V)
                        m = offs < V
                        wv = tl.load(wrow + offs, mask=m, other=0.0)
                        qv = tl.load(q_ptr + r * sq0 + i * sq1 + offs * sq2, mask=m, other=0.0)
                        mass += tl.sum(tl.maximum(wv * scale - qv.to(tl.float64), 0.0), 0)
                    keep = mass > 0
                    for v0 in range(0, V, BLOCK_V):
                        offs = v0 + tl.arange(0, BLOCK_V)
                        m = offs < V
                        wv = tl.load(wrow + offs, mask=m, other=0.0)
                        qv = tl.load(q_ptr + r * sq0 + i * sq1 + offs * sq2, mask=m, other=0.0)
                        res = tl.maximum(wv * scale - qv.to(tl.float64), 0.0)
                        tl.store(wrow + offs, tl.where(keep, res, wv * scale), mask=m)
                    scale = tl.where(keep, 1.0 / tl.where(keep, mass, 1.0), 1.0)
        best_s = tl.full((), -1.0, tl.float64)
        best_i = tl.full((), 0, tl.int64)
        for v0 in range(0, V, BLOCK_V):
            offs = v0 + tl.arange(0, BLOCK_V)
            m = offs < V
            wv = tl.load(wrow + offs, mask=m, other=0.0)
            ev = tl.load(e_ptr + r * se0 + offs * se1, mask=m, other=1.0)
            s = tl.where(m, tl.where(wv > 0, wv / ev, 0.0), -1.0)
            bs = tl.max(s, 0)
            bi = tl.argmax(s, 0)
            take = bs > best_s
            best_i = tl.where(take, v0 + bi, best_i)
            best_s = tl.where(take, bs, best_s)
        tl.store(out_ptr + r * so0 + n_acc * so1, best_i)
        tl.store(nemit_ptr + r, n_acc + 1)

    _KERNEL[key] = tree_kernel
    return tree_kernel


def tree_verify_triton(parents, tokens, q, p, active, u, e):
    """Launch the kernel on already-checked inputs (see engine.tree_verify.tree_verify for the contract)."""
    kernel = _kernel(p.device)
    r, n = parents.shape
    vocab = p.shape[2]
    emitted = torch.full((r, n), -1, dtype=torch.int64, device=p.device)
    path = torch.full((r, n), -1, dtype=torch.int64, device=p.device)
    num = torch.empty(r, dtype=torch.int64, device=p.device)
    if r == 0:
        return emitted, num, path
    parents, tokens = parents.contiguous(), tokens.contiguous()
    act = active.to(torch.int64).contiguous()
    scratch = torch.empty((r, vocab), dtype=torch.float64, device=p.device)
    block = min(MAX_BLOCK_V, 1 << max(vocab - 1, 1).bit_length())
    kernel[(r,)](
        parents, tokens, q, p, act, u, e, scratch, emitted, path, num,
        vocab, n,
        parents.stride(0), parents.stride(1), *q.stride(), *p.stride(),
        u.stride(0), u.stride(1), *e.stride(), *emitted.stride(),
        BLOCK_V=block,
    )  # fmt: skip
    return emitted, num, path
