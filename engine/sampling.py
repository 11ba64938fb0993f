"""The one sampling module: logits -> the exact probability vector that is sampled from -> a token.

Role: plain decoding, drafting and verification all call `probs_from_logits` with the request's
`SamplingParams`, so a verify row is truncated exactly as the non-speculative sampler truncates it and the
draft's `q` is exactly the distribution its token was drawn from. Sampling is an exponential race
(`argmax_v w_v / E_v`, E ~ Exp(1), equivalent to Gumbel-max) with the noise passed in explicitly, so it can be
keyed per request and position (engine.noise) or injected by tests. `exact_transform` is the same transform
on `fractions.Fraction` vectors, used by the exact-enumeration tests.

Order of the transform: temperature -> top-k -> top-p (sequential: top-p acts on the renormalized top-k
distribution) -> renormalize. Ties are broken towards the lower token id everywhere (stable sort, first
argmax). temperature == 0 means greedy: a one-hot vector at the first argmax.

May import: torch, stdlib.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import torch


@dataclass(frozen=True)
class SamplingParams:
    """temperature (0 = greedy), top_k (0 = off), top_p (1.0 = off)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        t = float(self.temperature)
        if not math.isfinite(t) or t < 0:
            raise ValueError(f"SamplingParams field 'temperature': must be finite and >= 0, got {t}")
        if isinstance(self.top_k, bool) or int(self.top_k) != self.top_k or self.top_k < 0:
            raise ValueError(f"SamplingParams field 'top_k': must be an integer >= 0, got {self.top_k}")
        p = float(self.top_p)
        if not (0.0 < p <= 1.0):
            raise ValueError(f"SamplingParams field 'top_p': must be in (0, 1], got {p}")

    @property
    def greedy(self) -> bool:
        return float(self.temperature) == 0.0


def _param_columns(params, rows: int, ndim: int, device) -> tuple[torch.Tensor, ...]:
    """Per-row (temperature, top_k, top_p) tensors shaped [rows, 1, ..., 1] (ndim dims in all)."""
    if isinstance(params, SamplingParams):
        params = [params] * rows
    if len(params) != rows:
        raise ValueError(
            f"params: expected 1 or {rows} SamplingParams (one per leading row), got {len(params)}"
        )
    shape = (rows,) + (1,) * (ndim - 1)
    temp = torch.tensor([float(p.temperature) for p in params], dtype=torch.float64, device=device)
    top_k = torch.tensor([int(p.top_k) for p in params], dtype=torch.int64, device=device)
    top_p = torch.tensor([float(p.top_p) for p in params], dtype=torch.float64, device=device)
    return temp.view(shape), top_k.view(shape), top_p.view(shape)


def probs_from_logits(
    logits: torch.Tensor, params: SamplingParams | Sequence[SamplingParams]
) -> torch.Tensor:
    """Probability vectors from `logits: float[R, ..., V]`; `params` is one SamplingParams or one per row R.

    Returns the same shape and dtype. Greedy rows are one-hot. NaN logits give NaN rows (rejected later by
    `sample` and the verifier with a clear error).
    """
    if logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits: need a last (vocabulary) dimension >= 1, got shape {tuple(logits.shape)}")
    if logits.ndim == 1:
        return probs_from_logits(logits.unsqueeze(0), params).squeeze(0)
    vocab = logits.shape[-1]
    temp, top_k, top_p = _param_columns(params, logits.shape[0], logits.ndim, logits.device)
    greedy = temp == 0
    scaled = logits / torch.where(greedy, 1.0, temp).to(logits.dtype)
    sorted_z, order = torch.sort(scaled, dim=-1, descending=True, stable=True)
    ranks = torch.arange(vocab, device=logits.device)
    keep_k = (top_k == 0) | (ranks < top_k)
    sorted_z = torch.where(keep_k, sorted_z, float("-inf"))
    sorted_p = torch.softmax(sorted_z, dim=-1)
    # Exclusive cumulative mass before each sorted token: keep while it is < top_p (the first always stays).
    # float64 so the cut matches exact_transform's Fraction(top_p) up to the sum's rounding.
    cum = torch.cumsum(sorted_p.to(torch.float64), dim=-1)
    before = torch.cat([torch.zeros_like(cum[..., :1]), cum[..., :-1]], dim=-1)
    keep_p = (top_p >= 1.0) | (before < top_p)
    sorted_p = torch.where(keep_p, sorted_p, 0.0)
    sorted_p = sorted_p / sorted_p.sum(dim=-1, keepdim=True)
    probs = torch.zeros_like(sorted_p).scatter(-1, order, sorted_p)
    one_hot = torch.nn.functional.one_hot(logits.argmax(dim=-1), vocab).to(logits.dtype)
    return torch.where(greedy, one_hot, probs)


