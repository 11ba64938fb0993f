"""paper_figs.deepseek_production and paper_figs.sglang_mtp: the reproductions' arithmetic and reporting."""

import json

import pytest

from paper_figs import deepseek_production as dp
from paper_figs import sglang_mtp


def test_derived_quantities_follow_the_published_totals():
    d = dp.derived()
    assert d["prompt"] == pytest.approx(4383, abs=2)  # P/D = 608/168 and P + D/2 = 4,989
    assert d["output"] == pytest.approx(1211, abs=2)
    assert d["hit"] == pytest.approx(0.5625, abs=1e-3)
    assert d["requests_per_gpu"] == pytest.approx(88.1, abs=0.1)  # Little's law: 14.8k / 8 / 21
    assert d["tau_mtp1"] == pytest.approx(1.875)


def test_reproduction_table_names_its_knobs_and_misses():
    rep = dp.reproduce()
    assert set(rep["knobs"]) == {"decode_step_overhead_s", "prefill_utilization"}
    for row in rep["rows"].values():
        assert row["calibrated"] == pytest.approx(row["published"], rel=1e-9)  # each knob is spent on one
        assert row["predicted_miss"] == pytest.approx(row["predicted"] / row["published"] - 1)
    assert rep["knobs"]["decode_step_overhead_s"] > 0 and 0 < rep["knobs"]["prefill_utilization"] < 1


def test_the_tiny_run_writes_its_summary(tmp_path, capsys):
    assert dp.main(["--tiny", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "summary.json").read_text())
    cmp = doc["dspark_vs_mtp1"]
    assert cmp["mtp1_at_88"]["tok_s_per_user"] == pytest.approx(21.0, rel=0.1)  # the sim agrees with the bill
    assert cmp["per_user_gain"] > 0
    assert (tmp_path / "deepseek_production.png").exists()
    assert "fitted knobs (2)" in capsys.readouterr().out


def test_sglang_gain_is_predicted_from_the_bill():
    roof = sglang_mtp.predict(0.0)
    host = sglang_mtp.predict(0.0061)
    assert roof["gain"] > 0 and host["gain"] > roof["gain"]  # a per-step host cost dilutes the bigger step
    assert host["mtp_step_s"] > host["base_step_s"]


def test_the_documented_figures_hold():
    """docs/disaggregation.md quotes these; a change to the step model must update both."""
    rows = dp.reproduce()["rows"]
    assert rows["per_user_tok_s"]["predicted"] == pytest.approx(36.25, rel=0.005)
    assert rows["decode_output_tok_s_per_node"]["predicted"] == pytest.approx(25.55e3, rel=0.005)
    assert rows["prefill_input_tok_s_per_node"]["predicted"] == pytest.approx(198.6e3, rel=0.005)
    assert sglang_mtp.predict(0.0)["gain"] == pytest.approx(0.306, abs=0.002)
    host = 2 / sglang_mtp.PUBLISHED["base"] - 2 / sglang_mtp.PUBLISHED["overlap"]
    assert sglang_mtp.predict(host)["gain"] == pytest.approx(0.437, abs=0.002)


def test_a_knob_fitted_to_rtp_llm_predicts_deepseeks_decode():
    """One knob fitted to Alibaba RTP-LLM's measured EP144/H800 point, not to DeepSeek's figures."""
    x = dp.reproduce()["cross_calibrated"]
    for form in ("additive", "multiplicative"):
        assert abs(x[form]["per_user_miss"]) < 0.05 and abs(x[form]["per_node_miss"]) < 0.05
    assert x["multiplicative"]["knob"] == pytest.approx(1.76, abs=0.01)
    p = dp.reproduce()["prefill_cross"]
    assert p["implied_utilization"] == pytest.approx(0.86, abs=0.01)
