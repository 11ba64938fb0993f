"""The load factor in every run's summary (issue 33 item 3): offered vs sustainable rate, from the step
cost at the batch the server saturates at; the sustainable rate is what a saturated run serves."""

from __future__ import annotations

import json

import pytest

from tests.sim.simutil import flat_cost, run

AR = (
    "drafter.name=none",
    "policy.name=ar",
    "workload.input_tokens=16",
    "workload.output_tokens=64",
    "server.max_num_seqs=8",
    "server.max_num_batched_tokens=64",
    "metrics.warmup=0.2",
    "metrics.drain=0.2",
)


def _open(tmp_path, rate: float) -> dict:
    cost = flat_cost(tmp_path)  # 10 ms a step at any size
    return run(
        *AR,
        f"cost.table={cost}",
        "workload.kind=poisson",
        f"workload.rate={rate}",
        "workload.num_requests=600",
    ).summary


def test_sustainable_rate_is_the_full_batch_over_the_output_steps(tmp_path):
    s = _open(tmp_path, 5.0)
    # 8 requests a step, 64 steps each, 10 ms a step: 12.5 requests a second
    assert s["batch_max"] == 8
    assert s["sustainable_req_s"] == pytest.approx(12.5, rel=1e-6)
    assert s["offered_req_s"] == pytest.approx(5.0, rel=0.15)
    assert s["load_factor"] == pytest.approx(s["offered_req_s"] / 12.5)
    assert s["near_saturation"] is False


def test_an_overloaded_run_is_flagged_and_serves_the_sustainable_rate(tmp_path):
    s = _open(tmp_path, 25.0)
    assert s["load_factor"] > 1.5 and s["near_saturation"] is True
    # a saturated server completes what the definition says it can sustain
    assert s["throughput_tok_s"] / 64 == pytest.approx(s["sustainable_req_s"], rel=0.1)


def test_a_closed_loop_has_load_factor_one_by_construction(tmp_path):
    cost = flat_cost(tmp_path)
    s = run(
        *AR,
        f"cost.table={cost}",
        "workload.kind=closed",
        "workload.concurrency=4",
        "workload.num_requests=64",
    ).summary
    assert s["load_factor"] == 1.0 and s["near_saturation"] is False
    assert s["sustainable_req_s"] == pytest.approx(12.5, rel=1e-6)


def test_compare_flags_a_run_near_saturation(tmp_path, capsys):
    from specbed.cli import main as specbed

    sets = [*AR, f"cost.table={flat_cost(tmp_path)}", "workload.kind=poisson", "workload.rate=25"]
    out = tmp_path / "run"
    argv = ["run", *(x for s in [*sets, "workload.num_requests=200"] for x in ("--set", s))]
    assert specbed([*argv, "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "summary.json").read_text())["near_saturation"] is True
    real = tmp_path / "vllm.json"
    assert specbed(["export", str(out), "--out", str(real)]) == 0
    capsys.readouterr()
    assert specbed(["compare", str(out), str(real)]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert "near saturation: small cost errors move latency a lot" in line
    assert "sustainable 12.50 req/s" in line
