"""Batched lossless verification of ragged draft prefixes: rejection sampling (standard) and sampler-match
(coupled mode), with the pure acceptance and residual rules the exact tests enumerate.

Role: `rejection_sample` is the public verifier (torch reference here, Triton kernel in engine.verify_triton,
bit-identical under the same noise). Per request r with ℓ = lengths[r] drafts to verify:
  - draft k < ℓ is accepted iff u[r, k] < accept_prob(p_k(d_k), q_k(d_k)) (float64), stopping at the first
    rejection; u is uniform on [0, 1), so P(accept) = min(1, p/q) exactly and a token with p = 0 is never
    accepted (not even at u = 0);
  - on a rejection at k the next token is drawn from residual(p_k, q_k) = norm(max(p_k - q_k, 0)); if all ℓ
    were accepted the bonus token is drawn from the target row ℓ (so ℓ = 0 draws from target row 0);
  - both draws are one exponential race with the request's own Exp(1) vector `exponentials[r]` (at most one
    residual-or-bonus token per request is emitted, so one vector serves every position). Acceptance
    uniforms and race exponentials are separate noise, never derived from each other.
  - if the residual has no positive mass (only possible through float rounding of p ~ q), the race runs over
    p_k instead; with exact arithmetic a rejection implies positive residual mass.
Rows that are read (target rows k <= ℓ, draft rows k < ℓ) must be probability vectors (finite, >= 0, summing
to 1 within 1e-3) and each verified draft token must have q > 0; otherwise ValueError names the argument and
row. Even with check=False no id outside [0, V) can be emitted.

May import: torch, stdlib, engine.sampling, engine.verify_triton (lazily).
"""

from __future__ import annotations

import torch

from engine.sampling import check_prob_rows, race

BACKENDS = ("torch", "triton")


def accept_prob(p, q):
    """P(accept a draft token) = min(1, p/q), and 0 where q == 0 (the draft could not have proposed it).

    Scalars (Fraction, int, float) give an exact scalar; tensors give float64 elementwise (the verifier calls
    this form with the gathered p(d), q(d))."""
    if isinstance(p, torch.Tensor) or isinstance(q, torch.Tensor):
        p = torch.as_tensor(p, dtype=torch.float64)
        q = torch.as_tensor(q, dtype=torch.float64, device=p.device)
        pos = q > 0
        return torch.where(pos, torch.clamp(p / torch.where(pos, q, 1.0), max=1.0), 0.0)
    if q <= 0:
        return p * 0
    ratio = p / q
    return ratio if ratio < 1 else ratio * 0 + 1


