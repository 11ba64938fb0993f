"""The cost-validation figure runs, writes its PNG, and its in-sample fit meets the issue's goals."""

from __future__ import annotations

import json

from paper_figs import cost_validation


def test_cost_validation_figure(tmp_path):
    assert cost_validation.main(["--tiny", "--out", str(tmp_path), "--quiet"]) == 0
    assert (tmp_path / "cost_validation.png").read_bytes()[:4] == b"\x89PNG"
    summ = json.loads((tmp_path / "summary.json").read_text())
    for tp in ("2", "4", "8"):
        assert summ["in_sample"]["by_tp"][tp]["decode"]["mape_pct"] <= 10
    assert summ["in_sample"]["prefill"]["mape_pct"] <= 15
    assert set(summ["out_of_sample"]) >= set(cost_validation.SWAPS)
