"""Every paper figure in tiny mode: a PNG and a summary.json matching paper_figs/golden (tolerances stated
in paper_figs.golden.TOLERANCE: relative 2 %, absolute 0.02)."""

from __future__ import annotations

import json

import pytest

from paper_figs.golden import FIGURES, GOLDEN, check


@pytest.mark.parametrize("name", FIGURES)
def test_tiny_figure_matches_golden(name, tmp_path):
    problems = check(name, tmp_path)
    assert not problems, "\n".join(problems[:20])
    assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_golden_files_hold_the_paper_reference_numbers():
    fig7 = json.loads((GOLDEN / "fig7_pareto.json").read_text())
    assert fig7["paper"]["h200-v4flash"]["slo"]["80"]["gain"] == 0.51
    assert set(fig7["gains"]) == {"h200-v4flash", "h200-v4pro"}
    table1 = json.loads((GOLDEN / "table1_tau.json").read_text())
    assert table1["tau"]["dspark"]["math"]["paper"] == 5.57
    fig8 = json.loads((GOLDEN / "fig8_budget.json").read_text())
    assert all(v == 2.0 for per in fig8["budget"].values() for v in per["MTP-1"].values())
