"""Depth planning (specsched.depth): draft depths from lagged confidences, and the adaptive policies."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import specsched as S
from specsched.depth import LEVELS, AdaptivePolicy, DraftCost, plan_depths

#: flat to 256 tokens, then linear: the saturating table of issue 14
SATURATING = S.CostTable.from_points([1, 256, 1024], [0.010, 0.010, 0.040], mode="linear", layers=61)
DSPARK = DraftCost("parallel", 5.0, 0.007)
EAGLE = DraftCost("autoregressive", 1.0)
FREE = DraftCost("free")

probs = st.floats(0.0, 1.0, allow_nan=False, width=64)


def theta(stale, depths, cost, draft):
    """Θ of a depth plan, written out directly (the objective of the module doc)."""
    surv = np.cumprod(stale, axis=1)
    R = stale.shape[0]
    tokens = R + sum(surv[r, : depths[r]].sum() for r in range(R))
    seconds = cost.draft_seconds + cost.request_seconds * R + draft.seconds(depths, cost)
    return tokens / (seconds + cost.latency(R + int(depths.sum())))


def reference(stale, cost, draft, budget=None):
    """Every plan of the search (nothing, then each survival level), by brute force: the best Θ."""
    surv = np.cumprod(stale, axis=1)
    level = (surv * LEVELS).astype(int)
    plans = [np.zeros(stale.shape[0], dtype=np.int64)]
    plans += [(level >= g).sum(axis=1) for g in range(LEVELS, 0, -1)]
    R = stale.shape[0]
    plans = [d for d in plans if budget is None or not d.sum() or R + d.sum() <= budget]
    return max(theta(stale, d, cost, draft) for d in plans)


@given(
    hnp.arrays(np.float64, st.tuples(st.integers(1, 10), st.integers(1, 6)), elements=probs),
    st.sampled_from([DSPARK, EAGLE, FREE, DraftCost("parallel", 0.5)]),
    st.sampled_from([SATURATING, S.builtin_cost("h200-v4flash"), S.CostTable.from_points([1], [0.01])]),
    st.one_of(st.none(), st.integers(1, 40)),
)
def test_plan_is_the_best_of_the_search(stale, draft, cost, budget):
    d = plan_depths(stale, cost, draft, max_batch_tokens=budget)
    R, gamma = stale.shape
    assert d.dtype == np.int64 and d.shape == (R,)
    assert np.all((0 <= d) & (d <= gamma))
    surv = np.cumprod(stale, axis=1)
    assert all(d[r] == 0 or surv[r, d[r] - 1] > 0 for r in range(R))  # never drafts a dead position
    if budget is not None and d.sum():
        assert R + d.sum() <= budget
    best = reference(stale, cost, draft, budget)
    assert theta(stale, d, cost, draft) >= best * (1 - 1e-9)


@given(
    hnp.arrays(np.float64, st.tuples(st.integers(1, 10), st.integers(1, 6)), elements=probs),
    st.sampled_from([0.05, 0.1, 0.5]),
)
def test_slack_takes_the_deepest_plan_within_it(stale, slack):
    cost = S.builtin_cost("h200-v4flash")
    d = plan_depths(stale, cost, DSPARK, slack=slack)
    best = plan_depths(stale, cost, DSPARK)
    assert d.sum() >= best.sum()
    if best.sum():  # a plan that drafts something hedges; "nothing" stays nothing
        assert theta(stale, d, cost, DSPARK) >= reference(stale, cost, DSPARK) * (1 - slack) * (1 - 1e-9)
    else:
        assert d.sum() == 0


def test_saturating_table_drafts_at_light_load_and_stops_at_heavy_load():
    rng = np.random.default_rng(0)
    light = plan_depths(rng.beta(8, 2, (8, 7)), SATURATING, DSPARK)
    heavy = plan_depths(rng.beta(8, 2, (512, 7)), SATURATING, DSPARK)
    assert light.mean() > 5
    assert heavy.sum() == 0  # past the knee every drafted position costs more than it earns


def test_free_drafter_drafts_everything_that_can_pay():
    conf = np.full((4, 5), 0.9)
    flat = S.CostTable.from_points([1], [0.01])
    assert plan_depths(conf, flat, FREE).tolist() == [5, 5, 5, 5]  # verification free, drafting free


def test_depths_follow_the_rows_not_their_order():
    rng = np.random.default_rng(1)
    stale = rng.beta(5, 2, (40, 7))
    perm = rng.permutation(40)
    cost = S.builtin_cost("h200-v4flash")
    d = plan_depths(stale, cost, DSPARK)
    assert np.array_equal(plan_depths(stale[perm], cost, DSPARK), d[perm])


def test_tied_rows_get_the_same_depth():
    """Young requests share one prior row: they are planned alike whatever the budget."""
    stale = np.tile([0.9, 0.8, 0.7, 0.6], (20, 1))
    for budget in (None, 30, 45, 61):
        d = plan_depths(stale, S.builtin_cost("h200-v4flash"), DSPARK, max_batch_tokens=budget)
        assert len(set(d.tolist())) == 1


def test_draft_cost_of_full_depth_is_the_full_draft_pass():
    cost = S.builtin_cost("h200-v4flash")
    R, gamma = 32, 7
    full = np.full(R, gamma)
    want = 5 * cost.layer_seconds(R * gamma) + 0.007 * cost.latency(R)
    assert DSPARK.seconds(full, cost) == pytest.approx(want, rel=1e-12)
    assert EAGLE.seconds(full, cost) == pytest.approx(gamma * cost.layer_seconds(R), rel=1e-12)
    # An autoregressive drafter pays max depth passes over the requests that draft.
    assert EAGLE.seconds(np.array([0, 2, 5]), cost) == pytest.approx(5 * cost.layer_seconds(2), rel=1e-12)
    assert FREE.seconds(full, cost) == 0.0
    assert DSPARK.seconds(np.zeros(R, dtype=np.int64), cost) == 0.0
    assert DSPARK.seconds(np.zeros(0, dtype=np.int64), cost) == 0.0


def test_adaptive_policy_verifies_within_the_planned_depths():
    rng = np.random.default_rng(2)
    cost = S.builtin_cost("h200-v4flash")
    conf, stale = rng.beta(8, 2, (64, 7)), rng.beta(8, 2, (64, 7))
    for name in ("dspark", "fixed", "threshold", "dspark_global", "goodput"):
        pol = S.make_policy(name, draft="adaptive")
        depths = rng.integers(0, 8, size=64)
        lengths = pol(conf, cost, stale=stale, depths=depths)
        assert np.all(lengths <= depths), name
        full = S.make_policy(name)
        kw = {"stale": stale} if full.uses_stale else {}
        assert np.array_equal(pol(conf, cost, stale=stale, depths=np.full(64, 7)), full(conf, cost, **kw))
        assert np.array_equal(pol(conf, cost, stale=stale), full(conf, cost, **kw))  # no depths: full


def test_make_policy_draft_modes():
    pol = S.make_policy("dspark", draft="adaptive")
    assert isinstance(pol, AdaptivePolicy)
    assert (pol.draft, pol.delay, pol.uses_stale, pol.lossless, pol.name) == (
        "adaptive",
        1,
        True,
        True,
        "dspark",
    )
    assert repr(pol) == "Policy(dspark, draft='adaptive', delay=1, slack=0.1)"
    assert S.make_policy("dspark", draft="adaptive", slack=0).slack == 0.0
    assert S.make_policy("dspark_global", draft="adaptive", delay=3).delay == 3  # its own delay
    assert S.make_policy("fixed", draft="adaptive", k=3, delay=2).params["k"] == 3
    assert S.make_policy("ar", draft="adaptive").name == "ar"  # ignores the draft mode
    assert not isinstance(S.make_policy("ar", draft="adaptive", delay=2), AdaptivePolicy)
    assert not isinstance(S.make_policy("dspark", draft="full"), AdaptivePolicy)
    negative = S.make_policy("dspark", draft="adaptive", delay=0)  # depths from the current step
    assert not negative.lossless


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: S.make_policy("dspark", draft="partial"), "draft must be one of full, adaptive"),
        (lambda: S.make_policy("lookahead", draft="adaptive"), "negative control"),
        (lambda: S.make_policy("dspark", draft="adaptive", delay=-1), "delay"),
        (lambda: S.make_policy("dspark", draft="adaptive", slack=1.0), "slack"),
        (lambda: plan_depths([[0.5]], SATURATING, DSPARK, slack=-0.1), "slack"),
        (lambda: S.make_policy("dspark", delay=1), "unknown parameter"),  # full drafting: no delay
        (lambda: DraftCost("speculative"), "kind must be one of"),
        (lambda: DraftCost("parallel", layers=float("nan")), "layers"),
        (lambda: DraftCost("parallel", overhead=-1.0), "overhead"),
        (lambda: plan_depths([[0.5, float("nan")]], SATURATING, DSPARK), "stale: NaN"),
        (lambda: plan_depths([0.5, 0.4], SATURATING, DSPARK), "2-D"),
        (lambda: plan_depths([[0.5]], SATURATING, DSPARK, max_batch_tokens=0), "max_batch_tokens"),
        (
            lambda: S.make_policy("dspark", draft="adaptive")([[0.5]], SATURATING, depths=[1, 1]),
            "depths: expected int64",
        ),
    ],
)
def test_bad_input_is_refused_with_a_message(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_empty_batches():
    assert plan_depths(np.zeros((0, 7)), SATURATING, DSPARK).shape == (0,)
    assert plan_depths(np.zeros((3, 0)), SATURATING, DSPARK).tolist() == [0, 0, 0]
    assert plan_depths(np.zeros((3, 4)), SATURATING, DSPARK).tolist() == [0, 0, 0]


def test_measured_draft_cost_prices_from_the_depths():
    table = S.CostTable.from_points([1, 100], [0.001, 0.002], mode="linear")
    depths = np.array([0, 3, 5])
    by_tokens = DraftCost("parallel", measured=table, index="tokens")
    by_requests = DraftCost("autoregressive", measured=table, index="requests")
    by_fit = DraftCost("parallel", measured=table.with_draft(0.0005), index="fit")
    assert by_tokens.seconds(depths, SATURATING) == pytest.approx(table.latency(8))
    assert by_requests.seconds(depths, SATURATING) == pytest.approx(table.latency(2))
    assert by_fit.seconds(depths, SATURATING) == pytest.approx(0.0005 + table.latency(8))
    assert by_tokens.seconds(np.zeros(3, dtype=np.int64), SATURATING) == 0.0
    assert DraftCost("free", measured=table).seconds(depths, SATURATING) == 0.0
    with pytest.raises(ValueError, match="index"):
        DraftCost("parallel", measured=table, index="bytes")
