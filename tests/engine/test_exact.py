"""Exact enumeration (Fractions): the emitted law equals the target law, under sampling transforms and
scheduler policies (the firewall); biased schedulers and the negative controls are detected."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import specsched
from engine.proof.controls import EXACT_CONTROLS
from engine.proof.exact import (
    ToyModel,
    build_case,
    case_gap,
    emitted_law,
    policy_plan,
    step_law,
    target_law,
)
from engine.proof.suite import appendix_a, peeking_plan
from engine.verify import accept_prob, residual
from tests.engine.strategies import cost_tables, toy_cases

FLAT = specsched.builtin_cost("h200-dense8b")


def _plan(name, **params):
    return policy_plan(specsched.make_policy(name, **params), FLAT)


@settings(max_examples=200)
@given(
    toy_cases(), st.sampled_from([("fixed", {"k": 3}), ("fixed", {"k": 1}), ("threshold", {}), ("ar", {})])
)
def test_emitted_law_is_the_target_law(case, policy):
    assert case_gap(case, _plan(policy[0], **policy[1])) == 0


@settings(max_examples=200)
@given(toy_cases(transforms=True), st.sampled_from([("fixed", {"k": 3}), ("threshold", {"threshold": 0.8})]))
def test_exact_after_temperature_top_k_top_p(case, policy):
    assert case_gap(case, _plan(policy[0], **policy[1])) == 0


@settings(max_examples=200)
@given(
    st.data(),
    st.sampled_from(
        [
            ("dspark", {}),
            ("dspark_global", {"delay": 1}),
            ("dspark_global", {"delay": 2}),
            ("goodput", {"delay": 2}),
        ]
    ),
)
def test_firewall_scheduled_lengths_stay_exact(data, policy_spec):
    case = data.draw(toy_cases(transforms=data.draw(st.booleans())))
    policy = specsched.make_policy(policy_spec[0], **policy_spec[1])
    cost = data.draw(cost_tables(case.gamma))
    prior = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    assert case_gap(case, policy_plan(policy, cost), delay=policy.delay, prior=prior) == 0


@settings(max_examples=40)
@given(
    st.data(),
    st.sampled_from([("dspark", {}), ("dspark_global", {"delay": 1}), ("dspark_global", {"delay": 2})]),
)
def test_firewall_two_requests_stay_independent_and_exact(data, policy_spec):
    """Global policies couple requests' lengths; the joint law must still be the product of target laws."""
    a = data.draw(toy_cases(max_vocab=2, max_gamma=2, max_length=2))
    b = data.draw(toy_cases(max_vocab=2, max_gamma=2, max_length=2))
    gamma, length = min(a.gamma, b.gamma), min(a.length, b.length)
    policy = specsched.make_policy(policy_spec[0], **policy_spec[1])
    plan = policy_plan(policy, data.draw(cost_tables(gamma, requests=2)))
    law = emitted_law(
        [a.target, b.target],
        [a.draft, b.draft],
        a.conf,
        plan,
        length=length,
        gamma=gamma,
        prompts=[(0,), (1,)],
        delay=policy.delay,
    )
    assert law == target_law([a.target, b.target], length=length, prompts=[(0,), (1,)])


def test_appendix_a_lookahead_and_peeking_are_biased():
    assert appendix_a("lookahead") == Fraction(17, 20)
    assert appendix_a(peeking_plan) == Fraction(17, 20)
    for name in ("dspark", "dspark_global", "threshold"):
        assert appendix_a(name) == Fraction(7, 10)


CONTROL_CASES = [
    build_case([[2, 2, 1]], "independent", [[0, 1, 4]], [0.5], gamma=1, length=2),
    build_case(
        [[3, 1, 0], [1, 2, 2], [0, 1, 4], [2, 2, 1]],
        "independent",
        [[1, 1, 1], [4, 1, 0]],
        [0.9],
        gamma=2,
        length=3,
    ),
    build_case([[1, 3], [3, 1]], "reversed", [[1, 1]], [0.5], gamma=2, length=3),
]


@pytest.mark.parametrize("name", sorted(EXACT_CONTROLS))
def test_negative_controls_are_caught(name):
    gaps = [case_gap(case, _plan("fixed", k=2), step=EXACT_CONTROLS[name]) for case in CONTROL_CASES]
    assert max(gaps) > 1e-3, f"control {name!r} was not detected: {gaps}"
    assert all(case_gap(case, _plan("fixed", k=2)) == 0 for case in CONTROL_CASES)


@given(
    st.lists(st.fractions(min_value=0, max_value=1), min_size=2, max_size=4),
    st.lists(st.fractions(min_value=0, max_value=1), min_size=2, max_size=4),
)
def test_acceptance_residual_identity(pw, qw):
    """For every token v: q(v)·min(1, p/q) + (1 - Σ min(p, q))·r(v) = p(v) (the one-step identity)."""
    n = min(len(pw), len(qw))
    pw, qw = pw[:n], qw[:n]
    if sum(pw) == 0 or sum(qw) == 0:
        return
    p, q = [x / sum(pw) for x in pw], [x / sum(qw) for x in qw]
    reject = 1 - sum(min(a, b) for a, b in zip(p, q))
    r = residual(p, q)
    for v in range(n):
        assert q[v] * accept_prob(p[v], q[v]) + reject * r[v] == p[v]


def test_step_law_sums_to_one_and_zero_draft_probability_never_accepts():
    p = [(Fraction(1, 2), Fraction(1, 2), Fraction(0))] * 3
    q = [(Fraction(0), Fraction(1, 3), Fraction(2, 3))] * 2
    law = step_law(p, q, (2, 2), 2)
    assert sum(law.values()) == 1
    assert all(emitted[0] != 2 for emitted in law)  # p(2) = 0: the draft is never accepted
    assert accept_prob(Fraction(1, 2), Fraction(0)) == 0


def test_prefix_dependent_toy_models_are_not_markov():
    model = ToyModel.from_weights([[1, 0], [0, 1], [1, 1]], salt=3)
    rows = {model((a, b)) for a in range(2) for b in range(2)}
    assert len(rows) > 1
