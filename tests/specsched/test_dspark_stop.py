"""`dspark`'s stop (issue 32): the paper's greedy stop where every token costs, the bucket rule on plateaus,
and the Appendix A firewall (whether request r verifies its position i never reads conf[r, i:]) on every
path."""

import numpy as np
import pytest

import specsched as S
import specsched.dspark as D
from bench import reference_lookpast as lp
from bench import reference_policies as ref
from specsched.graphs import with_cudagraphs

#: a smooth table with vLLM's CUDA-graph padding up to 512 tokens: a staircase of plateaus
STAIR = with_cudagraphs(S.CostTable.from_points([1, 512], [0.01, 0.03], mode="linear"), max_capture_size=512)


def _rising(rng: np.random.Generator) -> S.CostTable:
    """A random table whose latency rises strictly (no plateau), convex or concave."""
    k = int(rng.integers(2, 6))
    tokens = np.unique(rng.integers(1, 400, size=k))
    if tokens.size == 1:
        tokens = np.array([tokens[0], tokens[0] + 1])
    slopes = rng.uniform(1e-6, 2e-4, size=tokens.size)
    secs = 0.01 + np.concatenate([[0.0], np.cumsum(slopes[1:] * np.diff(tokens))])
    return S.CostTable(tokens, secs, mode="linear", draft_seconds=float(rng.uniform(0, 0.005)))


def test_constants_match_the_independent_reference():
    assert lp.MARGIN == D._MARGIN and lp.LOOKAHEAD == D.LOOKAHEAD


@pytest.mark.parametrize("seed", [0, 1])
def test_tables_without_plateaus_give_the_papers_greedy_answers(seed):
    """Where every token costs something (no plateau: convex, concave, the built-in h200-v4flash) the
    bucket rule never departs: the frozen greedy reference, exactly."""
    rng = np.random.default_rng(seed)
    fast, greedy = S.make_policy("dspark"), ref.make_policy("dspark")
    tables = [S.builtin_cost("h200-v4flash")]
    for i in range(300):
        R, gamma = int(rng.integers(1, 120)), int(rng.integers(1, 8))
        conf = rng.beta(8, 2, size=(R, gamma)) if i % 2 else rng.random((R, gamma))
        cost = tables[0] if i % 7 == 0 else _rising(rng)
        budget = None if i % 3 else int(rng.integers(1, R * (gamma + 1) + 2))
        want = greedy(conf, cost, max_batch_tokens=budget).tolist()
        assert fast(conf, cost, max_batch_tokens=budget).tolist() == want
        assert fast.trusted_many(conf[None], cost, budget)[0].tolist() == want


def _paths(cost: S.CostTable):
    """Every entry of dspark: public, trusted, trusted_priced, trusted_many, adaptive verify."""
    pol = S.make_policy("dspark")
    ada = S.make_policy("dspark", draft="adaptive")
    return {
        "public": lambda c: pol(c, cost),
        "priced": lambda c: pol.trusted_priced(c, cost, 0.003),
        "many": lambda c: pol.trusted_many(c[None], cost)[0],
        "adaptive": lambda c: ada(c, cost, stale=c * 0 + 0.8, depths=np.full(c.shape[0], c.shape[1])),
    }


@pytest.mark.parametrize("R", [3, 9, 70])  # the small loop, and the numpy kernels
def test_firewall_on_a_padded_staircase(R):
    """{ℓ_r ≥ i} must not change when conf[r, i:] does (zeros included): on a CUDA-graph staircase, where
    the bucket rule is active, for every path."""
    rng = np.random.default_rng(R)
    cost = STAIR
    for name, plan in _paths(cost).items():
        for _ in range(40):
            conf = rng.beta(6, 2, size=(R, 5))
            base = np.asarray(plan(conf))
            r, i = int(rng.integers(R)), int(rng.integers(1, 5))
            other = conf.copy()
            odd = rng.random() < 0.5
            other[r, i:] = rng.choice([0.0, 1.0, 0.3], size=5 - i) if odd else rng.random(5 - i)
            moved = np.asarray(plan(other))
            assert min(base[r], i) == min(moved[r], i), (name, r, i)


def test_staircase_fills_the_bucket_the_greedy_stop_refuses():
    """64 requests on a padded table: the paper's greedy stop verifies nothing (the first token past the
    bucket edge pays the whole next bucket); the bucket rule verifies and Θ is higher."""
    cost = STAIR
    conf = np.random.default_rng(3).beta(8, 2, size=(64, 7))
    greedy = ref.make_policy("dspark")(conf, cost)
    new = S.make_policy("dspark")(conf, cost)

    def theta(lengths):
        a = np.cumprod(conf, axis=1)
        tau = 64 + sum(a[r, : lengths[r]].sum() for r in range(64))
        return tau * cost.sps(64 + int(lengths.sum()), 64)

    assert greedy.sum() == 0 and new.sum() > 64 and theta(new) > 1.5 * theta(greedy)
