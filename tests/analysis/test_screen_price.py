"""The search screen prices a step with the simulator's own `StepCost` (issue 31: it re-priced by hand and
left out `drafter.model`): its price of a shape is `StepCost.bill` of that shape, drafter included."""

import math

import numpy as np
import pytest

from analysis.search.screen import Screen, Traffic, step_cost_of, step_shape
from analysis.search.slo import parse_slo
from sim.config_io import config_to_dict, load_config
from sim.drafter import draft_seconds_table
from sim.run import prepare
from sim.stepcost import step_cost

BASE = ["cost.model=llama3.1-8b", "drafter.name=eagle3", "drafter.gamma=3", "policy.name=fixed",
        "workload.num_requests=40", "server.max_num_seqs=16",
        "server.max_num_batched_tokens=2048"]  # fmt: skip


@pytest.mark.parametrize("own", [False, True], ids=["layer-priced", "drafter.model"])
def test_screen_price_is_the_step_costs_bill(own):
    cfg = load_config(None, [*BASE, *(["drafter.model=eagle3"] if own else [])])
    prep = prepare(cfg)
    step = step_cost_of(prep, 16, 2048)
    want = step_cost(prep.config, prep.cost)
    assert np.array_equal(step.draft_s, want.draft_s) and np.array_equal(step.latency, want.latency)
    lengths = np.array([3, 1, 0, 2])
    shape = step_shape(4, lengths, 100.0, 600.0, 900, 512.0, True)
    assert (shape.decoding, shape.verify, shape.tokens, shape.kv, shape.drafting) == (4, 10, 110, 2400, 4)
    assert step.bill(shape).seconds == want.bill(shape).seconds
    plain = draft_seconds_table(cfg.drafter, prep.cost, 16, tp=1)
    # drafter.model prices the draft pass from the drafter's own shape, not as layers of the target
    assert (step.draft_s[4] != plain[4]) == own


def test_screen_runs_on_a_drafter_model_candidate():
    config = config_to_dict(load_config(None, [*BASE, "drafter.model=eagle3", "workload.rate=1"]))
    screen = Screen(Traffic(1.0, 1024.0, 256.0, 40), parse_slo("itl_p50<=1s"), 0.1)
    verdict = screen(config)
    assert verdict.ok and math.isfinite(verdict.capacity) and verdict.capacity > 0 and verdict.floor_s > 0
