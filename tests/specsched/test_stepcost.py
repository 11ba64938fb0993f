"""`specsched.stepcost`: a step's bill is its named parts added in one order; `bills` prices K pure-decode
steps exactly as K bills; the recorder and summary keep the parts; the profile/config mapping is one table."""

import numpy as np
import pytest

import sim
from sim.config_io import load_config
from sim.stepcost import step_cost, term_settings, term_values
from specsched import CostTable
from specsched.contracts import Profile
from specsched.stepcost import PARTS, TERMS, StepCost, StepShape, profile_terms

BASE = ["workload.num_requests=60", "workload.rate=8", "workload.output_tokens=48"]


def _cost(**terms) -> StepCost:
    table = CostTable(np.array([1, 64, 512]), np.array([0.010, 0.012, 0.030]), request_seconds=2e-5)
    return StepCost(table, np.linspace(0, 0.004, 9), np.asarray(table.latency(np.arange(600))), **terms)


def test_bill_adds_its_parts_in_order():
    sc = _cost(pad_s=1e-4, context_pad_s=1e-8, draft_context_s=2e-9, intake_s=3e-4, intake_ref=1.0)
    shape = StepShape(6, 4, 30, 20, padded=24, kv=3000, longest=700, drafting=4, intake=9)
    bill = sc.bill(shape)
    total = 0.0
    for part in bill.parts:
        total += part
    assert bill.seconds == total and len(bill.parts) == len(PARTS)
    assert bill.pad == pytest.approx(1e-4 * 4) and bill.context_pad == pytest.approx(1e-8 * 6 * 700)
    assert bill.draft == pytest.approx(0.002 + 3e-4 * (9 - 4 * 2.0) + 2e-9 * 4 * 700)
    # a prefill-request charge replaces the pad (a join's padding is in its own cost); without one the
    # pad is charged on every step with decoding rows (the rule the figures were made with)
    assert sc.bill(shape._replace(prefilling=1)).pad == bill.pad
    join = _cost(prefill_request_s=0.002, pad_s=1e-4).bill(shape._replace(prefilling=2))
    assert (join.prefill, join.pad) == (0.004, 0.0)


def test_bills_equal_k_single_bills():
    sc = _cost(pad_s=1e-4)
    verify, padded = [9, 14, 20, 8], [16, 16, 24, 8]
    run = sc.bills(4, verify, padded)
    for k, (v, p) in enumerate(zip(verify, padded)):
        one = sc.bill(StepShape(4, 4, v, v, padded=p, drafting=4))
        assert (one.seconds, one.forward, one.pad, one.draft) == (
            run.seconds[k],
            run.forward[k],
            run.pad[k],
            run.draft,
        )


def test_negative_terms_are_refused():
    with pytest.raises(ValueError, match="pad_s"):
        _cost(pad_s=-1.0)


def test_summary_and_recorder_say_where_step_time_goes():
    s = sim.simulate(load_config(None, [*BASE, "cost.pad_token_seconds=1e-4"])).summary
    parts = [s[f"step_s_{p}"] for p in PARTS]
    assert sum(parts) == pytest.approx(s["step_s_mean"], rel=1e-12)
    assert s["step_s_draft"] == pytest.approx(s["draft_s_mean"], rel=1e-12)
    assert s["step_s_forward"] > 0 and s["step_s_pad"] > 0 and s["step_s_context_pad"] == 0.0


def test_one_mapping_between_config_profile_and_terms():
    cfg = load_config(None, ["cost.pad_token_seconds=1e-4", "drafter.intake_seconds=2e-4"])
    values = term_values(cfg)
    assert set(values) == set(TERMS) and values["pad_s"] == 1e-4 and values["intake_s"] == 2e-4
    sets = term_settings(values)
    assert sets["server"]["pad_token_seconds"] == 1e-4 and sets["drafter"]["intake_seconds"] == 2e-4
    sc = step_cost(cfg, CostTable(np.array([1, 64]), np.array([0.01, 0.02])))
    assert all(getattr(sc, term) == v for term, v in values.items())
    assert (
        term_values(load_config(None, ["drafter.name=none", "drafter.intake_seconds=2e-4"]))["intake_s"] == 0
    )
    prof = Profile(
        np.array([1, 64]),
        np.array([0.01, 0.02]),
        {4: 0.002},
        pad_s={4: 5e-6},
        context_verify_s={4: 1e-8},
        context_draft_s={4: 2e-9},
        context_ref=0,
    )
    got = profile_terms(prof, 4)
    assert got["pad_s"] == 5e-6 and got["context_pad_s"] == 1e-8 and got["draft_context_s"] == 2e-9
    assert profile_terms(prof.__class__(**{**prof.__dict__, "context_ref": None}), 4)["context_pad_s"] == 0.0
