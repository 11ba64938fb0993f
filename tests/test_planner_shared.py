"""The planning sequence exists once: one confidence stream fed through a simulator replica's `Planner` and
through the planner the engine builds (`engine.loop.make_planner`) gives identical decisions, step by step
(depths, verify lengths, the draft price), with full and adaptive drafting and stale-reading policies."""

import numpy as np
import pytest

import sim
import sim.server
import specsched
from engine.loop import EngineConfig, make_planner
from sim.config_io import load_config

BASE = ["workload.num_requests=80", "workload.rate=10", "workload.output_tokens=40", "server.max_num_seqs=12"]
CASES = {
    "adaptive-delay2": ["policy.name=goodput", "policy.delay=2", "policy.draft=adaptive"],
    "adaptive-dspark": ["policy.draft=adaptive", "policy.delay=1"],
    "adaptive-delay0": ["policy.draft=adaptive", "policy.delay=0"],
    "full-stale": ["policy.name=dspark_global", "policy.delay=2"],
    "full": ["policy.name=threshold", "policy.threshold=0.4", "workload.rate=40"],
}


class _Logged(specsched.Planner):
    """A replica's planner that logs every call with copies of its arguments and what it returned."""

    log: list = []

    def before_draft(self, slots, age, prior=None, cost=None, context=0.0):
        got = super().before_draft(slots, age, prior, cost, context)
        self.log.append(("before", _copy(slots, age, prior), cost, context, got))
        return got

    def after_draft(self, conf, slots, age, prior=None, cost=None, context=0.0):
        got = super().after_draft(conf, slots, age, prior, cost, context)
        self.log.append(("after", (conf.copy(), *_copy(slots, age, prior)), cost, context, got))
        return got

    def compact(self, keep, n):
        self.log.append(("compact", (keep.copy(), n), None, None, None))
        super().compact(keep, n)


def _copy(*arrays):
    return tuple(None if a is None else np.array(a, copy=True) for a in arrays)


@pytest.mark.parametrize("case", list(CASES))
def test_sim_replica_and_engine_planner_decide_alike(case, monkeypatch):
    cfg = load_config(None, [*BASE, *CASES[case]])
    log = _Logged.log = []
    monkeypatch.setattr(sim.server, "Planner", _Logged)
    carried, apply = [], sim.server.Replica._apply

    def _apply(rep, plan):  # the simulator's StepPlan carries the planner's decision
        carried.append(plan.decision)
        apply(rep, plan)

    monkeypatch.setattr(sim.server.Replica, "_apply", _apply)
    sim.simulate(cfg)
    decided = [got for kind, *_, got in log if kind == "after"]
    assert {id(d) for d in carried if d is not None} <= {id(d) for d in decided} and any(carried)
    policy = specsched.make_policy(cfg.policy.name, **cfg.policy.params())
    drafter = sim.drafter.draft_cost(cfg.drafter)
    engine_cfg = EngineConfig(
        gamma=cfg.drafter.gamma,
        policy=cfg.policy.name,
        policy_params=cfg.policy.params(),
        max_running=cfg.server.max_num_seqs,
        max_batch_tokens=cfg.server.max_num_batched_tokens,
        draft_cost=drafter,
        stale_prior=0.5,
    )
    sim_table = sim.run.prepare(cfg).cost
    planner, engine_table = make_planner(policy, engine_cfg, sim_table)
    decisions = 0
    for kind, args, table, context, got in log:
        if kind == "compact":
            planner.compact(*args)
            continue
        # the engine plans adaptive steps on its own table (the sim's, its draft seconds unused)
        use = engine_table if planner.adaptive else table
        if kind == "before":
            mine = planner.before_draft(*args, use, context)
            assert (mine is None) == (got is None) and (got is None or np.array_equal(mine, got))
        else:
            assert planner.after_draft(*args, use, context).same_as(got)
            decisions += 1
    assert decisions > 50
    if planner.adaptive:  # some steps drafted less than γ somewhere
        assert any(got.depths.min() < cfg.drafter.gamma for kind, *_, got in log if kind == "after")
