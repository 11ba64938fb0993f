"""The fast depth plan (cached prices, one histogram for positions and drafting requests) takes exactly the
decisions of the frozen pre-fast-path implementation (bench/reference_depth.py) on thousands of random
instances: ties, zeros, ones, budgets, slack, every drafter kind, measured draft tables, jagged tables."""

import numpy as np

import specsched as S
from bench import reference_depth as ref
from specsched.depth import DraftCost, plan_depths

VALUES = np.array([0.0, 1.0, 0.5, 0.25, 0.75, 0.9, 0.125, 1 / 256, 2 / 256])
MEASURED = S.CostTable.from_points([1, 64, 512], [0.001, 0.002, 0.009], mode="linear")
DRAFTS = [
    DraftCost("parallel", 5.0, 0.007),
    DraftCost("parallel", 0.5),
    DraftCost("parallel", 0.0, 0.01),
    DraftCost("autoregressive", 1.0),
    DraftCost("autoregressive", 2.0, 0.003),
    DraftCost("free"),
    DraftCost("parallel", measured=MEASURED, index="tokens"),
    DraftCost("parallel", measured=MEASURED, index="requests"),
    DraftCost("autoregressive", measured=MEASURED, index="fit"),
]


def _table(rng: np.random.Generator) -> S.CostTable:
    if rng.random() < 0.3:
        return S.builtin_cost("h200-v4flash").with_draft(float(rng.choice([0.0, 0.002])))
    tokens = np.unique(rng.integers(1, 600, size=int(rng.integers(1, 8))))
    return S.CostTable(
        tokens,
        rng.uniform(0.005, 0.05, size=tokens.size),
        mode="step" if rng.random() < 0.5 else "linear",
        draft_seconds=float(rng.uniform(0, 0.01)),
        request_seconds=float(rng.choice([0.0, 1e-5])),
    )


def _stale(rng: np.random.Generator) -> np.ndarray:
    R, gamma = int(rng.integers(1, 40)), int(rng.integers(1, 8))
    if rng.random() < 0.5:
        return rng.choice(VALUES, size=(R, gamma))  # ties, zeros and exact level boundaries
    return rng.beta(8, 2, size=(R, gamma))


def test_fast_plan_takes_the_reference_decisions():
    rng = np.random.default_rng(np.random.SeedSequence(1414))
    policy = S.make_policy("dspark", draft="adaptive")
    for _ in range(1500):
        stale, cost = _stale(rng), _table(rng)
        draft = DRAFTS[int(rng.integers(len(DRAFTS)))]
        budget = None if rng.random() < 0.6 else int(rng.integers(1, 200))
        slack = float(rng.choice([0.0, 0.1, 0.5]))
        want = ref.plan_depths(stale, cost, draft, max_batch_tokens=budget, slack=slack)
        got = plan_depths(stale, cost, draft, max_batch_tokens=budget, slack=slack)
        np.testing.assert_array_equal(got, want)
        if slack == policy.slack:  # the cached path of the policy, twice (the second call hits the cache)
            for _ in range(2):
                got = policy.depths(stale, cost, draft, max_batch_tokens=budget)
                np.testing.assert_array_equal(got, want)
