"""Properties of the verify-length policies (the seam that the simulator and the engine share)."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import specsched as S
from bench import reference_policies as ref
from bench.reference_lookpast import dspark_lookpast
from specsched.policies import LosslessnessWarning

FLAT = S.CostTable.from_points([1], [0.01])
STEEP = S.CostTable.from_points([1, 2, 4, 8, 16, 64], [0.010, 0.016, 0.028, 0.05, 0.1, 0.4], mode="linear")

probs = st.floats(0.0, 1.0, allow_nan=False, width=64)


@st.composite
def conf_arrays(draw, max_r=12, max_g=7, min_r=1):
    r = draw(st.integers(min_r, max_r))
    g = draw(st.integers(1, max_g))
    return draw(hnp.arrays(np.float64, (r, g), elements=probs))


@st.composite
def cost_tables(draw, max_points=8, max_tokens=120):
    n = draw(st.integers(1, max_points))
    tokens = sorted(draw(st.sets(st.integers(1, max_tokens), min_size=n, max_size=n)))
    secs = draw(st.lists(st.floats(1e-3, 1.0), min_size=n, max_size=n))  # jagged is legal
    mode = draw(st.sampled_from(["step", "linear"]))
    draft = draw(st.sampled_from([0.0, 0.005]))
    return S.CostTable.from_points(tokens, secs, mode=mode, draft_seconds=draft)


def call(name, conf, cost, **kw):
    pol = S.make_policy(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LosslessnessWarning)
        return pol(conf, cost, **kw)


@given(
    conf=conf_arrays(),
    cost=cost_tables(),
    name=st.sampled_from(S.POLICIES),
    budget=st.one_of(st.none(), st.integers(1, 100)),
)
def test_bounds_budget_dtype(conf, cost, name, budget):
    lengths = call(name, conf, cost, max_batch_tokens=budget)
    R, g = conf.shape
    assert lengths.dtype == np.int64 and lengths.shape == (R,)
    assert np.all(lengths >= 0) and np.all(lengths <= g)
    if budget is not None:
        assert int((1 + lengths).sum()) <= max(budget, R)
        if budget < R:
            assert not lengths.any()


@given(conf=conf_arrays(), cost=cost_tables(), name=st.sampled_from(["dspark", "dspark_global", "lookahead"]))
def test_prefix_closed_by_survival(conf, cost, name):
    """Admitted drafts are each request's first ℓ_r, and every admitted survival beats every refused one."""
    lengths = call(name, conf, cost)
    a = np.cumprod(conf, axis=1)
    admitted = np.arange(conf.shape[1])[None, :] < lengths[:, None]
    if name == "dspark":
        assert np.all(a[admitted] > 0)
    if admitted.any() and (~admitted).any():
        assert a[admitted].min() >= a[~admitted].max()


@st.composite
def distinct_conf(draw):
    shape = (draw(st.integers(1, 12)), draw(st.integers(1, 7)))
    return draw(hnp.arrays(np.float64, shape, elements=st.floats(0.01, 1.0), unique=True))


@given(conf=distinct_conf(), cost=cost_tables(), name=st.sampled_from(S.POLICIES), data=st.data())
def test_permutation_equivariant(conf, cost, name, data):
    a = np.cumprod(conf, axis=1)
    # Ties between requests are broken by request index, so equivariance holds exactly for distinct values.
    assume(np.unique(a).size == a.size)
    perm = np.array(data.draw(st.permutations(range(conf.shape[0]))))
    base = call(name, conf, cost, stale=conf if S.make_policy(name).uses_stale else None)
    permuted = call(name, conf[perm], cost, stale=conf[perm] if S.make_policy(name).uses_stale else None)
    assert np.array_equal(permuted, base[perm])


@pytest.mark.parametrize("name", ["dspark", "dspark_global", "goodput", "lookahead", "threshold"])
@pytest.mark.parametrize("cost", [FLAT, STEEP], ids=["flat", "steep"])
def test_zero_confidence_admits_nothing(name, cost):
    conf = np.zeros((5, 7))
    assert not call(name, conf, cost, stale=conf).any()


def test_ar_and_fixed():
    conf = np.full((3, 4), 0.9)
    assert not S.make_policy("ar")(conf, FLAT).any()
    assert S.make_policy("fixed", k=1)(conf, FLAT).tolist() == [1, 1, 1]
    assert S.make_policy("fixed", k=9)(conf, FLAT).tolist() == [4, 4, 4]
    # Over budget, the deepest positions go first, evenly across requests.
    assert S.make_policy("fixed", k=4)(conf, FLAT, max_batch_tokens=3 + 7).tolist() == [3, 2, 2]


