"""Through the whole simulator: τ per domain and drafter (paper Table 1), the fixed-k crossover under a
saturating cost table (dspark.md §6 T5), and the load-dependent verify budget (paper Fig. 8)."""

from __future__ import annotations

import pytest

from sim.curves import DOMAINS, TABLE1_TAU, builtin_curve, curve_tau
from tests.sim.simutil import run, saturating_cost


@pytest.mark.parametrize("drafter", ["dspark", "dflash", "eagle3"])
def test_tau_per_domain_matches_table1(drafter):
    """All γ = 7 verified (fixed k=7): τ per domain within ±0.05 of Table 1, and within sampling error
    (±0.03; ~4 sd at 10k requests per domain) of the input curve's own τ = 1 + Σ survival.

    Margins are thin by construction for DSpark/code: its Fig. 2 curve gives 5.166 vs Table 1's 5.12.
    """
    res = run(
        "workload.kind=closed",
        "workload.concurrency=256",
        "workload.num_requests=30000",
        "workload.input_tokens=16",
        "workload.output_tokens=64",
        f"drafter.name={drafter}",
        "policy.name=fixed",
        "policy.k=7",
        "metrics.warmup=0",
        "metrics.drain=0.05",
    )
    for domain in DOMAINS:
        tau = res.summary["tau_by_domain"][domain]
        assert tau == pytest.approx(TABLE1_TAU[drafter][domain], abs=0.05), domain
        assert tau == pytest.approx(curve_tau(builtin_curve(drafter, domain)), abs=0.03), domain


def _closed(cost: str, concurrency: int, drafter: str, policy: str, *extra: str):
    return run(
        "workload.kind=closed",
        f"workload.concurrency={concurrency}",
        f"workload.num_requests={4 * concurrency}",
        "workload.input_tokens=512",
        "workload.output_tokens=512",
        "workload.output_dist=exponential",
        "metrics.warmup=0.25",
        f"cost.table={cost}",
        "server.max_num_seqs=512",
        f"drafter.name={drafter}",
        f"policy.name={policy}",
        *extra,
    ).summary


def test_fixed_k_crossover_on_a_saturating_table(tmp_path):
    """Fixed k=7 beats AR at low load and falls below it at high load (dspark.md §6 T5); dspark tracks the
    better of the two at every load, short of it by no more than its own draft pass — i.e. it is at least
    as good as fixed k=7 and as AR that pays the same draft pass (policy "ar" with the dspark drafter);
    at low load it is at least as fast per user as fixed k=1."""
    cost = saturating_cost(tmp_path)
    extra = ("cost.layers=40", "cost.mode=linear")
    for concurrency in (4, 32, 128, 384):
        ar = _closed(cost, concurrency, "none", "ar", *extra)["throughput_tok_s"]
        ar_drafted = _closed(cost, concurrency, "dspark", "ar", *extra)["throughput_tok_s"]
        fixed7 = _closed(cost, concurrency, "dspark", "fixed", "policy.k=7", *extra)["throughput_tok_s"]
        spark = _closed(cost, concurrency, "dspark", "dspark", *extra)
        assert spark["throughput_tok_s"] >= 0.99 * max(ar_drafted, fixed7), concurrency
        if concurrency == 4:
            assert fixed7 > 2 * ar
            fixed1 = _closed(cost, concurrency, "dspark", "fixed", "policy.k=1", *extra)
            assert spark["per_user_tok_s_mean"] >= fixed1["per_user_tok_s_mean"]
        if concurrency == 384:
            assert fixed7 < ar


def test_verify_budget_falls_with_concurrency_like_fig8():
    """DSpark-5 (γ=5, 3 draft layers) on the V4-Flash-like table: ≈5 at 20 concurrent, ≈3.5 at 200."""
    budget = {}
    for concurrency in (20, 200):
        s = _closed(
            "h200-v4flash",
            concurrency,
            "dspark",
            "dspark",
            "drafter.gamma=5",
            "drafter.layers=3",
            "workload.input_tokens=1024",
        )
        budget[concurrency] = s["mean_verify_tokens_per_request_step"]
    assert budget[200] < 0.85 * budget[20]
    assert budget[20] == pytest.approx(5.0, abs=0.75)
    # The built-in table is a compromise between Fig. 7 (cheap verify tokens) and Fig. 8 (dear ones): it
    # lands ≈ 4.3 here with 1024-token prompts, ≈ 4.1 on a decode instance (paper_figs/REPRODUCTION.md).
    assert budget[200] == pytest.approx(3.5, abs=1.0)
