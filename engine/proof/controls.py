"""Negative controls: deliberately broken verifiers the losslessness suite must catch.

Role: evidence that the suite has power. Each exact control is a drop-in replacement for
engine.proof.exact.step_law (same signature) reproducing a bug class that real engines shipped (see
shared/research/lossless.md §4); engine.proof.exact.emitted_law with it must differ from the target law.
The χ² control (`SHARED_DRAFT_NOISE`, used by proof.stats) feeds the real verifier the exponentials that
sampled the draft, vLLM #47386's shared-noise bug, which only the narrow adversarial χ² test catches.

May import: stdlib, engine.proof.exact, engine.verify.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

from engine.proof.exact import Law, step_law

SHARED_DRAFT_NOISE = "shared draft/residual noise"


def always_accept(p_rows, q_rows, drafts, ell) -> Law:
    """Accept every verified draft (u = 0 with a `<=` test, or a missing p = 0 check)."""
    return step_law(p_rows, q_rows, drafts, ell, accept=lambda p, q: 1)


def residual_is_p(p_rows, q_rows, drafts, ell) -> Law:
    """On rejection sample from p instead of norm(max(p - q, 0))."""
    return step_law(p_rows, q_rows, drafts, ell, resid=lambda p, q: list(p))


def softmax_residual(p_rows, q_rows, drafts, ell) -> Law:
    """Normalize the residual with a softmax instead of dividing by its sum (HF #28508)."""

    def resid(p, q):
        w = [math.exp(float(max(a - b, 0))) for a, b in zip(p, q)]
        return [x / sum(w) for x in w]

    return step_law(p_rows, q_rows, drafts, ell, resid=resid)


def wrong_bonus_row(p_rows, q_rows, drafts, ell) -> Law:
    """Draw the bonus from the target row of the last verified draft (ℓ-1) instead of row ℓ."""
    return step_law(p_rows, q_rows, drafts, ell, bonus_row=lambda ell: max(ell - 1, 0))


def shared_uniform(p_rows, q_rows, drafts, ell) -> Law:
    """Draw the residual token by inverse CDF with the same uniform u that rejected the draft.

    Given a rejection, u is uniform on [a, 1) (a = acceptance probability), so token v gets the share of
    [a, 1) that falls in its residual CDF interval -- computed exactly."""

    def law_given_rejection(res, a):
        out, lo = [], Fraction(0)
        for r in res:
            hi = lo + r
            out.append(max(Fraction(0), min(hi, Fraction(1)) - max(lo, a)) / (1 - a))
            lo = hi
        return out

    out: Law = defaultdict(Fraction)
    reach = Fraction(1)
    for k in range(ell):
        p, q, d = p_rows[k], q_rows[k], drafts[k]
        a = min(Fraction(1), p[d] / q[d]) if q[d] else Fraction(0)
        if a != 1:
            res = [max(x - y, 0) for x, y in zip(p, q)]
            total = sum(res)
            for v, pv in enumerate(law_given_rejection([x / total for x in res], a)):
                if pv:
                    out[tuple(drafts[:k]) + (v,)] += reach * (1 - a) * pv
        reach *= a
    for v, pv in enumerate(p_rows[ell]):
        if pv and reach:
            out[tuple(drafts[:ell]) + (v,)] += reach * pv
    return out


def typical_acceptance(p_rows, q_rows, drafts, ell, *, eps: float = 0.09, delta: float = 0.3) -> Law:
    """Medusa-style typical acceptance: keep d iff p(d) > min(eps, delta * exp(-H(p))); on rejection emit
    from p. Ignores q and uses no randomness for the decision -- lossy by design."""
    out: Law = defaultdict(Fraction)
    reach = Fraction(1)
    for k in range(ell):
        p = p_rows[k]
        entropy = -sum(float(x) * math.log(float(x)) for x in p if x)
        keep = float(p[drafts[k]]) > min(eps, delta * math.exp(-entropy))
        if not keep:
            for v, pv in enumerate(p):
                if pv:
                    out[tuple(drafts[:k]) + (v,)] += reach * pv
            return out
    for v, pv in enumerate(p_rows[ell]):
        if pv:
            out[tuple(drafts[:ell]) + (v,)] += reach * pv
    return out


EXACT_CONTROLS = {
    "always-accept": always_accept,
    "residual = p": residual_is_p,
    "softmax-normalized residual": softmax_residual,
    "same uniform for accept & residual": shared_uniform,
    "wrong bonus row": wrong_bonus_row,
    "typical acceptance": typical_acceptance,
}