def residual_weights(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Unnormalized residual max(p - q, 0) in float64 over the last dim (what the race samples from)."""
    return torch.clamp(p.to(torch.float64) - q.to(torch.float64), min=0.0)


def residual(p, q):
    """The residual distribution norm(max(p - q, 0)); falls back to norm(p) when it has no mass.

    `p, q`: equal-length sequences of numbers (exact for Fractions) or float tensors [..., V] (float64
    out)."""
    if isinstance(p, torch.Tensor):
        w = residual_weights(p, q)
        mass = w.sum(-1, keepdim=True)
        pw = p.to(torch.float64)
        return torch.where(mass > 0, w / torch.where(mass > 0, mass, 1.0), pw / pw.sum(-1, keepdim=True))
    if len(p) != len(q):
        raise ValueError(f"residual: p and q differ in length ({len(p)} != {len(q)})")
    w = [a - b if a > b else a * 0 for a, b in zip(p, q)]
    mass = sum(w)
    if mass == 0:
        mass, w = sum(p), list(p)
    return [x / mass for x in w]


def _check_inputs(draft_tokens, draft_probs, target_probs, lengths) -> tuple[int, int, int]:
    if draft_tokens.dtype != torch.int64 or draft_tokens.ndim != 2:
        raise ValueError(
            f"draft_tokens: need int64 [R, gamma], got {draft_tokens.dtype} {tuple(draft_tokens.shape)}"
        )
    r, gamma = draft_tokens.shape
    if target_probs.ndim != 3 or target_probs.shape[:2] != (r, gamma + 1) or target_probs.shape[2] < 1:
        raise ValueError(
            f"target_probs: need [R={r}, gamma+1={gamma + 1}, V], got {tuple(target_probs.shape)}"
        )
    vocab = target_probs.shape[2]
    if draft_probs.shape != (r, gamma, vocab):
        raise ValueError(
            f"draft_probs: need [R={r}, gamma={gamma}, V={vocab}], got {tuple(draft_probs.shape)}"
        )
    if not (draft_probs.is_floating_point() and target_probs.is_floating_point()):
        raise ValueError(
            f"draft_probs/target_probs: need float tensors, got {draft_probs.dtype}/{target_probs.dtype}"
        )
    if lengths.dtype != torch.int64 or lengths.shape != (r,):
        raise ValueError(f"lengths: need int64 [R={r}], got {lengths.dtype} {tuple(lengths.shape)}")
    devices = {t.device for t in (draft_tokens, draft_probs, target_probs, lengths)}
    if len(devices) != 1:
        raise ValueError(
            f"rejection_sample: all tensors must be on one device, got {sorted(map(str, devices))}"
        )
    if r and (int(lengths.min()) < 0 or int(lengths.max()) > gamma):
        raise ValueError(
            f"lengths: must lie in [0, gamma={gamma}], got min {int(lengths.min())} max {int(lengths.max())}"
        )
    return r, gamma, vocab


def _check_rows(draft_tokens, draft_probs, target_probs, lengths) -> None:
    r, gamma = draft_tokens.shape
    k = torch.arange(gamma + 1, device=lengths.device)
    check_prob_rows(target_probs, "target_probs", k[None, :] <= lengths[:, None])
    live = k[None, :gamma] < lengths[:, None]
    check_prob_rows(draft_probs, "draft_probs", live)
    vocab = target_probs.shape[2]
    bad = live & ((draft_tokens < 0) | (draft_tokens >= vocab))
    if bool(bad.any()):
        i, j = (int(x) for x in torch.nonzero(bad)[0])
        raise ValueError(f"draft_tokens: id {int(draft_tokens[i, j])} at ({i}, {j}) is outside [0, {vocab})")
    qd = draft_probs.gather(2, torch.where(live, draft_tokens, 0).unsqueeze(-1)).squeeze(-1)
    bad = live & (qd <= 0)
    if bool(bad.any()):
        i, j = (int(x) for x in torch.nonzero(bad)[0])
        raise ValueError(
            f"draft_probs: draft token {int(draft_tokens[i, j])} at ({i}, {j}) has probability 0 under the "
            "draft distribution; draft_probs must be the distribution the token was sampled from"
        )


def _check_noise(uniforms, exponentials, r, gamma, vocab, device) -> None:
    if uniforms.dtype != torch.float64 or uniforms.shape != (r, gamma) or uniforms.device != device:
        raise ValueError(
            f"uniforms: need float64 [R={r}, gamma={gamma}] on {device}, got "
            f"{uniforms.dtype} {tuple(uniforms.shape)} on {uniforms.device}"
        )
    if (
        exponentials.dtype != torch.float64
        or exponentials.shape != (r, vocab)
        or exponentials.device != device
    ):
        raise ValueError(
            f"exponentials: need float64 [R={r}, V={vocab}] on {device}, got "
            f"{exponentials.dtype} {tuple(exponentials.shape)} on {exponentials.device}"
        )
    if uniforms.numel() and not bool(((uniforms >= 0) & (uniforms < 1)).all()):
        raise ValueError("uniforms: acceptance uniforms must lie in [0, 1)")
    if exponentials.numel() and not bool((exponentials >= 0).all()):
        raise ValueError("exponentials: Exp(1) noise must be >= 0 and not NaN")


def rejection_sample(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    lengths: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    uniforms: torch.Tensor | None = None,
    exponentials: torch.Tensor | None = None,
    backend: str = "torch",
    check: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Verify the first lengths[r] drafts of each request; returns (tokens int64 [R, γ+1] padded with -1,
    num_emitted int64 [R] = accepted + 1).

    draft_tokens int64 [R, γ]; draft_probs float [R, γ, V] (the distribution each draft was sampled from);
    target_probs float [R, γ+1, V]; lengths int64 [R] in [0, γ]. Noise: `uniforms` float64 [R, γ] on [0, 1)
    (acceptance) and `exponentials` float64 [R, V] (residual/bonus race); whichever is not given is drawn from
    `generator` (uniforms first, then exponentials). `check=False` skips the row checks (trusted callers).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: must be one of {BACKENDS}, got {backend!r}")
    r, gamma, vocab = _check_inputs(draft_tokens, draft_probs, target_probs, lengths)
    device = target_probs.device
    if uniforms is None:
        uniforms = torch.rand((r, gamma), dtype=torch.float64, device=device, generator=generator)
    if exponentials is None:
        exponentials = torch.empty((r, vocab), dtype=torch.float64, device=device).exponential_(
            generator=generator
        )
    _check_noise(uniforms, exponentials, r, gamma, vocab, device)
    if check:
        _check_rows(draft_tokens, draft_probs, target_probs, lengths)
    if backend == "triton":
        from engine.verify_triton import rejection_sample_triton

        return rejection_sample_triton(
            draft_tokens, draft_probs, target_probs, lengths, uniforms, exponentials
        )
    return _reference(draft_tokens, draft_probs, target_probs, lengths, uniforms, exponentials)


def _reference(d, q, p, lengths, u, e) -> tuple[torch.Tensor, torch.Tensor]:
    """The torch reference (the Triton kernel mirrors it operation by operation)."""
    r, gamma = d.shape
    ar = torch.arange(r, device=p.device)
    k = torch.arange(gamma, device=p.device)
    live = k[None, :] < lengths[:, None]
    d_safe = torch.where(live, d, 0).unsqueeze(-1)
    pd = p[:, :gamma].gather(2, d_safe).squeeze(-1)
    qd = q.gather(2, d_safe).squeeze(-1)
    accepted = live & (u < accept_prob(pd, qd))
    n_acc = torch.cumprod(accepted.to(torch.int64), dim=1).sum(dim=1)
    bonus = n_acc == lengths
    p_row = p[ar, n_acc]
    if gamma:
        q_row = torch.where(bonus[:, None], 0.0, q[ar, n_acc.clamp(max=gamma - 1)])
    else:
        q_row = torch.zeros_like(p_row)
    token = _race_with_fallback(residual_weights(p_row, q_row), p_row, e)
    tokens = torch.full((r, gamma + 1), -1, dtype=torch.int64, device=p.device)
    tokens[:, :gamma] = torch.where(k[None, :] < n_acc[:, None], d, -1)
    tokens[ar, n_acc] = token
    return tokens, n_acc + 1


def _race_with_fallback(w: torch.Tensor, p_row: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    scores = torch.where(w > 0, w / e, 0.0)
    best, token = scores.max(dim=-1)
    if bool((best <= 0).any()):
        token = torch.where(best <= 0, race(p_row, e), token)
    return token


def match_verify(
    draft_tokens: torch.Tensor,
    target_probs: torch.Tensor,
    lengths: torch.Tensor,
    exponentials: torch.Tensor,
    *,
    check: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sampler-match verification (coupled mode): the target samples every row with the position's own
    noise `exponentials: float64 [R, γ+1, V]`; drafts are kept while they equal the target's token.

    The emitted tokens are then exactly the target's samples, i.e. what plain decoding with the same keyed
    noise emits, whatever the drafts and lengths. Returns (tokens [R, γ+1] padded with -1,
    num_emitted [R])."""
    r, gamma = draft_tokens.shape
    if target_probs.shape[:2] != (r, gamma + 1) or exponentials.shape != target_probs.shape:
        raise ValueError(
            f"match_verify: target_probs {tuple(target_probs.shape)} and exponentials "
            f"{tuple(exponentials.shape)} must both be [R={r}, gamma+1={gamma + 1}, V]"
        )
    k = torch.arange(gamma + 1, device=target_probs.device)
    if check:
        check_prob_rows(target_probs, "target_probs", k[None, :] <= lengths[:, None])
    target = race(target_probs, exponentials)
    live = k[None, :gamma] < lengths[:, None]
    n_acc = torch.cumprod((live & (draft_tokens == target[:, :gamma])).to(torch.int64), dim=1).sum(dim=1)
    tokens = torch.where(k[None, :] <= n_acc[:, None], target, -1)
    return tokens, n_acc + 1
