"""Runs of pure-decode steps decided several at a time (`sim.steps`) give exactly the results of single
steps: same summary, same per-request columns, on open and closed loops, several replicas, KV pressure."""

import numpy as np
import pytest

import sim.server
import sim.steps
from sim import simulate
from sim.config_io import load_config

CASES = {
    "poisson": ["workload.num_requests=200", "workload.rate=6", "workload.output_dist=exponential"],
    "closed-think": [
        "workload.kind=closed",
        "workload.concurrency=6",
        "workload.num_requests=60",
        "workload.think_s=0.5",
        "workload.output_dist=uniform",
    ],
    "replicas": [
        "workload.num_requests=200",
        "workload.rate=12",
        "server.replicas=3",
        "server.router=round_robin",
        "workload.output_dist=exponential",
    ],
    "kv-tight": [
        "workload.num_requests=120",
        "workload.rate=20",
        "workload.input_tokens=256",
        "server.kv_tokens=6000",
        "server.max_num_seqs=8",
    ],
    "oracle-conf": [
        "workload.num_requests=100",
        "workload.rate=6",
        "acceptance.auc=1.0",
        "acceptance.overconfidence=0",
        "acceptance.sts=false",
    ],
}


def _both(sets, monkeypatch):
    cfg = load_config(None, ["workload.output_tokens=96", *sets])
    passes = []
    real = sim.server.plan_decode_run

    def counting(rep, k, now):
        run = real(rep, k, now)
        passes.append(len(run.seconds))
        return run

    monkeypatch.setattr(sim.server, "plan_decode_run", counting)
    fast = simulate(cfg)
    monkeypatch.setattr(sim.steps, "MAX_RUN", 1)
    slow = simulate(cfg)
    return fast, slow, passes


@pytest.mark.parametrize("case", list(CASES))
def test_multi_step_equals_single_step(case, monkeypatch):
    fast, slow, passes = _both(CASES[case], monkeypatch)
    for key, value in slow.summary.items():
        got = fast.summary[key]
        assert got == value or (value != value and got != got), key
    for key, col in slow.requests.items():
        np.testing.assert_array_equal(fast.requests[key], col, err_msg=key)
    if case != "kv-tight":
        assert passes and max(passes) > 1 and sum(passes) > len(passes)  # runs really happened


def test_stale_policies_take_the_single_step_path(monkeypatch):
    fast, slow, passes = _both(["workload.num_requests=40", "policy.name=dspark_global"], monkeypatch)
    assert not passes
    assert fast.summary == slow.summary or fast.summary["steps"] == slow.summary["steps"]
