"""Exact enumeration (Fractions) with draft="adaptive": depths planned from lagged confidences keep the
emitted law equal to the target law; depths planned from the current step's confidences are caught."""

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

import specsched
from engine.proof.exact import ToyModel, case_gap, emitted_law, policy_plan, target_law
from specsched import DraftCost
from tests.engine.strategies import cost_tables, toy_cases

DRAFTERS = [DraftCost("parallel", 1.0, 0.01), DraftCost("autoregressive", 2.0), DraftCost("free")]
ADAPTIVE = [
    ("dspark", {"delay": 1}),
    ("dspark", {"delay": 2, "slack": 0.0}),
    ("fixed", {"k": 3, "delay": 1}),
    ("threshold", {"delay": 1, "slack": 0.3}),
    ("dspark_global", {"delay": 1}),
    ("goodput", {"delay": 2}),
]


@settings(max_examples=150)
@given(st.data(), st.sampled_from(ADAPTIVE), st.sampled_from(DRAFTERS))
def test_adaptive_depths_stay_exact(data, spec, drafter):
    case = data.draw(toy_cases(transforms=data.draw(st.booleans())))
    policy = specsched.make_policy(spec[0], draft="adaptive", **spec[1])
    cost = data.draw(cost_tables(case.gamma))
    prior = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    plan = policy_plan(policy, cost, drafter=drafter)
    assert case_gap(case, plan, delay=policy.delay, prior=prior) == 0


@settings(max_examples=30)
@given(st.data(), st.sampled_from(ADAPTIVE[:3]))
def test_adaptive_two_requests_stay_independent_and_exact(data, spec):
    a = data.draw(toy_cases(max_vocab=2, max_gamma=2, max_length=2))
    b = data.draw(toy_cases(max_vocab=2, max_gamma=2, max_length=2))
    gamma, length = min(a.gamma, b.gamma), min(a.length, b.length)
    policy = specsched.make_policy(spec[0], draft="adaptive", **spec[1])
    plan = policy_plan(policy, data.draw(cost_tables(gamma, requests=2)), drafter=DRAFTERS[0])
    law = emitted_law(
        [a.target, b.target], [a.draft, b.draft], a.conf, plan,
        length=length, gamma=gamma, prompts=[(0,), (1,)], delay=policy.delay, prior=0.5,
    )  # fmt: skip
    assert law == target_law([a.target, b.target], length=length, prompts=[(0,), (1,)])


def _appendix_a(policy, delay: int) -> Fraction:
    """P(first token = A) in the paper's Appendix A (0.70 lossless, 0.85 with lookahead), drafting free."""
    target = ToyModel(((Fraction(7, 10), Fraction(3, 10)),))
    draft = ToyModel(((Fraction(1, 2), Fraction(1, 2)),))

    def conf(ctx):
        return 0.8 if not ctx else (0.9 if ctx[-1] == 0 else 0.0)

    cost = specsched.CostTable.from_points([1, 2, 3], [1.0, 2.0, 1 / 0.45])
    plan = policy_plan(policy, cost, drafter=DraftCost("free"))
    law = emitted_law([target], [draft], conf, plan, length=3, gamma=2, delay=delay, prior=0.8)
    return sum((w for k, w in law.items() if k[0][0] == 0), Fraction(0))


def test_depths_from_the_current_step_are_caught():
    """The negative control: the same adaptive policies planning depths from current confidences
    (delay 0) verify draft 1 only when draft 2 looks good — a peek at x1 — and the law moves to 0.85."""
    for name, params in [("fixed", {"k": 2}), ("threshold", {}), ("dspark_global", {})]:
        current = specsched.make_policy(name, draft="adaptive", delay=0, slack=0.0, **params)
        assert not current.lossless
        assert _appendix_a(current, 0) == Fraction(17, 20), name
        lagged = specsched.make_policy(name, draft="adaptive", delay=1, slack=0.0, **params)
        assert lagged.lossless
        assert _appendix_a(lagged, 1) == Fraction(7, 10), name