def test_threshold_truncates_at_first_low_position():
    conf = np.array([[0.9, 0.4, 0.9], [0.2, 0.9, 0.9], [0.8, 0.8, 0.8]])
    assert S.make_policy("threshold", threshold=0.5)(conf, FLAT).tolist() == [1, 0, 3]


def test_appendix_a():
    """R=1, γ=2, c1=0.8, sps {1: 1, 2: 0.5, 3: 0.45}: early stop refuses; lookahead peeks at c2. The table
    has no plateau, so `dspark`'s bucket rule (issue 32) never departs from the paper's greedy stop."""
    cost = S.CostTable.from_points([1, 2, 3], [1.0, 2.0, 1 / 0.45])
    for c2 in (0.0, 0.5, 0.9, 1.0):
        assert S.make_policy("dspark")(np.array([[0.8, c2]]), cost).tolist() == [0]
        assert ref.make_policy("dspark")(np.array([[0.8, c2]]), cost).tolist() == [0]
        assert dspark_lookpast([[0.8, c2]], lambda b: cost.sps(b, 1)) == [0]
    assert S.make_policy("lookahead")(np.array([[0.8, 0.9]]), cost).tolist() == [2]
    assert S.make_policy("lookahead")(np.array([[0.8, 0.0]]), cost).tolist() == [0]
    assert not S.make_policy("lookahead").lossless and S.make_policy("dspark").lossless


@given(
    conf=hnp.arrays(
        np.float64, st.tuples(st.integers(1, 64), st.integers(1, 7)), elements=st.floats(0.05, 1.0)
    )
)  # survival stays above float rounding of τ
def test_flat_cost_verifies_everything_positive(conf):
    lengths = S.make_policy("dspark")(conf, FLAT)
    a = np.cumprod(conf, axis=1)
    assert np.array_equal(lengths, (a > 0).sum(axis=1))


def test_request_cost_makes_verification_relatively_cheaper():
    """A per-request cost (KV reads) is paid whatever ℓ is, so it favours longer verification."""
    conf = np.full((8, 7), 0.7)
    plain = S.make_policy("dspark")(conf, STEEP).sum()
    kv = S.CostTable.from_points(STEEP.tokens, STEEP.seconds, mode="linear", request_seconds=0.05)
    assert S.make_policy("dspark")(conf, kv).sum() > plain


def test_steep_cost_verifies_fewer():
    conf = np.full((8, 7), 0.8)
    flat = S.make_policy("dspark")(conf, FLAT).sum()
    steep = S.make_policy("dspark")(conf, STEEP).sum()
    assert flat == 56 and steep < flat


def _theta(lengths, conf, cost):
    a = np.cumprod(conf, axis=1)
    tau = conf.shape[0] + sum(a[r, : lengths[r]].sum() for r in range(conf.shape[0]))
    return tau * cost.sps(int((1 + np.asarray(lengths)).sum()))


@given(conf=conf_arrays(max_r=3, max_g=4), cost=cost_tables(max_tokens=16))
def test_global_equals_brute_force(conf, cost):
    R, g = conf.shape
    best = max(_theta(ls, conf, cost) for ls in itertools.product(range(g + 1), repeat=R))
    got = S.make_policy("dspark_global")(conf, cost, stale=conf)
    assert _theta(got, conf, cost) == pytest.approx(best, rel=1e-12)


def _greedy_reference(conf, cost):
    """Algorithm 1 as the paper writes it, one candidate at a time."""
    R, g = conf.shape
    a = np.cumprod(conf, axis=1)
    cands = sorted((-a[r, j], j, r) for r in range(R) for j in range(g) if a[r, j] > 0)
    lengths, B, tau = [0] * R, R, float(R)
    best = tau * cost.sps(B)
    for neg, j, r in cands:
        B, tau = B + 1, tau - neg
        theta = tau * cost.sps(B)
        if not theta > best:
            break
        best, lengths[r] = theta, j + 1
    return lengths


@st.composite
def rising_tables(draw, max_points=8, max_tokens=120):
    """Linear tables whose latency rises strictly past 1 token (no plateau: every token costs something),
    convex or concave (jagged slopes allowed, all positive)."""
    n = draw(st.integers(1, max_points))
    tokens = sorted(draw(st.sets(st.integers(1, max_tokens), min_size=n, max_size=n)))
    slopes = draw(st.lists(st.floats(1e-4, 0.05), min_size=n + 1, max_size=n + 1))
    secs = [draw(st.floats(1e-3, 0.5))]
    for i in range(1, n):
        secs.append(secs[-1] + slopes[i] * (tokens[i] - tokens[i - 1]))
    if n == 1:  # one point is flat everywhere: give it a second, rising one
        tokens, secs = [tokens[0], tokens[0] + 1], [secs[0], secs[0] + slopes[0]]
    draft = draw(st.sampled_from([0.0, 0.005]))
    return S.CostTable.from_points(tokens, secs, mode="linear", draft_seconds=draft)