def check_prob_rows(
    probs: torch.Tensor, name: str, rows: torch.Tensor | None = None, tol: float = 1e-3
) -> None:
    """Raise ValueError naming `name` and the first bad row unless every selected row of `probs: [..., V]` is
    a probability vector (finite, >= 0, sum within `tol` of 1). `rows`: bool mask over the leading dims."""
    flat = probs.reshape(-1, probs.shape[-1])
    sel = (
        torch.ones(flat.shape[0], dtype=torch.bool, device=probs.device) if rows is None else rows.reshape(-1)
    )
    finite = torch.isfinite(flat).all(-1)
    nonneg = (flat >= 0).all(-1)
    total = torch.where(finite, flat.sum(-1, dtype=torch.float64), 0.0)
    problems = [
        (~finite, "contains NaN or inf"),
        (~nonneg, "has a negative entry"),
        (total <= 0, "is all zero"),
        ((total - 1.0).abs() > tol, "does not sum to 1"),
    ]
    for bad, what in problems:
        hit = torch.nonzero(bad & sel)
        if hit.numel():
            i = int(hit[0, 0])
            index = tuple(int(j) for j in torch.unravel_index(torch.tensor(i), probs.shape[:-1]))
            raise ValueError(
                f"{name}: row {index} {what} (sum={float(total[i]):.6g}); rows must be probabilities"
            )


def race(weights: torch.Tensor, exponentials: torch.Tensor) -> torch.Tensor:
    """Exponential race over the last dim: argmax_v w_v / E_v, i.e. a draw from w / sum(w) when E ~ Exp(1).

    `weights: float[..., V]` (unnormalized, >= 0), `exponentials: float64[..., V]`. Zero weights score 0 and
    never win against a positive weight; ties go to the lower id. Computed in float64 so the Triton kernel can
    reproduce it bit for bit. No validation here (callers check rows); returns int64 [...].
    """
    w = weights.to(torch.float64)
    scores = torch.where(w > 0, w / exponentials, 0.0)
    return scores.argmax(dim=-1)


def sample(probs: torch.Tensor, exponentials: torch.Tensor) -> torch.Tensor:
    """Draw one token per row of `probs: float[..., V]` with the given Exp(1) noise; checks the rows first."""
    check_prob_rows(probs, "probs")
    if exponentials.shape != probs.shape:
        raise ValueError(f"exponentials: shape {tuple(exponentials.shape)} != probs {tuple(probs.shape)}")
    return race(probs, exponentials)


def exact_transform(p: Sequence[Fraction], params: SamplingParams) -> list[Fraction]:
    """The same transform as `probs_from_logits`, exactly on a probability vector of Fractions.

    Temperature must be 0 or 1/n for an integer n >= 1 (then p^(1/T) stays rational). Used as the reference
    by the exact tests: `probs_from_logits(log p)` must agree with it (same support, equal up to rounding).
    """
    p = [Fraction(x) for x in p]
    vocab = len(p)
    if params.greedy:
        best = max(range(vocab), key=lambda i: (p[i], -i))
        return [Fraction(int(i == best)) for i in range(vocab)]
    inv_t = 1 / Fraction(params.temperature).limit_denominator(10**6)
    if inv_t.denominator != 1:
        raise ValueError(f"exact_transform: temperature must be 1/n, got {params.temperature}")
    w = [x ** int(inv_t) for x in p]
    order = sorted(range(vocab), key=lambda i: (-w[i], i))
    kept = order[: params.top_k] if params.top_k else order
    total = sum(w[i] for i in kept)
    w = [w[i] / total if i in kept else Fraction(0) for i in range(vocab)]
    if params.top_p < 1.0:
        top_p, before, keep = Fraction(params.top_p), Fraction(0), set()
        for i in order:
            if before < top_p:
                keep.add(i)
            before += w[i]
        total = sum(w[i] for i in keep)
        w = [w[i] / total if i in keep else Fraction(0) for i in range(vocab)]
    return w
