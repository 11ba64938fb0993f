"""`specbed search` as a planner uses it: the deployment path (catalogue model + GPU) with its accuracy
stated, `vllm serve` lines for the top candidates and each series' best, one progress bar, 8,192 budgets."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from analysis.search.space import load_space
from specbed.cli import main

TRAFFIC = """[workload]
kind = "poisson"
rate = 40.0
num_requests = 300
input_tokens = 256
output_tokens = 48
"""
SPACE = """name = "deploy"
set = ["cost.model=llama3.1-8b", "server.tp=1"]
[[zip]]
label = ["no-spec", "EAGLE-3 k=3"]
"drafter.name" = ["none", "eagle3"]
"drafter.gamma" = [0, 3]
"drafter.model" = ["none", "eagle3"]
"policy.name" = ["ar", "fixed"]
"policy.k" = ["none", 3]
[axes]
"cost.gpu" = ["h100", "h200"]
"server.replicas" = [1, 2]
"server.max_num_batched_tokens" = [2048, 8192]
[search]
rungs = [0.5, 1.0]
keep = 8
top = 0
"""
SLO = "ttft_p90<=2s,itl_p50<=60ms"


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deploy")
    (tmp / "space.toml").write_text(SPACE)
    (tmp / "traffic.toml").write_text(TRAFFIC)
    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        rc = main(["search", str(tmp / "space.toml"), "--traffic", str(tmp / "traffic.toml"), "--slo", SLO,
                   "--out", str(tmp / "out"), "--jobs", "1"])  # fmt: skip
    assert rc == 0
    return tmp / "out", err.getvalue()


def test_the_launch_lines_cover_the_top_and_the_best_of_every_series(searched):
    out, _ = searched
    text = (out / "vllm_serve_all.sh").read_text()
    lines = [line for line in text.splitlines() if line.startswith("# vllm serve")]
    ranks = [line for line in text.splitlines() if line.startswith("# rank ")]
    assert len(lines) == len(ranks) >= 3
    assert any("no-spec" in r for r in ranks) and any("EAGLE-3" in r for r in ranks)
    assert any('"method":"eagle3"' in line for line in lines)
    assert "Launch lines" in (out / "summary.md").read_text()


def test_the_summary_states_the_calibrated_accuracy_of_its_figures(searched):
    summary = (out := searched[0] / "summary.md").read_text()
    assert "## Accuracy of these figures" in summary, out
    assert "baseline_e2e_mean_median_pct" in summary  # the GPU's calibrated knobs' band
    assert "spec_speedup_median_pct" in summary  # the speculative arm's band (drafter.model set)


def test_one_progress_bar_spans_every_rung_and_tier(searched):
    _, err = searched
    bars = [line for line in err.splitlines() if "[" in line and "ETA" in line]
    assert bars and all(line.startswith("search [") for line in bars)
    totals = {line.split("/")[1].split()[0] for line in bars}
    assert "rung 2/2" in err and "price tier 1" in err
    assert len(bars) >= 2 and totals  # one count (done/total in requests) across the rungs


def test_the_shipped_spaces_try_budgets_up_to_8192():
    root = Path(__file__).resolve().parents[2] / "configs" / "search"
    for name in ("azure_conv_2x.toml", "llama70b_deploy.toml"):
        axes = load_space(root / name).sweep
        text = (root / name).read_text()
        assert "8192]" in text, (name, axes)
