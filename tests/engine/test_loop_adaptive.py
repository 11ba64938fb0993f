"""The real engine with draft-aware policies (draft="adaptive"): depths planned from the StaleBuffer before
drafting, drafting stops at the deepest planned depth, verification within the depths, still lossless."""

import numpy as np
import pytest

from engine.drafter import ModelDrafter
from engine.loop import Engine, EngineConfig, Request
from engine.model import ModelConfig, TinyLM
from engine.proof.suite_engine import make_engine, mixed_requests, tiny_models
from engine.sampling import SamplingParams
from specsched import DraftCost
from tests.engine.lawcheck import assert_follows_target_law

TARGET, TRUNC, OTHER = tiny_models()
REQS = mixed_requests(6)
PLAIN = make_engine(TARGET, None).generate(REQS, speculative=False)


def _engine(policy, params, *, mode, draft_cost, prior=0.8, drafter=TRUNC, running=3):
    config = EngineConfig(
        gamma=4,
        policy=policy,
        policy_params={"draft": "adaptive", **params},
        mode=mode,
        max_running=running,
        stale_prior=prior,
        draft_cost=draft_cost,
    )
    return Engine(TARGET, ModelDrafter(drafter, slots=running, max_len=96), config, max_len=96)


class _Counting:
    """Wraps a drafter and records how deep each propose call drafted."""

    def __init__(self, inner):
        self.inner, self.depths, self.sizes = inner, [], []

    def propose(self, reqs, gamma, exponentials):
        self.depths.append(gamma)
        self.sizes.append(len(reqs))
        return self.inner.propose(reqs, gamma, exponentials)

    def release(self, rid):
        self.inner.release(rid)


@pytest.mark.parametrize(
    "policy, params",
    [("dspark", {"delay": 1}), ("fixed", {"k": 4, "delay": 2}), ("dspark_global", {"delay": 1})],
)
@pytest.mark.parametrize("dear", [DraftCost("parallel", 1.0), DraftCost("autoregressive", 40.0)])
def test_coupled_mode_equals_plain_decoding(policy, params, dear):
    assert _engine(policy, params, mode="coupled", draft_cost=dear).generate(REQS) == PLAIN


def test_drafting_stops_at_the_deepest_planned_depth_and_skips_when_none_drafts():
    never = DraftCost("parallel", 1e6)  # drafting dearer than anything it could earn: every depth is 0
    engine = _engine("dspark", {"delay": 1}, mode="standard", draft_cost=never)
    engine.drafter = counting = _Counting(engine.drafter)
    assert engine.generate(REQS) == PLAIN  # ℓ = 0 steps are plain decoding, bit for bit
    assert set(counting.depths) == {0} and engine.stats.verified_drafts == 0
    engine = _engine("dspark", {"delay": 1}, mode="standard", draft_cost=DraftCost("autoregressive", 0.5))
    engine.drafter = counting = _Counting(engine.drafter)
    engine.generate(REQS)
    assert max(counting.depths) <= 4 and engine.stats.verified_drafts > 0


class _Planned:
    """The engine planner's policy with its depth plan replaced by `plan(stale)`."""

    def __init__(self, inner, plan):
        self.inner, self.plan = inner, plan

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def trusted_depths(self, stale, *args):
        return self.plan(stale)


@pytest.mark.parametrize("mode", ["coupled", "standard"])
def test_each_request_drafts_its_own_depth_and_depth_zero_skips_the_drafter(mode):
    engine = _engine("dspark", {"delay": 1}, mode=mode, draft_cost=DraftCost("parallel", 1.0))
    engine.drafter = counting = _Counting(engine.drafter)
    plans = []

    def depths(stale):  # requests by position in the batch: depth 0, 2, 4, 0, 2, ...
        d = np.arange(stale.shape[0], dtype=np.int64) % 3 * 2
        plans.append(d)
        return d

    engine.planner.policy = _Planned(engine.planner.policy, depths)
    out = engine.generate(REQS)
    if mode == "coupled":
        assert out == PLAIN  # coupled decoding is plain decoding bit for bit, whatever is drafted
    assert counting.sizes == [int(np.count_nonzero(d)) for d in plans]  # depth-0 requests never drafted
    assert counting.depths == [int(d.max()) for d in plans]  # the pass stops at the deepest depth
    assert 0 < engine.stats.verified_drafts <= sum(int(d.sum()) for d in plans)
    assert engine.stats.drafted == sum(int(d.sum()) for d in plans)  # what the draft pass is priced from


@pytest.mark.parametrize("prior", [0.0, (0.9, 0.5, 0.0, 0.3)])
def test_adaptive_engine_refuses_a_prior_that_never_drafts(prior):
    with pytest.raises(ValueError, match="stale_prior.*adaptive"):
        EngineConfig(gamma=4, policy="dspark", policy_params={"draft": "adaptive"}, stale_prior=prior)


def test_standard_mode_end_to_end_law_matches_the_target_with_adaptive_depths(tmp_path):
    """As test_loop's end-to-end χ², with adaptive DSpark-global: depths from 1-step-stale rows (a
    population-curve prior for young requests), an autoregressive drafter dear enough to cut depths."""
    cfg = ModelConfig(vocab_size=3, d_model=16, n_layers=2, n_heads=2, max_len=16, seed=4, dtype="float64")
    target, draft = TinyLM(cfg), TinyLM(ModelConfig(**{**cfg.__dict__, "seed": 5, "n_layers": 1}))
    (tmp_path / "flat.csv").write_text("tokens,seconds\n1,1.0\n100000,1.0\n")
    params, n, length = SamplingParams(0.9, top_p=0.95), 4000, 4
    config = EngineConfig(
        gamma=3,
        policy="dspark_global",
        policy_params={"delay": 1, "draft": "adaptive", "slack": 0.0},
        max_running=n,
        cost=str(tmp_path / "flat.csv"),
        stale_prior=(0.9, 0.7, 0.5),
        draft_cost=DraftCost("autoregressive", 0.15),
    )
    engine = Engine(target, ModelDrafter(draft, slots=n, max_len=16), config, max_len=16)
    out = engine.generate([Request(i, (0, 1), length, params, seed=i) for i in range(n)])
    assert_follows_target_law(target, out, params, length, n)
    assert 0 < engine.stats.verified_drafts < 3 * (engine.stats.verify_tokens - engine.stats.verified_drafts)


@pytest.mark.parametrize("prior", [(0.5, 0.5), 1.5, ((0.1,) * 4,)])
def test_bad_stale_prior_names_the_field(prior):
    with pytest.raises(ValueError, match="stale_prior"):
        EngineConfig(gamma=4, stale_prior=prior)


def test_every_step_output_carries_the_planners_decision():
    """The engine's StepOutput carries the planner's frozen StepDecision (as the simulator's StepPlan does):
    its lengths are the planned ones and ℓ ≤ depth wherever depths were planned."""
    engine = _engine("dspark", {"delay": 1}, mode="standard", draft_cost=DraftCost("parallel", 1.0))
    outs = []
    engine.observers.append(outs.append)
    engine.generate(REQS)
    assert outs and all(o.decision is not None for o in outs)
    for o in outs:
        np.testing.assert_array_equal(o.decision.lengths, o.planned)
        assert np.all(o.decision.lengths <= o.decision.depths)
