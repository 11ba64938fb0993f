"""The fast `dspark` (float sort, tie-break at the cut, pure-Python small path, cached 1/step time) and the
trusted entry point take exactly the decisions of the plain-loop reference of its stop
(bench/reference_lookpast.py, issue 32) on thousands of random instances: ties, zeros, ones, budgets, jagged
tables; the other policies those of the frozen pre-fast-path implementation (bench/reference_policies.py).
On convex tables, where the look-past stop is the paper's greedy stop, tests/specsched/test_dspark_stop.py
checks `dspark` against the frozen greedy reference itself."""

import warnings

import numpy as np
import pytest

import specsched as S
from bench import reference_policies as ref
from bench.reference_lookpast import dspark_lookpast

VALUES = np.array([0.0, 1.0, 0.5, 0.25, 0.75, 0.9, 0.125])


def _table(rng: np.random.Generator) -> S.CostTable:
    """A jagged (non-monotone) random table, or a built-in one, with a random draft cost."""
    if rng.random() < 0.3:
        return S.builtin_cost("h200-v4flash").with_draft(float(rng.choice([0.0, 0.001, 0.02])))
    k = int(rng.integers(1, 8))
    tokens = np.unique(rng.integers(1, 600, size=k))
    seconds = rng.uniform(0.005, 0.05, size=tokens.size)
    mode = "step" if rng.random() < 0.5 else "linear"
    return S.CostTable(
        tokens,
        seconds,
        mode=mode,
        draft_seconds=float(rng.uniform(0, 0.01)),
        request_seconds=float(rng.choice([0.0, 1e-5])),
    )


def _conf(rng: np.random.Generator, R: int, gamma: int) -> np.ndarray:
    kind = rng.integers(0, 4)
    if kind == 0:  # heavy ties, zeros and ones
        return rng.choice(VALUES, size=(R, gamma))
    if kind == 1:
        return rng.beta(8, 2, size=(R, gamma))
    if kind == 2:  # continuous with a sprinkle of exact 0 / 1 / repeated rows
        c = rng.random((R, gamma))
        c[rng.random((R, gamma)) < 0.15] = 1.0
        c[rng.random((R, gamma)) < 0.05] = 0.0
        if R > 1:
            c[R // 2] = c[0]
        return c
    return np.full((R, gamma), float(rng.choice(VALUES)))


def lookpast(conf: np.ndarray, cost: S.CostTable, budget: int | None) -> list[int]:
    """The independent plain loop of `dspark`'s stop on one step."""
    R = conf.shape[0]
    return dspark_lookpast(conf.tolist(), lambda b: cost.sps(b, R), budget)


def _instances(n: int, seed: int, max_r: int):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        R, gamma = int(rng.integers(0, max_r)), int(rng.integers(0, 9))
        budget = None if rng.random() < 0.5 else int(rng.integers(1, R * (gamma + 1) + 3))
        yield _conf(rng, R, gamma), _table(rng), budget


@pytest.mark.parametrize("max_r, seed", [(12, 1), (80, 2), (400, 3)], ids=["small", "mixed", "numpy"])
def test_dspark_matches_reference(max_r, seed):
    fast = S.make_policy("dspark")
    for conf, cost, budget in _instances(1500 if max_r < 100 else 300, seed, max_r):
        want = lookpast(conf, cost, budget)
        got = fast(conf, cost, max_batch_tokens=budget)
        assert got.dtype == np.int64 and got.tolist() == want, (conf, budget)
        again = fast.trusted(np.ascontiguousarray(conf), cost, None, budget)  # cached 1/step time
        assert again.tolist() == want


@pytest.mark.parametrize("name", [p for p in S.POLICIES if p != "dspark" and p in ref.POLICIES])
def test_other_policies_trusted_match_reference(name):
    fast, slow = S.make_policy(name), ref.make_policy(name)
    rng = np.random.default_rng(7)
    for conf, cost, budget in _instances(200, 5, 40):
        stale = rng.beta(8, 2, size=conf.shape) if fast.uses_stale else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = slow(conf, cost, stale=stale, max_batch_tokens=budget)
        assert fast.trusted(conf, cost, stale, budget).tolist() == want.tolist()


def test_tie_straddling_the_cut_breaks_by_position_then_request():
    # All survivals equal: whatever number is admitted, they go to position 0 of requests 0, 1, … first.
    conf = np.full((40, 3), 0.5)
    conf[:, 1:] = 1.0  # survival 0.5 everywhere: one 120-way tie
    cost = S.CostTable([1, 60, 200], [0.01, 0.0101, 0.05], mode="linear")
    want = lookpast(conf, cost, None)
    greedy = ref.make_policy("dspark")(conf, cost).tolist()
    assert S.make_policy("dspark")(conf, cost).tolist() == want == greedy
    assert 0 < sum(want) < 120  # the cut really falls inside the tie


def test_public_call_keeps_its_checks():
    pol = S.make_policy("dspark")
    cost = S.builtin_cost("h200-v4flash")
    with pytest.raises(ValueError, match="outside"):
        pol(np.array([[0.5, 1.5]]), cost)
    with pytest.raises(ValueError, match="max_batch_tokens"):
        pol(np.array([[0.5]]), cost, max_batch_tokens=0)


@pytest.mark.parametrize("seed", [11, 12])
def test_trusted_many_matches_reference_step_by_step(seed):
    """K steps' confidences decided in one pass (`trusted_many`) = the reference on each step."""
    fast = S.make_policy("dspark")
    rng = np.random.default_rng(seed)
    for _ in range(150):
        K, R, gamma = int(rng.integers(1, 9)), int(rng.integers(1, 60)), int(rng.integers(1, 9))
        conf = np.stack([_conf(rng, R, gamma) for _ in range(K)])
        cost = _table(rng)
        budget = None if rng.random() < 0.5 else int(rng.integers(1, R * (gamma + 1) + 3))
        got = fast.trusted_many(conf, cost, budget)
        want = [lookpast(conf[k], cost, budget) for k in range(K)]
        assert got.dtype == np.int64 and got.tolist() == want
    for name in ("fixed", "threshold"):  # other policies: one trusted call per step
        conf = rng.beta(8, 2, size=(3, 5, 4))
        want = [ref.make_policy(name)(c, cost).tolist() for c in conf]
        assert S.make_policy(name).trusted_many(conf, cost).tolist() == want
