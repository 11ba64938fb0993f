"""Server behaviour: verify lengths come from the policy, draft pricing, stale confidences, batching, KV."""

from __future__ import annotations

import numpy as np
import pytest

import sim.curves
import specsched
from sim.config import DrafterConfig
from sim.drafter import draft_seconds_table
from tests.sim.simutil import flat_cost, run

PERFECT = ("acceptance.auc=1.0", "acceptance.overconfidence=0", "acceptance.sts=false")


def test_perfect_confidence_and_flat_cost_verify_all_gamma(tmp_path):
    """Θ = τ / const rises with every candidate, so dspark verifies all γ of every request."""
    res = run(
        "workload.num_requests=200",
        "workload.rate=50",
        "workload.output_tokens=64",
        *PERFECT,
        f"cost.table={flat_cost(tmp_path)}",
        "cost.layers=32",
        "policy.name=dspark",
    )
    req = res.requests
    np.testing.assert_array_equal(req["verify_tokens"], req["decode_steps"] * 8)
    assert res.summary["mean_verify_tokens_per_request_step"] == 8.0


def test_fixed_and_ar_lengths():
    fixed = run("workload.num_requests=100", "policy.name=fixed", "policy.k=3")
    assert fixed.summary["mean_verify_tokens_per_request_step"] == 4.0
    ar = run("workload.num_requests=100", "drafter.name=none", "policy.name=ar")
    s = ar.summary
    assert (s["tau_mean"], s["mean_verify_tokens_per_request_step"], s["draft_time_frac"]) == (1.0, 1.0, 0.0)
    assert np.all(ar.requests["accepted"] == 0)


class Recording:
    """A policy stand-in that records what the server passes it (verifies nothing: ℓ = 0)."""

    def __init__(self, uses_stale: bool = True, delay: int = 2):
        self.name, self.params, self.lossless = "recording", {}, True
        self.uses_stale, self.delay = uses_stale, delay
        self.calls: list[tuple[np.ndarray, np.ndarray | None, float, int | None]] = []

    def __call__(self, conf, cost, *, stale=None, max_batch_tokens=None):
        self.calls.append(
            (conf.copy(), None if stale is None else stale.copy(), cost.draft_seconds, max_batch_tokens)
        )
        return np.zeros(conf.shape[0], dtype=np.int64)

    def trusted(self, conf, cost, stale=None, budget=None):  # the simulator's entry point (no checks)
        return self(conf, cost, stale=stale, max_batch_tokens=budget)

    def trusted_many(self, conf, cost, budget=None):
        return np.stack([self.trusted(c, cost, None, budget) for c in conf])


