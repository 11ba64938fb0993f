"""Tree budgets: Algorithm 1 over nodes equals DSpark on chains, admits parent-closed sets, stops where Θ
peaks, and (stale variant) reads only the stale rows: the firewall for nodes."""

import numpy as np
import pytest

import specsched
from specsched.dspark import dspark
from specsched.tree import (
    admitted_mask,
    fixed_nodes,
    make_tree_policy,
    node_depths,
    node_survival,
    plan_nodes,
)


def _cost():
    return specsched.builtin_cost("h200-dense8b")


def _random_tree(rng, R, M):
    parents = np.full((R, M), -1, dtype=np.int64)
    for i in range(1, M):
        parents[:, i] = rng.integers(-1, i, R)
    conf = rng.choice([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0], size=(R, M))
    return conf, parents


@pytest.mark.parametrize("seed", range(8))
def test_chain_trees_take_dsparks_decisions(seed):
    rng = np.random.default_rng(seed)
    R, gamma = int(rng.integers(1, 40)), int(rng.integers(1, 8))
    conf = rng.random((R, gamma)) ** 0.3
    conf[rng.random((R, gamma)) < 0.05] = 0.0
    parents = np.broadcast_to(np.arange(gamma) - 1, (R, gamma)).copy()
    got = plan_nodes(conf, parents, _cost())
    want = dspark(conf, _cost(), None, None)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(8))
def test_admitted_sets_are_parent_closed(seed):
    rng = np.random.default_rng(seed)
    conf, parents = _random_tree(rng, 12, 10)
    counts = plan_nodes(conf, parents, _cost())
    mask = admitted_mask(counts, conf, parents)
    assert np.array_equal(mask.sum(1), counts)
    par_ok = np.where(parents < 0, True, np.take_along_axis(mask, np.maximum(parents, 0), 1))
    assert not np.any(mask & ~par_ok)
    surv = node_survival(conf, parents)
    assert np.all(surv[mask] > 0)


def test_stop_is_where_theta_peaks():
    rng = np.random.default_rng(3)
    conf, parents = _random_tree(rng, 6, 9)
    cost = _cost()
    counts = plan_nodes(conf, parents, cost)
    n = int(counts.sum())
    surv = node_survival(conf, parents)
    mask = admitted_mask(counts, conf, parents)

    tau = 6 + surv[mask].sum()
    step = cost.draft_seconds + cost.request_seconds * 6 + cost.latency_range(6 + n, 6 + n)[0]
    # one more node (the best not admitted) does not raise Θ
    rest = np.sort(surv[~mask & (surv > 0)])[::-1]
    if rest.size:
        step2 = cost.draft_seconds + cost.request_seconds * 6 + cost.latency_range(7 + n, 7 + n)[0]
        assert (tau + rest[0]) / step2 <= tau / step


def test_firewall_stale_variant_reads_only_stale_rows():
    rng = np.random.default_rng(4)
    conf, parents = _random_tree(rng, 8, 7)
    stale, _ = _random_tree(rng, 8, 7)
    pol = make_tree_policy("dspark_tree_global", delay=1)
    a = pol.plan(conf, parents, _cost(), stale=stale)
    b = pol.plan(rng.random(conf.shape), parents, _cost(), stale=stale)
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="stale"):
        pol.plan(conf, parents, _cost())


def test_fixed_nodes_and_depths():
    parents = np.array([[-1, -1, 0, 0, 1]])
    conf = np.array([[0.9, 0.5, 0.0, 0.8, 0.7]])
    assert node_depths(parents).tolist() == [[1, 1, 2, 2, 2]]
    assert fixed_nodes(conf, parents, 0).tolist() == [4]
    assert fixed_nodes(conf, parents, 2).tolist() == [2]
    with pytest.raises(ValueError):
        make_tree_policy("nope")


def test_survival_by_depth_equals_by_node():
    rng = np.random.default_rng(9)
    conf, parents = _random_tree(rng, 7, 12)
    depth = node_depths(parents)
    assert np.array_equal(node_survival(conf, parents, depth), node_survival(conf, parents))
    counts = plan_nodes(conf, parents, _cost(), stop="best")
    assert np.array_equal(counts, plan_nodes(conf, parents, _cost(), stop="best", depth=depth))


def test_bound_policy_has_the_house_signature():
    rng = np.random.default_rng(2)
    conf, parents = _random_tree(rng, 5, 8)
    pol = make_tree_policy("dspark_tree")
    plan = pol.bound(parents)
    assert np.array_equal(plan(conf, _cost()), pol.plan(conf, parents, _cost()))
    stale_plan = make_tree_policy("dspark_tree_global", delay=1).bound(parents)
    assert stale_plan(conf, _cost(), stale=conf).shape == (5,)
    assert np.array_equal(make_tree_policy("fixed_tree", cap=3).bound(parents)(conf, _cost()),
                          fixed_nodes(conf, parents, 3))  # fmt: skip
