"""The adaptive policy's trusted path (the simulator's): the same decisions as the checked calls, a per-step
draft price passed as a number instead of a new table (same floats, caches kept), and the checks the public
calls keep."""

import numpy as np
import pytest

import specsched as S
from specsched.depth import DraftCost, plan_depths

MEASURED = S.CostTable.from_points([1, 64, 512], [0.001, 0.002, 0.009], mode="linear")
DRAFTS = [
    DraftCost("parallel", 5.0, 0.007),
    DraftCost("parallel", 0.5),
    DraftCost("autoregressive", 2.0, 0.003),
    DraftCost("free"),
    DraftCost("parallel", measured=MEASURED, index="tokens"),
    DraftCost("parallel", measured=MEASURED, index="requests"),
    DraftCost("autoregressive", measured=MEASURED, index="fit"),
]
TABLES = [
    S.builtin_cost("h200-v4flash"),
    S.CostTable.from_points([1, 256, 1024], [0.010, 0.010, 0.040], mode="linear", layers=61),
    S.CostTable([1, 7, 40], [0.01, 0.02, 0.015], mode="step", draft_seconds=0.003, request_seconds=1e-5),
]
VALUES = np.array([0.0, 1.0, 0.5, 0.25, 0.9, 1 / 256])


def _case(rng: np.random.Generator):
    R, gamma = int(rng.choice([1, 3, 20, 90])), int(rng.integers(1, 8))
    draw = (
        (lambda: rng.choice(VALUES, (R, gamma))) if rng.random() < 0.3 else lambda: rng.beta(8, 2, (R, gamma))
    )
    budget = None if rng.random() < 0.6 else int(rng.integers(1, 4 * R * gamma))
    return (
        draw(),
        draw(),
        TABLES[int(rng.integers(len(TABLES)))],
        DRAFTS[int(rng.integers(len(DRAFTS)))],
        budget,
    )


def test_trusted_depths_and_verify_take_the_checked_decisions():
    rng = np.random.default_rng(np.random.SeedSequence(1414))
    for name in ("dspark", "fixed", "threshold", "dspark_global", "goodput"):
        policy = S.make_policy(name, draft="adaptive")
        for _ in range(60):
            conf, stale, cost, draft, budget = _case(rng)
            want = policy.depths(stale, cost, draft, max_batch_tokens=budget)
            assert np.array_equal(plan_depths(stale, cost, draft, max_batch_tokens=budget, slack=0.1), want)
            d = policy.trusted_depths(stale, cost, draft, budget)
            assert d.dtype == np.int64 and np.array_equal(d, want)
            checked = policy(conf, cost, stale=stale, max_batch_tokens=budget, depths=d)
            assert np.array_equal(policy.trusted(conf, cost, stale, budget, d), checked)
            assert np.all(checked <= d)


def test_a_draft_price_passed_as_a_number_is_the_with_draft_table():
    """draft_s= prices exactly as `cost.with_draft(draft_s)` (the simulator's old per-step tables), and
    the plan's price cache stays one entry per (table, drafter, R, γ) however often the price changes."""
    rng = np.random.default_rng(np.random.SeedSequence(1415))
    for name in ("dspark", "fixed", "goodput"):
        policy = S.make_policy(name, draft="adaptive")
        for _ in range(80):
            conf, stale, cost, draft, budget = _case(rng)
            draft_s = float(rng.uniform(0, 0.02))
            view = cost.with_draft(draft_s)
            d = policy.trusted_depths(stale, cost, draft, budget, draft_s)
            assert np.array_equal(d, policy.depths(stale, view, draft, max_batch_tokens=budget))
            want = policy(conf, view, stale=stale, max_batch_tokens=budget, depths=d)
            assert np.array_equal(policy.trusted(conf, cost, stale, budget, d, draft_s), want)
            base = S.make_policy(name)
            use = stale if base.uses_stale else None
            assert np.array_equal(
                base.trusted_priced(conf, cost, draft_s, use, budget), base.trusted(conf, view, use, budget)
            )
    policy, cost = S.make_policy("dspark", draft="adaptive"), TABLES[0]
    stale = rng.beta(8, 2, (64, 7))
    for draft_s in rng.uniform(0, 0.02, 20):
        policy.trusted_depths(stale, cost, DRAFTS[0], None, float(draft_s))
    assert len(policy._prices) == 1 and len(policy._prices[cost]) == 1


def test_draft_seconds_is_the_price_of_the_plan():
    rng = np.random.default_rng(3)
    for draft in DRAFTS:
        for cost in TABLES:
            for R in (1, 5, 300):
                d = rng.integers(0, 8, R) * (rng.random(R) < 0.8)
                want = float(draft.price([d.sum()], [np.count_nonzero(d)], [d.max()], cost)[0])
                assert draft.seconds(d, cost) == want
    assert DRAFTS[0].seconds(np.zeros(4, dtype=np.int64), TABLES[0]) == 0.0
    assert DRAFTS[0].seconds(np.zeros(0, dtype=np.int64), TABLES[0]) == 0.0


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda p: p([[0.5, 0.5]], S.builtin_cost("h200-v4flash"), depths=np.array([3])),
            r"depths: values must be in 0\.\.2",
        ),
        (lambda p: p([[0.5, 0.5]], S.builtin_cost("h200-v4flash"), depths=np.array([-1])), "depths: values"),
        (lambda p: p([[0.5]], "h200-v4flash", depths=np.array([1])), "cost: expected a specsched.CostTable"),
        (lambda p: p([[0.5]], S.builtin_cost("h200-v4flash"), stale=[[0.5, 0.5]]), "stale: shape"),
        (lambda p: p.depths([[0.5]], "h200-v4flash", DRAFTS[0]), "cost: expected a specsched.CostTable"),
        (
            lambda p: p.depths([[0.5]], S.builtin_cost("h200-v4flash"), "dspark"),
            "draft: expected a specsched.DraftCost",
        ),
        (lambda p: p.depths([[2.0]], S.builtin_cost("h200-v4flash"), DRAFTS[0]), "stale: value 2.0"),
        (
            lambda p: p.depths([[0.5]], S.builtin_cost("h200-v4flash"), DRAFTS[0], max_batch_tokens=0),
            "max_batch_tokens",
        ),
    ],
)
def test_public_calls_keep_their_checks(call, match):
    with pytest.raises(ValueError, match=match):
        call(S.make_policy("dspark", draft="adaptive"))
