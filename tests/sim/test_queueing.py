"""Queueing sanity: M/D/1 wait, Little's law, token conservation, determinism, independent streams."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cli import dumps_json
from tests.sim.simutil import flat_cost, run


def test_md1_mean_wait_matches_theory(tmp_path):
    """γ=0, one request at a time, Poisson arrivals, constant step → mean wait ρD/(2(1−ρ)) within 5%."""
    step, rho = 0.01, 0.5
    res = run(
        "workload.kind=poisson",
        f"workload.rate={rho / step}",
        "workload.num_requests=30000",
        "workload.input_tokens=1",
        "workload.output_tokens=1",
        "drafter.name=none",
        "policy.name=ar",
        "server.max_num_seqs=1",
        f"cost.table={flat_cost(tmp_path, step)}",
    )
    service = res.requests["finish_s"] - res.requests["admit_s"]
    np.testing.assert_allclose(service, step, rtol=1e-9)  # one prefill step emits the only token
    theory = rho * step / (2 * (1 - rho))
    assert res.requests["queue_s"].mean() == pytest.approx(theory, rel=0.05)


def test_littles_law(tmp_path):
    """∫ queue dt = Σ waits and ∫ in-system dt = Σ e2e exactly; the window's L_q ≈ λ W_q."""
    res = run(
        "workload.kind=gamma",
        "workload.rate=120",
        "workload.cv=2",
        "workload.num_requests=3000",
        "workload.input_tokens=64",
        "workload.output_tokens=32",
        "workload.output_dist=exponential",
        "server.max_num_seqs=8",
        "cost.table=h200-dense8b",
        "drafter.gamma=4",
    )
    s, req = res.summary, res.requests
    assert s["queue_area_s"] == pytest.approx(req["queue_s"].sum(), rel=1e-9)
    assert s["system_area_s"] == pytest.approx(req["e2e_s"].sum(), rel=1e-9)
    assert s["queue_s_mean"] > 0.01  # the queue is not trivially empty
    span = s["window_end_s"] - s["window_start_s"]
    inside = (req["arrival_s"] >= s["window_start_s"]) & (req["arrival_s"] <= s["window_end_s"])
    lam = inside.sum() / span
    assert s["queue_len_mean"] == pytest.approx(lam * s["queue_s_mean"], rel=0.15)
    assert s["in_system_mean"] == pytest.approx(lam * s["e2e_s_mean"], rel=0.15)


@pytest.mark.parametrize("policy", ["dspark", "fixed", "dspark_global"])
def test_token_conservation_with_preemptions(policy):
    """Every request emits exactly its output length, even when KV pressure preempts and recomputes."""
    res = run(
        "workload.kind=closed",
        "workload.concurrency=24",
        "workload.num_requests=150",
        "workload.input_tokens=200",
        "workload.input_dist=uniform",
        "workload.output_tokens=300",
        "workload.output_dist=exponential",
        "server.kv_tokens=6000",
        "server.max_num_batched_tokens=512",
        f"policy.name={policy}",
    )
    req, s = res.requests, res.summary
    assert s["preemptions"] > 0
    assert s["preemptions"] == req["preemptions"].sum()
    np.testing.assert_array_equal(req["generated"], req["output_tokens"])
    assert s["output_tokens"] == req["output_tokens"].sum()
    assert s["requests_completed"] == len(req["id"]) == 150
    # a request's decode steps emit (accepted + 1) each, cut at the output length, plus one token per prefill
    assert np.all(req["accepted"] + req["decode_steps"] >= req["output_tokens"] - 1 - req["preemptions"])
    assert np.all(req["first_token_s"] <= req["finish_s"])
    assert np.all(req["admit_s"] >= req["arrival_s"])


def test_same_config_and_seed_give_identical_summary():
    sets = (
        "workload.num_requests=300",
        "workload.rate=30",
        "workload.output_dist=lognormal",
        "policy.name=dspark_global",
    )
    a, b = run(*sets), run(*sets)
    assert dumps_json(a.summary) == dumps_json(b.summary)
    for key in a.requests:
        np.testing.assert_array_equal(a.requests[key], b.requests[key])
    c = run(*sets, "seed=1")
    assert dumps_json(c.summary) != dumps_json(a.summary)
    assert json.loads(dumps_json(a.summary))["requests_completed"] == 300


def test_policy_change_keeps_traffic_and_difficulty():
    """Separate streams: arrivals, lengths and domains do not depend on the policy or drafter."""
    sets = (
        "workload.num_requests=200",
        "workload.output_tokens=32",
        "workload.output_dist=exponential",
        "workload.input_dist=lognormal",
    )
    a = run(*sets, "policy.name=dspark")
    b = run(*sets, "policy.name=fixed", "policy.k=3", "drafter.name=dflash")
    for key in ("arrival_s", "input_tokens", "output_tokens", "domain"):
        np.testing.assert_array_equal(a.requests[key], b.requests[key])


@settings(max_examples=12, deadline=None)
@given(
    users=st.integers(1, 24),
    prompt=st.integers(1, 300),
    output=st.integers(1, 200),
    gamma=st.integers(0, 7),
    kv_slack=st.floats(1.0, 6.0),
    budget=st.integers(64, 1024),
    policy=st.sampled_from(["dspark", "fixed", "threshold", "dspark_global", "goodput", "ar"]),
    seed=st.integers(0, 1000),
)
def test_invariants_hold_for_any_small_deployment(
    users, prompt, output, gamma, kv_slack, budget, policy, seed
):
    """Whatever the load, KV pressure and policy: all requests finish with exactly their output, times are
    ordered, verify lengths stay within γ and the engine's counters agree with the per-request ones."""
    kv = int((2 * prompt + 2 * output + gamma) * kv_slack)
    res = run(
        "workload.kind=closed",
        f"workload.concurrency={users}",
        f"workload.num_requests={2 * users}",
        f"workload.input_tokens={prompt}",
        "workload.input_dist=uniform",
        f"workload.output_tokens={output}",
        "workload.output_dist=uniform",
        f"drafter.gamma={gamma}",
        f"policy.name={policy}",
        f"server.kv_tokens={kv}",
        f"server.max_num_batched_tokens={budget}",
        "server.max_num_seqs=32",
        f"seed={seed}",
        "acceptance.sts_samples=256",
    )
    req, s = res.requests, res.summary
    np.testing.assert_array_equal(req["generated"], req["output_tokens"])
    assert s["requests_completed"] == 2 * users
    assert np.all(req["arrival_s"] <= req["admit_s"])
    assert np.all(req["admit_s"] < req["first_token_s"])
    assert np.all(req["first_token_s"] <= req["finish_s"])
    assert np.all(req["verify_tokens"] >= req["decode_steps"])
    assert np.all(req["verify_tokens"] <= req["decode_steps"] * (gamma + 1))
    assert np.all(req["accepted"] <= req["verify_tokens"] - req["decode_steps"])
    assert s["preemptions"] == req["preemptions"].sum()
