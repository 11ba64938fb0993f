"""Trees in the simulator: a chain is a width-1 tree bit for bit, siblings exclude each other, the walk's
mean length is the model's expected length, EAGLE-2 expansion keeps the best frontier, tree pricing."""

import numpy as np
import pytest

from sim.model import sample_chain
from sim.tree import (
    TreeShape,
    build_tree,
    expected_length,
    sample_tree,
    static_tree,
    tree_draft_seconds,
    walk,
)
from sim.tree_run import Arm, Load, acceptance_model, make_step_cost, run_arm
from sim.tree_study import PUBLISHED_22752, fit_published, reproduce_22752
from specsched import DraftCost, builtin_cost
from specsched.stepcost import StepCost, StepShape


def _rows(seed, R=50, g=5):
    rng = np.random.default_rng(seed)
    c = rng.random((R, g)) ** 0.5
    return c, np.clip(c + rng.normal(0, 0.1, c.shape), 0, 1)


@pytest.mark.parametrize("seed", range(4))
def test_chain_walk_is_sample_chain_bit_for_bit(seed):
    true, est = _rows(seed)
    tree = build_tree(true, est, TreeShape(1, 5))
    lengths = np.random.default_rng(seed).integers(0, 6, 50)
    verified = np.arange(5)[None, :] < lengths[:, None]
    a = sample_chain(true, lengths, np.random.default_rng(99))
    b = walk(tree, verified, np.random.default_rng(99).random((50, 5)))
    assert np.array_equal(a, b)


def test_chain_arm_equals_topk1_tree_arm():
    cost = builtin_cost("h200-dense8b")
    step = make_step_cost(cost, 4096, 0.12)
    model = acceptance_model(np.array([0.8, 0.7, 0.6]), 0)
    a = run_arm(Arm("chain", TreeShape(1, 3)), Load(4, steps=50), step, model, 5)
    b = run_arm(
        Arm("tree", TreeShape(1, 3, rank_hit=0.9), tree_backend=False), Load(4, steps=50), step, model, 5
    )
    assert a == b


def test_siblings_exclude_each_other_and_lengths_match_expectation():
    R = 20000
    c = np.full((R, 2), 0.6)
    tree = static_tree(c, c, (3, 2), 0.4)
    ver = np.ones(tree.parents.shape, dtype=bool)
    acc = sample_tree(tree, ver, c, np.random.default_rng(0), 3)
    exp = expected_length(tree)[0]
    assert abs((acc + 1).mean() - exp) < 4 * (acc.std() / np.sqrt(R))
    # the depth-1 rank probabilities: 0.6, 0.4·0.4, 0.4·0.6·0.4, and none of them together
    assert np.isclose(tree.true[0, :3].sum(), 0.6 + 0.16 + 0.096)
    assert abs((acc >= 1).mean() - 0.856) < 0.01


def test_build_tree_expands_the_best_frontier():
    true, est = _rows(1, R=6, g=4)
    shape = TreeShape(3, 4)
    tree = build_tree(true, est, shape)
    assert tree.parents.shape == (6, shape.candidates) == (6, 3 + 3 * 9)
    assert np.all(tree.parents < np.arange(shape.candidates)[None, :])
    from specsched.tree import node_survival

    surv = node_survival(tree.est, tree.parents, tree.depth)
    for d in range(1, 4):  # expanded nodes at depth d are its best three by path score
        at = tree.depth == d
        for r in range(6):
            cols = np.flatnonzero(at[r])
            expanded = set(np.unique(tree.parents[r][tree.depth[r] == d + 1]))
            best = set(cols[np.argsort(-surv[r, cols], kind="stable")[:3]])
            assert expanded == best


def test_tree_draft_and_step_pricing():
    cost = builtin_cost("h200-dense8b")
    chain = tree_draft_seconds(cost, 1.0, 8, TreeShape(1, 5))
    assert chain == DraftCost("autoregressive", 1.0).seconds(np.full(8, 5), cost)
    tree = tree_draft_seconds(cost, 1.0, 8, TreeShape(4, 5))
    lat = cost.latency_range
    assert tree == pytest.approx((lat(8, 8)[0] + 4 * lat(32, 32)[0]) / cost.layers)
    step = StepCost(cost=cost, draft_s=np.zeros(9), latency=cost.latency(np.arange(100)), tree_kv_s=1e-6)
    plain = StepCost(cost=cost, draft_s=np.zeros(9), latency=cost.latency(np.arange(100)))
    shape = StepShape(4, 4, 40, 40, kv=1000)
    assert step.bill(shape).seconds == plain.bill(shape).seconds
    with_tree = step.bill(shape._replace(tree_kv=1000))
    assert with_tree.tree == 1e-3 and with_tree.seconds == pytest.approx(plain.bill(shape).seconds + 1e-3)


def test_published_lengths_fit_and_shape():
    c, h = fit_published(2.05, 2.37)
    row = np.full((1, 2), c)
    assert 1 + c + c * c == pytest.approx(2.05)
    assert expected_length(static_tree(row, row, (2, 3), h))[0] == pytest.approx(2.37)
    rows = reproduce_22752(steps=200)["rows"]
    assert abs(rows[0]["gain"] - (128.63 / 114.27 - 1)) < 0.05
    assert rows[2]["gain"] < rows[0]["gain"]
    assert [r["batch"] for r in rows] == list(PUBLISHED_22752["batch"])


def test_adaptive_menu_drafts_trees_at_low_load_and_chains_at_high_load():
    from sim.tree_run import _choose, _Ctx

    cost = builtin_cost("h200-dense8b")
    step = make_step_cost(cost, 8192, 0.12)
    menu = (TreeShape(1, 5), TreeShape(4, 5))
    arm = Arm("adaptive", menu[1], "dspark", menu=menu)
    picks = {}
    for R in (1, 256):
        true, est = _rows(3, R=R, g=5)
        ctx = _Ctx(arm, step, R, 8192, 0.0, kv=R * 1024)
        picks[R] = _choose(ctx, true, est).topk
    assert picks == {1: 4, 256: 1}


def test_drafter_tree_keys():
    from types import SimpleNamespace

    from sim.config import DrafterConfig

    assert TreeShape.from_drafter(DrafterConfig(name="eagle3", gamma=4)) == TreeShape(1, 4, 0)
    cfg = SimpleNamespace(topk=3, gamma=4, tree_nodes=9)  # the [drafter] keys docs/trees.md proposes
    assert TreeShape.from_drafter(cfg) == TreeShape(3, 4, 9)