@given(conf=conf_arrays(max_r=10), cost=rising_tables(max_tokens=80))
def test_dspark_follows_greedy_trajectory_without_plateaus(conf, cost):
    assert S.make_policy("dspark")(conf, cost).tolist() == _greedy_reference(conf, cost)


@given(conf=conf_arrays(max_r=10), cost=cost_tables(max_tokens=80))
def test_dspark_follows_the_look_past_reference_on_any_table(conf, cost):
    R = conf.shape[0]
    want = dspark_lookpast(conf.tolist(), lambda b: cost.sps(b, R))
    assert S.make_policy("dspark")(conf, cost).tolist() == want


def test_global_uses_stale_for_capacity_only():
    conf = np.array([[0.9, 0.9, 0.9], [0.5, 0.5, 0.5]])
    stale = np.zeros_like(conf)
    assert not S.make_policy("dspark_global")(conf, FLAT, stale=stale).any()
    full = S.make_policy("dspark_global")(conf, FLAT, stale=np.ones_like(conf))
    assert full.tolist() == [3, 3]
    with pytest.warns(LosslessnessWarning):
        S.make_policy("dspark_global")(conf, FLAT)


def test_goodput_single_length():
    conf = np.array([[0.9] * 5, [0.8] * 5])
    got = S.make_policy("goodput")(conf, STEEP, stale=conf)
    assert got[0] == got[1]
    assert S.make_policy("goodput")(conf, FLAT, stale=conf).tolist() == [5, 5]


def test_empty_batch():
    assert S.make_policy("dspark")(np.zeros((0, 7)), FLAT).shape == (0,)


@pytest.mark.parametrize(
    "conf, kw, match",
    [
        (np.array([[0.5, np.nan]]), {}, r"conf: NaN at \[0, 1\]"),
        (np.array([[0.5, 1.2]]), {}, r"conf: value 1.2 at \[0, 1\] is outside"),
        (np.array([[-0.1, 0.2]]), {}, r"conf: value -0.1"),
        (np.array([0.5, 0.2]), {}, r"conf: expected a 2-D array"),
        (np.array([[0.5, 0.2]]), {"stale": np.array([[0.5]])}, r"stale: shape \(1, 1\) does not match"),
        (np.array([[0.5, 0.2]]), {"stale": np.array([[np.nan, 0.5]])}, r"stale: NaN"),
        (np.array([[0.5, 0.2]]), {"max_batch_tokens": 0}, r"max_batch_tokens"),
    ],
)
def test_bad_conf(conf, kw, match):
    with pytest.raises(ValueError, match=match):
        S.make_policy("dspark_global")(conf, FLAT, **kw)


def test_bad_policy_names_and_params():
    with pytest.raises(ValueError, match="unknown policy 'dsprk'"):
        S.make_policy("dsprk")
    with pytest.raises(ValueError, match="unknown parameter 'kk'"):
        S.make_policy("fixed", kk=2)
    with pytest.raises(ValueError, match="parameter k must be ≥ 0"):
        S.make_policy("fixed", k=-1)
    with pytest.raises(ValueError, match="parameter threshold must be in"):
        S.make_policy("threshold", threshold=1.5)
    with pytest.raises(ValueError, match="parameter delay must be an integer"):
        S.make_policy("dspark_global", delay=1.5)
    with pytest.raises(ValueError, match="cost: expected"):
        S.make_policy("dspark")(np.ones((1, 1)), None)


def test_policy_metadata():
    assert S.make_policy("dspark_global").uses_stale and S.make_policy("dspark_global").delay == 2
    assert not S.make_policy("dspark_global", delay=0).lossless
    assert S.make_policy("dspark_global", delay=1).lossless
    assert S.policy_params("fixed") == ("k",)
    builtin = {"ar", "fixed", "threshold", "dspark", "dspark_global", "goodput", "lookahead"}
    assert builtin <= set(S.POLICIES) and "topk_budget" in S.POLICIES  # + specsched/contrib


@pytest.mark.parametrize("name", S.POLICIES)
@pytest.mark.parametrize("shape", [(1, 5), (4, 1), (3, 4)])
def test_inputs_never_mutated(name, shape):
    conf = np.asfortranarray(np.linspace(0.3, 0.9, np.prod(shape)).reshape(shape))
    for arr in (conf, np.ascontiguousarray(conf)):
        before = arr.copy()
        call(name, arr, STEEP, stale=arr if S.make_policy(name).uses_stale else None)
        assert np.array_equal(arr, before)
