"""Triton kernel for `engine.verify.rejection_sample(..., backend="triton")`: one program per request.

Role: the same results as the torch reference (engine.verify._reference) bit for bit given the same noise:
the acceptance test `u < min(1, p/q)` and the race `max(p - q, 0) / E` are computed in float64 with IEEE
division in both (fp64 division in Triton is round-to-nearest on CUDA and numpy-exact in the interpreter),
argmax ties go to the lower id, and padded lanes score -1 so no id outside [0, V) can win. Inputs are checked
by the caller (engine.verify); this module only launches.

Triton is imported lazily, on the first call: for CPU tensors it must run in the interpreter, which Triton
only honours if TRITON_INTERPRET=1 is set before `import triton`; this module sets it when it imports triton
itself and raises a clear error when triton was already imported in the other mode. Without triton (it is
Linux-only) the call raises TritonUnavailableError; backend="torch" always works.

May import: torch, triton (lazily), stdlib.
"""

from __future__ import annotations

import os
import sys

import torch

MAX_BLOCK_V = 4096
_KERNEL: dict[str, object] = {}


class TritonUnavailableError(RuntimeError):
    """backend="triton" cannot run here (no triton package, or triton imported in the wrong mode)."""


def _interpreted(triton_module) -> bool:
    """Whether triton's own jit functions (tl.argmax) were built for the interpreter."""
    return type(triton_module.language.standard.argmax).__name__ == "InterpretedFunction"


def _import_triton(device: torch.device):
    want_interpret = device.type != "cuda"
    if "triton" not in sys.modules and want_interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        import triton
        import triton.language
    except ImportError as err:
        raise TritonUnavailableError(
            f"backend='triton' needs the triton package (Linux only): {err}; use backend='torch'"
        ) from err
    if _interpreted(triton) != want_interpret:
        mode = "interpreter" if _interpreted(triton) else "native (CUDA)"
        raise TritonUnavailableError(
            f"triton was imported in {mode} mode but the tensors are on {device}; for CPU tensors set "
            "TRITON_INTERPRET=1 before triton is first imported, for CUDA tensors leave it unset"
        )
    return triton


def _kernel(device: torch.device):
    key = "interpret" if device.type != "cuda" else "cuda"
    if key in _KERNEL:
        return _KERNEL[key]
    triton = _import_triton(device)
    tl = triton.language

    @triton.jit
    def rejection_kernel(
        d_ptr, q_ptr, p_ptr, len_ptr, u_ptr, e_ptr, out_ptr, nemit_ptr,
        V, GAMMA,
        sd0, sd1, sq0, sq1, sq2, sp0, sp1, sp2, su0, su1, se0, se1, so0, so1,
        BLOCK_V: tl.constexpr,
    ):  # fmt: skip
        r = tl.program_id(0).to(tl.int64)
        length = tl.load(len_ptr + r)
        n_acc = tl.full((), 0, tl.int64)
        alive = length > 0
        # Acceptance walk: stop (alive = False) at the first rejection or at the verify length.
        for k in range(0, GAMMA):
            live = alive & (k < length)
            d = tl.load(d_ptr + r * sd0 + k * sd1, mask=live, other=0)
            pd = tl.load(p_ptr + r * sp0 + k * sp1 + d * sp2, mask=live, other=0.0).to(tl.float64)
            qd = tl.load(q_ptr + r * sq0 + k * sq1 + d * sq2, mask=live, other=0.0).to(tl.float64)
            u = tl.load(u_ptr + r * su0 + k * su1, mask=live, other=1.0)
            pos = qd > 0
            a = tl.where(pos, tl.minimum(pd / tl.where(pos, qd, 1.0), 1.0), 0.0)
            acc = live & (u < a)
            tl.store(out_ptr + r * so0 + k * so1, d, mask=acc)
            n_acc += acc.to(tl.int64)
            alive = acc
        # One race over the emission row: residual max(p - q, 0) at a rejection, p itself for the bonus.
        drafted = n_acc < length  # a rejection happened: the race reads the residual of row n_acc
        q_row = tl.minimum(n_acc, GAMMA - 1)
        best_s = tl.full((), -1.0, tl.float64)
        best_i = tl.full((), 0, tl.int64)
        for v0 in range(0, V, BLOCK_V):
            offs = v0 + tl.arange(0, BLOCK_V)
            m = offs < V
            pv = tl.load(p_ptr + r * sp0 + n_acc * sp1 + offs * sp2, mask=m, other=0.0).to(tl.float64)
            q_off = r * sq0 + q_row * sq1 + offs * sq2
            qv = tl.where(drafted, tl.load(q_ptr + tl.where(drafted, q_off, 0), mask=m, other=0.0), 0.0)
            ev = tl.load(e_ptr + r * se0 + offs * se1, mask=m, other=1.0)
            w = tl.maximum(pv - qv.to(tl.float64), 0.0)
            s = tl.where(m, tl.where(w > 0, w / ev, 0.0), -1.0)
            bs = tl.max(s, 0)
            bi = tl.argmax(s, 0)
            take = bs > best_s
            best_i = tl.where(take, v0 + bi, best_i)
            best_s = tl.where(take, bs, best_s)
        if best_s <= 0:  # no residual mass (float rounding only): race over p instead, as the reference does
            best_s = tl.full((), -1.0, tl.float64)
            for v0 in range(0, V, BLOCK_V):
                offs = v0 + tl.arange(0, BLOCK_V)
                m = offs < V
                pv = tl.load(p_ptr + r * sp0 + n_acc * sp1 + offs * sp2, mask=m, other=0.0).to(tl.float64)
                ev = tl.load(e_ptr + r * se0 + offs * se1, mask=m, other=1.0)
                s = tl.where(m, tl.where(pv > 0, pv / ev, 0.0), -1.0)
                bs = tl.max(s, 0)
                bi = tl.argmax(s, 0)
                take = bs > best_s
                best_i = tl.where(take, v0 + bi, best_i)
                best_s = tl.where(take, bs, best_s)
        tl.store(out_ptr + r * so0 + n_acc * so1, best_i)
        tl.store(nemit_ptr + r, n_acc + 1)

    _KERNEL[key] = rejection_kernel
    return rejection_kernel


def rejection_sample_triton(d, q, p, lengths, u, e) -> tuple[torch.Tensor, torch.Tensor]:
    """Launch the kernel on already-checked inputs (see engine.verify.rejection_sample for the contract)."""
    kernel = _kernel(p.device)
    r, gamma = d.shape
    vocab = p.shape[2]
    tokens = torch.full((r, gamma + 1), -1, dtype=torch.int64, device=p.device)
    num_emitted = torch.empty(r, dtype=torch.int64, device=p.device)
    if r == 0:
        return tokens, num_emitted
    block = min(MAX_BLOCK_V, 1 << max(vocab - 1, 1).bit_length())
    q_arg = q if gamma else torch.zeros((r, 1, vocab), dtype=p.dtype, device=p.device)
    kernel[(r,)](
        d, q_arg, p, lengths, u, e, tokens, num_emitted,
        vocab, gamma,
        d.stride(0), d.stride(1) if gamma else 0, *q_arg.stride(), *p.stride(),
        u.stride(0), u.stride(1) if gamma else 0, *e.stride(), *tokens.stride(),
        BLOCK_V=block,
    )  # fmt: skip
    return tokens, num_emitted
