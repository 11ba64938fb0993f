"""Issue 33 items 2 and 3 in `specbed vllm validate`: the chunk fraction a measurement implies and both
ITL readings; runs above a load factor of 0.9 flagged with the sustainable rate beside the offered one."""

from __future__ import annotations

import pytest

from validate.cli import itl_lines, saturation_notes
from validate.predict import error_pct
from validate.runs import itl_readings

ACTUAL = {"e2e_mean": 1000.0, "e2e_p90": 1.0, "e2e_p99": 1.0, "ttft_mean": 100.0, "ttft_p90": 1.0,
          "ttft_p99": 1.0, "itl_mean": 0.0}  # fmt: skip


def test_the_chunk_fraction_is_what_the_measurement_implies():
    # 201 tokens, 900 ms between first and last: 4.5 ms a token; chunks every 5.769 ms: 0.78 a token
    actual = {**ACTUAL, "itl_mean": 4.5 / 0.78}
    r = itl_readings(actual, token_ms=4.95, output_mean=201.0)
    assert r["chunk_fraction"] == pytest.approx(0.78)
    assert r["measured_per_token_ms"] == pytest.approx(4.5)
    assert r["predicted_per_chunk_ms"] == pytest.approx(4.95 / 0.78)
    # the per-chunk error is the per-token time's error (10 %), whatever the tokenizer
    pred = {**actual, "itl_mean": r["predicted_per_chunk_ms"]}
    assert error_pct(pred, actual)["itl_mean"] == pytest.approx(10.0)


def test_one_token_outputs_imply_no_fraction():
    r = itl_readings({**ACTUAL, "itl_mean": 3.0}, token_ms=2.0, output_mean=1.0)
    assert r["chunk_fraction"] is None and r["predicted_per_chunk_ms"] == 2.0


def _result(rho: float) -> dict:
    load = {"offered_req_s": 10.0, "sustainable_req_s": 10.0 / rho, "load_factor": rho,
            "near_saturation": rho > 0.9, "batch_max": 128.0}  # fmt: skip
    itl = itl_readings({**ACTUAL, "itl_mean": 5.0}, token_ms=4.4, output_mean=201.0)
    return {"folder": f"run-{rho}", "exp_id": "x", "load": load, "itl": itl}


def test_only_runs_above_0_9_are_flagged_with_both_rates():
    notes = saturation_notes([_result(0.5), _result(0.95)])
    assert len(notes) == 1
    assert "run-0.95: near saturation: small cost errors move latency a lot" in notes[0]
    assert "offered 10.00 req/s, sustainable 10.53 req/s" in notes[0]


def test_itl_lines_show_both_readings():
    lines = itl_lines([_result(0.5), {"folder": "bad", "exp_id": "b", "error": "x"}])
    assert len(lines) == 2 and "0.900" in lines[1] and "4.50→4.40" in lines[1] and "5.00→4.89" in lines[1]