def test_stale_confidences_are_delay_steps_old(monkeypatch):
    """One request at a time: stale at its k-th decode step is conf at step k − delay; before that, the
    domain's population curve (a constant), never the current confidences."""
    policy = Recording(delay=2)
    monkeypatch.setattr(specsched, "make_policy", lambda name, **params: policy)
    res = run(
        "workload.kind=closed",
        "workload.concurrency=1",
        "workload.num_requests=3",
        "workload.output_tokens=10",
        "server.max_num_batched_tokens=4096",
    )
    assert len(policy.calls) == 3 * 9  # ℓ = 0: 9 decode steps after the prefill's first token
    curves = sim.curves.curve_matrix(None, res.config.drafter.name, res.config.drafter.gamma)
    for i, (conf, stale, _, budget) in enumerate(policy.calls):
        first = (i // 9) * 9
        if i - 2 >= first:
            np.testing.assert_array_equal(stale, policy.calls[i - 2][0])
        else:
            assert any(np.array_equal(stale[0], row) for row in curves)
            assert not np.array_equal(stale, conf)
        assert budget == 4096


def test_policy_is_given_the_draft_cost(monkeypatch):
    policy = Recording(uses_stale=False, delay=0)
    monkeypatch.setattr(specsched, "make_policy", lambda name, **params: policy)
    res = run(
        "workload.kind=closed",
        "workload.concurrency=8",
        "workload.num_requests=16",
        "workload.output_tokens=20",
    )
    cfg = res.config
    table = draft_seconds_table(cfg.drafter, specsched.builtin_cost(cfg.server.cost), cfg.server.max_num_seqs)
    for conf, _, draft, _ in policy.calls:
        assert draft == table[conf.shape[0]] > 0


def test_draft_cost_by_drafter_kind():
    cost = specsched.builtin_cost("h200-dense8b")
    r = np.arange(5)
    layer = cost.layer_seconds
    par = draft_seconds_table(DrafterConfig(name="dflash", gamma=7), cost, 4)
    np.testing.assert_allclose(par[1:], 5 * layer(r[1:] * 7))  # one pass of 5 layers over R·γ positions
    spark = draft_seconds_table(DrafterConfig(name="dspark", gamma=7, markov_overhead=0.01), cost, 4)
    np.testing.assert_allclose(spark[1:], par[1:] + 0.01 * cost.latency(r[1:]))
    eagle = draft_seconds_table(DrafterConfig(name="eagle3", gamma=7), cost, 4)
    np.testing.assert_allclose(eagle[1:], 7 * layer(r[1:]))  # γ sequential one-layer passes
    mtp = draft_seconds_table(DrafterConfig(name="mtp", gamma=1, layer_cost=2.0), cost, 4)
    np.testing.assert_allclose(mtp[1:], 2.0 * layer(r[1:]))
    assert not draft_seconds_table(DrafterConfig(name="none"), cost, 4).any()
    assert par[0] == 0.0


def test_step_time_is_draft_plus_verify(tmp_path):
    """Flat 10 ms verify, known draft: one request's e2e is a sum of whole steps."""
    res = run(
        "workload.kind=closed",
        "workload.concurrency=1",
        "workload.num_requests=1",
        "workload.input_tokens=1",
        "workload.output_tokens=30",
        "drafter.name=eagle3",
        "drafter.gamma=3",
        f"cost.table={flat_cost(tmp_path)}",
        "cost.layers=10",
    )
    steps = res.requests["decode_steps"][0]
    # prefill step (no decoding requests: no draft) + decode steps at 0.01 + 3 × 0.001 each
    assert res.requests["e2e_s"][0] == pytest.approx(0.01 + steps * 0.013)


def test_chunked_prefill_and_ttft(tmp_path):
    """A 1000-token prompt with a 256-token budget prefills in 4 steps; its first token ends the 4th."""
    res = run(
        "workload.kind=closed",
        "workload.concurrency=1",
        "workload.num_requests=1",
        "workload.input_tokens=1000",
        "workload.output_tokens=5",
        "drafter.name=none",
        "policy.name=ar",
        "server.max_num_batched_tokens=256",
        f"cost.table={flat_cost(tmp_path)}",
    )
    assert res.requests["ttft_s"][0] == pytest.approx(0.04)
    assert res.requests["e2e_s"][0] == pytest.approx(0.08)


def test_kv_overflow_preempts_the_newest(tmp_path):
    """Two requests fit at admission; their growth overflows KV, so the later-admitted one is preempted."""
    res = run(
        "workload.kind=closed",
        "workload.concurrency=2",
        "workload.num_requests=2",
        "workload.input_tokens=10",
        "workload.output_tokens=50",
        "drafter.name=none",
        "policy.name=ar",
        "server.kv_tokens=100",
        f"cost.table={flat_cost(tmp_path)}",
    )
    req = res.requests
    assert req["preemptions"][0] == 0 and req["preemptions"][1] >= 1
    assert req["finish_s"][0] < req["finish_s"][1]
    np.testing.assert_array_equal(req["generated"], [50, 50])


def test_max_num_seqs_limits_the_batch():
    res = run(
        "workload.kind=closed",
        "workload.concurrency=40",
        "workload.num_requests=120",
        "server.max_num_seqs=16",
    )
    assert res.series["batch_size"][np.isfinite(res.series["batch_size"])].max() <= 16
    assert res.summary["queue_s_mean"] > 0


@pytest.mark.parametrize("router", ["round_robin", "least_outstanding"])
def test_router_spreads_requests(router):
    res = run(
        "workload.num_requests=400",
        "workload.rate=40",
        "workload.output_tokens=64",
        "server.replicas=4",
        f"server.router={router}",
    )
    counts = np.bincount(res.requests["replica"], minlength=4)
    if router == "round_robin":
        np.testing.assert_array_equal(res.requests["replica"], np.arange(400) % 4)
    assert counts.min() > 50
    assert res.summary["gpus"] == 4


def test_closed_loop_think_time():
    """A user's next request arrives think_s after one of the previous ones finished."""
    res = run(
        "workload.kind=closed",
        "workload.concurrency=4",
        "workload.num_requests=40",
        "workload.think_s=0.5",
        "workload.think_dist=fixed",
    )
    req = res.requests
    assert np.all(req["arrival_s"][:4] == 0.0)
    finishes = np.sort(req["finish_s"])
    for t in req["arrival_s"][4:]:
        assert np.min(np.abs(finishes - (t - 0.5))) < 1e-9


def test_trace_replay_uses_the_trace():
    import traces

    table = traces.load("azure2023-conv")
    res = run(
        "workload.kind=trace",
        "workload.trace=azure2023-conv",
        "workload.num_requests=300",
        "workload.speedup=4",
    )
    req = res.requests
    assert res.summary["requests_total"] == 300
    np.testing.assert_allclose(req["arrival_s"], table.arrival_s[:300] / 4)
    np.testing.assert_array_equal(req["output_tokens"], np.maximum(table.output_tokens[:300], 1))
    assert np.all(req["domain"] == 0)  # the built-in conversation trace is labelled "chat"


def test_lengths_resampled_from_a_trace_keep_pairs():
    import traces

    table = traces.load("azure2023-code")
    res = run(
        "workload.num_requests=200",
        "workload.input_dist=trace",
        "workload.output_dist=trace",
        "workload.trace=azure2023-code",
        "workload.max_input_tokens=100000",
        "server.kv_tokens=10000000",
    )
    pairs = set(zip(table.input_tokens.tolist(), np.maximum(table.output_tokens, 1).tolist()))
    got = zip(res.requests["input_tokens"].tolist(), res.requests["output_tokens"].tolist())
    assert all(p in pairs for p in got)


def test_time_series_is_bounded():
    res = run("workload.num_requests=2000", "workload.rate=100", "metrics.series_bins=64")
    assert 0 < len(res.series["t_s"]) <= 64
    assert np.nansum(res.series["throughput_tok_s"] * np.diff(res.series["t_s"])[0]) == pytest.approx(
        res.summary["output_tokens"], rel=1e-9
    )


def test_metrics_on_a_deterministic_pipeline(tmp_path):
    """One user, γ = 0, 10 ms steps, 10-token outputs: 100 tok/s, TTFT 10 ms, TPOT 10 ms, 1 step/token."""
    res = run(
        "workload.kind=closed",
        "workload.concurrency=1",
        "workload.num_requests=200",
        "workload.input_tokens=1",
        "workload.output_tokens=10",
        "drafter.name=none",
        "policy.name=ar",
        f"cost.table={flat_cost(tmp_path)}",
    )
    s = res.summary
    assert s["throughput_tok_s"] == pytest.approx(100.0, rel=2e-3)
    assert s["request_throughput_req_s"] == pytest.approx(10.0, rel=2e-2)
    assert (s["ttft_s_p50"], s["tpot_s_mean"], s["e2e_s_p99"]) == pytest.approx((0.01, 0.01, 0.1))
    assert s["per_user_tok_s_mean"] == pytest.approx(100.0)
    assert (s["tau_mean"], s["steps"], s["busy_frac"]) == (1.0, 2000, pytest.approx(1.0, rel=2e-3))


def test_request_throughput_is_the_departure_rate_under_saturation(tmp_path):
    """Past saturation the window's arrivals finish after it: the reported request throughput is what the
    server completes (one user-free server at 10 ms a step, 10 tokens a request: ≤ 10 req/s), not the
    offered 50 req/s."""
    res = run(
        "workload.kind=poisson",
        "workload.rate=50",
        "workload.num_requests=400",
        "workload.input_tokens=1",
        "workload.output_tokens=10",
        "server.max_num_seqs=1",
        "drafter.name=none",
        "policy.name=ar",
        f"cost.table={flat_cost(tmp_path)}",
    )
    assert res.summary["request_throughput_req_s"] == pytest.approx(10.0, rel=0.05)
