"""Negative controls for tree verification: broken walks and a peeking node budget the proof must catch.

Role: evidence that engine.proof.tree_exact has power. Each `WALK_CONTROLS` entry replaces the verifier's
per-child rule `(root_p, r, q, x) -> (acceptance probability, residual for the next sibling)`:
- "independent children": each child accepted with min(1, p/q) against the node's own target row p, as if
  it were the only child (no residual between siblings); the final draw from norm(max(p − q, 0));
- "rejected mass reused": a rejected child's draft mass is not removed: the next sibling is tested against
  the same residual, and the final draw is from it.
`peeking_keep` is a node budget that admits a child only when its own token is the draft row's top token
(a scheduler reading the token it admits: the lookahead bias of the paper's Appendix A, for nodes);
`own_prob_keep` admits a child when the draft's probability of its own token is high (EAGLE-2's score):
lawful for deterministic top-k children (the token is a function of the context) and biased for sampled
children (the score is a function of the sampled token).

May import: stdlib, engine.verify, engine.proof.exact, engine.proof.tree_exact.
"""

from __future__ import annotations

from fractions import Fraction

from engine.verify import accept_prob, residual


def independent_children(root_p, r, q, x):
    return accept_prob(root_p[x], q[x]), residual(root_p, q)


def rejected_mass_reused(root_p, r, q, x):
    return accept_prob(r[x], q[x]), tuple(r)


WALK_CONTROLS = {
    "independent children (min(1, p/q) each, no residual)": independent_children,
    "rejected child's mass reused": rejected_mass_reused,
}


def peeking_keep(draft):
    """keep(ctx, i, drawn, x): verify child i only if its own token x is the draft row's argmax."""

    def keep(ctx, i, drawn, x):
        q = draft(ctx)
        return x == max(range(len(q)), key=lambda v: (q[v], -v))

    return keep


def own_prob_keep(draft, threshold=Fraction(1, 3)):
    """keep(ctx, i, drawn, x): verify child i only if the draft gives its token probability ≥ threshold."""

    def keep(ctx, i, drawn, x):
        return draft(ctx)[x] >= threshold

    return keep


def lawful_keep(conf, budget=Fraction(1, 4)):
    """keep(ctx, i, drawn, x): a node budget from confidences known before the child's token is drawn:
    verify child i while conf(ctx) · (i + 1)⁻¹ ≥ budget (prefix-dependent, ignores x)."""

    def keep(ctx, i, drawn, x):
        return Fraction(conf(ctx)).limit_denominator(100) / (i + 1) >= budget

    return keep
